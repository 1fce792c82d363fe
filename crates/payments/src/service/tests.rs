//! The payment use cases against mocked storage, pay platform and key inspector.
use crate::api::*;
use crate::config::PaymentSettings;
use crate::lifecycle::TradeState;
use crate::model::*;
use crate::ports::{MockMerchantKeys, MockPayPlatform, MockPaymentRepo, PayPlatformError};
use crate::service::{PaymentService, platform_error};
use atrium_kernel::RefundStatus;
use atrium_kernel::jobs::MockJobStore;
use atrium_kernel::{Actor, Error, FixedClock, Id, Money, Openid, Party, PayParams, Secret, Timestamp};
use chrono::{Duration, NaiveDate, TimeZone, Utc};
use mockall::predicate::eq;
use std::sync::{Arc, Mutex};

const TENANT: Id = 3;
const PARTNER: Id = 9;
const FP: &str = "ab12";

fn now() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 4, 1, 4, 0, 0).single().expect("valid")
}

fn tenant_actor() -> Actor {
    Actor::new(10, "s", Party::Tenant { tenant_id: TENANT, partner_id: Some(PARTNER) }, ["miniprogram:payment"])
}

fn platform_actor() -> Actor {
    Actor::new(1, "s", Party::Platform, ["*"])
}

/// A complete, enabled configuration.
fn config() -> PaymentConfig {
    let mut c = PaymentConfig::new(TENANT, "1900000109".into(), "wx_mp".into(), now() - Duration::days(30));
    c.merchant_serial_no = Some("5157F09EFDC096DE15EBE81A47057A7232F1B8E1".into());
    c.merchant_cert_not_after = Some(now() + Duration::days(365));
    c.merchant_private_key = Some(Secret::new("-----BEGIN PRIVATE KEY-----merchant"));
    c.merchant_key_fingerprint = Some(FP.into());
    c.api_v3_key = Some(Secret::new("k".repeat(32)));
    c.platform_public_key_id = Some("PUB_KEY_ID_0114232134912410000000000000000000".into());
    c.platform_public_key = Some("-----BEGIN PUBLIC KEY-----platform".into());
    c.platform_key_fingerprint = Some("cd34".into());
    c.enabled = true;
    c
}

fn tx(no: &str, state: TradeState) -> Transaction {
    Transaction {
        id: 5,
        tenant_id: TENANT,
        out_trade_no: no.into(),
        description: "Coffee".into(),
        amount: Money::from_fen(1000),
        openid: "o-ann".into(),
        attach: None,
        prepay_id: Some("wx201410272009395522657a690389285100".into()),
        trade_state: state,
        transaction_id: state.is_paid().then(|| "4200000001".into()),
        payer_total: state.is_paid().then_some(Money::from_fen(1000)),
        success_time: state.is_paid().then(|| now() - Duration::days(1)),
        expires_at: now() + Duration::hours(2),
        created_at: now() - Duration::days(1),
        updated_at: now() - Duration::days(1),
    }
}

fn refund(no: &str, amount: i64, status: RefundStatus) -> Refund {
    Refund {
        id: 7,
        tenant_id: TENANT,
        out_trade_no: "T0000001".into(),
        out_refund_no: no.into(),
        refund_id: None,
        amount: Money::from_fen(amount),
        status,
        reason: None,
        succeeded_at: None,
        created_at: now(),
        updated_at: now(),
    }
}

fn report(no: &str, state: TradeState) -> PlatformTransaction {
    PlatformTransaction {
        out_trade_no: no.into(),
        trade_state: state,
        transaction_id: state.is_paid().then(|| "4200000001".into()),
        amount: Some(Money::from_fen(1000)),
        payer_total: state.is_paid().then_some(Money::from_fen(900)),
        success_time: state.is_paid().then(now),
    }
}

fn refused(status: u16, code: &str) -> PayPlatformError {
    PayPlatformError::Refused { status, code: code.into(), message: "refused".into() }
}

fn pay_params(prepay_id: &str) -> PayParams {
    PayParams {
        app_id: "wx_mp".into(),
        time_stamp: "1775016000".into(),
        nonce_str: "n".into(),
        package: format!("prepay_id={prepay_id}"),
        sign_type: "RSA".into(),
        pay_sign: "sig".into(),
    }
}

/// A repository that sees the tenant and holds `config`.
fn repo_with(config: Option<PaymentConfig>) -> MockPaymentRepo {
    let mut repo = MockPaymentRepo::new();
    repo.expect_tenant().returning(|_, id| Ok((id == TENANT).then_some(PaymentTenant { id, partner_id: Some(PARTNER) })));
    repo.expect_get_config().returning(move |_| Ok(config.clone()));
    repo
}

/// A repository holding one transaction in memory, with conditional writes as the store
/// does them.
fn repo_holding(config: Option<PaymentConfig>, stored: Transaction) -> (MockPaymentRepo, Arc<Mutex<Transaction>>) {
    let mut repo = repo_with(config);
    let cell = Arc::new(Mutex::new(stored));
    let read = cell.clone();
    repo.expect_get_transaction().returning(move |_, no| {
        let t = read.lock().unwrap().clone();
        Ok((t.out_trade_no == no).then_some(t))
    });
    (repo, cell)
}

fn conditional_writes(repo: &mut MockPaymentRepo, cell: &Arc<Mutex<Transaction>>, times: usize) {
    let write = cell.clone();
    repo.expect_update_transaction().times(times).returning(move |t, read_state| {
        let mut stored = write.lock().unwrap();
        if stored.trade_state != read_state {
            return Ok(false);
        }
        *stored = t;
        Ok(true)
    });
}

/// A job queue that accepts every job.
fn jobs() -> MockJobStore {
    let mut jobs = MockJobStore::new();
    jobs.expect_enqueue().returning(|_| Ok(Some(1)));
    jobs
}

fn service(repo: MockPaymentRepo, platform: MockPayPlatform, keys: MockMerchantKeys) -> PaymentService {
    with_jobs(repo, platform, keys, jobs())
}

fn with_jobs(repo: MockPaymentRepo, platform: MockPayPlatform, keys: MockMerchantKeys, jobs: MockJobStore) -> PaymentService {
    PaymentService::new(
        Arc::new(repo),
        Arc::new(platform),
        Arc::new(keys),
        Arc::new(jobs),
        Arc::new(FixedClock::new(now())),
        PaymentSettings::new("https://atrium.example.com"),
    )
}

fn svc(repo: MockPaymentRepo, platform: MockPayPlatform) -> PaymentService {
    service(repo, platform, MockMerchantKeys::new())
}

fn order_request(no: Option<&str>) -> UnifiedOrderRequest {
    UnifiedOrderRequest {
        tenant_id: None,
        description: Description::parse("Coffee").unwrap(),
        amount: Money::from_fen(1000),
        openid: Openid::parse("o-ann").unwrap(),
        out_trade_no: no.map(|n| OutTradeNo::parse(n).unwrap()),
        attach: None,
        time_expire: None,
    }
}

fn refund_request(amount: i64, no: Option<&str>) -> RefundRequest {
    RefundRequest {
        tenant_id: None,
        out_trade_no: OutTradeNo::parse("T0000001").unwrap(),
        amount: Money::from_fen(amount),
        reason: None,
        out_refund_no: no.map(|n| OutRefundNo::parse(n).unwrap()),
    }
}

fn field_of(e: &Error) -> Vec<String> {
    match e {
        Error::Invalid(fields) | Error::Blocked(fields) => fields.iter().map(|f| f.field.clone()).collect(),
        _ => vec![],
    }
}

// --- which tenant ------------------------------------------------------------------------

