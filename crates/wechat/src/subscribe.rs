//! Subscribe messages: `POST /cgi-bin/message/subscribe/send?access_token=`, the one-off
//! notifications a mini-program user agreed to receive.

use atrium_kernel::Error;
use atrium_kernel::StrEnum;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::AccessTokens;

/// Which build of the mini-program a message's page opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum MiniProgramState {
    /// The released version.
    #[default]
    Formal,
    /// The trial (体验版) version.
    Trial,
    /// The development version.
    Developer,
}

/// One subscribe message to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribeMessage {
    /// The recipient's openid in this mini-program.
    pub touser: String,
    pub template_id: String,
    /// The mini-program page the message opens, e.g. `pages/payslip/index?id=1`.
    pub page: Option<String>,
    /// Template key (`thing1`, `amount2`, …) → value; sent as `{"thing1": {"value": "…"}}`.
    pub data: BTreeMap<String, String>,
    pub miniprogram_state: MiniProgramState,
    /// `zh_CN` (the default), `en_US`, `zh_HK` or `zh_TW`.
    pub lang: String,
}

impl SubscribeMessage {
    /// A message to `touser` with `template_id`, no page and no data yet, for the released
    /// mini-program in `zh_CN`.
    pub fn new(touser: impl Into<String>, template_id: impl Into<String>) -> Self {
        SubscribeMessage {
            touser: touser.into(),
            template_id: template_id.into(),
            page: None,
            data: BTreeMap::new(),
            miniprogram_state: MiniProgramState::Formal,
            lang: "zh_CN".into(),
        }
    }

    /// Sets template key `key` to `value`.
    pub fn field(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.data.insert(key.into(), value.into());
        self
    }
}

#[derive(Serialize)]
struct Value<'a> {
    value: &'a str,
}

#[derive(Serialize)]
struct SendBody<'a> {
    touser: &'a str,
    template_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    page: Option<&'a str>,
    data: BTreeMap<&'a str, Value<'a>>,
    miniprogram_state: &'static str,
    lang: &'a str,
}

impl<'a> From<&'a SubscribeMessage> for SendBody<'a> {
    fn from(m: &'a SubscribeMessage) -> Self {
        SendBody {
            touser: &m.touser,
            template_id: &m.template_id,
            page: m.page.as_deref(),
            data: m.data.iter().map(|(k, v)| (k.as_str(), Value { value: v })).collect(),
            miniprogram_state: m.miniprogram_state.as_str(),
            lang: &m.lang,
        }
    }
}

/// Why a platform call failed. Messages never contain the app secret or an access token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscribeError {
    /// 43101: the user has no subscription left for this template, or refused it.
    #[error("the user has no subscription left for this message (errcode 43101)")]
    NoSubscription,
    /// 40003: the openid is not a user of this mini-program.
    #[error("the openid is not valid for this mini-program (errcode 40003)")]
    InvalidOpenid,
    /// 47003: the template data does not fit the template (missing key, value too long, …).
    #[error("the platform rejected the template data (errcode 47003): {errmsg}")]
    BadTemplateData { errmsg: String },
    /// Any other non-zero errcode, e.g. 40037 (bad template id), 40125 (bad secret), -1 after
    /// the retries.
    #[error("the platform refused the call (errcode {errcode}): {errmsg}")]
    Platform { errcode: i64, errmsg: String },
    /// The platform could not be reached or sent something unreadable.
    #[error("the platform could not be reached: {0}")]
    Transport(String),
}

impl SubscribeError {
    /// The platform's errcode, if the platform answered.
    pub fn errcode(&self) -> Option<i64> {
        match self {
            SubscribeError::NoSubscription => Some(43101),
            SubscribeError::InvalidOpenid => Some(40003),
            SubscribeError::BadTemplateData { .. } => Some(47003),
            SubscribeError::Platform { errcode, .. } => Some(*errcode),
            SubscribeError::Transport(_) => None,
        }
    }

    /// The typed error for a subscribe-send errcode.
    fn from_send(e: SubscribeError) -> SubscribeError {
        match e {
            SubscribeError::Platform { errcode: 43101, .. } => SubscribeError::NoSubscription,
            SubscribeError::Platform { errcode: 40003, .. } => SubscribeError::InvalidOpenid,
            SubscribeError::Platform { errcode: 47003, errmsg } => SubscribeError::BadTemplateData { errmsg },
            other => other,
        }
    }
}

