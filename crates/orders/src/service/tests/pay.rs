//! Paying orders through the ledger: on the pay platform (a charge, resumed when asked again;
//! the payer's openid) and offline; the ledger's refusals.
use super::*;
use crate::api::{PayOrder, PaymentReference};
use crate::text::Openid;
use atrium_kernel::Reason;
use strum::VariantArray;

fn jsapi(openid: Option<&str>) -> PayOrder {
    PayOrder::WechatJsapi { openid: openid.map(|o| Openid::parse(o).unwrap()) }
}

fn offline(reference: &str) -> PayOrder {
    PayOrder::Offline { reference: PaymentReference::parse(reference).unwrap() }
}

#[tokio::test]
async fn paying_online_charges_the_order_number_and_the_sync_moves_the_order_to_paying() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let ledger = Ledger::default();
    // What the ledger had been asked when the order was written: charged, then read by the sync.
    let at_write = Arc::new(Mutex::new(Vec::new()));
    let (seen, asked) = (at_write.clone(), ledger.clone());
    db.before_write(move || seen.lock().unwrap().push(asked.calls()));

    let view = svc(&db, &ledger).pay(&tenant_actor(), 1, jsapi(None)).await.unwrap();

    let at_write = at_write.lock().unwrap().clone();
    assert!(matches!(&at_write[..], [calls] if matches!(&calls[..], [Call::Charge(..), Call::Money(..)])), "{at_write:?}");
    let stored = db.order(1);
    let calls = ledger.actions();
    let audit = requested_audit(&calls[0], "order.pay", 1);
    assert_eq!(
        calls,
        [Call::Charge(
            TENANT,
            Charge {
                order_id: 1,
                out_trade_no: stored.order_no.clone(),
                description: "Coffee beans".into(),
                amount: Money::from_fen(1000),
                openid: "o-ann".into(),
                expires_at: stored.expires_at,
                audit,
            }
        )]
    );
    assert_eq!(view.pay_params, Some(pay_params(&format!("wx_prepay_{}", stored.order_no))));
    assert_eq!((view.order.status, stored.status), (OrderStatus::Paying, OrderStatus::Paying));
    let payment = stored.payment.unwrap();
    assert_eq!((payment.method, payment.out_trade_no.as_deref()), (PaymentMethod::WechatJsapi, Some(stored.order_no.as_str())));
    assert_eq!((payment.transaction_id, payment.paid_at), (None, None));
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id, audit.target_id), ("order.paying", None, Some(1)));
    assert_eq!((audit.tenant_id, audit.partner_id), (Some(TENANT), Some(PARTNER)));
    assert_eq!(audit.after.unwrap()["status"], "paying");
}

#[tokio::test]
async fn paying_again_while_paying_resumes_the_same_charge_and_writes_nothing_more() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let ledger = Ledger::default();
    let svc = svc(&db, &ledger);

    let first = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap();
    let again = svc.pay(&tenant_actor(), 1, jsapi(Some("o-ann"))).await.unwrap();

    assert_eq!(first.pay_params, again.pay_params);
    assert_eq!(again.order.status, OrderStatus::Paying);
    let charges = ledger.actions();
    assert_eq!(charges.len(), 2);
    assert_eq!(charges[0], charges[1], "the same charge: the ledger resumes the same platform payment");
    assert_eq!(db.actions(), ["order.paying"], "the second request writes nothing");
}

#[tokio::test]
async fn the_openid_comes_from_the_request_or_the_order() {
    let mut anonymous = order(1, OrderStatus::Pending);
    anonymous.openid = None;
    let db = Db::with(vec![anonymous.clone(), Order { id: 2, order_no: order_no_of(2), ..anonymous }]);
    let ledger = Ledger::default();
    let svc = svc(&db, &ledger);

    let missing = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();
    let given = svc.pay(&tenant_actor(), 2, jsapi(Some("o-bob"))).await.unwrap();

    assert_eq!(fields_of(&missing), ["openid"]);
    assert_eq!(missing.reason(), atrium_kernel::Reason::PayerOpenidMissing, "the order's state refuses it, not the input: {missing:?}");
    assert_eq!(db.order(1).status, OrderStatus::Pending);
    assert_eq!(given.order.openid.as_deref(), Some("o-bob"), "the payer is remembered, as the ledger has it");
    assert!(matches!(&ledger.actions()[..], [Call::Charge(_, c)] if c.openid == "o-bob" && c.order_id == 2));
}

#[tokio::test]
async fn another_payer_cannot_take_over_a_payment_in_progress() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let ledger = Ledger::default();

    let err = svc(&db, &ledger).pay(&tenant_actor(), 1, jsapi(Some("o-eve"))).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("another payer")), "{err:?}");
    assert!(ledger.calls().is_empty());
}

#[tokio::test]
async fn a_ledger_conflict_on_pay_is_answered_unchanged_and_writes_nothing() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let ledger = Ledger::default();
    ledger.fail("charge", || Error::conflict(Reason::PaymentsNotReady, "payments are disabled for this tenant"));

    let err = svc(&db, &ledger).pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m == "payments are disabled for this tenant"), "{err:?}");
    assert_eq!(db.order(1).status, OrderStatus::Pending);
    assert!(db.audits().is_empty());
    assert_eq!(db.writes(), 0);
    assert!(matches!(&ledger.calls()[..], [Call::Charge(..)]), "no sync after a refusal: {:?}", ledger.calls());
}

