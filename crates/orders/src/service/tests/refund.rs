//! Refunding orders: the reservation, the platform's answer, the limits, offline refunds.
use super::*;
use crate::api::NewRefund;
use crate::ports::{RefundOrder, RefundState};
use crate::text::RefundReason;
use strum::VariantArray;

fn new_refund(amount: i64) -> NewRefund {
    NewRefund { amount: Money::from_fen(amount), reason: Some(RefundReason::parse("Damaged in transit").unwrap()) }
}

/// Payments whose refunds answer `state`, recording the requests.
fn refunding(state: RefundState) -> (MockOrderPayments, Arc<Mutex<Vec<RefundOrder>>>) {
    let mut payments = MockOrderPayments::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    payments.expect_refund().returning(move |tenant_id, request| {
        assert_eq!(tenant_id, TENANT);
        keep.lock().unwrap().push(request);
        Ok(state.clone())
    });
    (payments, seen)
}

#[tokio::test]
async fn a_refund_is_reserved_processing_and_requested_from_the_platform() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);
    let (payments, seen) = refunding(RefundState::Processing);

    let view = svc(&db, payments).refund(&tenant_actor(), 1, new_refund(300)).await.unwrap();

    assert_eq!((view.refund.status, view.refund.amount), (RefundStatus::Processing, Money::from_fen(300)));
    assert_eq!(view.refund.reason.as_deref(), Some("Damaged in transit"));
    assert_eq!((view.order.status, view.order.refunded_amount), (OrderStatus::Paid, Money::ZERO), "nothing is refunded until it succeeds");
    let order = db.order(1);
    let request = seen.lock().unwrap()[0].clone();
    assert_eq!(
        request,
        RefundOrder {
            out_trade_no: order.order_no.clone(),
            out_refund_no: view.refund.out_refund_no.clone(),
            amount: Money::from_fen(300),
            total: Money::from_fen(1000),
            reason: Some("Damaged in transit".into()),
        }
    );
    assert!(request.out_refund_no.starts_with(&order.order_no) && request.out_refund_no.len() <= 64);
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id, audit.target_id), ("order.refund", Some(USER), Some(1)));
    assert_eq!(audit.after.unwrap()["refund"]["amount"], 300);
}

#[tokio::test]
async fn a_refund_the_platform_settles_at_once_counts_in_the_order() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);
    let (payments, _) = refunding(RefundState::Succeeded { at: now() });
    let svc = svc(&db, payments);

    let part = svc.refund(&tenant_actor(), 1, new_refund(300)).await.unwrap();
    let rest = svc.refund(&tenant_actor(), 1, new_refund(700)).await.unwrap();

    assert_eq!((part.order.status, part.order.refunded_amount), (OrderStatus::PartiallyRefunded, Money::from_fen(300)));
    assert_eq!(part.refund.status, RefundStatus::Succeeded);
    assert_eq!((rest.order.status, rest.order.refunded_amount), (OrderStatus::Refunded, Money::from_fen(1000)));
    assert_eq!(db.actions(), ["order.refund", "order.refund_settled", "order.refund", "order.refund_settled"]);
}

#[tokio::test]
async fn a_refund_the_platform_refuses_fails_and_gives_its_amount_back() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);
    let mut payments = MockOrderPayments::new();
    let mut calls = 0;
    payments.expect_refund().times(2).returning(move |_, _| {
        calls += 1;
        if calls == 1 { Err(Error::invalid("pay_platform", "NOT_ENOUGH: balance")) } else { Ok(RefundState::Processing) }
    });
    let svc = svc(&db, payments);

    let err = svc.refund(&tenant_actor(), 1, new_refund(1000)).await.unwrap_err();
    let retried = svc.refund(&tenant_actor(), 1, new_refund(1000)).await.unwrap();

    assert_eq!(fields_of(&err), ["pay_platform"]);
    let refunds = db.order(1).refunds;
    assert_eq!(refunds.iter().map(|r| r.status).collect::<Vec<_>>(), [RefundStatus::Failed, RefundStatus::Processing]);
    assert_eq!(retried.refund.amount, Money::from_fen(1000), "the failed refund's amount was free again");
}

#[tokio::test]
async fn a_refund_whose_request_may_have_reached_the_platform_stays_processing() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);
    let mut payments = MockOrderPayments::new();
    payments.expect_refund().times(1).returning(|_, _| Err(Error::Upstream("the pay platform is unavailable: timeout".into())));

    let err = svc(&db, payments).refund(&tenant_actor(), 1, new_refund(400)).await.unwrap_err();

    assert!(matches!(err, Error::Upstream(_)), "{err:?}");
    let refunds = db.order(1).refunds;
    assert_eq!((refunds.len(), refunds[0].status), (1, RefundStatus::Processing));
}