#[tokio::test]
async fn a_platform_caller_must_name_the_tenant_and_an_unseen_tenant_is_not_found() {
    let mut repo = MockPaymentRepo::new();
    repo.expect_tenant().times(1).returning(|_, _| Ok(None));
    repo.expect_get_config().never();
    let svc = svc(repo, MockPayPlatform::new());

    let unnamed = svc.get_config(&platform_actor(), None).await.unwrap_err();
    let unseen = svc.get_config(&platform_actor(), Some(404)).await.unwrap_err();

    assert_eq!(field_of(&unnamed), ["tenant_id"]);
    assert!(matches!(unseen, Error::NoSuch(ref e) if e.field == "tenant_id"), "{unseen:?}");
}

#[tokio::test]
async fn a_tenant_without_configuration_gets_404() {
    let svc = svc(repo_with(None), MockPayPlatform::new());

    let err = svc.get_config(&tenant_actor(), None).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("payment configuration")), "{err:?}");
}

// --- configuration -----------------------------------------------------------------------

#[tokio::test]
async fn putting_a_first_configuration_stores_it_disabled_with_an_audit_record() {
    let mut repo = repo_with(None);
    let seen = Arc::new(Mutex::new(None));
    let keep = seen.clone();
    repo.expect_put_config().times(1).returning(move |c, audit| {
        *keep.lock().unwrap() = Some(audit);
        Ok(c)
    });
    let svc = svc(repo, MockPayPlatform::new());
    let input = PaymentConfigPut {
        tenant_id: None,
        mchid: Mchid::parse("1900000109").unwrap(),
        appid: Appid::parse("wx_mp").unwrap(),
        api_v3_key: Some(ApiV3Key::parse(&"K".repeat(32)).unwrap()),
        enabled: None,
    };

    let view = svc.put_config(&tenant_actor(), input).await.unwrap();

    assert!(view.api_v3_key_set && !view.enabled);
    assert_eq!(view.notify_url, "https://atrium.example.com/api/v1/miniprogram/payment/notify/3");
    let audit = seen.lock().unwrap().clone().unwrap();
    assert_eq!(audit.action, "payment_config.create");
    assert_eq!((audit.tenant_id, audit.partner_id), (Some(TENANT), Some(PARTNER)));
    assert!(!audit.after.unwrap().to_string().contains(&"K".repeat(32)), "the key never reaches the audit trail");
}

#[tokio::test]
async fn enabling_an_incomplete_configuration_is_rejected() {
    let mut incomplete = config();
    incomplete.enabled = false;
    incomplete.platform_public_key = None;
    let mut repo = repo_with(Some(incomplete));
    repo.expect_put_config().never();
    let svc = svc(repo, MockPayPlatform::new());
    let input = PaymentConfigPut {
        tenant_id: None,
        mchid: Mchid::parse("1900000109").unwrap(),
        appid: Appid::parse("wx_mp").unwrap(),
        api_v3_key: None,
        enabled: Some(true),
    };

    let err = svc.put_config(&tenant_actor(), input).await.unwrap_err();

    assert_eq!(field_of(&err), ["enabled"]);
    assert!(err.to_string().contains("platform_public_key"), "{err}");
}

fn cert_info(key_fingerprint: &str, not_after: Timestamp) -> CertInfo {
    CertInfo { serial_no: "ABC123".into(), not_after, key_fingerprint: key_fingerprint.into() }
}

fn upload(key: bool, cert: bool) -> KeyUpload {
    KeyUpload {
        tenant_id: None,
        private_key: key.then(|| Secret::new("-----BEGIN PRIVATE KEY-----new")),
        certificate: cert.then(|| "-----BEGIN CERTIFICATE-----new".to_owned()),
        platform_public_key: None,
        platform_public_key_id: None,
    }
}

#[tokio::test]
async fn a_key_and_certificate_that_belong_together_set_serial_expiry_and_fingerprint() {
    let mut before = config();
    before.merchant_private_key = None;
    before.merchant_serial_no = None;
    before.merchant_key_fingerprint = None;
    let mut repo = repo_with(Some(before));
    repo.expect_put_config().times(1).returning(|c, _| Ok(c));
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().times(1).returning(|_| Ok(KeyInfo { fingerprint: "ff00".into(), bits: 2048 }));
    let expiry = now() + Duration::days(700);
    keys.expect_inspect_certificate()
        .with(mockall::predicate::always(), eq(now()))
        .times(1)
        .returning(move |_, _| Ok(cert_info("ff00", expiry)));
    let svc = service(repo, MockPayPlatform::new(), keys);

    let view = svc.upload_keys(&tenant_actor(), upload(true, true)).await.unwrap();

    assert_eq!(view.merchant_serial_no.as_deref(), Some("ABC123"));
    assert_eq!(view.merchant_cert_not_after, Some(expiry));
    assert_eq!(view.merchant_key_fingerprint.as_deref(), Some("ff00"));
}

#[tokio::test]
async fn a_certificate_of_another_key_is_rejected_naming_the_certificate() {
    let mut repo = repo_with(Some(config()));
    repo.expect_put_config().never();
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().times(1).returning(|_| Ok(KeyInfo { fingerprint: "ff00".into(), bits: 2048 }));
    keys.expect_inspect_certificate().times(1).returning(|_, _| Ok(cert_info("0000", now() + Duration::days(9))));
    let svc = service(repo, MockPayPlatform::new(), keys);

    let err = svc.upload_keys(&tenant_actor(), upload(true, true)).await.unwrap_err();

    assert_eq!(field_of(&err), ["certificate"]);
    assert!(err.to_string().contains("does not belong to private_key"), "{err}");
}

#[tokio::test]
async fn an_expired_certificate_is_rejected_naming_the_certificate() {
    let mut repo = repo_with(Some(config()));
    repo.expect_put_config().never();
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_certificate().times(1).returning(|_, _| Ok(cert_info(FP, now() - Duration::seconds(1))));
    let svc = service(repo, MockPayPlatform::new(), keys);

    let err = svc.upload_keys(&tenant_actor(), upload(false, true)).await.unwrap_err();

    assert_eq!(field_of(&err), ["certificate"]);
    assert!(err.to_string().contains("expired"), "{err}");
}

#[tokio::test]
async fn a_key_uploaded_alone_must_belong_to_the_stored_certificate() {
    let mut repo = repo_with(Some(config()));
    repo.expect_put_config().never();
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().times(1).returning(|_| Ok(KeyInfo { fingerprint: "other".into(), bits: 4096 }));
    let svc = service(repo, MockPayPlatform::new(), keys);

    let err = svc.upload_keys(&tenant_actor(), upload(true, false)).await.unwrap_err();

    assert_eq!(field_of(&err), ["private_key"]);
}

#[tokio::test]
async fn every_unusable_part_is_named_in_one_answer() {
    let mut repo = repo_with(Some(config()));
    repo.expect_put_config().never();
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().times(1).returning(|_| Err(Error::invalid("private_key", "must be at least 2048 bits")));
    keys.expect_inspect_platform_key().times(1).returning(|_| Err(Error::invalid("platform_public_key", "is not PEM")));
    let svc = service(repo, MockPayPlatform::new(), keys);
    let input = KeyUpload {
        platform_public_key: Some("junk".into()),
        platform_public_key_id: Some(PlatformKeyId::parse("PUB_KEY_ID_1").unwrap()),
        ..upload(true, false)
    };

    let err = svc.upload_keys(&tenant_actor(), input).await.unwrap_err();

    assert_eq!(field_of(&err), ["private_key", "platform_public_key"]);
}

#[tokio::test]
async fn a_platform_key_needs_its_id_and_an_empty_upload_is_refused() {
    let mut repo = repo_with(Some(config()));
    repo.expect_put_config().never();
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_platform_key().never();
    let svc = service(repo, MockPayPlatform::new(), keys);
    let without_id = KeyUpload { platform_public_key: Some("-----BEGIN PUBLIC KEY-----".into()), ..upload(false, false) };

    let missing_id = svc.upload_keys(&tenant_actor(), without_id).await.unwrap_err();
    let nothing = svc.upload_keys(&tenant_actor(), upload(false, false)).await.unwrap_err();

    assert_eq!(field_of(&missing_id), ["platform_public_key_id"]);
    assert!(matches!(nothing, Error::BadRequest(_)), "{nothing:?}");
}

