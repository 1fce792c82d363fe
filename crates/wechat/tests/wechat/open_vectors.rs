//! The push encryption against vectors computed independently of it (Python's `cryptography`
//! package, `tests/fixtures/open/make_vectors.py`).
#![allow(clippy::unwrap_used)]

use atrium_miniprogram::{AuditStatus, EventError, EventKind, EventRequest, EventUrl};
use atrium_wechat::open::crypt::{CryptError, MessageCrypt, msg_signature};
use atrium_wechat::open::events::open_event;
use serde_json::Value;

fn vectors() -> Value {
    let text = std::fs::read_to_string(format!("{}/tests/fixtures/open/vectors.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} missing"))
}

fn crypt(v: &Value) -> MessageCrypt {
    MessageCrypt::new(s(v, "token"), s(v, "encoding_aes_key"), s(v, "component_appid")).unwrap()
}

fn case<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["cases"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no case {name}"))
}

fn request(c: &Value) -> EventRequest {
    EventRequest {
        timestamp: s(c, "timestamp").into(),
        nonce: s(c, "nonce").into(),
        msg_signature: s(c, "msg_signature").into(),
        body: s(c, "body").as_bytes().to_vec(),
    }
}

fn random(c: &Value) -> [u8; 16] {
    hex::decode(s(c, "random_hex")).unwrap().try_into().unwrap()
}

#[test]
fn our_encryption_and_signature_equal_the_independent_ones() {
    let v = vectors();
    for c in v["cases"].as_array().unwrap() {
        let ours = MessageCrypt::new(s(&v, "token"), s(&v, "encoding_aes_key"), s(c, "appid")).unwrap();
        assert_eq!(ours.encrypt_with(&random(c), s(c, "message")).unwrap(), s(c, "encrypt"), "{}", s(c, "name"));
        assert_eq!(msg_signature(s(&v, "token"), s(c, "timestamp"), s(c, "nonce"), s(c, "encrypt")), s(c, "msg_signature"));
    }
}

#[test]
fn every_vector_addressed_to_us_opens_to_its_message() {
    let v = vectors();
    let crypt = crypt(&v);
    for name in ["verify_ticket", "authorized", "audit_fail", "audit_success", "full_pad_block"] {
        let c = case(&v, name);
        let r = request(c);
        assert_eq!(crypt.open(&r.timestamp, &r.nonce, &r.msg_signature, &r.body).unwrap(), s(c, "message"), "{name}");
    }
}

#[test]
fn a_key_whose_last_character_carries_extra_bits_is_accepted() {
    let v = vectors();
    // The fixture's key is not the canonical encoding of its 32 bytes.
    let crypt = crypt(&v);
    let c = case(&v, "verify_ticket");
    assert_eq!(crypt.decrypt(s(c, "encrypt")).unwrap(), s(c, "message"));
}

#[test]
fn a_message_encrypted_for_another_appid_is_foreign() {
    let v = vectors();
    let r = request(case(&v, "foreign_appid"));
    assert_eq!(crypt(&v).open(&r.timestamp, &r.nonce, &r.msg_signature, &r.body), Err(CryptError::ForeignAppid));
    assert_eq!(open_event(&crypt(&v), EventUrl::Component, &r).unwrap_err(), EventError::ForeignAppid);
}

#[test]
fn a_changed_signature_timestamp_nonce_or_body_is_refused() {
    let v = vectors();
    let crypt = crypt(&v);
    let c = case(&v, "verify_ticket");
    let good = request(c);
    let mut flipped = good.msg_signature.clone().into_bytes();
    flipped[0] = if flipped[0] == b'a' { b'b' } else { b'a' };
    let bad_signature = EventRequest { msg_signature: String::from_utf8(flipped).unwrap(), ..good.clone() };
    let bad_timestamp = EventRequest { timestamp: "1775016001".into(), ..good.clone() };
    let bad_nonce = EventRequest { nonce: "1320562133".into(), ..good.clone() };
    let other_encrypt = s(case(&v, "authorized"), "encrypt");
    let bad_body = EventRequest { body: s(c, "body").replace(s(c, "encrypt"), other_encrypt).into_bytes(), ..good.clone() };
    for r in [bad_signature, bad_timestamp, bad_nonce, bad_body] {
        assert_eq!(open_event(&crypt, EventUrl::Component, &r).unwrap_err(), EventError::BadSignature);
    }
    // An upper-case signature is the same signature.
    let upper = EventRequest { msg_signature: good.msg_signature.to_uppercase(), ..good };
    assert!(open_event(&crypt, EventUrl::Component, &upper).is_ok());
}

#[test]
fn the_vectors_read_as_their_events() {
    let v = vectors();
    let crypt = crypt(&v);
    let ticket = open_event(&crypt, EventUrl::Component, &request(case(&v, "verify_ticket"))).unwrap();
    assert!(matches!(ticket.kind, EventKind::VerifyTicket { ref ticket } if ticket.expose() == "ticket@@@Zm9vYmFyYmF6"));
    assert_eq!(ticket.created_at.timestamp(), 1775016000);

    let authorized = open_event(&crypt, EventUrl::Component, &request(case(&v, "authorized"))).unwrap();
    assert!(matches!(
        authorized.kind,
        EventKind::Authorized { ref authorizer_appid, ref pre_auth_code, update: false, .. }
            if authorizer_appid == "wx7enant0mp000001" && pre_auth_code.as_deref() == Some("preauthcode@@@xyz")
    ));

    let failed = open_event(&crypt, EventUrl::Message, &request(case(&v, "audit_fail"))).unwrap();
    match failed.kind {
        EventKind::Audit { to_user, result } => {
            assert_eq!(to_user, "gh_7e9a0b1c2d3e");
            assert_eq!(result.status, AuditStatus::Rejected);
            assert_eq!(result.reason.as_deref(), Some("1:小程序名称与内容不符；2:缺少隐私协议"));
            assert_eq!(result.screenshots, ["mediaA", "mediaB"]);
        }
        other => panic!("{other:?}"),
    }
    let passed = open_event(&crypt, EventUrl::Message, &request(case(&v, "audit_success"))).unwrap();
    assert!(matches!(passed.kind, EventKind::Audit { ref result, .. } if result.status == AuditStatus::Passed));
    assert_eq!(passed.id, "od1P50M-fNQI5Gcq-trm4a7apsU8:1775030000:weapp_audit_success");
}
