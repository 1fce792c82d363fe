//! The order-facing use cases (through the server), and the order event that every change of
//! an order's money carries in its own write.
use super::*;
use crate::discrepancies::{Discrepancy, DiscrepancyKind, DiscrepancyStatus, ResolveAction};

fn charge() -> Charge {
    Charge {
        order_id: ORDER,
        out_trade_no: ORDER_NO.into(),
        description: "Coffee".into(),
        amount: Money::from_fen(1000),
        openid: "o-ann".into(),
        expires_at: now() + Duration::minutes(30),
        audit: order_audit("order.pay"),
    }
}

fn offline_charge(reference: &str) -> OfflineCharge {
    OfflineCharge {
        order_id: ORDER,
        order_no: ORDER_NO.into(),
        description: "Coffee".into(),
        amount: Money::from_fen(1000),
        reference: reference.into(),
        recorded_by: 10,
        audit: order_audit("order.pay_offline"),
    }
}

fn order_refund(no: &str, fen: i64) -> RefundCharge {
    RefundCharge {
        order_id: ORDER,
        out_refund_no: no.into(),
        amount: Money::from_fen(fen),
        reason: Some("returned".into()),
        requested_by: Some(10),
        audit: order_audit("order.refund"),
    }
}

// --- order events of changes through notifications and queries --------------------------------

#[tokio::test]
async fn a_change_of_an_orders_transaction_carries_one_order_event_and_a_stale_report_none() {
    let (mut repo, cell) = repo_holding(Some(config()), order_tx(TradeState::NotPay));
    let effects = conditional_writes(&mut repo, &cell, 1);
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().returning(|_, _, _, _| Ok(()));
    let svc = with_jobs(repo, MockPayPlatform::new(), MockMerchantKeys::new(), no_queued_jobs());

    let paid = svc.handle_event(TENANT, event("EV-1", EventResource::Transaction(report(ORDER_NO, TradeState::Success)))).await.unwrap();
    let late = svc.handle_event(TENANT, event("EV-2", EventResource::Transaction(report(ORDER_NO, TradeState::Closed)))).await.unwrap();

    assert_eq!((paid, late), (NotifyOutcome::Applied, NotifyOutcome::Stale));
    let stored = cell.lock().unwrap().clone();
    assert_eq!((stored.trade_state, stored.transaction_id.as_deref()), (TradeState::Success, Some("4200000001")));
    assert_eq!(*effects.lock().unwrap(), [Effects { jobs: vec![order_changed(ORDER)], audit: None, events: Vec::new() }]);
}

#[tokio::test]
async fn a_change_of_a_transaction_of_the_payment_routes_carries_no_order_event() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    let effects = conditional_writes(&mut repo, &cell, 1);
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());

    svc.handle_event(TENANT, event("EV-1", EventResource::Transaction(report("T0000001", TradeState::Success)))).await.unwrap();

    assert_eq!(*effects.lock().unwrap(), [Effects::default()]);
}

#[tokio::test]
async fn a_refund_of_an_order_settled_by_a_query_carries_the_order_event_in_the_same_write() {
    let processing = Refund { out_trade_no: ORDER_NO.into(), order_id: Some(ORDER), ..refund("R1", 300, RefundStatus::Processing) };
    let ledger = Ledger::holding(vec![order_tx(TradeState::Success)], vec![processing]);
    let mut repo = ledger.repo(Some(config()));
    ledger.refund_writes(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().withf(|_, no| no == "R1").times(1).returning(|_, _| Ok(refund_report(RefundStatus::Succeeded)));
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), no_queued_jobs());

    let job = Job {
        id: 1,
        kind: crate::SETTLE_REFUND.into(),
        tenant_id: Some(TENANT),
        payload: serde_json::json!({ "out_refund_no": "R1" }),
        attempts: 1,
        run_at: now(),
    };
    let outcome = svc.run(&job).await;

    assert_eq!(outcome, JobOutcome::Done);
    let written = ledger.written();
    assert_eq!(ledger.writes(), [("update_refund", "R1".to_owned())]);
    assert_eq!(written[0].effects, Effects { jobs: vec![order_changed(ORDER)], audit: None, events: Vec::new() });
    assert_eq!(ledger.refunds()[0].status, RefundStatus::Succeeded);
}