#[tokio::test]
async fn a_platform_key_with_its_id_is_stored_with_its_fingerprint() {
    let mut repo = repo_with(Some(config()));
    let stored = Arc::new(Mutex::new(None));
    let keep = stored.clone();
    repo.expect_put_config().times(1).returning(move |c, _| {
        *keep.lock().unwrap() = Some(c.clone());
        Ok(c)
    });
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_platform_key().times(1).returning(|_| Ok(KeyInfo { fingerprint: "99aa".into(), bits: 2048 }));
    let svc = service(repo, MockPayPlatform::new(), keys);
    let input = KeyUpload {
        platform_public_key: Some("-----BEGIN PUBLIC KEY-----new".into()),
        platform_public_key_id: Some(PlatformKeyId::parse("PUB_KEY_ID_NEW").unwrap()),
        ..upload(false, false)
    };

    let view = svc.upload_keys(&tenant_actor(), input).await.unwrap();

    assert_eq!((view.platform_public_key_id.as_deref(), view.platform_key_fingerprint.as_deref()), (Some("PUB_KEY_ID_NEW"), Some("99aa")));
    let c = stored.lock().unwrap().clone().unwrap();
    assert_eq!(c.platform_public_key.as_deref(), Some("-----BEGIN PUBLIC KEY-----new"));
    assert_eq!(c.merchant_key_fingerprint.as_deref(), Some(FP), "the merchant key is untouched");
}

// --- the test report -----------------------------------------------------------------------

#[tokio::test]
async fn the_test_passes_when_the_platform_answers_order_not_exist_to_a_signed_query() {
    let repo = repo_with(Some(config()));
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().times(1).returning(|_| Ok(KeyInfo { fingerprint: FP.into(), bits: 2048 }));
    let mut platform = MockPayPlatform::new();
    platform
        .expect_query_order()
        .withf(|_, no| no.starts_with("ATRIUMTEST") && OutTradeNo::parse(no).is_ok())
        .times(1)
        .returning(|_, _| Err(refused(404, "ORDER_NOT_EXIST")));
    let svc = service(repo, platform, keys);

    let report = svc.test(&tenant_actor(), None).await.unwrap();

    assert!(report.ok, "{report:?}");
    let names: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["config_complete", "key_matches_certificate", "certificate_not_expired", "platform_round_trip"]);
}

#[tokio::test]
async fn a_failing_check_is_a_report_not_an_error() {
    let mut expired = config();
    expired.merchant_cert_not_after = Some(now() - Duration::days(1));
    let repo = repo_with(Some(expired));
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().times(1).returning(|_| Ok(KeyInfo { fingerprint: FP.into(), bits: 2048 }));
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().times(1).returning(|_, _| Err(refused(401, "SIGN_ERROR")));
    let svc = service(repo, platform, keys);

    let report = svc.test(&tenant_actor(), None).await.unwrap();

    assert!(!report.ok);
    let failed: Vec<&str> = report.checks.iter().filter(|c| !c.ok).map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["certificate_not_expired", "platform_round_trip"]);
    assert!(report.checks[3].detail.contains("SIGN_ERROR"));
}

#[tokio::test]
async fn the_test_without_configuration_reports_it_and_calls_nobody() {
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().never();
    let svc = svc(repo_with(None), platform);

    let report = svc.test(&tenant_actor(), None).await.unwrap();

    assert!(!report.ok);
    assert_eq!(report.checks.len(), 1);
    assert_eq!(report.checks[0].name, "config_complete");
}

// --- unified order -------------------------------------------------------------------------

#[tokio::test]
async fn a_unified_order_stores_the_transaction_places_it_and_signs_pay_params() {
    let mut repo = repo_with(Some(config()));
    let cell: Arc<Mutex<Option<Transaction>>> = Arc::new(Mutex::new(None));
    let (ins, read, write) = (cell.clone(), cell.clone(), cell.clone());
    repo.expect_get_transaction().returning(move |_, _| Ok(read.lock().unwrap().clone()));
    repo.expect_insert_transaction().times(1).returning(move |mut t| {
        t.id = 5;
        *ins.lock().unwrap() = Some(t.clone());
        Ok(t)
    });
    repo.expect_update_transaction().times(1).returning(move |t, read_state| {
        assert_eq!(read_state, TradeState::NotPay);
        *write.lock().unwrap() = Some(t);
        Ok(true)
    });
    let mut platform = MockPayPlatform::new();
    platform
        .expect_jsapi_order()
        .withf(|account, order| {
            account.mchid == "1900000109"
                && order.notify_url == "https://atrium.example.com/api/v1/miniprogram/payment/notify/3"
                && order.amount == Money::from_fen(1000)
                && order.time_expire == now() + Duration::hours(2)
                && OutTradeNo::parse(&order.out_trade_no).is_ok()
        })
        .times(1)
        .returning(|_, _| Ok("prepay-1".into()));
    platform.expect_pay_params().with(mockall::predicate::always(), eq("prepay-1")).times(1).returning(|_, p| Ok(pay_params(p)));
    let svc = svc(repo, platform);

    let view = svc.unified_order(&tenant_actor(), order_request(None)).await.unwrap();

    assert_eq!(view.prepay_id, "prepay-1");
    assert_eq!(view.pay_params.package, "prepay_id=prepay-1");
    assert_eq!(view.out_trade_no.len(), 24, "a generated number");
    let stored = cell.lock().unwrap().clone().unwrap();
    assert_eq!((stored.trade_state, stored.prepay_id.as_deref()), (TradeState::NotPay, Some("prepay-1")));
}

#[tokio::test]
async fn the_same_order_again_returns_the_same_prepay_without_a_second_platform_order() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    repo.expect_insert_transaction().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().never();
    platform.expect_pay_params().times(1).returning(|_, p| Ok(pay_params(p)));
    let svc = svc(repo, platform);

    let view = svc.unified_order(&tenant_actor(), order_request(Some("T0000001"))).await.unwrap();

    assert_eq!(view.prepay_id, "wx201410272009395522657a690389285100");
}

#[tokio::test]
async fn a_paid_or_closed_number_is_never_reused_and_a_number_names_one_order() {
    for (state, amount, expect) in
        [(TradeState::Success, 1000, "SUCCESS"), (TradeState::Closed, 1000, "CLOSED"), (TradeState::NotPay, 999, "different order")]
    {
        let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", state));
        repo.expect_insert_transaction().never();
        let mut platform = MockPayPlatform::new();
        platform.expect_jsapi_order().never();
        let svc = svc(repo, platform);
        let input = UnifiedOrderRequest { amount: Money::from_fen(amount), ..order_request(Some("T0000001")) };

        let err = svc.unified_order(&tenant_actor(), input).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(ref m) if m.contains(expect)), "{state:?}: {err:?}");
    }
}

#[tokio::test]
async fn a_unified_order_needs_an_enabled_configuration_a_positive_amount_and_a_future_expiry() {
    let mut disabled = config();
    disabled.enabled = false;
    let mut repo = repo_with(Some(disabled));
    repo.expect_insert_transaction().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().never();
    let svc = svc(repo, platform);

    let off = svc.unified_order(&tenant_actor(), order_request(None)).await.unwrap_err();
    let zero = svc.unified_order(&tenant_actor(), UnifiedOrderRequest { amount: Money::ZERO, ..order_request(None) }).await.unwrap_err();
    let past =
        svc.unified_order(&tenant_actor(), UnifiedOrderRequest { time_expire: Some(now()), ..order_request(None) }).await.unwrap_err();
    let far = svc
        .unified_order(&tenant_actor(), UnifiedOrderRequest { time_expire: Some(now() + Duration::days(8)), ..order_request(None) })
        .await
        .unwrap_err();

    assert!(matches!(off, Error::Conflict(ref m) if m.contains("disabled")), "{off:?}");
    assert_eq!(field_of(&zero), ["amount"]);
    assert_eq!(field_of(&past), ["time_expire"]);
    assert_eq!(field_of(&far), ["time_expire"]);
}