impl From<SubscribeError> for Error {
    fn from(e: SubscribeError) -> Self {
        match e {
            SubscribeError::NoSubscription => Error::Upstream(
                "the recipient has no subscription left for this message on the messaging platform (errcode 43101); \
                 they need to subscribe again in the mini-program"
                    .into(),
            ),
            SubscribeError::InvalidOpenid => {
                Error::BadRequest("the recipient's openid is not valid for this mini-program (errcode 40003)".into())
            }
            e @ SubscribeError::BadTemplateData { .. } => Error::Upstream(format!("messaging platform: {e}")),
            e @ SubscribeError::Platform { .. } => Error::Upstream(format!("messaging platform: {e}")),
            SubscribeError::Transport(msg) => Error::Upstream(format!("messaging platform unreachable: {msg}")),
        }
    }
}

/// Sends subscribe messages with a shared access-token cache.
pub struct SubscribeMessages {
    tokens: Arc<AccessTokens>,
}

impl SubscribeMessages {
    /// Sends with `tokens`' app and token cache.
    pub fn new(tokens: Arc<AccessTokens>) -> Self {
        SubscribeMessages { tokens }
    }

    /// The token cache this client uses.
    pub fn tokens(&self) -> &Arc<AccessTokens> {
        &self.tokens
    }

    /// Sends `msg`. A stale token is refreshed and a busy platform retried (see
    /// [`AccessTokens`]); 43101, 40003 and 47003 come back as their own variants.
    pub async fn send(&self, msg: &SubscribeMessage) -> Result<(), SubscribeError> {
        let body = SendBody::from(msg);
        match self.tokens.post_json("/cgi-bin/message/subscribe/send", &body).await {
            Ok(answer) => {
                log::debug!(
                    "subscribe message {} sent (msgid {})",
                    msg.template_id,
                    answer.get("msgid").unwrap_or(&serde_json::Value::Null)
                );
                Ok(())
            }
            Err(e) => Err(SubscribeError::from_send(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_serialises_in_the_platforms_shape() {
        let mut msg = SubscribeMessage::new("o1", "T1").field("thing1", "Pay slip").field("amount2", "1.00");
        msg.miniprogram_state = MiniProgramState::Trial;
        let json = serde_json::to_value(SendBody::from(&msg)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "touser": "o1",
                "template_id": "T1",
                "data": {"amount2": {"value": "1.00"}, "thing1": {"value": "Pay slip"}},
                "miniprogram_state": "trial",
                "lang": "zh_CN",
            })
        );
        msg.page = Some("pages/a".into());
        assert_eq!(serde_json::to_value(SendBody::from(&msg)).unwrap()["page"], "pages/a");
    }

    #[test]
    fn send_errcodes_become_typed_errors() {
        let platform = |errcode| SubscribeError::Platform { errcode, errmsg: "m".into() };
        assert_eq!(SubscribeError::from_send(platform(43101)), SubscribeError::NoSubscription);
        assert_eq!(SubscribeError::from_send(platform(40003)), SubscribeError::InvalidOpenid);
        assert_eq!(SubscribeError::from_send(platform(47003)), SubscribeError::BadTemplateData { errmsg: "m".into() });
        assert_eq!(SubscribeError::from_send(platform(40037)), platform(40037));
    }

    #[test]
    fn kernel_errors_name_the_errcode() {
        assert!(matches!(Error::from(SubscribeError::NoSubscription), Error::Upstream(m) if m.contains("43101")));
        assert!(matches!(Error::from(SubscribeError::InvalidOpenid), Error::BadRequest(m) if m.contains("40003")));
        let other = Error::from(SubscribeError::Platform { errcode: 40037, errmsg: "invalid template_id".into() });
        assert!(matches!(other, Error::Upstream(m) if m.contains("40037") && m.contains("invalid template_id")));
    }

    #[test]
    fn states_round_trip_through_their_wire_values() {
        for s in [MiniProgramState::Formal, MiniProgramState::Trial, MiniProgramState::Developer] {
            assert_eq!(MiniProgramState::parse(s.as_str()), Some(s));
        }
        assert_eq!(MiniProgramState::parse("release"), None);
    }
}
