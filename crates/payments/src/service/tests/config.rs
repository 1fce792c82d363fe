//! Which tenant, its payment configuration and keys, and the configuration test.
use super::*;

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
    repo.expect_put_config().times(1).returning(move |c, audit, _| {
        *keep.lock().unwrap() = audit.audit;
        Ok(c)
    });
    let svc = svc(repo, MockPayPlatform::new());
    let input = PaymentConfigPut {
        tenant_id: None,
        mode: None,
        mchid: Some(Mchid::parse("1900000109").unwrap()),
        appid: Some(Appid::parse("wx_mp").unwrap()),
        sub_mchid: None,
        sub_appid: None,
        api_v3_key: Some(ApiV3Key::parse(&"K".repeat(32)).unwrap()),
        enabled: None,
    };

    let view = svc.put_config(&tenant_actor(), input).await.unwrap();

    assert!(view.credentials.api_v3_key_set && !view.enabled);
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
    incomplete.credentials.platform_public_key = None;
    let mut repo = repo_with(Some(incomplete));
    repo.expect_put_config().never();
    let svc = svc(repo, MockPayPlatform::new());
    let input = PaymentConfigPut {
        tenant_id: None,
        mode: None,
        mchid: Some(Mchid::parse("1900000109").unwrap()),
        appid: Some(Appid::parse("wx_mp").unwrap()),
        sub_mchid: None,
        sub_appid: None,
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
    before.credentials.merchant_private_key = None;
    before.credentials.merchant_serial_no = None;
    before.credentials.merchant_key_fingerprint = None;
    let mut repo = repo_with(Some(before));
    repo.expect_put_config().times(1).returning(|c, _, _| Ok(c));
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().times(1).returning(|_| Ok(KeyInfo { fingerprint: "ff00".into(), bits: 2048 }));
    let expiry = now() + Duration::days(700);
    keys.expect_inspect_certificate()
        .with(mockall::predicate::always(), eq(now()))
        .times(1)
        .returning(move |_, _| Ok(cert_info("ff00", expiry)));
    let svc = service(repo, MockPayPlatform::new(), keys);

    let view = svc.upload_keys(&tenant_actor(), upload(true, true)).await.unwrap();

    assert_eq!(view.credentials.merchant_serial_no.as_deref(), Some("ABC123"));
    assert_eq!(view.credentials.merchant_cert_not_after, Some(expiry));
    assert_eq!(view.credentials.merchant_key_fingerprint.as_deref(), Some("ff00"));
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
    repo.expect_put_config().times(1).returning(move |c, _, _| {
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

    assert_eq!(
        (view.credentials.platform_public_key_id.as_deref(), view.credentials.platform_key_fingerprint.as_deref()),
        (Some("PUB_KEY_ID_NEW"), Some("99aa"))
    );
    let c = stored.lock().unwrap().clone().unwrap();
    assert_eq!(c.credentials.platform_public_key.as_deref(), Some("-----BEGIN PUBLIC KEY-----new"));
    assert_eq!(c.credentials.merchant_key_fingerprint.as_deref(), Some(FP), "the merchant key is untouched");
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
    expired.credentials.merchant_cert_not_after = Some(now() - Duration::days(1));
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
