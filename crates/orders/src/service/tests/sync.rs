//! Syncing an order with the ledger: the projection on its own, then `sync` writing it
//! (once, conditionally, retried when it lost a race).
use super::*;
use crate::service::EventOutcome;
use crate::service::orders::project;

fn money(payment: Option<LedgerPayment>, refunds: Vec<OrderRefund>) -> OrderMoney {
    OrderMoney { payment, refunds }
}

/// The projection of `order` at `now()`, with its audit action (`None` for a change of the
/// refunds alone).
fn projected(order: &Order, money: &OrderMoney) -> Option<(Order, Option<&'static str>)> {
    project(order, money, now()).unwrap()
}

#[test]
fn without_a_ledger_payment_the_order_is_unchanged() {
    for status in [OrderStatus::Pending, OrderStatus::Paying] {
        let o = expired(1, status, Duration::hours(1));
        assert_eq!(projected(&o, &OrderMoney::default()), None, "{status:?}");
    }
}

#[test]
fn a_paid_ledger_payment_is_recorded_in_full() {
    let o = order(1, OrderStatus::Paying);
    let paid_at = now() - Duration::seconds(30);
    let ledger = online(&o, PaymentState::Paid { transaction_id: Some("4200000009".into()), paid_at });

    let (next, action) = projected(&o, &money(Some(ledger), vec![])).unwrap();

    assert_eq!(action, Some("order.paid"));
    assert_eq!((next.status, next.paid_amount, next.refunded_amount), (OrderStatus::Paid, Money::from_fen(1000), Money::ZERO));
    assert_eq!(
        next.payment,
        Some(Payment {
            method: PaymentMethod::WechatJsapi,
            out_trade_no: Some(o.order_no.clone()),
            transaction_id: Some("4200000009".into()),
            paid_at: Some(paid_at),
            reference: None,
            paid_by: None,
            sub_merchant: false,
        })
    );
    assert_eq!((next.discrepancy, next.updated_at), (None, now()));
}

#[test]
fn a_sub_merchants_payment_is_recorded_as_shared() {
    let o = order(1, OrderStatus::Paying);
    let ledger = LedgerPayment { sub_merchant: true, ..online_paid(&o) };

    let (next, action) = projected(&o, &money(Some(ledger), vec![])).unwrap();

    assert_eq!(action, Some("order.paid"));
    assert!(next.payment.as_ref().is_some_and(|p| p.sub_merchant), "{:?}", next.payment);
    assert_eq!(projected(&next, &money(Some(LedgerPayment { sub_merchant: true, ..online_paid(&o) }), vec![])), None, "known");
}

#[test]
fn a_payment_beats_a_close_the_money_was_taken() {
    for status in [OrderStatus::Pending, OrderStatus::Closed] {
        let o = order(1, status);

        let (next, action) = projected(&o, &money(Some(online_paid(&o)), vec![])).unwrap();

        assert_eq!((next.status, next.paid_amount, action), (OrderStatus::Paid, Money::from_fen(1000), Some("order.paid")), "{status:?}");
    }
}

#[test]
fn only_succeeded_refunds_count_and_the_status_follows_them() {
    let o = paid(1, PaymentMethod::WechatJsapi);
    let r = |id, fen, status| refund(&o, id, fen, status);
    let pending_only = money(Some(online_paid(&o)), vec![r(1, 300, RefundStatus::Processing), r(2, 200, RefundStatus::Failed)]);
    let part = money(
        Some(online_paid(&o)),
        vec![r(1, 300, RefundStatus::Succeeded), r(2, 200, RefundStatus::Failed), r(3, 100, RefundStatus::Closed)],
    );
    let all = money(
        Some(online_paid(&o)),
        vec![r(1, 300, RefundStatus::Succeeded), r(2, 200, RefundStatus::Failed), r(4, 700, RefundStatus::Succeeded)],
    );

    let (noted, action) = projected(&o, &pending_only).unwrap();
    assert_eq!(
        (noted.status, noted.refunded_amount, action, noted.refunds.clone()),
        (o.status, Money::ZERO, None, pending_only.refunds.clone()),
        "a processing or failed refund refunds nothing: the order only notes it, unaudited"
    );
    assert_eq!(projected(&noted, &pending_only), None, "noted once");
    let (partly, action) = projected(&o, &part).unwrap();
    assert_eq!(partly.refunds, part.refunds, "the order keeps the ledger's refunds");
    assert_eq!(
        (partly.status, partly.refunded_amount, action),
        (OrderStatus::PartiallyRefunded, Money::from_fen(300), Some("order.refund_settled"))
    );
    let (full, _) = projected(&partly, &all).unwrap();
    assert_eq!((full.status, full.refunded_amount), (OrderStatus::Refunded, Money::from_fen(1000)));
}

