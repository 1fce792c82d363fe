//! Adapter for the messaging platform (WeChat) over HTTP, in its real wire format.
//!
//! Base URLs are configuration, so the same code talks to the real platform or to
//! `atrium-sandbox` on loopback. It offers:
//!
//! * [`WechatLogin`], identity's [`ChatLoginProvider`] (website QR login: `qrconnect` +
//!   `/sns/oauth2/access_token`);
//! * [`AccessTokens`], a mini-program's cached access token (`/cgi-bin/token`), refreshed
//!   before it expires and when the platform calls it stale;
//! * [`SubscribeMessages`], `/cgi-bin/message/subscribe/send` with typed errors
//!   ([`SubscribeError`]);
//! * [`WechatPayslips`], payroll's `PayslipNotifier` for employees with an openid;
//! * [`WechatPay`], the mini-program domain's `PayPlatform` (WeChat Pay API v3: signed
//!   requests, verified answers and notifications, bounded retries), and
//!   [`OpensslMerchantKeys`], its `MerchantKeys` (PEM key and certificate inspection);
//! * [`WechatOpen`], the mini-program domain's `MiniProgramPlatform`: our third-party platform
//!   (component token from the verify ticket, pre-auth codes, authorizer tokens cached and
//!   refreshed, the template library, every code-management call, the experience QR code) and
//!   the encryption of its pushes ([`open::crypt::MessageCrypt`]);
//! * [`MiniprogramCi`], the domain's `CodeUploader` (`miniprogram-ci` as a child process with a
//!   time-out), and [`BlockingPackageInspector`], its `PackageInspector`.
//!
//! Secrets and access tokens never appear in an error message or a log line. Every call can be
//! reported to a [`CallRecorder`] (endpoint and errcode, for metrics).

pub mod ci;
pub mod http;
pub mod open;
pub mod pay;
mod payslips;
mod subscribe;
mod token;

pub use ci::{BlockingPackageInspector, MiniprogramCi, MiniprogramCiConfig};
pub use open::{WechatOpen, WechatOpenConfig};
pub use pay::{OpensslMerchantKeys, WechatPay, WechatPayConfig};
pub use payslips::{PAYSLIP_KEY_GROSS, PAYSLIP_KEY_NAME, PAYSLIP_KEY_NET_PAY, PAYSLIP_KEY_PERIOD, PAYSLIP_KEY_TAX, WechatPayslips};
pub use subscribe::{MiniProgramState, SubscribeError, SubscribeMessage, SubscribeMessages};
pub use token::{AccessTokens, WechatAppConfig};

use async_trait::async_trait;
use atrium_identity::{ChatIdentity, ChatLoginProvider};
use atrium_kernel::{Error, Result};
use serde::Deserialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// Told of every call made to the platform, for metrics: the endpoint's path (never the query,
/// which carries secrets and tokens), the outcome — `0` on success, the platform's errcode, or
/// `transport` when no readable answer came — and how long the call took.
///
/// Both labels are `'static`: they come from closed sets (the clients' endpoint constants and
/// [`code_label`]), so what a platform answers can never grow the metrics without bound.
pub trait CallRecorder: Send + Sync {
    fn record(&self, endpoint: &'static str, errcode: &'static str, elapsed: Duration);
}

/// Records one call through `recorder`, if any.
pub(crate) fn record_call(recorder: Option<&Arc<dyn CallRecorder>>, endpoint: &'static str, errcode: Option<i64>, started: Instant) {
    if let Some(r) = recorder {
        let code = errcode.map(|c| c.to_string());
        r.record(endpoint, code_label(code.as_deref().unwrap_or("transport")), started.elapsed());
    }
}