#[tokio::test]
async fn a_platform_refusal_is_a_400_with_its_code_and_an_outage_a_502() {
    for (failure, check) in [
        (
            refused(400, "PARAM_ERROR"),
            (|e: &Error| matches!(e, Error::Invalid(f) if f[0].field == "pay_platform" && f[0].message.starts_with("PARAM_ERROR")))
                as fn(&Error) -> bool,
        ),
        (PayPlatformError::Unavailable("HTTP 503 after 3 attempts".into()), |e: &Error| matches!(e, Error::Upstream(_))),
    ] {
        let (mut repo, _) = repo_holding(Some(config()), Transaction { prepay_id: None, ..tx("T0000001", TradeState::NotPay) });
        repo.expect_update_transaction().never();
        let mut platform = MockPayPlatform::new();
        let f = failure.clone();
        platform.expect_jsapi_order().times(1).returning(move |_, _| Err(f.clone()));
        platform.expect_pay_params().never();
        let svc = svc(repo, platform);

        let err = svc.unified_order(&tenant_actor(), order_request(Some("T0000001"))).await.unwrap_err();

        assert!(check(&err), "{failure:?} became {err:?}");
    }
}

// --- query and close ---------------------------------------------------------------------------

#[tokio::test]
async fn a_query_records_the_payment_the_platform_reports() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform
        .expect_query_order()
        .with(mockall::predicate::always(), eq("T0000001"))
        .times(1)
        .returning(|_, no| Ok(report(no, TradeState::Success)));
    let svc = svc(repo, platform);

    let view =
        svc.query(&tenant_actor(), QueryRequest { tenant_id: None, out_trade_no: OutTradeNo::parse("T0000001").unwrap() }).await.unwrap();

    assert_eq!(view.trade_state, TradeState::Success);
    assert_eq!(
        (view.transaction_id.as_deref(), view.payer_total, view.success_time),
        (Some("4200000001"), Some(Money::from_fen(900)), Some(now()))
    );
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn a_late_unpaid_answer_after_a_payment_changes_nothing() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_update_transaction().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().times(1).returning(|_, no| Ok(report(no, TradeState::NotPay)));
    let svc = svc(repo, platform);

    let view =
        svc.query(&tenant_actor(), QueryRequest { tenant_id: None, out_trade_no: OutTradeNo::parse("T0000001").unwrap() }).await.unwrap();

    assert_eq!(view.trade_state, TradeState::Success);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn a_query_of_an_unknown_transaction_is_404_without_asking_the_platform() {
    let (repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().never();
    let svc = svc(repo, platform);

    let err = svc
        .query(&tenant_actor(), QueryRequest { tenant_id: None, out_trade_no: OutTradeNo::parse("T9999999").unwrap() })
        .await
        .unwrap_err();

    assert!(matches!(err, Error::NotFound("payment transaction")), "{err:?}");
}

#[tokio::test]
async fn a_write_that_loses_a_race_reads_again_and_keeps_the_furthest_state() {
    // The first conditional write finds that a notification already recorded the payment.
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    let write = cell.clone();
    let mut first = true;
    repo.expect_update_transaction().times(1).returning(move |_, _| {
        assert!(std::mem::take(&mut first), "written once: the second read finds nothing to change");
        write.lock().unwrap().trade_state = TradeState::Success;
        Ok(false)
    });
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().times(1).returning(|_, no| Ok(report(no, TradeState::UserPaying)));
    let svc = svc(repo, platform);

    let view =
        svc.query(&tenant_actor(), QueryRequest { tenant_id: None, out_trade_no: OutTradeNo::parse("T0000001").unwrap() }).await.unwrap();

    assert_eq!(view.trade_state, TradeState::Success);
}

fn close_request() -> CloseRequest {
    CloseRequest { tenant_id: None, out_trade_no: OutTradeNo::parse("T0000001").unwrap() }
}

#[tokio::test]
async fn closing_a_paid_transaction_is_409_without_asking_the_platform() {
    for state in [TradeState::Success, TradeState::Refund] {
        let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", state));
        repo.expect_update_transaction().never();
        let mut platform = MockPayPlatform::new();
        platform.expect_close_order().never();
        let svc = svc(repo, platform);

        let err = svc.close(&tenant_actor(), close_request()).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(ref m) if m.contains("paid")), "{err:?}");
    }
}

#[tokio::test]
async fn closing_an_unpaid_transaction_closes_it_once() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().times(1).returning(|_, _| Ok(()));
    let svc = svc(repo, platform);

    let first = svc.close(&tenant_actor(), close_request()).await.unwrap();
    let again = svc.close(&tenant_actor(), close_request()).await.unwrap();

    assert_eq!(first.trade_state, TradeState::Closed);
    assert_eq!(again.trade_state, TradeState::Closed);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Closed);
}

#[tokio::test]
async fn a_close_the_platform_refuses_as_paid_records_the_payment_and_is_409() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::UserPaying));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().times(1).returning(|_, _| Err(refused(400, "ORDERPAID")));
    platform.expect_query_order().times(1).returning(|_, no| Ok(report(no, TradeState::Success)));
    let svc = svc(repo, platform);

    let err = svc.close(&tenant_actor(), close_request()).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("paid meanwhile")), "{err:?}");
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

// --- refunds -------------------------------------------------------------------------------

#[tokio::test]
async fn a_refund_reserves_its_amount_then_asks_the_platform() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    let stored: Arc<Mutex<Option<Refund>>> = Arc::new(Mutex::new(None));
    let (keep, read, write) = (stored.clone(), stored.clone(), stored.clone());
    repo.expect_reserve_refund().with(mockall::predicate::always(), eq(Money::from_fen(1000)), eq(50)).times(1).returning(
        move |r, _, _| {
            assert_eq!(r.status, RefundStatus::Processing);
            *keep.lock().unwrap() = Some(r.clone());
            Ok(RefundReservation::Reserved(r))
        },
    );
    repo.expect_get_refund().returning(move |_, _| Ok(read.lock().unwrap().clone()));
    repo.expect_update_refund().times(1).returning(move |r, read_status| {
        assert_eq!(read_status, RefundStatus::Processing);
        *write.lock().unwrap() = Some(r);
        Ok(true)
    });
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|_, o| {
            o.out_refund_no == "R1"
                && o.amount == Money::from_fen(300)
                && o.total == Money::from_fen(1000)
                && o.notify_url.ends_with("/notify/3")
        })
        .times(1)
        .returning(|_, o| {
            Ok(PlatformRefund {
                out_refund_no: o.out_refund_no.clone(),
                out_trade_no: Some(o.out_trade_no.clone()),
                refund_id: Some("50000000382019052709732678859".into()),
                status: RefundStatus::Processing,
                amount: Some(o.amount),
                success_time: None,
            })
        });
    let svc = svc(repo, platform);

    let view = svc.refund(&tenant_actor(), refund_request(300, Some("R1"))).await.unwrap();

    assert_eq!((view.status, view.amount), (RefundStatus::Processing, Money::from_fen(300)));
    assert_eq!(stored.lock().unwrap().clone().unwrap().refund_id.as_deref(), Some("50000000382019052709732678859"));
}

#[tokio::test]
async fn only_a_paid_transaction_can_be_refunded() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    repo.expect_reserve_refund().never();
    let svc = svc(repo, MockPayPlatform::new());

    let err = svc.refund(&tenant_actor(), refund_request(100, None)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("NOTPAY")), "{err:?}");
}

#[tokio::test]
async fn a_refund_larger_than_the_payment_is_rejected_and_a_refund_of_nothing_too() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().never();
    let svc = svc(repo, MockPayPlatform::new());

    let over = svc.refund(&tenant_actor(), refund_request(1001, None)).await.unwrap_err();
    let zero = svc.refund(&tenant_actor(), refund_request(0, None)).await.unwrap_err();

    assert_eq!(field_of(&over), ["amount"]);
    assert_eq!(field_of(&zero), ["amount"]);
}