#[test]
fn an_unpaid_ledger_payment_moves_only_a_pending_order_to_paying() {
    let pending = Order { openid: None, ..order(1, OrderStatus::Pending) };
    let ledger = money(Some(online(&pending, PaymentState::Unpaid)), vec![]);

    let (next, action) = projected(&pending, &ledger).unwrap();

    assert_eq!((next.status, next.openid.as_deref(), action), (OrderStatus::Paying, Some("o-ann"), Some("order.paying")));
    assert_eq!(next.payment, order(1, OrderStatus::Paying).payment);
    for status in [OrderStatus::Paying, OrderStatus::Paid, OrderStatus::Closed] {
        assert_eq!(projected(&order(1, status), &ledger), None, "{status:?}");
    }
}

#[test]
fn a_closed_ledger_payment_closes_only_an_unpaid_order_past_its_expiry() {
    let o = order(1, OrderStatus::Paying);
    let closed = money(Some(online(&o, PaymentState::Closed)), vec![]);

    for status in [OrderStatus::Pending, OrderStatus::Paying] {
        let (next, action) = projected(&expired(1, status, Duration::seconds(0)), &closed).unwrap();
        assert_eq!((next.status, action), (OrderStatus::Closed, Some("order.close")), "{status:?}");
    }
    assert_eq!(projected(&o, &closed), None, "not expired yet: an offline payment may follow the close");
    assert_eq!(projected(&Order { expires_at: now() - Duration::hours(1), ..paid(1, PaymentMethod::Offline) }, &closed), None);
    assert_eq!(projected(&expired(1, OrderStatus::Closed, Duration::hours(1)), &closed), None);
}

#[test]
fn a_discrepancy_is_shown_and_never_paid() {
    let o = order(1, OrderStatus::Paying);
    let ledger = money(Some(online(&o, PaymentState::Discrepancy("paid 999 fen of 1000".into()))), vec![]);

    let (next, action) = projected(&o, &ledger).unwrap();

    assert_eq!(action, Some("order.discrepancy"));
    assert_eq!(next.discrepancy.as_deref(), Some("paid 999 fen of 1000"));
    assert_eq!((next.status, next.paid_amount), (OrderStatus::Paying, Money::ZERO));
    assert_eq!(projected(&next, &ledger), None, "shown once");
}

#[test]
fn refunds_that_overflow_are_an_error_not_a_wrong_figure() {
    let o = paid(1, PaymentMethod::WechatJsapi);
    let huge = OrderRefund { amount: Money::from_fen(i64::MAX), ..refund(&o, 1, 0, RefundStatus::Succeeded) };

    let err = project(&o, &money(Some(online_paid(&o)), vec![huge.clone(), huge]), now()).unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
}