/// The outcomes a call is reported under: success, the clients' own outcomes, and the
/// platforms' error codes this project knows (the messaging platform's numeric errcodes, the
/// pay platform's codes).
const CODE_LABELS: &[&str] = &[
    "0",
    "transport",
    "http_5xx",
    "http_408",
    "http_429",
    "bad_signature", // ours
    "-1",
    "40001",
    "40002",
    "40003",
    "40013",
    "40014",
    "40029",
    "40037",
    "40066",
    "40097",
    "40125",
    "40163",
    "40164",
    "41001",
    "41002",
    "41004",
    "41008",
    "42001",
    "43001",
    "43002",
    "43101",
    "44002",
    "45009",
    "47001",
    "47003",
    "48001",
    "61003",
    "61006",
    "61007",
    "61009",
    "61010",
    "61023",
    "61039",
    "85009",
    "85012",
    "85013",
    "85014",
    "85019",
    "85020",
    "85044",
    "85064",
    "85065",
    "85077",
    "85079",
    "85081",
    "85082",
    "85085",
    "85086",
    "86002",
    "87011",
    "87012",
    "87013", // messaging platform
    "APPID_MCHID_NOT_MATCH",
    "FREQUENCY_LIMITED",
    "INVALID_REQUEST",
    "MCH_NOT_EXISTS",
    "NOAUTH",
    "NOT_ENOUGH",
    "NOT_FOUND",
    "NO_STATEMENT_EXIST",
    "ORDERNOTEXIST",
    "ORDER_CLOSED",
    "ORDER_NOT_EXIST",
    "ORDERPAID",
    "OUT_TRADE_NO_USED",
    "PARAM_ERROR",
    "RESOURCE_NOT_EXISTS",
    "RULE_LIMIT",
    "SIGN_ERROR",
    "SYSTEM_ERROR",
    "USER_ACCOUNT_ABNORMAL", // pay platform
];

/// The metrics label of a call's outcome `code`: itself when it is one this project knows,
/// `other` for anything else a platform may answer.
pub fn code_label(code: &str) -> &'static str {
    CODE_LABELS.iter().copied().find(|known| *known == code).unwrap_or("other")
}

/// Where the platform lives and which website app we log in as. `Debug` hides the secret.
#[derive(Clone)]
pub struct WechatLoginConfig {
    /// `https://api.weixin.qq.com` or the sandbox's equivalent.
    pub api_base: String,
    /// `https://open.weixin.qq.com` or the sandbox's equivalent.
    pub open_base: String,
    pub appid: String,
    pub secret: String,
}

impl std::fmt::Debug for WechatLoginConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WechatLoginConfig")
            .field("api_base", &self.api_base)
            .field("open_base", &self.open_base)
            .field("appid", &self.appid)
            .field("secret", &"***")
            .finish()
    }
}

/// The platform's error shape: HTTP 200 with a non-zero `errcode`.
#[derive(Debug, Deserialize)]
struct PlatformError {
    #[serde(default)]
    errcode: i64,
    #[serde(default)]
    errmsg: String,
}

#[derive(Debug, Deserialize)]
struct OauthToken {
    openid: String,
    #[serde(default)]
    unionid: Option<String>,
}

/// Website QR login against the platform.
pub struct WechatLogin {
    http: reqwest::Client,
    config: WechatLoginConfig,
    recorder: Option<Arc<dyn CallRecorder>>,
}

impl WechatLogin {
    pub fn new(config: WechatLoginConfig) -> anyhow::Result<Self> {
        let http = http::client_builder()?.timeout(Duration::from_secs(10)).connect_timeout(Duration::from_secs(5)).build()?;
        Ok(WechatLogin { http, config, recorder: None })
    }

    /// Reports every platform call to `recorder`.
    pub fn with_recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }
}

/// Decides a platform response by `errcode`, never by the HTTP status alone.
fn check_errcode(body: &serde_json::Value) -> std::result::Result<(), PlatformError> {
    let err: PlatformError = serde_json::from_value(body.clone()).unwrap_or(PlatformError { errcode: 0, errmsg: String::new() });
    if err.errcode == 0 { Ok(()) } else { Err(err) }
}

#[async_trait]
impl ChatLoginProvider for WechatLogin {
    fn authorize_url(&self, state: &str, redirect_uri: &str) -> String {
        let base = format!("{}/connect/qrconnect", self.config.open_base.trim_end_matches('/'));
        let mut url = match Url::parse(&base) {
            Ok(u) => u,
            Err(_) => return base,
        };
        url.query_pairs_mut()
            .append_pair("appid", &self.config.appid)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("response_type", "code")
            .append_pair("scope", "snsapi_login")
            .append_pair("state", state);
        url.set_fragment(Some("wechat_redirect"));
        url.to_string()
    }