#[tokio::test]
async fn a_refund_larger_than_remaining_amount_is_rejected() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Refund));
    repo.expect_reserve_refund().times(1).returning(|_, _, _| Ok(RefundReservation::ExceedsPaid { refundable: Money::from_fen(200) }));
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(300, None)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("only 200 fen")), "{err:?}");
}

#[tokio::test]
async fn the_fifty_first_refund_is_rejected() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Refund));
    repo.expect_reserve_refund().times(1).returning(|_, _, max| {
        assert_eq!(max, 50);
        Ok(RefundReservation::TooManyRefunds)
    });
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(1, None)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("50 refunds")), "{err:?}");
}

#[tokio::test]
async fn no_refund_more_than_a_year_after_the_payment() {
    let old = Transaction { success_time: Some(now() - Duration::days(366)), ..tx("T0000001", TradeState::Success) };
    let (mut repo, _) = repo_holding(Some(config()), old);
    repo.expect_reserve_refund().never();
    let svc = svc(repo, MockPayPlatform::new());

    let err = svc.refund(&tenant_actor(), refund_request(100, None)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("365 days")), "{err:?}");
}

#[tokio::test]
async fn a_refund_the_platform_refuses_gives_its_amount_back() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().times(1).returning(|r, _, _| Ok(RefundReservation::Reserved(r)));
    repo.expect_get_refund().returning(|_, no| Ok(Some(refund(&no, 300, RefundStatus::Processing))));
    repo.expect_update_refund().times(1).returning(|r, read_status| {
        assert_eq!((read_status, r.status), (RefundStatus::Processing, RefundStatus::Failed));
        Ok(true)
    });
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().times(1).returning(|_, _| Err(refused(403, "NOT_ENOUGH")));
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(300, Some("R1"))).await.unwrap_err();

    assert!(matches!(err, Error::Blocked(ref f) if f[0].field == "pay_platform" && f[0].message.starts_with("NOT_ENOUGH")), "{err:?}");
}

#[tokio::test]
async fn a_refund_lost_to_an_outage_stays_processing_and_is_a_502() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().times(1).returning(|r, _, _| Ok(RefundReservation::Reserved(r)));
    repo.expect_update_refund().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().times(1).returning(|_, _| Err(PayPlatformError::Unavailable("time-out".into())));
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(300, Some("R1"))).await.unwrap_err();

    assert!(matches!(err, Error::Upstream(_)), "{err:?}");
}

#[tokio::test]
async fn a_refund_number_again_is_the_same_refund_and_never_a_different_one() {
    let mut settled = refund("R1", 300, RefundStatus::Succeeded);
    settled.refund_id = Some("5000".into());
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Refund));
    repo.expect_reserve_refund().times(2).returning(move |_, _, _| Ok(RefundReservation::Existing(settled.clone())));
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let same = svc.refund(&tenant_actor(), refund_request(300, Some("R1"))).await.unwrap();
    let other = svc.refund(&tenant_actor(), refund_request(200, Some("R1"))).await.unwrap_err();

    assert_eq!((same.status, same.refund_id.as_deref()), (RefundStatus::Succeeded, Some("5000")));
    assert!(matches!(other, Error::Conflict(ref m) if m.contains("different refund")), "{other:?}");
}

#[tokio::test]
async fn a_retried_refund_the_platform_never_acknowledged_is_sent_again_with_the_same_number() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().times(1).returning(|_, _, _| Ok(RefundReservation::Existing(refund("R1", 300, RefundStatus::Processing))));
    repo.expect_get_refund().returning(|_, no| Ok(Some(refund(&no, 300, RefundStatus::Processing))));
    repo.expect_update_refund().times(1).returning(|_, _| Ok(true));
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().withf(|_, o| o.out_refund_no == "R1").times(1).returning(|_, o| {
        Ok(PlatformRefund {
            out_refund_no: o.out_refund_no.clone(),
            out_trade_no: None,
            refund_id: Some("5001".into()),
            status: RefundStatus::Succeeded,
            amount: Some(o.amount),
            success_time: Some(now()),
        })
    });
    let svc = svc(repo, platform);

    let view = svc.refund(&tenant_actor(), refund_request(300, Some("R1"))).await.unwrap();

    assert_eq!((view.status, view.refund_id.as_deref()), (RefundStatus::Succeeded, Some("5001")));
}

// --- notifications ---------------------------------------------------------------------------

fn event(id: &str, resource: EventResource) -> PayEvent {
    PayEvent { id: id.into(), event_type: "TRANSACTION.SUCCESS".into(), resource }
}

#[tokio::test]
async fn the_same_event_twice_changes_nothing_the_second_time() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let (check, record) = (seen.clone(), seen.clone());
    repo.expect_notification_seen().times(2).returning(move |_, id| Ok(check.lock().unwrap().contains(&id)));
    repo.expect_record_notification().times(1).returning(move |_, id, _, _| {
        record.lock().unwrap().push(id);
        Ok(())
    });
    let svc = svc(repo, MockPayPlatform::new());
    let paid = event("EV-1", EventResource::Transaction(report("T0000001", TradeState::Success)));

    let first = svc.handle_event(TENANT, paid.clone()).await.unwrap();
    let second = svc.handle_event(TENANT, paid).await.unwrap();

    assert_eq!((first, second), (NotifyOutcome::Applied, NotifyOutcome::Duplicate));
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn a_late_closed_event_after_success_is_acknowledged_and_ignored() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_update_transaction().never();
    repo.expect_notification_seen().times(1).returning(|_, _| Ok(false));
    repo.expect_record_notification().times(1).returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());

    let outcome =
        svc.handle_event(TENANT, event("EV-2", EventResource::Transaction(report("T0000001", TradeState::Closed)))).await.unwrap();

    assert_eq!(outcome, NotifyOutcome::Stale);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn an_event_for_an_unknown_transaction_is_acknowledged() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    repo.expect_update_transaction().never();
    repo.expect_notification_seen().times(1).returning(|_, _| Ok(false));
    repo.expect_record_notification().times(1).returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());

    let outcome =
        svc.handle_event(TENANT, event("EV-3", EventResource::Transaction(report("T_ELSEWHERE", TradeState::Success)))).await.unwrap();

    assert_eq!(outcome, NotifyOutcome::Unknown);
}

#[tokio::test]
async fn a_refund_success_event_settles_a_processing_refund() {
    let mut repo = repo_with(Some(config()));
    repo.expect_notification_seen().times(1).returning(|_, _| Ok(false));
    repo.expect_get_refund().returning(|_, no| Ok(Some(refund(&no, 300, RefundStatus::Processing))));
    repo.expect_update_refund().times(1).returning(|r, read_status| {
        assert_eq!(read_status, RefundStatus::Processing);
        assert_eq!((r.status, r.succeeded_at, r.refund_id.as_deref()), (RefundStatus::Succeeded, Some(now()), Some("5002")));
        Ok(true)
    });
    repo.expect_record_notification()
        .with(eq(TENANT), eq("EV-4".to_owned()), eq("REFUND.SUCCESS".to_owned()), eq(now()))
        .times(1)
        .returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());
    let settled = PlatformRefund {
        out_refund_no: "R1".into(),
        out_trade_no: Some("T0000001".into()),
        refund_id: Some("5002".into()),
        status: RefundStatus::Succeeded,
        amount: Some(Money::from_fen(300)),
        success_time: Some(now()),
    };

    let outcome = svc
        .handle_event(TENANT, PayEvent { id: "EV-4".into(), event_type: "REFUND.SUCCESS".into(), resource: EventResource::Refund(settled) })
        .await
        .unwrap();

    assert_eq!(outcome, NotifyOutcome::Applied);
}