#[tokio::test]
async fn a_sync_records_the_ledgers_payment_once_and_then_answers_stale() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let ledger = Ledger::holding(&db.order(1), online_paid(&db.order(1)));
    let svc = svc(&db, &ledger);

    let first = svc.sync(TENANT, 1).await.unwrap();
    let again = svc.sync(TENANT, 1).await.unwrap();

    assert_eq!((first, again), (EventOutcome::Applied, EventOutcome::Stale));
    let stored = db.order(1);
    assert_eq!((stored.status, stored.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    assert_eq!(stored.payment.clone().and_then(|p| p.transaction_id).as_deref(), Some("4200000001"));
    assert_eq!(db.writes(), 1, "the second sync writes nothing");
    let audits = db.audits();
    assert_eq!(audits.len(), 1);
    assert_eq!((audits[0].action.as_str(), audits[0].actor_user_id, audits[0].target_id), ("order.paid", None, Some(1)));
    assert_eq!((audits[0].tenant_id, audits[0].partner_id), (Some(TENANT), Some(PARTNER)));
    assert_eq!(audits[0].before.as_ref().unwrap()["status"], "paying");
    assert_eq!(audits[0].after.as_ref().unwrap()["status"], "paid");
    let paid_at = stored.payment.as_ref().and_then(|p| p.paid_at);
    assert_eq!(
        db.events(),
        [(
            "order.paid",
            serde_json::json!({
                "id": 1, "tenant_id": TENANT, "order_no": order_no_of(1), "status": "paid", "amount": 1000, "paid_amount": 1000,
                "method": "wechat_jsapi", "out_trade_no": order_no_of(1), "transaction_id": "4200000001", "paid_at": paid_at,
            })
        )],
        "one event, written with the one write"
    );
    assert_eq!(db.events.lock().unwrap()[0].partner_id, Some(PARTNER));
}

#[tokio::test]
async fn syncing_partial_then_full_refunds_counts_only_the_succeeded_ones() {
    let o = paid(1, PaymentMethod::WechatJsapi);
    let db = Db::with(vec![o.clone()]);
    let ledger = Ledger::default();
    ledger.set(1, Some(online_paid(&o)), vec![refund(&o, 1, 300, RefundStatus::Processing), refund(&o, 2, 100, RefundStatus::Failed)]);
    let svc = svc(&db, &ledger);

    let processing = svc.sync(TENANT, 1).await.unwrap();
    let noted = db.order(1);
    ledger.settle(1, &refund(&o, 1, 0, RefundStatus::Processing).out_refund_no, RefundStatus::Succeeded);
    let part = svc.sync(TENANT, 1).await.unwrap();
    let after_part = db.order(1);
    let mut refunds = ledger.state(1).refunds;
    refunds.push(refund(&o, 3, 700, RefundStatus::Succeeded));
    refunds.push(refund(&o, 4, 50, RefundStatus::Processing));
    ledger.set(1, Some(online_paid(&o)), refunds);
    let full = svc.sync(TENANT, 1).await.unwrap();

    assert_eq!((processing, part, full), (EventOutcome::Applied, EventOutcome::Applied, EventOutcome::Applied));
    let statuses = |o: &Order| o.refunds.iter().map(|r| (r.id, r.status)).collect::<Vec<_>>();
    assert_eq!((noted.status, noted.refunded_amount), (OrderStatus::Paid, Money::ZERO), "nothing refunded yet");
    assert_eq!(statuses(&noted), [(1, RefundStatus::Processing), (2, RefundStatus::Failed)], "yet both refunds are noted");
    assert_eq!((after_part.status, after_part.refunded_amount), (OrderStatus::PartiallyRefunded, Money::from_fen(300)));
    assert_eq!(statuses(&after_part), [(1, RefundStatus::Succeeded), (2, RefundStatus::Failed)]);
    let stored = db.order(1);
    assert_eq!((stored.status, stored.refunded_amount), (OrderStatus::Refunded, Money::from_fen(1000)));
    assert_eq!(
        statuses(&stored),
        [(1, RefundStatus::Succeeded), (2, RefundStatus::Failed), (3, RefundStatus::Succeeded), (4, RefundStatus::Processing)]
    );
    assert_eq!(db.actions(), ["order.refund_settled", "order.refund_settled"], "noting a refund is not audited; the ledger audits it");
    let refunded: Vec<_> = db
        .events()
        .into_iter()
        .map(|(kind, d)| (kind, d["out_refund_no"].clone(), d["amount"].clone(), d["refunded_amount"].clone(), d["status"].clone()))
        .collect();
    let no = |id| serde_json::Value::from(refund(&o, id, 0, RefundStatus::Processing).out_refund_no);
    assert_eq!(
        refunded,
        [
            ("order.refunded", no(1), 300.into(), 300.into(), "partially_refunded".into()),
            ("order.refunded", no(3), 700.into(), 1000.into(), "refunded".into()),
        ],
        "one event for each refund that succeeded: none while processing, none for the failed one"
    );
}

#[tokio::test]
async fn a_discrepancy_is_shown_the_order_is_not_paid_and_expiry_leaves_it_alone() {
    let o = expired(1, OrderStatus::Paying, Duration::minutes(5));
    let db = Db::with(vec![o.clone()]);
    let ledger = Ledger::holding(&o, online(&o, PaymentState::Discrepancy("paid in USD".into())));
    let svc = svc(&db, &ledger);

    assert_eq!(svc.sync(TENANT, 1).await.unwrap(), EventOutcome::Applied);
    let view = svc.get(&tenant_actor(), 1).await.unwrap();
    let closed = svc.expire_due(now(), 100).await.unwrap();

    assert_eq!(view.discrepancy.as_deref(), Some("paid in USD"));
    assert_eq!((view.status, view.paid_amount), (OrderStatus::Paying, Money::ZERO));
    assert_eq!((closed, db.order(1).status), (0, OrderStatus::Paying));
    assert_eq!(db.actions(), ["order.discrepancy"]);
    assert_eq!(db.event_kinds(), [] as [&str; 0], "the ledger reports the discrepancy (payment.discrepancy); the order is not paid");
}

#[tokio::test]
async fn a_sync_of_an_unknown_order_or_another_tenants_order_is_unknown() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let ledger = Ledger::holding(&db.order(1), online_paid(&db.order(1)));
    let svc = svc(&db, &ledger);

    assert_eq!(svc.sync(TENANT, 404).await.unwrap(), EventOutcome::Unknown);
    assert_eq!(svc.sync(OTHER_TENANT, 1).await.unwrap(), EventOutcome::Unknown);

    assert_eq!(db.order(1).status, OrderStatus::Paying);
    assert_eq!(db.writes(), 0);
}

