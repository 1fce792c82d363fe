//! Service-provider mode: the platform's provider account, a tenant's sub-merchant
//! configuration and the switch between modes, and payments placed, settled and refunded
//! through the account they were made with.
use super::*;

pub(super) const SP_MCHID: &str = "1900000100";
pub(super) const SUB_MCHID: &str = "1900000201";

/// A complete, enabled provider account.
pub(super) fn provider() -> ProviderConfig {
    let mut p = ProviderConfig::new(SP_MCHID.into(), "wx_sp".into(), now() - Duration::days(30));
    p.credentials = MerchantCredentials {
        merchant_private_key: Some(Secret::new("-----BEGIN PRIVATE KEY-----provider")),
        api_v3_key: Some(Secret::new("p".repeat(32))),
        ..config().credentials
    };
    p.enabled = true;
    p
}

/// The tenant's [`config`] switched to sub-merchant [`SUB_MCHID`], paying in its own app.
pub(super) fn sub_config() -> PaymentConfig {
    PaymentConfig { mode: PaymentMode::SubMerchant, sub_mchid: Some(SUB_MCHID.into()), sub_appid: Some("wx_sub".into()), ..config() }
}

pub(super) fn with_provider(mut repo: MockPaymentRepo, provider: Option<ProviderConfig>) -> MockPaymentRepo {
    repo.expect_get_provider().returning(move || Ok(provider.clone()));
    repo
}

/// The tenant's partner has no share plan.
pub(super) fn no_plan(mut repo: MockPaymentRepo) -> MockPaymentRepo {
    repo.expect_share_plan().returning(|_| Ok(None));
    repo
}

/// A pay platform whose sub-merchants all allow `max_ratio` basis points.
pub(super) fn allowing(max_ratio: u32) -> MockPayPlatform {
    let mut platform = MockPayPlatform::new();
    platform.expect_max_ratio().returning(move |_| Ok(max_ratio));
    platform
}

pub(super) fn partner_actor() -> Actor {
    Actor::new(20, "s", Party::Partner { partner_id: PARTNER }, ["*"])
}

pub(super) fn provider_put() -> ProviderConfigPut {
    ProviderConfigPut {
        sp_mchid: Mchid::parse(SP_MCHID).unwrap(),
        sp_appid: Appid::parse("wx_sp").unwrap(),
        sp_name: Some(MerchantName::parse("Atrium Platform Ltd").unwrap()),
        api_v3_key: Some(ApiV3Key::parse(&"P".repeat(32)).unwrap()),
        platform_bp: Some(100),
        default_commission_bp: Some(200),
        enabled: None,
    }
}

pub(super) fn sub_put(sub_mchid: &str) -> PaymentConfigPut {
    PaymentConfigPut {
        tenant_id: None,
        mode: Some(PaymentMode::SubMerchant),
        mchid: None,
        appid: None,
        api_v3_key: None,
        sub_mchid: Some(Mchid::parse(sub_mchid).unwrap()),
        sub_appid: None,
        enabled: None,
    }
}

// --- the provider's account -------------------------------------------------------------------

#[tokio::test]
async fn only_platform_users_see_or_change_the_service_provider_account() {
    let mut repo = MockPaymentRepo::new();
    repo.expect_get_provider().never();
    repo.expect_put_provider().never();
    let svc = svc(repo, MockPayPlatform::new());

    for actor in [tenant_actor(), partner_actor()] {
        let errors = [
            svc.get_provider(&actor).await.unwrap_err(),
            svc.put_provider(&actor, provider_put()).await.unwrap_err(),
            svc.upload_provider_keys(&actor, KeyUpload::default()).await.unwrap_err(),
            svc.test_provider(&actor).await.unwrap_err(),
        ];

        for e in errors {
            assert!(matches!(e, Error::Forbidden(Reason::PartyNotAllowed, _)), "{e:?}");
        }
    }
}

#[tokio::test]
async fn rates_outside_0_to_10000_basis_points_are_refused_naming_the_field() {
    let mut repo = MockPaymentRepo::new();
    repo.expect_put_provider().never();
    let svc = svc(repo, MockPayPlatform::new());
    let input = ProviderConfigPut { platform_bp: Some(10_001), default_commission_bp: Some(-1), ..provider_put() };

    let err = svc.put_provider(&platform_actor(), input).await.unwrap_err();

    assert_eq!(field_of(&err), ["platform_bp", "default_commission_bp"]);
}

