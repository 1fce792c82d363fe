//! The pay adapter's cryptography against vectors computed independently of it (Python's
//! `cryptography` package, `tests/fixtures/pay/make_vectors.py`).
#![allow(clippy::unwrap_used)]

use atrium_kernel::{Error, Money};
use atrium_payments::{
    BillTradeState, EventResource, MerchantAccount, MerchantKeys, NotificationError, NotificationRequest, PlatformKey, Secret, TradeState,
};
use atrium_wechat::OpensslMerchantKeys;
use atrium_wechat::pay::bill::{parse_trade_bill, sha1_hex};
use atrium_wechat::pay::notify::{decrypt_resource, open_notification};
use atrium_wechat::pay::sign::{
    MerchantSigner, PlatformVerifier, SignedHeaders, VerifyError, authorization, pay_sign_message, request_message,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/pay/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn vectors() -> Value {
    serde_json::from_str(&fixture("vectors.json")).unwrap()
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter().fold(v, |v, k| &v[k]).as_str().unwrap_or_else(|| panic!("{path:?} missing"))
}

fn verifier() -> PlatformVerifier {
    let v = vectors();
    PlatformVerifier::new(&[
        PlatformKey { id: s(&v, &["answer", "serial_public_key_mode"]).into(), pem: fixture("platform_public.pem") },
        PlatformKey { id: s(&v, &["answer", "serial_certificate_mode"]).into(), pem: fixture("platform_cert.pem") },
    ])
    .unwrap()
}

fn answer_headers(serial: &str) -> (SignedHeaders, Vec<u8>, i64) {
    let v = vectors();
    let a = &v["answer"];
    let headers = SignedHeaders {
        timestamp: s(a, &["timestamp"]).into(),
        nonce: s(a, &["nonce"]).into(),
        signature: s(a, &["signature"]).into(),
        serial: serial.into(),
    };
    let now: i64 = s(a, &["timestamp"]).parse().unwrap();
    (headers, s(a, &["body"]).as_bytes().to_vec(), now)
}

// --- signing --------------------------------------------------------------------------------

#[test]
fn our_request_signature_equals_the_independent_one_for_pkcs8_and_pkcs1_keys() {
    let v = vectors();
    for key in ["merchant_key.pem", "merchant_key_pkcs1.pem"] {
        let signer = MerchantSigner::from_pem(&fixture(key)).unwrap();
        for r in [&v["request"], &v["get_request"]] {
            let message = request_message(
                s(r, &["method"]),
                s(r, &["path"]),
                s(r, &["timestamp"]).parse().unwrap(),
                s(r, &["nonce"]),
                s(r, &["body"]),
            );
            assert_eq!(message, s(r, &["message"]));
            assert_eq!(signer.sign(&message).unwrap(), s(r, &["signature"]), "{key}");
        }
    }
}

#[test]
fn the_authorization_header_has_the_platform_shape() {
    let header = authorization("1900000109", "5157F09E", 1_700_000_000, "N1", "c2ln");
    assert_eq!(
        header,
        r#"WECHATPAY2-SHA256-RSA2048 mchid="1900000109",nonce_str="N1",timestamp="1700000000",serial_no="5157F09E",signature="c2ln""#
    );
}

#[test]
fn our_pay_sign_equals_the_independent_one() {
    let v = vectors();
    let p = &v["pay_sign"];
    let message = pay_sign_message(s(p, &["appId"]), s(p, &["timeStamp"]), s(p, &["nonceStr"]), s(p, &["package"]));
    assert_eq!(message, s(p, &["message"]));
    let signer = MerchantSigner::from_pem(&fixture("merchant_key.pem")).unwrap();
    assert_eq!(signer.sign(&message).unwrap(), s(p, &["paySign"]));
}

#[test]
fn an_unreadable_merchant_key_is_a_clean_error_that_does_not_repeat_it() {
    let err = MerchantSigner::from_pem("-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n").err().unwrap();
    assert!(!err.contains("c2VjcmV0"), "{err}");
}

// --- verifying ------------------------------------------------------------------------------

#[test]
fn a_platform_answer_verifies_in_public_key_and_certificate_mode() {
    let v = vectors();
    for serial in [s(&v, &["answer", "serial_public_key_mode"]), s(&v, &["answer", "serial_certificate_mode"])] {
        let (headers, body, now) = answer_headers(serial);
        assert_eq!(verifier().verify(&headers, &body, now), Ok(()), "{serial}");
        assert_eq!(verifier().verify(&headers, &body, now + 299), Ok(()));
    }
}

#[test]
fn a_tampered_body_or_signature_does_not_verify() {
    let v = vectors();
    let (headers, body, now) = answer_headers(s(&v, &["answer", "serial_public_key_mode"]));
    let mut tampered = body.clone();
    tampered[2] ^= 1;
    // Re-serialising changes the bytes: verification is over the raw body only.
    let reserialised = serde_json::to_vec(&serde_json::from_slice::<Value>(&body).unwrap()).unwrap();
    assert_ne!(reserialised, body);
    let mut bad_sig = headers.clone();
    bad_sig.signature = STANDARD.encode([7u8; 256]);

    assert_eq!(verifier().verify(&headers, &tampered, now), Err(VerifyError::BadSignature));
    assert_eq!(verifier().verify(&headers, &reserialised, now), Err(VerifyError::BadSignature));
    assert_eq!(verifier().verify(&bad_sig, &body, now), Err(VerifyError::BadSignature));
}

#[test]
fn a_timestamp_300_seconds_away_is_stale_either_way() {
    let v = vectors();
    let (headers, body, now) = answer_headers(s(&v, &["answer", "serial_public_key_mode"]));
    assert_eq!(verifier().verify(&headers, &body, now + 300), Err(VerifyError::Stale));
    assert_eq!(verifier().verify(&headers, &body, now - 300), Err(VerifyError::Stale));
}

#[test]
fn an_unknown_serial_a_probe_and_missing_headers_fail_cleanly() {
    let v = vectors();
    let (headers, body, now) = answer_headers("PUB_KEY_ID_UNKNOWN");
    assert_eq!(verifier().verify(&headers, &body, now), Err(VerifyError::UnknownSerial));

    let (mut probe, body, now) = answer_headers(s(&v, &["answer", "serial_public_key_mode"]));
    probe.signature = format!("WECHATPAY/SIGNTEST/{}", probe.signature);
    assert_eq!(verifier().verify(&probe, &body, now), Err(VerifyError::Probe));

    let (mut missing, body, now) = answer_headers(s(&v, &["answer", "serial_public_key_mode"]));
    missing.nonce.clear();
    assert_eq!(verifier().verify(&missing, &body, now), Err(VerifyError::MissingHeaders));
}

// --- notifications --------------------------------------------------------------------------

#[test]
fn our_decryptor_recovers_the_plaintext_and_rejects_a_tampered_tag() {
    let v = vectors();
    let n = &v["notification"];
    let key = s(n, &["api_v3_key"]).as_bytes();
    let (nonce, aad, ct) = (s(n, &["nonce"]).as_bytes(), s(n, &["associated_data"]).as_bytes(), s(n, &["ciphertext"]));

    let plain = decrypt_resource(key, nonce, aad, ct).unwrap();
    assert_eq!(String::from_utf8(plain).unwrap(), s(n, &["plaintext"]));

    let mut raw = STANDARD.decode(ct).unwrap();
    let last = raw.len() - 1;
    raw[last] ^= 1;
    assert_eq!(decrypt_resource(key, nonce, aad, &STANDARD.encode(&raw)), Err(NotificationError::Undecryptable));
    assert_eq!(decrypt_resource(key, nonce, b"refund", ct), Err(NotificationError::Undecryptable), "associated data is authenticated");
    assert_eq!(decrypt_resource(&[b'x'; 32], nonce, aad, ct), Err(NotificationError::Undecryptable));
    assert_eq!(decrypt_resource(key, nonce, aad, "AAAA"), Err(NotificationError::Undecryptable));
}

fn account() -> MerchantAccount {
    let v = vectors();
    MerchantAccount {
        mchid: "1900000109".into(),
        appid: "wx_mp".into(),
        serial_no: s(&v, &["merchant_serial"]).into(),
        private_key: Secret::new(fixture("merchant_key.pem")),
        api_v3_key: Secret::new(s(&v, &["notification", "api_v3_key"])),
        platform_keys: vec![PlatformKey { id: s(&v, &["notification", "serial"]).into(), pem: fixture("platform_public.pem") }],
        sub_merchant: None,
    }
}

fn notification() -> (NotificationRequest, i64) {
    let v = vectors();
    let n = &v["notification"];
    let request = NotificationRequest {
        timestamp: s(n, &["timestamp"]).into(),
        nonce: s(n, &["header_nonce"]).into(),
        signature: s(n, &["signature"]).into(),
        serial: s(n, &["serial"]).into(),
        body: s(n, &["body"]).as_bytes().to_vec(),
    };
    (request, s(n, &["timestamp"]).parse().unwrap())
}

#[test]
fn a_signed_notification_opens_into_a_payment_event() {
    let (request, now) = notification();

    let event = open_notification(&account(), &request, now + 10).unwrap();

    assert_eq!((event.id.as_str(), event.event_type.as_str()), ("EV-018b2d5f-8f2b-4b1c", "TRANSACTION.SUCCESS"));
    let EventResource::Transaction(t) = event.resource else { panic!("not a transaction: {:?}", event.resource) };
    assert_eq!((t.out_trade_no.as_str(), t.trade_state), ("T0000001", TradeState::Success));
    assert_eq!((t.amount, t.payer_total), (Some(Money::from_fen(1000)), Some(Money::from_fen(900))));
    assert_eq!(t.success_time.unwrap().timestamp(), 1_700_000_000, "06:13:20+08:00 is 22:13:20 UTC the day before");
}

#[test]
fn a_notification_fails_with_a_typed_error_for_each_fault() {
    let (good, now) = notification();
    let mut tampered = good.clone();
    tampered.body[10] ^= 1;
    let mut probe = good.clone();
    probe.signature = format!("WECHATPAY/SIGNTEST/{}", good.signature);
    let mut unknown = good.clone();
    unknown.serial = "PUB_KEY_ID_OTHER".into();
    let mut wrong_key = account();
    wrong_key.api_v3_key = Secret::new("b".repeat(32));

    assert_eq!(open_notification(&account(), &tampered, now), Err(NotificationError::BadSignature));
    assert_eq!(open_notification(&account(), &probe, now), Err(NotificationError::Probe));
    assert_eq!(open_notification(&account(), &good, now + 300), Err(NotificationError::StaleTimestamp));
    assert_eq!(open_notification(&account(), &unknown, now), Err(NotificationError::UnknownSerial));
    assert_eq!(open_notification(&wrong_key, &good, now), Err(NotificationError::Undecryptable));
}

// --- key inspection -------------------------------------------------------------------------

fn now() -> atrium_kernel::Timestamp {
    chrono::DateTime::from_timestamp(1_775_016_000, 0).unwrap()
}

fn field(e: Error) -> (String, String) {
    match e {
        Error::Invalid(f) => (f[0].field.clone(), f[0].message.clone()),
        other => panic!("not a field error: {other:?}"),
    }
}

#[test]
fn a_key_and_its_certificate_share_a_fingerprint_and_the_serial_is_upper_case_hex() {
    let keys = OpensslMerchantKeys;
    let pkcs8 = keys.inspect_private_key(&Secret::new(fixture("merchant_key.pem"))).unwrap();
    let pkcs1 = keys.inspect_private_key(&Secret::new(fixture("merchant_key_pkcs1.pem"))).unwrap();
    let cert = keys.inspect_certificate(&fixture("merchant_cert.pem"), now()).unwrap();
    let other = keys.inspect_private_key(&Secret::new(fixture("other_key.pem"))).unwrap();

    assert_eq!(pkcs8, pkcs1);
    assert_eq!(pkcs8.bits, 2048);
    assert_eq!(cert.key_fingerprint, pkcs8.fingerprint);
    assert_ne!(other.fingerprint, cert.key_fingerprint);
    assert_eq!(cert.serial_no, s(&vectors(), &["merchant_serial"]));
    assert_eq!(cert.not_after.to_rfc3339(), "2036-01-01T00:00:00+00:00");
}

#[test]
fn short_keys_expired_certificates_and_non_pem_files_are_refused_naming_the_part() {
    let keys = OpensslMerchantKeys;
    let short = field(keys.inspect_private_key(&Secret::new(fixture("short_key.pem"))).unwrap_err());
    let short_cert = field(keys.inspect_certificate(&fixture("short_cert.pem"), now()).unwrap_err());
    let expired = field(keys.inspect_certificate(&fixture("expired_cert.pem"), now()).unwrap_err());
    let not_pem = field(keys.inspect_private_key(&Secret::new("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")).unwrap_err());
    let cert_as_key = field(keys.inspect_private_key(&Secret::new(fixture("merchant_cert.pem"))).unwrap_err());
    let junk_platform = field(keys.inspect_platform_key("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n").unwrap_err());

    assert_eq!(short.0, "private_key");
    assert!(short.1.contains("2048") && short.1.contains("1024"), "{}", short.1);
    assert_eq!(short_cert.0, "certificate");
    assert_eq!(expired, ("certificate".into(), "expired on 2021-01-01T00:00:00+00:00".into()));
    assert_eq!(not_pem, ("private_key".into(), "is not a PEM file".into()));
    assert_eq!(cert_as_key.0, "private_key");
    assert_eq!(junk_platform.0, "platform_public_key");
}

#[test]
fn a_platform_key_may_be_a_public_key_or_a_certificate() {
    let keys = OpensslMerchantKeys;
    let public = keys.inspect_platform_key(&fixture("platform_public.pem")).unwrap();
    let cert = keys.inspect_platform_key(&fixture("platform_cert.pem")).unwrap();
    assert_eq!(public.fingerprint, cert.fingerprint);
}

// --- trade bill -----------------------------------------------------------------------------

#[test]
fn the_trade_bill_fixture_matches_its_sha1_and_converts_yuan_to_fen_exactly() {
    let text = fixture("tradebill.csv");
    assert_eq!(sha1_hex(text.as_bytes()), s(&vectors(), &["bill_sha1"]));

    let lines = parse_trade_bill(&text).unwrap();

    assert_eq!(lines.len(), 4, "the summary is not a line");
    let amounts: Vec<(&str, BillTradeState, i64)> =
        lines.iter().map(|l| (l.out_trade_no.as_str(), l.trade_state, l.amount.fen())).collect();
    assert_eq!(
        amounts,
        [
            ("T_MATCH", BillTradeState::Success, 1000),
            ("T_CENTS", BillTradeState::Success, 1),
            ("T_MATCH", BillTradeState::Refund, 1000),
            ("T_BIG", BillTradeState::Success, 1_234_567_890),
        ]
    );
    let refund = lines[2].refund.as_ref().unwrap();
    assert_eq!((refund.out_refund_no.as_str(), refund.amount, refund.status.as_str()), ("R_MATCH", Money::from_fen(300), "SUCCESS"));
    assert!(lines[0].refund.is_none());
}