#[tokio::test]
async fn an_unavailable_ledger_is_answered_unchanged_after_syncing_what_it_may_have_done() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let ledger = Ledger::holding(&db.order(1), online(&db.order(1), PaymentState::Unpaid));
    ledger.fail("charge", || Error::Upstream("the pay platform timed out".into()));

    let err = svc(&db, &ledger).pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();

    assert!(matches!(err, Error::Upstream(ref m) if m == "the pay platform timed out"), "{err:?}");
    assert!(matches!(&ledger.calls()[..], [Call::Charge(..), Call::Money(TENANT, 1)]), "synced after the error: {:?}", ledger.calls());
    assert_eq!(db.order(1).status, OrderStatus::Paying, "the charge had reached the ledger");
    assert_eq!(db.actions(), ["order.paying"]);
}

#[tokio::test]
async fn a_failing_best_effort_sync_does_not_hide_the_ledgers_error() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let ledger = Ledger::default();
    ledger.fail("charge", || Error::Unavailable { message: "busy".into(), retry_after_secs: 3 });
    ledger.fail("money", || Error::Upstream("down".into()));

    let err = svc(&db, &ledger).pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();

    assert!(matches!(err, Error::Unavailable { retry_after_secs: 3, .. }), "{err:?}");
    assert_eq!(db.order(1).status, OrderStatus::Pending);
}

#[tokio::test]
async fn only_a_pending_or_paying_order_can_be_paid() {
    for &status in OrderStatus::VARIANTS {
        if status.is_unpaid() {
            continue;
        }
        let db = Db::with(vec![order(1, status)]);
        let ledger = Ledger::default();
        let svc = svc(&db, &ledger);

        let online = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();
        let cash = svc.pay(&tenant_actor(), 1, offline("CASH-1")).await.unwrap_err();

        assert!(matches!(online, Error::Conflict(..)), "{status:?}: {online:?}");
        assert!(matches!(cash, Error::Conflict(..)), "{status:?}: {cash:?}");
        assert_eq!(db.order(1).status, status);
        assert!(ledger.calls().is_empty(), "{status:?}: the ledger is never asked");
    }
}

#[tokio::test]
async fn an_expired_order_cannot_be_paid() {
    let db = Db::with(vec![Order { expires_at: now(), ..order(1, OrderStatus::Pending) }]);
    let ledger = Ledger::default();
    let svc = svc(&db, &ledger);

    let online = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();
    let cash = svc.pay(&tenant_actor(), 1, offline("CASH-1")).await.unwrap_err();

    assert!(matches!(online, Error::Conflict(_, ref m) if m.contains("expired")), "{online:?}");
    assert!(matches!(cash, Error::Conflict(_, ref m) if m.contains("expired")), "{cash:?}");
    assert!(ledger.calls().is_empty());
}

#[tokio::test]
async fn an_offline_payment_is_recorded_by_the_ledger_and_the_order_becomes_paid() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let ledger = Ledger::default();

    let view = svc(&db, &ledger).pay(&tenant_actor(), 1, offline("BANK 2026-0042")).await.unwrap();

    let calls = ledger.actions();
    let audit = requested_audit(&calls[0], "order.pay", 1);
    assert_eq!(audit.after.as_ref().map(|a| a["reference"].clone()), Some("BANK 2026-0042".into()));
    assert_eq!(
        calls,
        [Call::Offline(
            TENANT,
            OfflineCharge {
                order_id: 1,
                order_no: order_no_of(1),
                description: "Coffee beans".into(),
                amount: Money::from_fen(1000),
                reference: "BANK 2026-0042".into(),
                recorded_by: USER,
                audit,
            }
        )]
    );
    assert_eq!(view.pay_params, None);
    assert_eq!((view.order.status, view.order.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    let stored = db.order(1);
    assert_eq!((stored.status, stored.paid_amount, stored.refunded_amount), (OrderStatus::Paid, Money::from_fen(1000), Money::ZERO));
    assert_eq!(
        stored.payment,
        Some(Payment {
            method: PaymentMethod::Offline,
            out_trade_no: None,
            transaction_id: None,
            paid_at: Some(now()),
            reference: Some("BANK 2026-0042".into()),
            paid_by: Some(USER),
            sub_merchant: false,
        })
    );
    let audit = db.audits().pop().unwrap();
    assert_eq!(audit.action, "order.paid");
    assert_eq!(audit.after.unwrap()["payment"]["reference"], "BANK 2026-0042");
    let events = db.events();
    assert_eq!(
        events.iter().map(|(kind, d)| (*kind, d["method"].as_str(), d["paid_amount"].as_i64())).collect::<Vec<_>>(),
        [("order.paid", Some("offline"), Some(1000))]
    );
}

#[tokio::test]
async fn an_offline_payment_of_a_paying_order_replaces_the_platform_payment_the_ledger_closed() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let ledger = Ledger::holding(&db.order(1), online(&db.order(1), PaymentState::Unpaid));

    let view = svc(&db, &ledger).pay(&tenant_actor(), 1, offline("CASH-7")).await.unwrap();

    assert_eq!(view.order.status, OrderStatus::Paid);
    let payment = db.order(1).payment.unwrap();
    assert_eq!((payment.method, payment.out_trade_no, payment.reference.as_deref()), (PaymentMethod::Offline, None, Some("CASH-7")));
}

#[tokio::test]
async fn an_offline_payment_the_ledger_refuses_because_the_platform_payment_won_is_a_conflict() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let ledger = Ledger::holding(&db.order(1), online_paid(&db.order(1)));

    let err = svc(&db, &ledger).pay(&tenant_actor(), 1, offline("CASH-7")).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("already paid")), "{err:?}");
    assert_eq!(db.order(1).status, OrderStatus::Paying, "the ledger's event records the payment that won");
}
