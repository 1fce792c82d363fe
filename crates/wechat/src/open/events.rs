//! Pushes to the two event URLs, verified, decrypted and read into the domain's
//! [`PlatformEvent`].
//!
//! - The component URL gets `InfoType` pushes addressed (`AppId`) to our component:
//!   `component_verify_ticket`, `authorized`, `updateauthorized`, `unauthorized`.
//! - The message URL gets the authorised mini-program's messages (`ToUserName` is its
//!   `gh_…`): the audit results `weapp_audit_success`, `weapp_audit_fail` (reason,
//!   screenshots as `id1|id2`), `weapp_audit_delay`.
//!
//! The event id follows the platform's advice for de-duplicating retried pushes: the sender
//! (`AppId` or `FromUserName`), `CreateTime` and the kind.
use super::crypt::{CryptError, MessageCrypt};
use super::xml::parse_flat;
use atrium_kernel::Timestamp;
use atrium_miniprogram::{AuditStatus, EventError, EventKind, EventRequest, EventUrl, PlatformAudit, PlatformEvent, Secret};
use std::collections::BTreeMap;

impl From<CryptError> for EventError {
    fn from(e: CryptError) -> Self {
        match e {
            CryptError::BadSignature => EventError::BadSignature,
            CryptError::ForeignAppid => EventError::ForeignAppid,
            CryptError::BadKey => EventError::NotConfigured,
            CryptError::Malformed(m) => EventError::Malformed(m),
        }
    }
}

fn field<'a>(fields: &'a BTreeMap<String, String>, name: &str) -> Result<&'a str, EventError> {
    fields.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()).ok_or_else(|| EventError::Malformed(format!("no {name}")))
}