#[tokio::test]
async fn a_new_provider_account_is_stored_disabled_audited_and_shown_without_its_key() {
    let repo = with_provider(MockPaymentRepo::new(), None);
    let mut repo = repo;
    let seen = Arc::new(Mutex::new(None));
    let keep = seen.clone();
    repo.expect_put_provider().times(1).returning(move |c, audit| {
        *keep.lock().unwrap() = Some((c.clone(), audit.audit.expect("audited")));
        Ok(c)
    });
    let svc = svc(repo, MockPayPlatform::new());

    let view = svc.put_provider(&platform_actor(), provider_put()).await.unwrap();

    assert_eq!((view.sp_mchid.as_str(), view.platform_bp, view.default_commission_bp), (SP_MCHID, 100, 200));
    assert!(view.credentials.api_v3_key_set && !view.enabled);
    let (stored, audit) = seen.lock().unwrap().clone().unwrap();
    assert_eq!(stored.credentials.api_v3_key.as_ref().map(|k| k.expose().to_owned()), Some("P".repeat(32)));
    assert_eq!(audit.action, "pay_provider.create");
    let shown = format!("{} {}", serde_json::to_string(&view).unwrap(), audit.after.unwrap());
    assert!(!shown.contains(&"P".repeat(32)), "the key is never shown nor audited: {shown}");
}

#[tokio::test]
async fn the_providers_merchant_id_stays_while_tenants_collect_as_its_sub_merchants() {
    let tenants = |n: usize| {
        let mut repo = with_provider(MockPaymentRepo::new(), Some(provider()));
        let one = crate::sharing::SubMerchantTenant {
            tenant_id: TENANT,
            partner_id: Some(PARTNER),
            sub: SubMerchant { sub_mchid: SUB_MCHID.into(), sub_appid: None },
            plan: None,
        };
        repo.expect_sub_merchant_tenants().returning(move |_| Ok(vec![one.clone(); n]));
        repo
    };
    let moved = ProviderConfigPut { sp_mchid: Mchid::parse("1900000999").unwrap(), ..provider_put() };
    let mut refusing = tenants(1);
    refusing.expect_put_provider().never();

    let err = svc(refusing, MockPayPlatform::new()).put_provider(&platform_actor(), moved.clone()).await.unwrap_err();

    assert!(matches!(&err, Error::Conflict(Reason::State, m) if m.contains("1 tenants") && m.contains(SP_MCHID)), "{err:?}");
    let mut free = tenants(0);
    free.expect_put_provider().times(1).returning(|c, _| Ok(c));
    let view = svc(free, MockPayPlatform::new()).put_provider(&platform_actor(), moved).await.unwrap();
    assert_eq!(view.sp_mchid, "1900000999", "no sub-merchant: the account may move");
}

#[tokio::test]
async fn enabling_a_provider_account_without_its_keys_is_a_409_naming_them() {
    let mut repo = with_provider(MockPaymentRepo::new(), None);
    repo.expect_put_provider().never();
    let svc = svc(repo, MockPayPlatform::new());

    let err = svc.put_provider(&platform_actor(), ProviderConfigPut { enabled: Some(true), ..provider_put() }).await.unwrap_err();

    assert_eq!(field_of(&err), ["enabled"]);
    assert!(err.to_string().contains("private_key") && err.to_string().contains("certificate"), "{err}");
}

#[tokio::test]
async fn the_provider_test_queries_a_made_up_order_of_the_providers_own() {
    let repo = with_provider(MockPaymentRepo::new(), Some(provider()));
    let mut keys = MockMerchantKeys::new();
    keys.expect_inspect_private_key().returning(|_| Ok(KeyInfo { fingerprint: FP.into(), bits: 2048 }));
    let mut platform = MockPayPlatform::new();
    platform
        .expect_query_order()
        .withf(|account, no| account.mchid == SP_MCHID && account.sub_merchant.is_none() && no.starts_with("ATRIUMTEST"))
        .times(1)
        .returning(|_, _| Err(refused(404, "ORDER_NOT_EXIST")));
    let svc = service(repo, platform, keys);

    let report = svc.test_provider(&platform_actor()).await.unwrap();

    assert!(report.ok, "{report:?}");
    assert_eq!(report.checks.len(), 4);
}