fn notification() -> NotificationRequest {
    NotificationRequest {
        timestamp: "1775016000".into(),
        nonce: "n".into(),
        signature: "sig".into(),
        serial: "PUB_KEY_ID_1".into(),
        body: b"{}".to_vec(),
    }
}

#[tokio::test]
async fn a_notification_that_fails_verification_changes_nothing() {
    let mut repo = repo_with(Some(config()));
    repo.expect_notification_seen().never();
    repo.expect_record_notification().never();
    let mut platform = MockPayPlatform::new();
    platform
        .expect_open_notification()
        .with(mockall::predicate::always(), eq(notification()), eq(now()))
        .times(1)
        .returning(|_, _, _| Err(NotificationError::BadSignature));
    let svc = svc(repo, platform);

    let err = svc.receive_notification(TENANT, notification()).await.unwrap_err();

    assert_eq!(err, NotificationError::BadSignature);
}

#[tokio::test]
async fn a_notification_for_a_tenant_without_keys_is_refused() {
    let mut platform = MockPayPlatform::new();
    platform.expect_open_notification().never();
    let svc = svc(repo_with(None), platform);

    let err = svc.receive_notification(TENANT, notification()).await.unwrap_err();

    assert_eq!(err, NotificationError::NotConfigured);
}

#[tokio::test]
async fn a_verified_notification_whose_effect_cannot_be_stored_asks_for_a_retry() {
    let mut repo = repo_with(Some(config()));
    repo.expect_notification_seen().times(1).returning(|_, _| Err(Error::Unavailable { message: "db".into(), retry_after_secs: 1 }));
    repo.expect_record_notification().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_open_notification().times(1).returning(|_, _, _| Ok(event("EV-5", EventResource::Other)));
    let svc = svc(repo, platform);

    let err = svc.receive_notification(TENANT, notification()).await.unwrap_err();

    assert_eq!(err, NotificationError::Unavailable);
}

// --- reconciliation -----------------------------------------------------------------------------

fn bill_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 3, 31).unwrap()
}

fn bill_line(no: &str, amount: i64, refund: Option<(&str, i64)>) -> BillLine {
    BillLine {
        transaction_id: format!("42{no}"),
        out_trade_no: no.into(),
        trade_state: if refund.is_some() { BillTradeState::Refund } else { BillTradeState::Success },
        amount: Money::from_fen(amount),
        refund: refund.map(|(r, a)| BillRefund {
            refund_id: format!("50{r}"),
            out_refund_no: r.into(),
            amount: Money::from_fen(a),
            status: "SUCCESS".into(),
        }),
    }
}

#[tokio::test]
async fn reconciliation_sorts_each_line_into_matched_missing_or_mismatched() {
    let mut repo = repo_with(Some(config()));
    let paid = |no: &str, fen: i64| Transaction { amount: Money::from_fen(fen), ..tx(no, TradeState::Success) };
    repo.expect_transactions_by_numbers()
        .withf(|t, nos| *t == TENANT && nos == &["T_MATCH", "T_LOST", "T_DIFF"])
        .times(1)
        .returning(move |_, _| Ok(vec![paid("T_MATCH", 1000), paid("T_DIFF", 999)]));
    // The CST day 2026-03-31 is [03-30 16:00, 03-31 16:00) UTC.
    let from = Utc.with_ymd_and_hms(2026, 3, 30, 16, 0, 0).single().unwrap();
    repo.expect_paid_between()
        .with(eq(TENANT), eq(from), eq(from + Duration::days(1)))
        .times(1)
        .returning(move |_, _, _| Ok(vec![paid("T_MATCH", 1000), paid("T_DIFF", 999), paid("T_OURS_ONLY", 500)]));
    repo.expect_refunds_by_numbers().times(1).returning(|_, _| Ok(vec![refund("R_MATCH", 300, RefundStatus::Succeeded)]));
    repo.expect_refunds_succeeded_between()
        .times(1)
        .returning(|_, _, _| Ok(vec![refund("R_MATCH", 300, RefundStatus::Succeeded), refund("R_OURS", 100, RefundStatus::Succeeded)]));
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().with(mockall::predicate::always(), eq(bill_day())).times(1).returning(|_, _| {
        Ok(vec![
            bill_line("T_MATCH", 1000, None),
            bill_line("T_LOST", 700, None),
            bill_line("T_DIFF", 1000, None),
            bill_line("T_MATCH", 1000, Some(("R_MATCH", 300))),
            bill_line("T_MATCH", 1000, Some(("R_LOST", 50))),
        ])
    });
    let svc = svc(repo, platform);

    let view = svc.reconcile(&tenant_actor(), None, bill_day()).await.unwrap();

    assert_eq!((view.bill_lines, view.matched), (5, 2));
    let lost: Vec<(&str, Option<&str>)> =
        view.missing_locally.iter().map(|i| (i.out_trade_no.as_str(), i.out_refund_no.as_deref())).collect();
    assert_eq!(lost, [("T_LOST", None), ("T_MATCH", Some("R_LOST"))]);
    let ours: Vec<(&str, Option<&str>)> =
        view.missing_on_platform.iter().map(|i| (i.out_trade_no.as_str(), i.out_refund_no.as_deref())).collect();
    assert_eq!(ours, [("T_OURS_ONLY", None), ("T0000001", Some("R_OURS"))]);
    assert_eq!(view.amount_mismatch.len(), 1);
    assert_eq!(
        (view.amount_mismatch[0].platform_amount, view.amount_mismatch[0].local_amount),
        (Money::from_fen(1000), Money::from_fen(999))
    );
}

#[tokio::test]
async fn reconciliation_is_for_a_past_day_within_three_months() {
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().never();
    let svc = svc(repo_with(Some(config())), platform);
    // now() is 2026-04-01 12:00 in China: 04-01 is today there.
    let today = NaiveDate::from_ymd_opt(2026, 4, 1).unwrap();

    let current = svc.reconcile(&tenant_actor(), None, today).await.unwrap_err();
    let ancient = svc.reconcile(&tenant_actor(), None, today - Duration::days(91)).await.unwrap_err();

    assert_eq!(field_of(&current), ["date"]);
    assert_eq!(field_of(&ancient), ["date"]);
}

// --- error mapping -------------------------------------------------------------------------------

#[test]
fn platform_failures_map_to_400_409_or_502_and_never_500() {
    assert!(
        matches!(platform_error(refused(400, "PARAM_ERROR")), Error::Invalid(ref f) if f[0].field == "pay_platform" && f[0].message.starts_with("PARAM_ERROR: "))
    );
    assert!(
        matches!(platform_error(refused(404, "ORDER_NOT_EXIST")), Error::Invalid(ref f) if f[0].message.starts_with("ORDER_NOT_EXIST"))
    );
    let blocked =
        |e: Error, code: &str| matches!(e, Error::Blocked(ref f) if f[0].field == "pay_platform" && f[0].message.starts_with(code));
    assert!(blocked(platform_error(refused(403, "RULE_LIMIT")), "RULE_LIMIT: "));
    assert!(blocked(platform_error(refused(429, "FREQUENCY_LIMITED")), "FREQUENCY_LIMITED: "));
    assert!(blocked(platform_error(refused(400, "ORDERPAID")), "ORDERPAID: "));
    assert!(matches!(platform_error(PayPlatformError::Unavailable("HTTP 500".into())), Error::Upstream(_)));
    assert!(matches!(platform_error(PayPlatformError::Credentials("bad PEM".into())), Error::Conflict(_)));
}

// ---- Jobs ----

use crate::service::{MAX_ATTEMPTS, RECONCILE, RECONCILE_DAY, SETTLE_REFUND, SETTLE_TRANSACTION};
use atrium_kernel::{Job, JobHandler, JobOutcome, NewJob};

fn job(kind: &str, payload: serde_json::Value, attempts: i32) -> Job {
    Job { id: 1, kind: kind.into(), tenant_id: Some(TENANT), payload, attempts, run_at: now() }
}