// --- charge_order ----------------------------------------------------------------------------

#[tokio::test]
async fn charging_an_order_stores_its_transaction_with_the_settle_job_the_order_event_and_the_audit_in_one_write() {
    // Stored with its settle job first, so a crash after the platform placed the order still
    // settles it; then placed; then the prepay kept; then signed: a sequence.
    let mut seq = Sequence::new();
    let ledger = Ledger::default();
    let mut repo = ledger.repo(Some(config()));
    ledger.inserts(&mut repo, 1).in_sequence(&mut seq);
    let mut platform = MockPayPlatform::new();
    platform
        .expect_jsapi_order()
        .withf(|_, o| {
            o.out_trade_no == ORDER_NO
                && o.amount == Money::from_fen(1000)
                && o.openid == "o-ann"
                && o.time_expire == now() + Duration::minutes(30)
                && o.notify_url.ends_with("/notify/3")
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Ok("prepay-o".into()));
    ledger.tx_writes(&mut repo, 1).in_sequence(&mut seq);
    platform
        .expect_pay_params()
        .with(mockall::predicate::always(), eq("prepay-o"))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, p| Ok(pay_params(p)));
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), no_queued_jobs());

    let params = svc.charge_order(TENANT, charge()).await.unwrap();

    assert_eq!(params.package, "prepay_id=prepay-o");
    let stored = ledger.tx(ORDER_NO).unwrap();
    assert_eq!(
        (stored.order_id, stored.method, stored.trade_state, stored.prepay_id.as_deref()),
        (Some(ORDER), PaymentMethod::WechatJsapi, TradeState::NotPay, Some("prepay-o"))
    );
    let written = ledger.written();
    assert_eq!(written[0].op, "insert_transaction");
    assert_jobs(&written[0].effects, &[settle_transaction_job(ORDER_NO, now() + Duration::minutes(30)), order_changed(ORDER)]);
    assert_eq!(written[0].effects.audit, Some(order_audit("order.pay")));
}

#[tokio::test]
async fn charging_an_order_again_resumes_its_platform_payment_without_a_second_transaction() {
    let ledger = Ledger::default();
    let mut repo = ledger.repo(Some(config()));
    ledger.inserts(&mut repo, 1);
    ledger.tx_writes(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().withf(|_, o| o.out_trade_no == ORDER_NO).times(1).returning(|_, _| Ok("prepay-o".into()));
    platform.expect_pay_params().with(mockall::predicate::always(), eq("prepay-o")).times(2).returning(|_, p| Ok(pay_params(p)));
    let svc = svc(repo, platform);

    let first = svc.charge_order(TENANT, charge()).await.unwrap();
    let again = svc.charge_order(TENANT, charge()).await.unwrap();

    assert_eq!(again, first, "the same prepay");
    assert_eq!(ledger.txs().len(), 1);
    assert_eq!(ledger.writes(), [("insert_transaction", ORDER_NO.to_owned()), ("update_transaction", ORDER_NO.to_owned())]);
}

#[tokio::test]
async fn charging_an_order_of_a_tenant_without_payments_configured_is_409_and_stores_nothing() {
    let ledger = Ledger::default();
    let mut repo = ledger.repo(None);
    ledger.inserts(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().never();
    let svc = svc(repo, platform);

    let err = svc.charge_order(TENANT, charge()).await.unwrap_err();

    // The order is there; the tenant's state stops it (a 404 would say the order is not).
    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("not configured")), "{err:?}");
}