// --- a tenant's mode --------------------------------------------------------------------------

#[tokio::test]
async fn a_tenant_cannot_become_a_sub_merchant_before_the_provider_is_set_up() {
    for provider in [None, Some(ProviderConfig { credentials: MerchantCredentials::default(), ..provider() })] {
        let mut repo = with_provider(repo_with(Some(config())), provider);
        repo.expect_put_config().never();
        let svc = svc(repo, MockPayPlatform::new());

        let err = svc.put_config(&tenant_actor(), sub_put(SUB_MCHID)).await.unwrap_err();

        assert!(matches!(err, Error::Blocked(Reason::PaymentsNotReady, _)), "{err:?}");
        assert_eq!(field_of(&err), ["mode"]);
    }
}

#[tokio::test]
async fn fields_of_the_other_mode_are_a_400_naming_them() {
    let mut repo = with_provider(repo_with(Some(config())), Some(provider()));
    repo.expect_put_config().never();
    let svc = svc(repo, MockPayPlatform::new());
    let sub_with_keys = PaymentConfigPut {
        mchid: Some(Mchid::parse("1900000109").unwrap()),
        api_v3_key: Some(ApiV3Key::parse(&"K".repeat(32)).unwrap()),
        ..sub_put(SUB_MCHID)
    };
    let direct_with_sub = PaymentConfigPut {
        mode: Some(PaymentMode::Direct),
        mchid: Some(Mchid::parse("1900000109").unwrap()),
        appid: Some(Appid::parse("wx_mp").unwrap()),
        ..sub_put(SUB_MCHID)
    };
    let sub_without_id = PaymentConfigPut { sub_mchid: None, ..sub_put(SUB_MCHID) };

    let errors = [
        svc.put_config(&tenant_actor(), sub_with_keys).await.unwrap_err(),
        svc.put_config(&tenant_actor(), direct_with_sub).await.unwrap_err(),
        svc.put_config(&tenant_actor(), sub_without_id).await.unwrap_err(),
    ];

    assert_eq!(errors.iter().map(field_of).collect::<Vec<_>>(), [vec!["mchid", "api_v3_key"], vec!["sub_mchid"], vec!["sub_mchid"]]);
    assert!(errors.iter().all(|e| matches!(e, Error::Invalid(_))), "{errors:?}");
}

#[tokio::test]
async fn switching_mode_keeps_the_direct_account_and_asks_the_store_to_check_nothing_is_in_flight() {
    let mut repo = no_plan(with_provider(repo_with(Some(config())), Some(provider())));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    repo.expect_put_config().times(1).returning(move |c, audit, settled_first| {
        keep.lock().unwrap().push((c.clone(), audit.audit.expect("audited").action, settled_first));
        Ok(c)
    });
    let svc = svc(repo, allowing(3000));

    let view = svc.put_config(&tenant_actor(), sub_put(SUB_MCHID)).await.unwrap();

    assert_eq!((view.mode, view.sub_mchid.as_deref(), view.mchid.as_str()), (PaymentMode::SubMerchant, Some(SUB_MCHID), "1900000109"));
    let (stored, action, settled_first) = seen.lock().unwrap()[0].clone();
    assert!(settled_first, "a switch is written only if every payment and refund is final");
    assert_eq!(action, "payment_config.switch_mode");
    assert_eq!(stored.credentials, config().credentials, "the direct account's keys are kept for its earlier payments");
}

#[tokio::test]
async fn an_update_within_the_mode_does_not_wait_for_payments_to_settle() {
    let mut repo = no_plan(with_provider(repo_with(Some(sub_config())), Some(provider())));
    repo.expect_put_config().times(1).withf(|_, _, settled_first| !settled_first).returning(|c, _, _| Ok(c));
    let svc = svc(repo, allowing(3000));

    let view = svc.put_config(&tenant_actor(), PaymentConfigPut { mode: None, ..sub_put("1900000202") }).await.unwrap();

    assert_eq!(view.sub_mchid.as_deref(), Some("1900000202"));
}

// --- payments through the provider -------------------------------------------------------------

