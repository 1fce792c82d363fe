//! What the payments side reports (payments, closes, settled refunds) and the expiry job.
use super::*;
use crate::ports::{PaymentState, RefundState};
use crate::service::EventOutcome;
use mockall::predicate::eq;

fn paid_report(transaction_id: &str) -> PaymentState {
    PaymentState::Paid { transaction_id: transaction_id.into(), paid_at: now() - Duration::seconds(30) }
}

#[tokio::test]
async fn a_payment_report_moves_a_paying_order_to_paid_once() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let no = db.order(1).order_no;
    let svc = svc(&db, MockOrderPayments::new());

    let first = svc.payment_changed(TENANT, &no, paid_report("4200000001")).await.unwrap();
    let again = svc.payment_changed(TENANT, &no, paid_report("4200000001")).await.unwrap();

    assert_eq!((first, again), (EventOutcome::Applied, EventOutcome::Stale));
    let stored = db.order(1);
    assert_eq!((stored.status, stored.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    let payment = stored.payment.unwrap();
    assert_eq!(payment.transaction_id.as_deref(), Some("4200000001"));
    assert_eq!(payment.paid_at, Some(now() - Duration::seconds(30)));
    let audits = db.audits();
    assert_eq!(audits.len(), 1);
    assert_eq!((audits[0].action.as_str(), audits[0].actor_user_id), ("order.paid", None), "a system change");
    assert_eq!((audits[0].tenant_id, audits[0].partner_id), (Some(TENANT), Some(PARTNER)));
    assert_eq!(audits[0].before.as_ref().unwrap()["status"], "paying");
    assert_eq!(audits[0].after.as_ref().unwrap()["status"], "paid");
}

#[tokio::test]
async fn late_unpaid_or_closed_reports_after_a_payment_change_nothing() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);
    let no = db.order(1).order_no;
    let before = db.order(1);
    let svc = svc(&db, MockOrderPayments::new());

    for late in [PaymentState::Unpaid, PaymentState::Failed, PaymentState::Closed, paid_report("4200000002")] {
        assert_eq!(svc.payment_changed(TENANT, &no, late.clone()).await.unwrap(), EventOutcome::Stale, "{late:?}");
    }

    assert_eq!(db.order(1), before);
    assert!(db.audits().is_empty());
}

#[tokio::test]
async fn a_closed_report_closes_an_order_waiting_for_its_payment() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let no = db.order(1).order_no;
    let svc = svc(&db, MockOrderPayments::new());

    let unpaid = svc.payment_changed(TENANT, &no, PaymentState::Unpaid).await.unwrap();
    let closed = svc.payment_changed(TENANT, &no, PaymentState::Closed).await.unwrap();

    assert_eq!((unpaid, closed), (EventOutcome::Stale, EventOutcome::Applied));
    assert_eq!(db.order(1).status, OrderStatus::Closed);
    assert_eq!(db.actions(), ["order.close"]);
}

#[tokio::test]
async fn a_payment_beats_a_close_the_platform_took_the_money() {
    let db = Db::with(vec![order(1, OrderStatus::Closed)]);
    let no = db.order(1).order_no;

    let outcome = svc(&db, MockOrderPayments::new()).payment_changed(TENANT, &no, paid_report("4200000003")).await.unwrap();

    assert_eq!(outcome, EventOutcome::Applied);
    assert_eq!(db.order(1).status, OrderStatus::Paid);
}

#[tokio::test]
async fn a_report_for_an_unknown_order_or_another_tenants_order_is_unknown() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let no = db.order(1).order_no;
    let svc = svc(&db, MockOrderPayments::new());

    assert_eq!(svc.payment_changed(TENANT, "NOPE000001", paid_report("4200")).await.unwrap(), EventOutcome::Unknown);
    assert_eq!(svc.payment_changed(OTHER_TENANT, &no, paid_report("4200")).await.unwrap(), EventOutcome::Unknown);
    assert_eq!(svc.refund_changed(TENANT, "R-NOPE", RefundState::Failed).await.unwrap(), EventOutcome::Unknown);
    assert_eq!(db.order(1).status, OrderStatus::Paying);
}

#[tokio::test]
async fn a_refund_report_settles_a_processing_refund_once() {
    let mut o = paid(1, PaymentMethod::WechatJsapi);
    o.refunds = vec![Refund { id: 5, ..refund(&o, "R1", 400, RefundStatus::Processing) }];
    let db = Db::with(vec![o]);
    let svc = svc(&db, MockOrderPayments::new());
    let at = now() - Duration::seconds(9);

    let first = svc.refund_changed(TENANT, "R1", RefundState::Succeeded { at }).await.unwrap();
    let again = svc.refund_changed(TENANT, "R1", RefundState::Succeeded { at }).await.unwrap();
    let late = svc.refund_changed(TENANT, "R1", RefundState::Failed).await.unwrap();

    assert_eq!((first, again, late), (EventOutcome::Applied, EventOutcome::Stale, EventOutcome::Stale));
    let stored = db.order(1);
    assert_eq!((stored.status, stored.refunded_amount), (OrderStatus::PartiallyRefunded, Money::from_fen(400)));
    assert_eq!((stored.refunds[0].status, stored.refunds[0].settled_at), (RefundStatus::Succeeded, Some(at)));
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id, audit.target_id), ("order.refund_settled", None, Some(1)));
    assert_eq!(audit.after.unwrap()["refund"]["status"], "succeeded");
}