#[tokio::test]
async fn an_order_being_paid_by_another_payer_is_409_without_asking_the_platform() {
    let ledger = Ledger::holding(vec![order_tx(TradeState::NotPay)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.inserts(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().never();
    platform.expect_pay_params().never();
    let svc = svc(repo, platform);

    let err = svc.charge_order(TENANT, Charge { openid: "o-bob".into(), ..charge() }).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("another payer")), "{err:?}");
}

// --- charge_order_offline ------------------------------------------------------------------------

#[tokio::test]
async fn recording_an_offline_payment_closes_the_orders_open_platform_payment_first() {
    // Closed on the platform, then closed here, then the offline payment recorded: a sequence.
    let mut seq = Sequence::new();
    let ledger = Ledger::holding(vec![order_tx(TradeState::NotPay)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().withf(|_, no| no == ORDER_NO).times(1).in_sequence(&mut seq).returning(|_, _| Ok(()));
    ledger.tx_writes(&mut repo, 1).in_sequence(&mut seq);
    ledger.inserts(&mut repo, 1).in_sequence(&mut seq);
    platform.expect_query_order().never();
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), no_queued_jobs());

    svc.charge_order_offline(TENANT, offline_charge("BANK-20260401-1")).await.unwrap();

    assert_eq!(ledger.tx(ORDER_NO).map(|t| t.trade_state), Some(TradeState::Closed));
    let offline = ledger.tx(&offline_trade_no(ORDER_NO)).unwrap();
    assert!(offline.is_paid());
    assert_eq!(
        (offline.order_id, offline.method, offline.trade_state, offline.reference.as_deref(), offline.paid_by),
        (Some(ORDER), PaymentMethod::Offline, TradeState::Success, Some("BANK-20260401-1"), Some(10))
    );
    assert_eq!(
        (offline.amount, offline.payer_total, offline.success_time),
        (Money::from_fen(1000), Some(Money::from_fen(1000)), Some(now()))
    );
    let offline_no = offline_trade_no(ORDER_NO);
    assert_eq!(ledger.writes(), [("update_transaction", ORDER_NO.to_owned()), ("insert_transaction", offline_no)], "closed first");
    let written = ledger.written();
    assert_eq!(written[0].effects, Effects { jobs: vec![order_changed(ORDER)], audit: None, events: Vec::new() });
    assert_eq!(
        written[1].effects,
        Effects { jobs: vec![order_changed(ORDER)], audit: Some(order_audit("order.pay_offline")), events: Vec::new() }
    );
}

#[tokio::test]
async fn an_offline_payment_while_the_platform_order_may_still_be_placed_is_409_and_closes_nothing() {
    // Arrange: a platform payment stored half a minute ago, its placing not answered yet.
    let placing = Transaction { prepay_id: None, created_at: now() - Duration::seconds(30), ..order_tx(TradeState::NotPay) };
    let ledger = Ledger::holding(vec![placing], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 0);
    ledger.inserts(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().never();
    let svc = svc(repo, platform);

    // Act
    let err = svc.charge_order_offline(TENANT, offline_charge("BANK-20260401-1")).await.unwrap_err();

    // Assert: a close now could come before the order reaches the platform, and leave it payable.
    assert!(matches!(&err, Error::Conflict(_, m) if m.contains("being started")), "{err:?}");
    assert_eq!(ledger.tx(ORDER_NO).map(|t| t.trade_state), Some(TradeState::NotPay));
    assert!(ledger.writes().is_empty());
}

#[tokio::test]
async fn an_offline_payment_closes_a_platform_payment_left_unplaced_past_the_placing_window() {
    // Arrange: stored three minutes ago and never answered (its request died).
    let abandoned = Transaction { prepay_id: None, created_at: now() - Duration::minutes(3), ..order_tx(TradeState::NotPay) };
    let ledger = Ledger::holding(vec![abandoned], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 1);
    ledger.inserts(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().withf(|_, no| no == ORDER_NO).times(1).returning(|_, _| Err(refused(404, "ORDER_NOT_EXIST")));
    let svc = svc(repo, platform);

    // Act
    svc.charge_order_offline(TENANT, offline_charge("BANK-20260401-1")).await.unwrap();

    // Assert
    assert_eq!(ledger.tx(ORDER_NO).map(|t| t.trade_state), Some(TradeState::Closed));
    assert!(ledger.tx(&offline_trade_no(ORDER_NO)).is_some_and(|t| t.is_paid()));
}

#[tokio::test]
async fn an_offline_payment_of_an_order_paid_on_the_platform_meanwhile_is_409_and_the_payment_is_recorded() {
    let ledger = Ledger::holding(vec![order_tx(TradeState::UserPaying)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 1);
    ledger.inserts(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    // Asked to close, refused as paid, then asked what it holds: a sequence.
    let mut seq = Sequence::new();
    platform
        .expect_close_order()
        .withf(|_, no| no == ORDER_NO)
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Err(refused(400, "ORDERPAID")));
    platform
        .expect_query_order()
        .withf(|_, no| no == ORDER_NO)
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, no| Ok(report(no, TradeState::Success)));
    let svc = svc(repo, platform);

    let err = svc.charge_order_offline(TENANT, offline_charge("BANK-20260401-1")).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("paid on the pay platform meanwhile")), "{err:?}");
    let stored = ledger.tx(ORDER_NO).unwrap();
    assert!(stored.is_paid());
    assert_eq!(stored.transaction_id.as_deref(), Some("4200000001"));
    assert_eq!(ledger.txs().len(), 1, "no offline payment");
    assert_eq!(ledger.written()[0].effects.jobs, [order_changed(ORDER)]);
}

#[tokio::test]
async fn a_retried_offline_payment_with_the_same_reference_is_ok_without_a_second_insert() {
    let ledger = Ledger::default();
    let mut repo = ledger.repo(Some(config()));
    ledger.inserts(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().never();
    platform.expect_query_order().never();
    let svc = svc(repo, platform);

    svc.charge_order_offline(TENANT, offline_charge("BANK-20260401-1")).await.unwrap();
    svc.charge_order_offline(TENANT, offline_charge("BANK-20260401-1")).await.unwrap();
    let other = svc.charge_order_offline(TENANT, offline_charge("BANK-20260401-2")).await.unwrap_err();

    assert_eq!(ledger.txs().len(), 1);
    assert!(matches!(other, Error::Conflict(_, ref m) if m.contains("already paid offline")), "{other:?}");
}

// --- refund_order --------------------------------------------------------------------------------

#[tokio::test]
async fn refunding_an_offline_payment_reserves_a_succeeded_refund_and_never_calls_the_platform() {
    let ledger = Ledger::holding(vec![order_tx(TradeState::Closed), offline_tx()], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 2);
    ledger.refund_writes(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    platform.expect_query_refund().never();
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), no_queued_jobs());

    let refund = svc.refund_order(TENANT, order_refund("OR1", 400)).await.unwrap();
    let again = svc.refund_order(TENANT, order_refund("OR1", 400)).await.unwrap();

    assert_eq!(
        (refund.status, refund.succeeded_at, refund.order_id, refund.out_trade_no.as_str(), refund.amount),
        (RefundStatus::Succeeded, Some(now()), Some(ORDER), offline_trade_no(ORDER_NO).as_str(), Money::from_fen(400))
    );
    assert_eq!(refund.requested_by, Some(10), "who asked is kept with the refund");
    assert_eq!(again, refund, "a retry is the same refund");
    let written = ledger.written();
    assert_eq!(ledger.writes(), [("reserve_refund", "OR1".to_owned())], "reserved once");
    assert_eq!(
        written[0].effects,
        Effects { jobs: vec![order_changed(ORDER)], audit: Some(order_audit("order.refund")), events: Vec::new() },
        "nothing to settle"
    );
}

#[tokio::test]
async fn refunding_an_orders_platform_payment_reserves_it_with_its_settling_and_the_order_event_then_asks_the_platform() {
    // Reserved with its settle job and the order's event, then asked of the platform, then
    // its answer kept: a sequence.
    let mut seq = Sequence::new();
    let ledger = Ledger::holding(vec![order_tx(TradeState::Success)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 1).in_sequence(&mut seq);
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|_, o| {
            o.out_trade_no == ORDER_NO
                && o.out_refund_no == "OR1"
                && o.amount == Money::from_fen(400)
                && o.total == Money::from_fen(1000)
                && o.reason.as_deref() == Some("returned")
                && o.notify_url.ends_with("/notify/3")
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, o| Ok(PlatformRefund { out_refund_no: o.out_refund_no.clone(), ..refund_report(RefundStatus::Processing) }));
    ledger.refund_writes(&mut repo, 1).in_sequence(&mut seq);
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), no_queued_jobs());

    let refund = svc.refund_order(TENANT, order_refund("OR1", 400)).await.unwrap();

    assert_eq!((refund.status, refund.order_id), (RefundStatus::Processing, Some(ORDER)));
    let written = ledger.written();
    assert_eq!(written[0].op, "reserve_refund");
    assert_jobs(&written[0].effects, &[order_changed(ORDER), settle_refund_job_for("OR1")]);
    assert_eq!(written[0].effects.audit, Some(order_audit("order.refund")));
    assert_eq!(ledger.writes(), [("reserve_refund", "OR1".to_owned()), ("update_refund", "OR1".to_owned())]);
}