#[tokio::test]
async fn a_sub_merchant_places_through_the_provider_and_its_transaction_keeps_the_sub_merchant() {
    let mut repo = with_provider(repo_with(Some(sub_config())), Some(provider()));
    let cell: Arc<Mutex<Option<Transaction>>> = Arc::new(Mutex::new(None));
    let (ins, read, write) = (cell.clone(), cell.clone(), cell.clone());
    repo.expect_get_transaction().returning(move |_, _| Ok(read.lock().unwrap().clone()));
    repo.expect_insert_transaction().times(1).returning(move |mut t, _| {
        t.id = 5;
        *ins.lock().unwrap() = Some(t.clone());
        Ok(t)
    });
    repo.expect_update_transaction().times(1).returning(move |t, _, _, _| {
        *write.lock().unwrap() = Some(t);
        Ok(true)
    });
    let through_provider = |account: &MerchantAccount| {
        account.mchid == SP_MCHID
            && account.appid == "wx_sp"
            && account.sub_merchant == Some(SubMerchant { sub_mchid: SUB_MCHID.into(), sub_appid: Some("wx_sub".into()) })
            && account.api_v3_key.expose() == "p".repeat(32)
    };
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().withf(move |a, _| through_provider(a)).times(1).returning(|_, _| Ok("prepay-1".into()));
    platform.expect_pay_params().withf(move |a, _| through_provider(a)).times(1).returning(|_, p| Ok(pay_params(p)));
    let svc = svc(repo, platform);

    svc.unified_order(&tenant_actor(), order_request(Some("T0000001")), None).await.unwrap();

    assert_eq!(cell.lock().unwrap().clone().unwrap().sub_mchid.as_deref(), Some(SUB_MCHID));
}

#[tokio::test]
async fn a_disabled_provider_places_no_new_payment() {
    let mut repo = with_provider(repo_with(Some(sub_config())), Some(ProviderConfig { enabled: false, ..provider() }));
    repo.expect_insert_transaction().never();
    let svc = svc(repo, MockPayPlatform::new());

    let err = svc.unified_order(&tenant_actor(), order_request(Some("T0000001")), None).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(Reason::PaymentsNotReady, ref m) if m.contains("disabled")), "{err:?}");
}

#[tokio::test]
async fn a_payment_made_before_the_switch_is_refunded_through_the_account_it_was_made_with() {
    let (mut repo, _) = repo_holding(Some(sub_config()), tx("T0000001", TradeState::Success));
    let repo_ = &mut repo;
    repo_.expect_get_provider().returning(|| Ok(Some(provider())));
    let cell: Arc<Mutex<Option<Refund>>> = Arc::new(Mutex::new(None));
    let (reserve, read, write) = (cell.clone(), cell.clone(), cell.clone());
    repo_.expect_reserve_refund().times(1).returning(move |r, _, _| {
        let r = Refund { id: 7, ..r };
        *reserve.lock().unwrap() = Some(r.clone());
        Ok(RefundReservation::Reserved(r))
    });
    repo_.expect_get_refund().returning(move |_, _| Ok(read.lock().unwrap().clone()));
    repo_.expect_update_refund().returning(move |r, _, _| {
        *write.lock().unwrap() = Some(r);
        Ok(true)
    });
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|account, _| account.mchid == "1900000109" && account.sub_merchant.is_none())
        .times(1)
        .returning(|_, o| Ok(PlatformRefund { out_refund_no: o.out_refund_no.clone(), ..refund_report(RefundStatus::Processing) }));
    let svc = svc(repo, platform);

    let refund = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap();

    assert_eq!(refund.status, RefundStatus::Processing);
}

#[tokio::test]
async fn a_sub_merchants_payment_is_queried_through_the_provider_even_after_a_switch_back() {
    let placed = Transaction { sub_mchid: Some(SUB_MCHID.into()), ..tx("T0000001", TradeState::NotPay) };
    let back_to_direct = PaymentConfig { mode: PaymentMode::Direct, ..sub_config() };
    let (mut repo, cell) = repo_holding(Some(back_to_direct), placed);
    repo.expect_get_provider().returning(|| Ok(Some(provider())));
    conditional_writes(&mut repo, &cell, 1);
    // Paid just now: not shared yet.
    repo.expect_sharing().times(1).returning(|_| Ok(None));
    let mut platform = MockPayPlatform::new();
    platform
        .expect_query_order()
        .withf(|account, _| account.mchid == SP_MCHID && account.sub_merchant.as_ref().is_some_and(|s| s.sub_mchid == SUB_MCHID))
        .times(1)
        .returning(|_, no| Ok(PlatformTransaction { sub_mchid: Some(SUB_MCHID.into()), ..report(no, TradeState::Success) }));
    let svc = svc(repo, platform);

    let view = svc.query(&tenant_actor(), QueryRequest { tenant_id: None, out_trade_no: OutTradeNo::parse("T0000001").unwrap() }).await;

    let view = view.unwrap();
    assert_eq!(view.trade_state, TradeState::Success);
    assert_eq!(view.shares, [], "its shares, none yet");
}