    async fn exchange_code(&self, code: &str) -> Result<ChatIdentity> {
        const ENDPOINT: &str = "/sns/oauth2/access_token";
        let url = format!("{}{ENDPOINT}", self.config.api_base.trim_end_matches('/'));
        let started = Instant::now();
        let answer = self.exchange(&url, code).await;
        let errcode = match &answer {
            Ok(body) => Some(check_errcode(body).err().map_or(0, |e| e.errcode)),
            Err(_) => None,
        };
        record_call(self.recorder.as_ref(), ENDPOINT, errcode, started);
        let body = answer?;
        if let Err(e) = check_errcode(&body) {
            return Err(match e.errcode {
                40029 | 40163 | 41008 => Error::Unauthenticated(format!("the scan code is invalid or was already used ({})", e.errcode)),
                _ => {
                    log::warn!("oauth2/access_token failed: errcode {} {}", e.errcode, e.errmsg);
                    Error::Upstream(format!("messaging platform refused the login (errcode {})", e.errcode))
                }
            });
        }
        let token: OauthToken =
            serde_json::from_value(body).map_err(|_| Error::Upstream("messaging platform answer lacks openid".into()))?;
        Ok(ChatIdentity { openid: token.openid, unionid: token.unionid.filter(|u| !u.is_empty()) })
    }
}

impl WechatLogin {
    /// The code exchange's answer, read as JSON.
    async fn exchange(&self, url: &str, code: &str) -> Result<serde_json::Value> {
        let resp = self
            .http
            .get(url)
            .query(&[
                ("appid", self.config.appid.as_str()),
                ("secret", self.config.secret.as_str()),
                ("code", code),
                ("grant_type", "authorization_code"),
            ])
            .send()
            .await
            .map_err(|e| Error::Upstream(format!("messaging platform unreachable: {}", e.without_url())))?;
        if !resp.status().is_success() {
            return Err(Error::Upstream(format!("messaging platform answered HTTP {}", resp.status())));
        }
        resp.json().await.map_err(|_| Error::Upstream("messaging platform sent an unreadable answer".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login() -> WechatLogin {
        WechatLogin::new(WechatLoginConfig {
            api_base: "http://127.0.0.1:1/api".into(),
            open_base: "http://127.0.0.1:1/open/".into(),
            appid: "wxapp".into(),
            secret: "s".into(),
        })
        .unwrap()
    }

    #[test]
    fn a_code_no_one_knows_is_reported_as_other() {
        assert_eq!(code_label("0"), "0");
        assert_eq!(code_label("85014"), "85014");
        assert_eq!(code_label("ORDER_NOT_EXIST"), "ORDER_NOT_EXIST");
        assert_eq!(code_label("transport"), "transport");
        assert_eq!(code_label("99999"), "other");
        assert_eq!(code_label("MADE_UP_BY_A_PLATFORM"), "other");
    }

    #[test]
    fn authorize_url_carries_the_qrconnect_parameters() {
        let url = login().authorize_url("tick et", "http://x/cb?a=1");
        assert!(url.starts_with("http://127.0.0.1:1/open/connect/qrconnect?appid=wxapp&"));
        assert!(url.contains("redirect_uri=http%3A%2F%2Fx%2Fcb%3Fa%3D1"));
        assert!(url.contains("scope=snsapi_login"));
        assert!(url.contains("state=tick+et"));
        assert!(url.ends_with("#wechat_redirect"));
    }

    #[test]
    fn errcode_decides_failure() {
        assert!(check_errcode(&serde_json::json!({"openid": "o"})).is_ok());
        assert!(check_errcode(&serde_json::json!({"errcode": 0, "errmsg": "ok"})).is_ok());
        assert_eq!(check_errcode(&serde_json::json!({"errcode": 40029, "errmsg": "invalid code"})).unwrap_err().errcode, 40029);
    }

    #[tokio::test]
    async fn an_unreachable_platform_is_an_upstream_error() {
        let err = login().exchange_code("c").await.unwrap_err();
        assert!(matches!(err, Error::Upstream(_)), "{err:?}");
    }
}