#[tokio::test]
async fn refunding_an_order_whose_payment_is_not_paid_is_409_and_reserves_nothing() {
    for state in [TradeState::NotPay, TradeState::Closed] {
        let ledger = Ledger::holding(vec![order_tx(state)], vec![]);
        let mut repo = ledger.repo(Some(config()));
        ledger.reservations(&mut repo, 0);
        let mut platform = MockPayPlatform::new();
        platform.expect_refund().never();
        let svc = svc(repo, platform);

        let err = svc.refund_order(TENANT, order_refund("OR1", 400)).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("not paid")), "{state:?}: {err:?}");
    }
}

// --- close_order and order_money -------------------------------------------------------------------

#[tokio::test]
async fn closing_an_order_closes_its_open_platform_payment_with_the_order_event() {
    let ledger = Ledger::holding(vec![order_tx(TradeState::NotPay)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_close_order().withf(|_, no| no == ORDER_NO).times(1).returning(|_, _| Ok(()));
    let svc = svc(repo, platform);

    svc.close_order(TENANT, ORDER).await.unwrap();

    assert_eq!(ledger.tx(ORDER_NO).map(|t| t.trade_state), Some(TradeState::Closed));
    assert_eq!(ledger.written()[0].effects, Effects { jobs: vec![order_changed(ORDER)], audit: None, events: Vec::new() });
}

#[tokio::test]
async fn closing_an_order_that_is_paid_closed_or_without_payment_asks_nobody() {
    for held in [vec![order_tx(TradeState::Success)], vec![order_tx(TradeState::Closed)], vec![]] {
        let ledger = Ledger::holding(held, vec![]);
        let mut repo = ledger.repo(Some(config()));
        ledger.tx_writes(&mut repo, 0);
        let mut platform = MockPayPlatform::new();
        platform.expect_close_order().never();
        platform.expect_query_order().never();

        svc(repo, platform).close_order(TENANT, ORDER).await.unwrap();
    }
}

#[tokio::test]
async fn an_orders_money_is_its_live_transaction_with_that_transactions_refunds() {
    let of_offline =
        Refund { out_trade_no: offline_trade_no(ORDER_NO), order_id: Some(ORDER), ..refund("OR1", 400, RefundStatus::Succeeded) };
    let elsewhere = refund("R1", 300, RefundStatus::Succeeded);
    let ledger = Ledger::holding(
        vec![order_tx(TradeState::Closed), offline_tx(), tx("T0000001", TradeState::Success)],
        vec![elsewhere, of_offline.clone()],
    );
    let repo = ledger.repo(Some(config()));
    let svc = svc(repo, MockPayPlatform::new());

    let money = svc.order_money(TENANT, ORDER).await.unwrap();
    let none = svc.order_money(TENANT, ORDER + 1).await.unwrap();

    assert_eq!(money, OrderMoney { payment: Some(offline_tx().as_order_payment()), refunds: vec![of_offline.as_order_refund().unwrap()] });
    assert_eq!(none, OrderMoney::default());
}

#[tokio::test]
async fn the_refunds_of_several_orders_are_those_of_each_named_order_of_its_named_tenant() {
    // Two orders' refunds and one of the payment routes; the second order is named with
    // another tenant than its own.
    let of = |no: &str, order_id| Refund { order_id: Some(order_id), ..refund(no, 100, RefundStatus::Succeeded) };
    let (first, second) = (of("OR1", ORDER), of("OR2", ORDER + 1));
    let ledger = Ledger::holding(vec![], vec![refund("R1", 300, RefundStatus::Succeeded), second.clone(), first.clone()]);
    let svc = svc(ledger.repo(Some(config())), MockPayPlatform::new());

    let both = svc.refunds(vec![(TENANT, ORDER), (TENANT, ORDER + 1)]).await.unwrap();
    let misnamed = svc.refunds(vec![(TENANT, ORDER), (TENANT + 1, ORDER + 1)]).await.unwrap();

    let numbers = |rs: &[OrderRefund]| rs.iter().map(|r| r.out_refund_no.clone()).collect::<Vec<_>>();
    assert_eq!(numbers(&both), ["OR1", "OR2"], "by order, none of the payment routes'");
    assert_eq!(numbers(&misnamed), ["OR1"], "an order named with another tenant shows nothing");
    assert!(svc.refunds(vec![]).await.unwrap().is_empty());
}

#[test]
fn an_orders_payment_and_refunds_read_in_the_contracts_words() {
    use atrium_kernel::pay::{LedgerPayment, PaymentState};
    let paid = order_tx(TradeState::Success);
    let as_paid = paid.as_order_payment();
    assert_eq!(
        as_paid,
        LedgerPayment {
            method: PaymentMethod::WechatJsapi,
            out_trade_no: Some(ORDER_NO.into()),
            amount: paid.amount,
            openid: Some(paid.openid.clone()),
            state: PaymentState::Paid { transaction_id: paid.transaction_id.clone(), paid_at: paid.success_time.unwrap() },
            reference: None,
            paid_by: None,
            sub_merchant: false,
        }
    );
    let for_sub_merchant = Transaction { sub_mchid: Some("1900000201".into()), ..paid.clone() };
    assert!(for_sub_merchant.as_order_payment().sub_merchant, "a payment placed for a sub-merchant says so");
    let mismatched = Transaction { discrepancy: Some("another amount".into()), ..paid.clone() };
    assert_eq!(mismatched.as_order_payment().state, PaymentState::Discrepancy("another amount".into()), "a discrepancy is never paid");
    assert_eq!(order_tx(TradeState::Closed).as_order_payment().state, PaymentState::Closed);
    assert_eq!(order_tx(TradeState::NotPay).as_order_payment().state, PaymentState::Unpaid);
    let offline = offline_tx().as_order_payment();
    assert_eq!((offline.method, offline.out_trade_no, offline.openid), (PaymentMethod::Offline, None, None), "no platform number");

    let settled = Refund { order_id: Some(ORDER), requested_by: Some(10), ..refund("OR1", 400, RefundStatus::Closed) };
    let shown = settled.as_order_refund().unwrap();
    assert_eq!((shown.order_id, shown.requested_by, shown.settled_at), (ORDER, Some(10), Some(settled.updated_at)));
    assert_eq!(refund("R1", 1, RefundStatus::Succeeded).as_order_refund(), None, "a refund of the payment routes is no order's");
}

#[tokio::test]
async fn a_closed_platform_payment_reported_paid_after_the_order_was_paid_offline_is_kept_as_a_discrepancy() {
    // Arrange: the platform payment was closed for the offline one; then the payer's money
    // arrives on the platform after all.
    let ledger = Ledger::holding(vec![order_tx(TradeState::Closed), offline_tx()], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 1);
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().returning(|_, _, _, _| Ok(()));
    repo.expect_discrepancies_of().returning(|_| Ok(vec![]));
    let svc = svc(repo, MockPayPlatform::new());

    // Act
    let outcome = svc
        .handle_event(
            TENANT,
            PayEvent {
                id: "EV-9".into(),
                event_type: "TRANSACTION.SUCCESS".into(),
                resource: EventResource::Transaction(report(ORDER_NO, TradeState::Success)),
            },
        )
        .await
        .unwrap();

    // Assert: still closed, not a second live payment of the order; recorded and audited.
    assert_eq!(outcome, NotifyOutcome::Applied);
    let tx = ledger.tx(ORDER_NO).unwrap();
    assert_eq!(tx.trade_state, TradeState::Closed);
    assert!(tx.discrepancy.as_deref().is_some_and(|d| d.contains("taken twice")), "{:?}", tx.discrepancy);
    assert_eq!(tx.transaction_id.as_deref(), Some("4200000001"));
    let written = ledger.written();
    assert_eq!(written[0].effects.jobs, vec![order_changed(ORDER)]);
    assert_eq!(written[0].effects.audit.as_ref().map(|a| a.action.as_str()), Some("payment.discrepancy"));
    let found = written[0].found.as_ref().expect("recorded to be resolved");
    assert_eq!(written[0].effects.events.iter().map(|e| e.kind).collect::<Vec<_>>(), [crate::events::PAYMENT_DISCREPANCY]);
    assert_eq!((found.kind, found.out_trade_no.as_str(), found.share_id), (DiscrepancyKind::PaidTwice, ORDER_NO, None));
    assert!(ledger.tx(&offline_trade_no(ORDER_NO)).is_some_and(|t| t.is_paid()));
}

#[tokio::test]
async fn a_payment_taken_twice_and_resolved_is_not_found_again_by_a_later_report() {
    // Arrange: the double payment was resolved (refunded); the platform reports it again.
    let ledger = Ledger::holding(vec![order_tx(TradeState::Closed), offline_tx()], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 0);
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().returning(|_, _, _, _| Ok(()));
    repo.expect_discrepancies_of().returning(|payment_id| {
        Ok(vec![Discrepancy {
            id: 1,
            tenant_id: TENANT,
            kind: DiscrepancyKind::PaidTwice,
            payment_id,
            out_trade_no: ORDER_NO.into(),
            share_id: None,
            return_id: None,
            description: "taken twice".into(),
            status: DiscrepancyStatus::Resolved,
            action: Some(ResolveAction::RefundExcess),
            note: Some("refunded".into()),
            resolved_by: Some(1),
            out_refund_no: Some("EX1-abc".into()),
            created_at: chrono::Utc::now(),
            resolved_at: Some(chrono::Utc::now()),
        }])
    });
    let svc = svc(repo, MockPayPlatform::new());

    // Act
    let event = PayEvent {
        id: "EV-10".into(),
        event_type: "TRANSACTION.SUCCESS".into(),
        resource: EventResource::Transaction(report(ORDER_NO, TradeState::Success)),
    };
    svc.handle_event(TENANT, event).await.unwrap();

    // Assert: nothing written; it stays closed without a discrepancy.
    assert_eq!(ledger.written(), []);
    let tx = ledger.tx(ORDER_NO).unwrap();
    assert_eq!((tx.trade_state, tx.discrepancy), (TradeState::Closed, None));
}