#[tokio::test]
async fn refunds_never_exceed_what_was_paid() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);
    let (payments, seen) = refunding(RefundState::Processing);
    let svc = svc(&db, payments);

    svc.refund(&tenant_actor(), 1, new_refund(600)).await.unwrap();
    let err = svc.refund(&tenant_actor(), 1, new_refund(401)).await.unwrap_err();
    let last = svc.refund(&tenant_actor(), 1, new_refund(400)).await.unwrap();
    let nothing_left = svc.refund(&tenant_actor(), 1, new_refund(1)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("only 400 fen")), "{err:?}");
    assert_eq!(last.refund.amount, Money::from_fen(400));
    assert!(matches!(nothing_left, Error::Conflict(ref m) if m.contains("only 0 fen")), "{nothing_left:?}");
    assert_eq!(seen.lock().unwrap().len(), 2, "refused reservations never reach the platform");
}

#[tokio::test]
async fn a_refund_amount_must_be_positive_and_within_the_payment() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);
    let svc = svc(&db, MockOrderPayments::new());

    let zero = svc.refund(&tenant_actor(), 1, new_refund(0)).await.unwrap_err();
    let negative = svc.refund(&tenant_actor(), 1, new_refund(-5)).await.unwrap_err();
    let more = svc.refund(&tenant_actor(), 1, new_refund(1001)).await.unwrap_err();

    for err in [zero, negative, more] {
        assert_eq!(fields_of(&err), ["amount"], "{err:?}");
    }
    assert!(db.order(1).refunds.is_empty());
}

#[tokio::test]
async fn an_order_has_at_most_fifty_refunds() {
    let mut o = paid(1, PaymentMethod::WechatJsapi);
    o.refunds = (0..50).map(|i| Refund { id: i, ..refund(&o, &format!("R{i}"), 1, RefundStatus::Failed) }).collect();
    let db = Db::with(vec![o]);

    let err = svc(&db, MockOrderPayments::new()).refund(&tenant_actor(), 1, new_refund(1)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("50 refunds")), "{err:?}");
    assert_eq!(db.order(1).refunds.len(), 50);
}

#[tokio::test]
async fn no_refund_more_than_a_year_after_the_payment() {
    let year_ago = |id: Id, days: i64| {
        let mut o = paid(id, PaymentMethod::WechatJsapi);
        o.order_no = format!("20250401ORDER{id:04}");
        if let Some(p) = o.payment.as_mut() {
            p.paid_at = Some(now() - Duration::days(days));
        }
        o
    };
    let db = Db::with(vec![year_ago(1, 366), year_ago(2, 365)]);
    let (payments, _) = refunding(RefundState::Processing);
    let svc = svc(&db, payments);

    let late = svc.refund(&tenant_actor(), 1, new_refund(100)).await.unwrap_err();
    let in_time = svc.refund(&tenant_actor(), 2, new_refund(100)).await;

    assert!(matches!(late, Error::Conflict(ref m) if m.contains("365 days")), "{late:?}");
    assert!(in_time.is_ok(), "{in_time:?}");
}

#[tokio::test]
async fn only_a_paid_or_partly_refunded_order_can_be_refunded() {
    for &status in OrderStatus::VARIANTS {
        if matches!(status, OrderStatus::Paid | OrderStatus::PartiallyRefunded) {
            continue;
        }
        let db = Db::with(vec![order(1, status)]);

        let err = svc(&db, MockOrderPayments::new()).refund(&tenant_actor(), 1, new_refund(1)).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(_)), "{status:?}: {err:?}");
        assert!(db.audits().is_empty());
    }
}

#[tokio::test]
async fn an_order_out_of_scope_cannot_be_refunded() {
    let db = Db::with(vec![paid(1, PaymentMethod::WechatJsapi)]);

    let err = svc(&db, MockOrderPayments::new()).refund(&partner_actor(OTHER_PARTNER), 1, new_refund(1)).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("order")), "{err:?}");
}

#[tokio::test]
async fn an_offline_paid_order_is_refunded_at_once_without_the_platform() {
    let db = Db::with(vec![paid(1, PaymentMethod::Offline)]);
    // No payments expectation: the platform is never asked.
    let svc = svc(&db, MockOrderPayments::new());

    let part = svc.refund(&tenant_actor(), 1, new_refund(250)).await.unwrap();
    let rest = svc.refund(&tenant_actor(), 1, new_refund(750)).await.unwrap();

    assert_eq!((part.refund.status, part.order.status), (RefundStatus::Succeeded, OrderStatus::PartiallyRefunded));
    assert_eq!(part.order.refunded_amount, Money::from_fen(250));
    assert_eq!((rest.order.status, rest.order.refunded_amount), (OrderStatus::Refunded, Money::from_fen(1000)));
    assert!(db.order(1).refunds.iter().all(|r| r.settled_at == Some(now())));
    assert_eq!(db.actions(), ["order.refund", "order.refund"]);
}