fn settle_tx_job(attempts: i32) -> Job {
    job(SETTLE_TRANSACTION, serde_json::json!({"out_trade_no": "T0000001"}), attempts)
}

fn settle_refund_job(attempts: i32) -> Job {
    job(SETTLE_REFUND, serde_json::json!({"out_refund_no": "R1"}), attempts)
}

/// An unpaid transaction that expired a minute ago.
fn expired(state: TradeState) -> Transaction {
    Transaction { expires_at: now() - Duration::minutes(1), ..tx("T0000001", state) }
}

/// Jobs that records what is queued.
fn recording_jobs() -> (MockJobStore, Arc<Mutex<Vec<NewJob>>>) {
    let queued = Arc::new(Mutex::new(Vec::new()));
    let mut jobs = MockJobStore::new();
    let q = queued.clone();
    jobs.expect_enqueue().returning(move |j| {
        q.lock().unwrap().push(j);
        Ok(Some(1))
    });
    (jobs, queued)
}

#[tokio::test]
async fn a_new_transaction_queues_its_settling_at_its_expiry_once() {
    let mut repo = repo_with(Some(config()));
    let cell: Arc<Mutex<Option<Transaction>>> = Arc::default();
    let (read, insert) = (cell.clone(), cell.clone());
    repo.expect_get_transaction().returning(move |_, _| Ok(read.lock().unwrap().clone()));
    repo.expect_insert_transaction().times(1).returning(move |t| {
        let t = Transaction { id: 5, ..t };
        *insert.lock().unwrap() = Some(t.clone());
        Ok(t)
    });
    repo.expect_update_transaction().returning(|_, _| Ok(true));
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().returning(|_, _| Ok("wx_prepay".into()));
    platform.expect_pay_params().returning(|_, p| Ok(pay_params(p)));
    let (jobs, queued) = recording_jobs();
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), jobs);

    svc.unified_order(&tenant_actor(), order_request(Some("T0000001"))).await.unwrap();

    let queued = queued.lock().unwrap().clone();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].kind, SETTLE_TRANSACTION);
    assert_eq!(queued[0].tenant_id, Some(TENANT));
    assert_eq!(queued[0].payload, serde_json::json!({"out_trade_no": "T0000001"}));
    assert_eq!(queued[0].run_at, now() + Duration::hours(2), "due at the default expiry");
    assert_eq!(queued[0].dedupe_key.as_deref(), Some("3:T0000001"));
}

#[tokio::test]
async fn a_settle_job_closes_a_transaction_still_unpaid_after_its_expiry() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().times(1).returning(|_, no| Ok(report(no, TradeState::NotPay)));
    platform.expect_close_order().withf(|_, no| no == "T0000001").times(1).returning(|_, _| Ok(()));
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&settle_tx_job(1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Closed);
}

#[tokio::test]
async fn a_settle_job_records_a_payment_whose_notification_was_lost() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().times(1).returning(|_, no| Ok(report(no, TradeState::Success)));
    platform.expect_close_order().never();
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&settle_tx_job(1)).await, JobOutcome::Done);
    let stored = cell.lock().unwrap().clone();
    assert_eq!((stored.trade_state, stored.transaction_id.as_deref()), (TradeState::Success, Some("4200000001")));
}

#[tokio::test]
async fn a_settle_job_leaves_a_settled_transaction_alone() {
    for state in [TradeState::Success, TradeState::Closed, TradeState::Refund] {
        let (repo, _) = repo_holding(Some(config()), expired(state));
        let mut platform = MockPayPlatform::new();
        platform.expect_query_order().never();
        assert_eq!(svc(repo, platform).run(&settle_tx_job(1)).await, JobOutcome::Done, "{state:?}");
    }
}

#[tokio::test]
async fn a_settle_job_backs_off_while_the_payer_pays_or_the_platform_is_down_then_gives_up() {
    let cases = [
        (1, Duration::minutes(1)),
        (2, Duration::minutes(5)),
        (3, Duration::minutes(10)),
        (4, Duration::minutes(30)),
        (9, Duration::minutes(30)),
    ];
    for (attempts, wait) in cases {
        let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
        conditional_writes(&mut repo, &cell, 1);
        let mut platform = MockPayPlatform::new();
        platform.expect_query_order().returning(|_, no| Ok(report(no, TradeState::UserPaying)));
        platform.expect_close_order().never();
        let outcome = svc(repo, platform).run(&settle_tx_job(attempts)).await;
        assert!(
            matches!(outcome, JobOutcome::Retry { at, ref reason } if at == now() + wait && reason.contains("still paying")),
            "{attempts}: {outcome:?}"
        );
    }
    let (repo, _) = repo_holding(Some(config()), expired(TradeState::NotPay));
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().returning(|_, _| Err(PayPlatformError::Unavailable("HTTP 503".into())));
    let svc = svc(repo, platform);
    let outcome = svc.run(&settle_tx_job(1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { ref reason, .. } if reason.contains("HTTP 503")), "{outcome:?}");
    let outcome = svc.run(&settle_tx_job(MAX_ATTEMPTS)).await;
    assert!(matches!(outcome, JobOutcome::Failed(ref m) if m.contains("given up") && m.contains("HTTP 503")), "{outcome:?}");
}

#[tokio::test]
async fn a_settle_job_closes_locally_an_order_the_platform_never_got() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().returning(|_, _| Err(refused(404, "ORDER_NOT_EXIST")));
    platform.expect_close_order().never();

    assert_eq!(svc(repo, platform).run(&settle_tx_job(1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Closed);
}

#[tokio::test]
async fn a_settle_job_paid_at_the_last_moment_tries_again() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().returning(|_, no| Ok(report(no, TradeState::NotPay)));
    platform.expect_close_order().returning(|_, _| Err(refused(400, "ORDERPAID")));

    let outcome = svc(repo, platform).run(&settle_tx_job(1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { ref reason, .. } if reason.contains("paid meanwhile")), "{outcome:?}");
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::NotPay, "the next query records the payment");
}

/// A repository holding one refund in memory with conditional writes, over a paid transaction.
fn repo_with_refund(status: RefundStatus) -> (MockPaymentRepo, Arc<Mutex<Refund>>) {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    let cell = Arc::new(Mutex::new(refund("R1", 300, status)));
    let read = cell.clone();
    repo.expect_get_refund().returning(move |_, no| {
        let r = read.lock().unwrap().clone();
        Ok((r.out_refund_no == no).then_some(r))
    });
    let write = cell.clone();
    repo.expect_update_refund().returning(move |r, read_status| {
        let mut stored = write.lock().unwrap();
        if stored.status != read_status {
            return Ok(false);
        }
        *stored = r;
        Ok(true)
    });
    (repo, cell)
}

fn refund_report(status: RefundStatus) -> PlatformRefund {
    PlatformRefund {
        out_refund_no: "R1".into(),
        out_trade_no: Some("T0000001".into()),
        refund_id: Some("50000000382019052709732678859".into()),
        status,
        amount: Some(Money::from_fen(300)),
        success_time: (status == RefundStatus::Succeeded).then(now),
    }
}

#[tokio::test]
async fn a_refund_queues_its_settling_a_minute_later() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().returning(|r, _, _| Ok(RefundReservation::Reserved(Refund { id: 7, ..r })));
    repo.expect_get_refund().returning(|_, no| Ok(Some(refund(&no, 300, RefundStatus::Processing))));
    repo.expect_update_refund().returning(|_, _| Ok(true));
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().returning(|_, _| Ok(refund_report(RefundStatus::Processing)));
    let (jobs, queued) = recording_jobs();
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), jobs);

    svc.refund(&tenant_actor(), refund_request(300, Some("R1"))).await.unwrap();

    let queued = queued.lock().unwrap().clone();
    assert_eq!(queued.len(), 1);
    assert_eq!((queued[0].kind.as_str(), queued[0].run_at), (SETTLE_REFUND, now() + Duration::minutes(1)));
    assert_eq!(queued[0].dedupe_key.as_deref(), Some("3:R1"));
}