#[tokio::test]
async fn a_failed_or_closed_refund_gives_its_amount_back() {
    let mut o = paid(1, PaymentMethod::WechatJsapi);
    o.refunds = vec![
        Refund { id: 5, ..refund(&o, "R1", 600, RefundStatus::Processing) },
        Refund { id: 6, ..refund(&o, "R2", 400, RefundStatus::Processing) },
    ];
    let db = Db::with(vec![o]);
    assert_eq!(db.order(1).refundable(), Money::ZERO);
    let svc = svc(&db, MockOrderPayments::new());

    svc.refund_changed(TENANT, "R1", RefundState::Failed).await.unwrap();
    svc.refund_changed(TENANT, "R2", RefundState::Closed).await.unwrap();

    let stored = db.order(1);
    assert_eq!(stored.refundable(), Money::from_fen(1000));
    assert_eq!((stored.status, stored.refunded_amount), (OrderStatus::Paid, Money::ZERO));
}

#[tokio::test]
async fn expiry_closes_a_pending_order_without_asking_the_platform() {
    let mut due = order(1, OrderStatus::Pending);
    due.expires_at = now() - Duration::seconds(1);
    let db = Db::with(vec![due, order(2, OrderStatus::Pending)]);

    let changed = svc(&db, MockOrderPayments::new()).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    assert_eq!((db.order(1).status, db.order(2).status), (OrderStatus::Closed, OrderStatus::Pending));
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id), ("order.close", None));
}

#[tokio::test]
async fn expiry_closes_a_paying_order_on_the_platform_first() {
    let mut due = order(1, OrderStatus::Paying);
    due.expires_at = now();
    let no = due.order_no.clone();
    let db = Db::with(vec![due]);
    let mut payments = MockOrderPayments::new();
    payments.expect_close().with(eq(TENANT), eq(no)).times(1).returning(|_, _| Ok(PaymentState::Closed));

    let changed = svc(&db, payments).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    assert_eq!(db.order(1).status, OrderStatus::Closed);
}

#[tokio::test]
async fn expiry_of_an_order_paid_meanwhile_records_the_payment_instead() {
    let mut due = order(1, OrderStatus::Paying);
    due.expires_at = now() - Duration::minutes(5);
    let db = Db::with(vec![due]);
    let mut payments = MockOrderPayments::new();
    payments.expect_close().times(1).returning(|_, _| Ok(paid_report("4200000004")));

    let changed = svc(&db, payments).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    let stored = db.order(1);
    assert_eq!((stored.status, stored.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    assert_eq!(stored.payment.and_then(|p| p.transaction_id).as_deref(), Some("4200000004"));
    assert_eq!(db.actions(), ["order.paid"]);
}

#[tokio::test]
async fn an_order_whose_platform_order_cannot_be_closed_now_is_left_for_the_next_run() {
    let mut stuck = order(1, OrderStatus::Paying);
    stuck.expires_at = now() - Duration::minutes(9);
    let mut due = order(2, OrderStatus::Pending);
    due.expires_at = now() - Duration::minutes(1);
    let db = Db::with(vec![stuck, due]);
    let mut payments = MockOrderPayments::new();
    payments.expect_close().times(1).returning(|_, _| Err(Error::Upstream("the pay platform is unavailable".into())));

    let changed = svc(&db, payments).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    assert_eq!((db.order(1).status, db.order(2).status), (OrderStatus::Paying, OrderStatus::Closed));
}

#[tokio::test]
async fn expiry_leaves_an_order_whose_platform_order_is_still_open() {
    let mut due = order(1, OrderStatus::Paying);
    due.expires_at = now();
    let db = Db::with(vec![due]);
    let mut payments = MockOrderPayments::new();
    payments.expect_close().times(1).returning(|_, _| Ok(PaymentState::Unpaid));

    let changed = svc(&db, payments).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 0);
    assert_eq!(db.order(1).status, OrderStatus::Paying);
}

#[tokio::test]
async fn expiry_takes_at_most_a_batch_the_longest_expired_first() {
    let orders: Vec<Order> = (1..=5)
        .map(|id| {
            let mut o = order(id, OrderStatus::Pending);
            o.order_no = format!("20260401ORDER{id:04}");
            o.expires_at = now() - Duration::minutes(10 - id);
            o
        })
        .collect();
    let db = Db::with(orders);

    let changed = svc(&db, MockOrderPayments::new()).expire_due(now(), 2).await.unwrap();

    assert_eq!(changed, 2);
    let closed: Vec<Id> = (1..=5).filter(|id| db.order(*id).status == OrderStatus::Closed).collect();
    assert_eq!(closed, [1, 2]);
}

#[tokio::test]
async fn reconciling_asks_the_payments_side_and_applies_the_answer() {
    let o = order(1, OrderStatus::Paying);
    let no = o.order_no.clone();
    let db = Db::with(vec![o, {
        let mut p = paid(2, PaymentMethod::WechatJsapi);
        p.refunds = vec![Refund { id: 9, ..refund(&p, "R9", 100, RefundStatus::Processing) }];
        p
    }]);
    let mut payments = MockOrderPayments::new();
    payments.expect_query().with(eq(TENANT), eq(no.clone())).times(1).returning(|_, _| Ok(paid_report("4200000005")));
    payments.expect_query_refund().with(eq(TENANT), eq("R9".to_owned())).times(1).returning(|_, _| Ok(RefundState::Closed));
    let svc = svc(&db, payments);

    assert_eq!(svc.reconcile_payment(TENANT, &no).await.unwrap(), EventOutcome::Applied);
    assert_eq!(svc.reconcile_refund(TENANT, "R9").await.unwrap(), EventOutcome::Applied);

    assert_eq!(db.order(1).status, OrderStatus::Paid);
    assert_eq!(db.order(2).refunds[0].status, RefundStatus::Closed);
}