#[tokio::test]
async fn a_lost_conditional_write_is_read_again_and_ends_right() {
    let o = order(1, OrderStatus::Pending);
    let db = Db::with(vec![o.clone()]);
    let ledger = Ledger::holding(&o, online_paid(&o));
    // Between this sync's read and its write, a racing sync of an older ledger view moves the
    // order to paying.
    let (racing, mut raced) = (db.clone(), false);
    ledger.before_money(move || {
        if !raced {
            raced = true;
            let mut moved = racing.order(1);
            moved.status = OrderStatus::Paying;
            moved.payment = order(1, OrderStatus::Paying).payment;
            racing.set(moved);
        }
    });

    let outcome = svc(&db, &ledger).sync(TENANT, 1).await.unwrap();

    assert_eq!(outcome, EventOutcome::Applied);
    assert_eq!(db.writes(), 2, "the first write lost");
    let stored = db.order(1);
    assert_eq!((stored.status, stored.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.before.unwrap()["status"].as_str()), ("order.paid", Some("paying")));
    assert_eq!(db.event_kinds(), ["order.paid"], "the lost write left no event");
}

#[tokio::test]
async fn an_order_that_keeps_changing_is_a_conflict_after_three_attempts() {
    let o = order(1, OrderStatus::Pending);
    let db = Db::with(vec![o.clone()]);
    let ledger = Ledger::holding(&o, online_paid(&o));
    let racing = db.clone();
    ledger.before_money(move || {
        let mut moved = racing.order(1);
        moved.discrepancy = if moved.discrepancy.is_some() { None } else { Some("flapping".into()) };
        racing.set(moved);
    });

    let err = svc(&db, &ledger).sync(TENANT, 1).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    assert_eq!(db.writes(), 3);
    assert!(db.audits().is_empty());
}
