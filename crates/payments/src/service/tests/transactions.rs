//! Transactions through the payment routes: unified orders, queries and closes.
use super::*;

// --- unified order -------------------------------------------------------------------------

#[tokio::test]
async fn a_unified_order_stores_the_transaction_places_it_and_signs_pay_params() {
    // Stored (its number fixed) before the platform hears of it, then placed, then the prepay
    // kept, then signed: a sequence.
    let mut seq = Sequence::new();
    let mut repo = repo_with(Some(config()));
    let cell: Arc<Mutex<Option<Transaction>>> = Arc::new(Mutex::new(None));
    let (ins, read, write) = (cell.clone(), cell.clone(), cell.clone());
    repo.expect_get_transaction().returning(move |_, _| Ok(read.lock().unwrap().clone()));
    repo.expect_insert_transaction().times(1).in_sequence(&mut seq).returning(move |mut t, _| {
        t.id = 5;
        *ins.lock().unwrap() = Some(t.clone());
        Ok(t)
    });
    let mut platform = MockPayPlatform::new();
    let stored = cell.clone();
    platform
        .expect_jsapi_order()
        .withf(move |account, order| {
            account.mchid == "1900000109"
                && order.notify_url == "https://atrium.example.com/api/v1/miniprogram/payment/notify/3"
                && order.amount == Money::from_fen(1000)
                && order.openid == "o-ann"
                && order.time_expire == now() + Duration::hours(2)
                && stored.lock().unwrap().as_ref().is_some_and(|t| t.out_trade_no == order.out_trade_no)
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Ok("prepay-1".into()));
    repo.expect_update_transaction().times(1).in_sequence(&mut seq).returning(move |t, read_state, _, _| {
        assert_eq!(read_state, TradeState::NotPay);
        *write.lock().unwrap() = Some(t);
        Ok(true)
    });
    platform
        .expect_pay_params()
        .with(mockall::predicate::always(), eq("prepay-1"))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, p| Ok(pay_params(p)));
    let svc = svc(repo, platform);

    let view = svc.unified_order(&tenant_actor(), order_request(None), None).await.unwrap();

    assert_eq!(view.prepay_id, "prepay-1");
    assert_eq!(view.pay_params.package, "prepay_id=prepay-1");
    assert_eq!(view.out_trade_no.len(), 24, "a generated number");
    assert!(OutTradeNo::parse(&view.out_trade_no).is_ok(), "{}", view.out_trade_no);
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

    let view = svc.unified_order(&tenant_actor(), order_request(Some("T0000001")), None).await.unwrap();

    assert_eq!(view.prepay_id, "wx201410272009395522657a690389285100");
}

#[tokio::test]
async fn a_paid_or_closed_number_is_never_reused_and_a_number_names_one_order() {
    for (state, amount, expect) in
        [(TradeState::Success, 1000, "already paid"), (TradeState::Closed, 1000, "closed"), (TradeState::NotPay, 999, "different order")]
    {
        let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", state));
        repo.expect_insert_transaction().never();
        let mut platform = MockPayPlatform::new();
        platform.expect_jsapi_order().never();
        let svc = svc(repo, platform);
        let input = UnifiedOrderRequest { amount: Money::from_fen(amount), ..order_request(Some("T0000001")) };

        let err = svc.unified_order(&tenant_actor(), input, None).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(_, ref m) if m.contains(expect)), "{state:?}: {err:?}");
    }
}

