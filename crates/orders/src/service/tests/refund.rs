//! Refunding orders through the ledger: the refund number (from the request's
//! `Idempotency-Key`), the checks made before the ledger is asked, its answer and refusals.
use super::*;
use crate::api::NewRefund;
use crate::text::RefundReason;
use atrium_kernel::{IdempotencyKey, RequestKey};
use strum::VariantArray;

fn new_refund(amount: i64) -> NewRefund {
    NewRefund { amount: Money::from_fen(amount), reason: Some(RefundReason::parse("Damaged in transit").unwrap()) }
}

fn key(key: &str) -> RequestKey {
    RequestKey::of(&IdempotencyKey { caller: format!("user:{USER}"), route: "POST /api/v1/orders/1/refund".into(), key: key.into() })
}

/// A paid order of 1000 fen (`method`) and the ledger holding its payment.
fn paid_with_ledger(method: PaymentMethod) -> (Db, Ledger) {
    let o = paid(1, method);
    let payment = if method == PaymentMethod::Offline { offline_paid(&o) } else { online_paid(&o) };
    (Db::with(vec![o.clone()]), Ledger::holding(&o, payment))
}

/// The refund numbers the ledger was asked for.
fn numbers(ledger: &Ledger) -> Vec<String> {
    ledger
        .actions()
        .into_iter()
        .filter_map(|c| match c {
            Call::Refund(_, r) => Some(r.out_refund_no),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_refund_asks_the_ledger_for_the_amount_the_reason_and_the_requester() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);

    let view = svc(&db, &ledger).refund(&tenant_actor(), 1, new_refund(300), Some(key("k-1"))).await.unwrap();

    let calls = ledger.actions();
    let audit = requested_audit(&calls[0], "order.refund", 1);
    assert_eq!(audit.after.as_ref().map(|a| a["refund"]["amount"].clone()), Some(300.into()));
    assert_eq!(
        calls,
        [Call::Refund(
            TENANT,
            RefundCharge {
                order_id: 1,
                out_refund_no: format!("{}R{}", order_no_of(1), key("k-1").number(10)),
                amount: Money::from_fen(300),
                reason: Some("Damaged in transit".into()),
                requested_by: Some(USER),
                audit,
            }
        )]
    );
    assert_eq!((view.refund.status, view.refund.amount), (RefundStatus::Processing, Money::from_fen(300)));
    assert_eq!(view.refund.out_refund_no, numbers(&ledger)[0]);
}

#[tokio::test]
async fn the_same_idempotency_key_asks_the_ledger_for_the_same_refund() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);
    let svc = svc(&db, &ledger);

    let first = svc.refund(&tenant_actor(), 1, new_refund(300), Some(key("k-1"))).await.unwrap();
    let retry = svc.refund(&tenant_actor(), 1, new_refund(300), Some(key("k-1"))).await.unwrap();
    let other = svc.refund(&tenant_actor(), 1, new_refund(300), Some(key("k-2"))).await.unwrap();

    let numbers = numbers(&ledger);
    assert_eq!(numbers[0], numbers[1]);
    assert_ne!(numbers[0], numbers[2]);
    assert_eq!((first.refund.id, retry.refund.id), (500, 500), "one refund, not two");
    assert_eq!(other.refund.id, 501);
    assert_eq!(ledger.state(1).refunds.len(), 2);
}

#[tokio::test]
async fn refunds_without_a_key_get_different_numbers_that_start_with_the_order_number() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);
    let svc = svc(&db, &ledger);

    svc.refund(&tenant_actor(), 1, new_refund(100), None).await.unwrap();
    svc.refund(&tenant_actor(), 1, new_refund(100), None).await.unwrap();

    let numbers = numbers(&ledger);
    assert_ne!(numbers[0], numbers[1]);
    for no in &numbers {
        let prefix = format!("{}R", order_no_of(1));
        assert!(no.starts_with(&prefix) && no.len() == prefix.len() + 10, "{no}");
        assert!(no.len() <= 64 && no.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{no}");
    }
}

#[tokio::test]
async fn an_empty_reason_is_no_reason() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);
    let input = NewRefund { amount: Money::from_fen(5), reason: Some(RefundReason::parse("").unwrap()) };

    svc(&db, &ledger).refund(&tenant_actor(), 1, input, None).await.unwrap();

    assert!(matches!(&ledger.actions()[..], [Call::Refund(_, r)] if r.reason.is_none()));
}

#[tokio::test]
async fn a_refund_answers_the_order_as_synced_with_the_ledgers_refund() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::Offline);
    let svc = svc(&db, &ledger);

    let part = svc.refund(&tenant_actor(), 1, new_refund(250), None).await.unwrap();
    let rest = svc.refund(&tenant_actor(), 1, new_refund(750), None).await.unwrap();

    assert_eq!(part.refund.status, RefundStatus::Succeeded, "an offline payment's refund succeeds at once");
    assert_eq!((part.order.status, part.order.refunded_amount), (OrderStatus::PartiallyRefunded, Money::from_fen(250)));
    assert_eq!(part.order.refunds, std::slice::from_ref(&part.refund));
    assert_eq!((rest.order.status, rest.order.refunded_amount), (OrderStatus::Refunded, Money::from_fen(1000)));
    assert_eq!(rest.order.refunds.len(), 2);
    let stored = db.order(1);
    assert_eq!((stored.status, stored.refunded_amount), (OrderStatus::Refunded, Money::from_fen(1000)));
    assert_eq!(db.actions(), ["order.refund_settled", "order.refund_settled"]);
    let amounts: Vec<_> = db.events().into_iter().map(|(kind, d)| (kind, d["amount"].clone(), d["refunded_amount"].clone())).collect();
    assert_eq!(amounts, [("order.refunded", 250.into(), 250.into()), ("order.refunded", 750.into(), 1000.into())]);
}