#[tokio::test]
async fn a_refund_settle_job_queries_until_the_refund_settles() {
    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().times(1).returning(|_, _| Ok(refund_report(RefundStatus::Processing)));
    let outcome = svc(repo, platform).run(&settle_refund_job(2)).await;
    assert!(matches!(outcome, JobOutcome::Retry { at, .. } if at == now() + Duration::minutes(5)), "{outcome:?}");
    assert_eq!(cell.lock().unwrap().status, RefundStatus::Processing);

    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().times(1).returning(|_, _| Ok(refund_report(RefundStatus::Succeeded)));
    assert_eq!(svc(repo, platform).run(&settle_refund_job(3)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().status, RefundStatus::Succeeded);

    let (repo, _) = repo_with_refund(RefundStatus::Failed);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().never();
    assert_eq!(svc(repo, platform).run(&settle_refund_job(1)).await, JobOutcome::Done);
}

#[tokio::test]
async fn a_refund_the_platform_never_got_is_asked_again_under_its_number() {
    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().times(1).returning(|_, _| Err(refused(404, "RESOURCE_NOT_EXISTS")));
    platform
        .expect_refund()
        .withf(|_, r| r.out_refund_no == "R1" && r.amount == Money::from_fen(300) && r.total == Money::from_fen(1000))
        .times(1)
        .returning(|_, _| Ok(refund_report(RefundStatus::Processing)));
    let outcome = svc(repo, platform).run(&settle_refund_job(1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { .. }), "{outcome:?}");
    assert_eq!(cell.lock().unwrap().refund_id.as_deref(), Some("50000000382019052709732678859"));

    // Refused outright: the refund failed and its amount is free again.
    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().returning(|_, _| Err(refused(404, "RESOURCE_NOT_EXISTS")));
    platform.expect_refund().returning(|_, _| Err(refused(403, "NOT_ENOUGH")));
    assert_eq!(svc(repo, platform).run(&settle_refund_job(1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().status, RefundStatus::Failed);
}

#[tokio::test]
async fn the_daily_job_queues_each_active_tenants_reconciliation_and_the_next_day() {
    let mut repo = MockPaymentRepo::new();
    // The CST day 2026-03-31 is [03-30 16:00, 03-31 16:00) UTC.
    let from = Utc.with_ymd_and_hms(2026, 3, 30, 16, 0, 0).single().unwrap();
    repo.expect_tenants_with_activity().with(eq(from), eq(from + Duration::days(1))).times(1).returning(|_, _| Ok(vec![3, 4]));
    let (jobs, queued) = recording_jobs();
    let svc = with_jobs(repo, MockPayPlatform::new(), MockMerchantKeys::new(), jobs);
    let mut day = job(RECONCILE_DAY, serde_json::json!({"date": "2026-03-31"}), 1);
    day.tenant_id = None;

    assert_eq!(svc.run(&day).await, JobOutcome::Done);

    let queued = queued.lock().unwrap().clone();
    let summary: Vec<(&str, Option<Id>, Option<&str>)> =
        queued.iter().map(|j| (j.kind.as_str(), j.tenant_id, j.dedupe_key.as_deref())).collect();
    assert_eq!(
        summary,
        [(RECONCILE, Some(3), Some("3:2026-03-31")), (RECONCILE, Some(4), Some("4:2026-03-31")), (RECONCILE_DAY, None, Some("2026-04-01"))]
    );
    // The next day's run: 2026-04-02 10:30 CST.
    assert_eq!(queued[2].run_at, Utc.with_ymd_and_hms(2026, 4, 2, 2, 30, 0).single().unwrap());
    assert_eq!(queued[2].payload, serde_json::json!({"date": "2026-04-01"}));
}

#[tokio::test]
async fn scheduling_queues_the_first_morning_run_still_ahead() {
    // now() is 2026-04-01 12:00 CST, after this morning's run: tomorrow's reconciles today.
    let (jobs, queued) = recording_jobs();
    with_jobs(MockPaymentRepo::new(), MockPayPlatform::new(), MockMerchantKeys::new(), jobs).schedule_reconciliation().await.unwrap();
    let queued = queued.lock().unwrap().clone();
    assert_eq!((queued[0].kind.as_str(), queued[0].dedupe_key.as_deref()), (RECONCILE_DAY, Some("2026-04-01")));
    assert_eq!(queued[0].run_at, Utc.with_ymd_and_hms(2026, 4, 2, 2, 30, 0).single().unwrap());
}

#[tokio::test]
async fn the_reconciliation_job_settles_what_the_bill_proves() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T_LOST", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    repo.expect_transactions_by_numbers().returning(|_, _| Ok(vec![tx("T_LOST", TradeState::NotPay)]));
    repo.expect_paid_between().returning(|_, _, _| Ok(vec![]));
    repo.expect_refunds_succeeded_between().returning(|_, _, _| Ok(vec![]));
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().times(1).returning(|_, _| Ok(vec![bill_line("T_LOST", 1000, None), bill_line("T_UNKNOWN", 500, None)]));
    platform.expect_query_order().withf(|_, no| no == "T_LOST").times(1).returning(|_, no| Ok(report(no, TradeState::Success)));
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&job(RECONCILE, serde_json::json!({"date": "2026-03-31"}), 1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn a_reconciliation_the_platform_cannot_serve_runs_again() {
    let mut repo = repo_with(Some(config()));
    repo.expect_transactions_by_numbers().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().returning(|_, _| Err(PayPlatformError::Unavailable("timed out".into())));
    let outcome = svc(repo, platform).run(&job(RECONCILE, serde_json::json!({"date": "2026-03-31"}), 1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { ref reason, .. } if reason.contains("timed out")), "{outcome:?}");
}

#[tokio::test]
async fn an_unreadable_job_fails_for_good() {
    let svc = svc(MockPaymentRepo::new(), MockPayPlatform::new());
    let outcome = svc.run(&job(SETTLE_TRANSACTION, serde_json::json!({"nope": 1}), 1)).await;
    assert!(matches!(outcome, JobOutcome::Failed(ref m) if m.contains("unreadable")), "{outcome:?}");
    let outcome = svc.run(&job("payment.unknown", serde_json::json!({}), 1)).await;
    assert!(matches!(outcome, JobOutcome::Failed(_)), "{outcome:?}");
}

// ---- The observer ----

use crate::ports::MockPaymentObserver;

#[tokio::test]
async fn the_observer_hears_each_state_change_once_and_not_a_stale_report() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().returning(|_, _, _, _| Ok(()));
    let mut observer = MockPaymentObserver::new();
    observer
        .expect_transaction_changed()
        .withf(|t| t.trade_state == TradeState::Success && t.transaction_id.as_deref() == Some("4200000001"))
        .times(1)
        .returning(|_| Ok(()));
    let svc = svc(repo, MockPayPlatform::new()).with_observer(Arc::new(observer));

    let paid = svc.handle_event(TENANT, event("EV-1", EventResource::Transaction(report("T0000001", TradeState::Success)))).await.unwrap();
    let late = svc.handle_event(TENANT, event("EV-2", EventResource::Transaction(report("T0000001", TradeState::Closed)))).await.unwrap();

    assert_eq!((paid, late), (NotifyOutcome::Applied, NotifyOutcome::Stale));
}

#[tokio::test]
async fn a_failing_observer_does_not_undo_the_change() {
    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut observer = MockPaymentObserver::new();
    observer.expect_refund_changed().times(1).returning(|_| Err(Error::conflict("orders down")));
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().returning(|_, _| Ok(refund_report(RefundStatus::Succeeded)));
    let svc = svc(repo, platform).with_observer(Arc::new(observer));

    let view = svc.query_refund_for(TENANT, "R1").await.unwrap();

    assert_eq!(view.status, RefundStatus::Succeeded);
    assert_eq!(cell.lock().unwrap().status, RefundStatus::Succeeded);
}