// --- notifications -----------------------------------------------------------------------------

#[tokio::test]
async fn a_sub_merchants_notification_is_opened_with_the_providers_keys_first() {
    let placed = Transaction { sub_mchid: Some(SUB_MCHID.into()), ..tx("T0000001", TradeState::NotPay) };
    let (mut repo, cell) = repo_holding(Some(sub_config()), placed);
    repo.expect_get_provider().returning(|| Ok(Some(provider())));
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().times(1).returning(|_, _, _, _| Ok(()));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_open_notification().withf(|account, _, _| account.sub_merchant.is_some()).times(1).returning(|_, _, _| {
        let paid = PlatformTransaction { sub_mchid: Some(SUB_MCHID.into()), ..report("T0000001", TradeState::Success) };
        Ok(event("EV-1", EventResource::Transaction(paid)))
    });
    let svc = svc(repo, platform);
    let request = NotificationRequest { timestamp: "1".into(), nonce: "n".into(), signature: "s".into(), serial: "k".into(), body: vec![] };

    let outcome = svc.receive_notification(TENANT, request).await.unwrap();

    assert_eq!(outcome, NotifyOutcome::Applied);
    assert!(cell.lock().unwrap().is_paid());
}

#[tokio::test]
async fn a_notification_naming_another_merchant_than_the_payments_changes_nothing() {
    let placed = Transaction { sub_mchid: Some(SUB_MCHID.into()), ..tx("T0000001", TradeState::NotPay) };
    for reported in [Some("1900000999"), None] {
        let (mut repo, cell) = repo_holding(Some(sub_config()), placed.clone());
        repo.expect_notification_seen().returning(|_, _| Ok(false));
        repo.expect_record_notification().times(1).returning(|_, _, _, _| Ok(()));
        repo.expect_update_transaction().never();
        let svc = svc(repo, MockPayPlatform::new());
        let paid = PlatformTransaction { sub_mchid: reported.map(str::to_owned), ..report("T0000001", TradeState::Success) };

        let outcome = svc.handle_event(TENANT, event("EV-1", EventResource::Transaction(paid))).await.unwrap();

        assert_eq!(outcome, NotifyOutcome::Unknown, "{reported:?}");
        assert!(!cell.lock().unwrap().is_paid());
    }
}

#[tokio::test]
async fn a_refund_notification_naming_another_sub_merchant_changes_nothing() {
    let placed = Transaction { sub_mchid: Some(SUB_MCHID.into()), ..tx("T0000001", TradeState::Success) };
    for (reported, applied) in [(Some("1900000999"), false), (Some(SUB_MCHID), true)] {
        let (mut repo, _) = repo_holding(Some(sub_config()), placed.clone());
        let cell = Arc::new(Mutex::new(refund("R1", 300, RefundStatus::Processing)));
        let (read, write) = (cell.clone(), cell.clone());
        repo.expect_get_refund().returning(move |_, _| Ok(Some(read.lock().unwrap().clone())));
        repo.expect_update_refund().times(usize::from(applied)).returning(move |r, _, _| {
            *write.lock().unwrap() = r;
            Ok(true)
        });
        repo.expect_notification_seen().returning(|_, _| Ok(false));
        repo.expect_record_notification().times(1).returning(|_, _, _, _| Ok(()));
        let svc = svc(repo, MockPayPlatform::new());
        let settled = PlatformRefund { sub_mchid: reported.map(str::to_owned), ..refund_report(RefundStatus::Succeeded) };

        let outcome = svc.handle_event(TENANT, event("EV-R", EventResource::Refund(settled))).await.unwrap();

        let want = if applied { NotifyOutcome::Applied } else { NotifyOutcome::Unknown };
        assert_eq!(outcome, want, "{reported:?}");
        assert_eq!(cell.lock().unwrap().status == RefundStatus::Succeeded, applied);
    }
}