fn optional(fields: &BTreeMap<String, String>, name: &str) -> Option<String> {
    fields.get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

fn unix(fields: &BTreeMap<String, String>, name: &str) -> Option<Timestamp> {
    fields.get(name).and_then(|v| v.trim().parse::<i64>().ok()).and_then(|s| chrono::DateTime::from_timestamp(s, 0))
}

/// Verifies, decrypts and reads a push to `url`.
pub fn open_event(crypt: &MessageCrypt, url: EventUrl, request: &EventRequest) -> Result<PlatformEvent, EventError> {
    let message = crypt.open(&request.timestamp, &request.nonce, &request.msg_signature, &request.body)?;
    let fields = parse_flat(&message).map_err(EventError::Malformed)?;
    let created_at = unix(&fields, "CreateTime").ok_or_else(|| EventError::Malformed("no CreateTime".into()))?;
    let create_time = created_at.timestamp();
    match url {
        EventUrl::Component => component_event(crypt, &fields, created_at, create_time),
        EventUrl::Message => message_event(&fields, created_at, create_time),
    }
}

fn component_event(
    crypt: &MessageCrypt,
    fields: &BTreeMap<String, String>,
    created_at: Timestamp,
    create_time: i64,
) -> Result<PlatformEvent, EventError> {
    // Signed and encrypted for us, but naming another component inside: refuse it too.
    if optional(fields, "AppId").is_some_and(|a| a != crypt.appid()) {
        return Err(EventError::ForeignAppid);
    }
    let info_type = field(fields, "InfoType")?;
    let appid = crypt.appid();
    let (id, kind) = match info_type {
        "component_verify_ticket" => {
            let ticket = Secret::new(field(fields, "ComponentVerifyTicket")?);
            (format!("{appid}:{create_time}:{info_type}"), EventKind::VerifyTicket { ticket })
        }
        "authorized" | "updateauthorized" => {
            let authorizer_appid = field(fields, "AuthorizerAppid")?.to_owned();
            let kind = EventKind::Authorized {
                authorizer_appid: authorizer_appid.clone(),
                authorization_code: Secret::new(field(fields, "AuthorizationCode")?),
                pre_auth_code: optional(fields, "PreAuthCode"),
                update: info_type == "updateauthorized",
            };
            (format!("{appid}:{create_time}:{info_type}:{authorizer_appid}"), kind)
        }
        "unauthorized" => {
            let authorizer_appid = field(fields, "AuthorizerAppid")?.to_owned();
            (format!("{appid}:{create_time}:{info_type}:{authorizer_appid}"), EventKind::Unauthorized { authorizer_appid })
        }
        other => (format!("{appid}:{create_time}:{other}"), EventKind::Other { name: other.to_owned() }),
    };
    Ok(PlatformEvent { id, created_at, kind })
}

fn message_event(fields: &BTreeMap<String, String>, created_at: Timestamp, create_time: i64) -> Result<PlatformEvent, EventError> {
    let to_user = field(fields, "ToUserName")?.to_owned();
    let from = optional(fields, "FromUserName").unwrap_or_else(|| to_user.clone());
    let msg_type = field(fields, "MsgType")?;
    let name = if msg_type == "event" { field(fields, "Event")?.to_owned() } else { msg_type.to_owned() };
    let id = format!("{from}:{create_time}:{name}");
    let audit = |status, at: &str| PlatformAudit {
        status,
        reason: optional(fields, "Reason"),
        screenshots: optional(fields, "ScreenShot")
            .map(|s| s.split('|').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default(),
        at: unix(fields, at),
    };
    let kind = match name.as_str() {
        "weapp_audit_success" => EventKind::Audit { to_user, result: audit(AuditStatus::Passed, "SuccTime") },
        "weapp_audit_fail" => EventKind::Audit { to_user, result: audit(AuditStatus::Rejected, "FailTime") },
        "weapp_audit_delay" => EventKind::Audit { to_user, result: audit(AuditStatus::Delayed, "DelayTime") },
        _ => EventKind::Other { name },
    };
    Ok(PlatformEvent { id, created_at, kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";

    fn crypt() -> MessageCrypt {
        MessageCrypt::new("tok", KEY, "wx_component").unwrap()
    }

    fn push(message: &str, to: (&str, &str)) -> EventRequest {
        let (body, msg_signature) = crypt().seal(message, to, "1700000000", "nonce").unwrap();
        EventRequest { timestamp: "1700000000".into(), nonce: "nonce".into(), msg_signature, body: body.into_bytes() }
    }

    #[test]
    fn a_verify_ticket_push_is_read() {
        let request = push(
            "<xml><AppId><![CDATA[wx_component]]></AppId><CreateTime>1413192605</CreateTime><InfoType><![CDATA[component_verify_ticket]]></InfoType><ComponentVerifyTicket><![CDATA[ticket@@@xyz]]></ComponentVerifyTicket></xml>",
            ("AppId", "wx_component"),
        );
        let event = open_event(&crypt(), EventUrl::Component, &request).unwrap();
        assert_eq!(event.id, "wx_component:1413192605:component_verify_ticket");
        assert_eq!(event.created_at.timestamp(), 1413192605);
        assert!(matches!(event.kind, EventKind::VerifyTicket { ref ticket } if ticket.expose() == "ticket@@@xyz"));
    }

    #[test]
    fn an_authorized_push_carries_its_code_and_pre_auth_code() {
        let request = push(
            "<xml><AppId>wx_component</AppId><CreateTime>1413192760</CreateTime><InfoType>authorized</InfoType><AuthorizerAppid>wx_mp</AuthorizerAppid><AuthorizationCode>code-1</AuthorizationCode><AuthorizationCodeExpiredTime>1413196360</AuthorizationCodeExpiredTime><PreAuthCode>pre-1</PreAuthCode></xml>",
            ("AppId", "wx_component"),
        );
        let event = open_event(&crypt(), EventUrl::Component, &request).unwrap();
        match event.kind {
            EventKind::Authorized { authorizer_appid, authorization_code, pre_auth_code, update } => {
                assert_eq!(
                    (authorizer_appid.as_str(), authorization_code.expose(), pre_auth_code.as_deref(), update),
                    ("wx_mp", "code-1", Some("pre-1"), false)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_audit_failure_carries_its_reason_and_screenshots() {
        let request = push(
            "<xml><ToUserName><![CDATA[gh_fb9688c2a4b2]]></ToUserName><FromUserName><![CDATA[od1P50M-fNQI5Gcq-trm4a7apsU8]]></FromUserName><CreateTime>1488856591</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[weapp_audit_fail]]></Event><Reason><![CDATA[1:账号信息不符合规范]]></Reason><FailTime>1488856591</FailTime><ScreenShot>xxx|yyy|zzz</ScreenShot></xml>",
            ("ToUserName", "gh_fb9688c2a4b2"),
        );
        let event = open_event(&crypt(), EventUrl::Message, &request).unwrap();
        assert_eq!(event.id, "od1P50M-fNQI5Gcq-trm4a7apsU8:1488856591:weapp_audit_fail");
        match event.kind {
            EventKind::Audit { to_user, result } => {
                assert_eq!(to_user, "gh_fb9688c2a4b2");
                assert_eq!(result.status, AuditStatus::Rejected);
                assert_eq!(result.reason.as_deref(), Some("1:账号信息不符合规范"));
                assert_eq!(result.screenshots, ["xxx", "yyy", "zzz"]);
                assert_eq!(result.at.map(|t| t.timestamp()), Some(1488856591));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_push_naming_another_component_inside_is_foreign() {
        let request = push(
            "<xml><AppId>wx_someone_else</AppId><CreateTime>1</CreateTime><InfoType>unauthorized</InfoType><AuthorizerAppid>wx_mp</AuthorizerAppid></xml>",
            ("AppId", "wx_component"),
        );
        assert_eq!(open_event(&crypt(), EventUrl::Component, &request).unwrap_err(), EventError::ForeignAppid);
    }

    #[test]
    fn a_bad_signature_is_refused_before_decrypting() {
        let mut request = push("<xml/>", ("AppId", "wx_component"));
        request.msg_signature = "f".repeat(40);
        assert_eq!(open_event(&crypt(), EventUrl::Component, &request).unwrap_err(), EventError::BadSignature);
    }

    #[test]
    fn unknown_kinds_are_other() {
        let request = push(
            "<xml><ToUserName>gh_1</ToUserName><FromUserName>o1</FromUserName><CreateTime>5</CreateTime><MsgType>text</MsgType><Content>hi</Content></xml>",
            ("ToUserName", "gh_1"),
        );
        assert!(matches!(open_event(&crypt(), EventUrl::Message, &request).unwrap().kind, EventKind::Other { ref name } if name == "text"));
    }
}