#[tokio::test]
async fn a_unified_order_needs_an_enabled_configuration_a_positive_amount_and_a_future_expiry() {
    let mut disabled = config();
    disabled.enabled = false;
    let mut unconfigured = repo_with(None);
    unconfigured.expect_insert_transaction().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().never();
    let none = svc(unconfigured, platform).unified_order(&tenant_actor(), order_request(None), None).await.unwrap_err();
    let mut repo = repo_with(Some(disabled));
    repo.expect_insert_transaction().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().never();
    let svc = svc(repo, platform);

    let off = svc.unified_order(&tenant_actor(), order_request(None), None).await.unwrap_err();
    let zero =
        svc.unified_order(&tenant_actor(), UnifiedOrderRequest { amount: Money::ZERO, ..order_request(None) }, None).await.unwrap_err();
    let past = svc
        .unified_order(&tenant_actor(), UnifiedOrderRequest { time_expire: Some(now()), ..order_request(None) }, None)
        .await
        .unwrap_err();
    let far = svc
        .unified_order(&tenant_actor(), UnifiedOrderRequest { time_expire: Some(now() + Duration::days(8)), ..order_request(None) }, None)
        .await
        .unwrap_err();

    assert!(matches!(off, Error::Conflict(_, ref m) if m.contains("disabled")), "{off:?}");
    assert!(matches!(none, Error::Conflict(_, ref m) if m.contains("not configured")), "a state of the tenant, not a 404: {none:?}");
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

        let err = svc.unified_order(&tenant_actor(), order_request(Some("T0000001")), None).await.unwrap_err();

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
    repo.expect_update_transaction().times(1).returning(move |_, _, _, _| {
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

#[tokio::test]
async fn closing_a_paid_transaction_is_409_without_asking_the_platform() {
    for state in [TradeState::Success, TradeState::Refund] {
        let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", state));
        repo.expect_update_transaction().never();
        let mut platform = MockPayPlatform::new();
        platform.expect_close_order().never();
        let svc = svc(repo, platform);

        let err = svc.close(&tenant_actor(), close_request()).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("paid")), "{err:?}");
    }
}

#[tokio::test]
async fn closing_an_unpaid_transaction_closes_it_once() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().withf(|_, no| no == "T0000001").times(1).returning(|_, _| Ok(()));
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
    // Refused as paid, then asked what it holds, and that recorded: a sequence.
    let mut seq = Sequence::new();
    platform
        .expect_close_order()
        .withf(|_, no| no == "T0000001")
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Err(refused(400, "ORDERPAID")));
    platform
        .expect_query_order()
        .withf(|_, no| no == "T0000001")
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, no| Ok(report(no, TradeState::Success)));
    let svc = svc(repo, platform);

    let err = svc.close(&tenant_actor(), close_request()).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("paid meanwhile")), "{err:?}");
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

// --- an order's transaction, and numbers derived from the request ------------------------------

#[tokio::test]
async fn a_unified_order_with_the_number_of_an_orders_transaction_is_409_naming_the_order_without_asking_the_platform() {
    let ledger = Ledger::holding(vec![order_tx(TradeState::NotPay)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.inserts(&mut repo, 0);
    ledger.tx_writes(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().never();
    platform.expect_pay_params().never();
    let svc = svc(repo, platform);

    // The same details as the order's transaction: only the order stands in the way.
    let err = svc.unified_order(&tenant_actor(), order_request(Some(ORDER_NO)), None).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains(&format!("belongs to order {ORDER}"))), "{err:?}");
    assert_eq!(ledger.written(), []);
}

#[tokio::test]
async fn closing_an_orders_transaction_through_the_payment_routes_is_409_naming_the_order() {
    let ledger = Ledger::holding(vec![Transaction { order_id: Some(ORDER), ..tx("T0000001", TradeState::NotPay) }], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().never();
    platform.expect_query_order().never();
    let svc = svc(repo, platform);

    let err = svc.close(&tenant_actor(), close_request()).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains(&format!("belongs to order {ORDER}"))), "{err:?}");
    assert_eq!(ledger.tx("T0000001").map(|t| t.trade_state), Some(TradeState::NotPay));
}

#[tokio::test]
async fn a_unified_order_without_a_number_takes_one_derived_from_the_request_key_so_a_retry_is_the_same_order() {
    let key = request_key("POST /api/v1/miniprogram/payment/unified-order", "k-1");
    let expected = key.number(24);
    let ledger = Ledger::default();
    let mut repo = ledger.repo(Some(config()));
    ledger.inserts(&mut repo, 1);
    ledger.tx_writes(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    let placed = expected.clone();
    platform.expect_jsapi_order().withf(move |_, o| o.out_trade_no == placed).times(1).returning(|_, _| Ok("prepay-k".into()));
    platform.expect_pay_params().times(2).returning(|_, p| Ok(pay_params(p)));
    let svc = svc(repo, platform);

    let first = svc.unified_order(&tenant_actor(), order_request(None), Some(&key)).await.unwrap();
    let retry = svc.unified_order(&tenant_actor(), order_request(None), Some(&key)).await.unwrap();

    assert_eq!(first.out_trade_no, expected);
    assert_eq!(retry, first);
    assert_eq!(ledger.txs().len(), 1, "one transaction");
}