#[tokio::test]
async fn a_processing_refund_is_shown_but_refunds_nothing_yet() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);

    let view = svc(&db, &ledger).refund(&tenant_actor(), 1, new_refund(300), None).await.unwrap();

    assert_eq!((view.order.status, view.order.refunded_amount), (OrderStatus::Paid, Money::ZERO));
    assert_eq!(view.order.refunds.iter().map(|r| r.status).collect::<Vec<_>>(), [RefundStatus::Processing]);
    assert!(db.audits().is_empty(), "nothing of the order changed");
    assert!(db.events().is_empty(), "nothing refunded yet");
}

#[tokio::test]
async fn the_ledgers_refusal_is_answered_unchanged() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);
    let svc = svc(&db, &ledger);

    svc.refund(&tenant_actor(), 1, new_refund(600), None).await.unwrap();
    let noted = db.writes();
    let err = svc.refund(&tenant_actor(), 1, new_refund(401), None).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m == "only 400 fen are left to refund"), "{err:?}");
    assert_eq!(ledger.state(1).refunds.len(), 1);
    assert_eq!(noted, 1, "the order noted the first refund, processing");
    assert_eq!(db.writes(), noted, "the refused one wrote nothing");
}

#[tokio::test]
async fn an_unavailable_ledger_is_answered_unchanged_after_syncing_what_it_may_have_done() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);
    // The refund reached the ledger and settled; the answer was lost.
    ledger.set(1, Some(online_paid(&db.order(1))), vec![refund(&db.order(1), 7, 1000, RefundStatus::Succeeded)]);
    ledger.fail("refund", || Error::Upstream("the ledger timed out".into()));

    let err = svc(&db, &ledger).refund(&tenant_actor(), 1, new_refund(1000), None).await.unwrap_err();

    assert!(matches!(err, Error::Upstream(ref m) if m == "the ledger timed out"), "{err:?}");
    assert!(matches!(&ledger.calls()[..], [Call::Refund(..), Call::Money(TENANT, 1)]), "synced after the error: {:?}", ledger.calls());
    assert_eq!(db.order(1).status, OrderStatus::Refunded);
}

#[tokio::test]
async fn a_refund_amount_must_be_positive_and_within_the_payment() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);
    let svc = svc(&db, &ledger);

    let zero = svc.refund(&tenant_actor(), 1, new_refund(0), None).await.unwrap_err();
    let negative = svc.refund(&tenant_actor(), 1, new_refund(-5), None).await.unwrap_err();
    let more = svc.refund(&tenant_actor(), 1, new_refund(1001), None).await.unwrap_err();

    for err in [zero, negative, more] {
        assert_eq!(fields_of(&err), ["amount"], "{err:?}");
    }
    assert!(ledger.calls().is_empty());
}

/// A payment the ledger recorded a moment ago, its event not yet applied: the order still says
/// `paying`, and the refund catches the order up with the ledger and goes ahead.
#[tokio::test]
async fn a_refund_of_an_order_whose_payment_is_not_yet_projected_catches_up_with_the_ledger() {
    let paying = order(1, OrderStatus::Paying);
    let db = Db::with(vec![paying.clone()]);
    let ledger = Ledger::holding(&paying, online_paid(&paying));

    let view = svc(&db, &ledger).refund(&tenant_actor(), 1, new_refund(300), None).await.unwrap();

    assert_eq!(numbers(&ledger).len(), 1, "the ledger was asked for the refund");
    assert_eq!((view.order.status, view.refund.amount), (OrderStatus::Paid, Money::from_fen(300)));
}

/// The ledger is read (the order's projection may lag it) but never asked to refund.
#[tokio::test]
async fn a_refund_of_an_order_not_paid_or_refunded_in_full_is_a_conflict_without_asking_the_ledger() {
    for &status in OrderStatus::VARIANTS {
        if matches!(status, OrderStatus::Paid | OrderStatus::PartiallyRefunded) {
            continue;
        }
        let db = Db::with(vec![order(1, status)]);
        let ledger = Ledger::default();

        let err = svc(&db, &ledger).refund(&tenant_actor(), 1, new_refund(1), None).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(..)), "{status:?}: {err:?}");
        assert_eq!(ledger.actions(), vec![], "{status:?}");
        assert!(db.audits().is_empty());
    }
}

#[tokio::test]
async fn a_refund_the_platform_refused_shows_on_the_order_with_the_answer() {
    let (db, ledger) = paid_with_ledger(PaymentMethod::WechatJsapi);
    let o = db.order(1);
    // The ledger records the refund failed (the receiver's share could not be taken back
    // first) and answers the platform's refusal.
    ledger.set(1, ledger.state(1).payment, vec![refund(&o, 7, 600, RefundStatus::Failed)]);
    ledger.fail("refund", || Error::PlatformFailed {
        reason: Reason::ReturnFailed,
        message: "refund was not sent".into(),
        fail_reason: "BALANCE_NOT_ENOUGH".into(),
    });
    let svc = svc(&db, &ledger);

    let err = svc.refund(&tenant_actor(), 1, new_refund(600), None).await.unwrap_err();

    assert!(matches!(err, Error::PlatformFailed { reason: Reason::ReturnFailed, .. }), "{err:?}");
    let shown = svc.get(&tenant_actor(), 1).await.unwrap();
    assert_eq!(shown.refunds.iter().map(|r| (r.id, r.status)).collect::<Vec<_>>(), [(7, RefundStatus::Failed)]);
    assert_eq!((shown.status, shown.refunded_amount), (OrderStatus::Paid, Money::ZERO));
}
