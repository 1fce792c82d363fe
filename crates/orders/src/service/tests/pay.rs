//! Paying orders: on the pay platform (prepay, paying again, the payer's openid) and offline.
use super::*;
use crate::api::{PayOrder, PayParams, PaymentReference};
use crate::ports::{PaymentState, Prepay, PrepayRequest};
use crate::text::Openid;
use mockall::predicate::eq;
use strum::VariantArray;

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

fn prepay(prepay_id: &str) -> Prepay {
    Prepay { prepay_id: prepay_id.into(), pay_params: pay_params(prepay_id) }
}

fn jsapi(openid: Option<&str>) -> PayOrder {
    PayOrder::WechatJsapi { openid: openid.map(|o| Openid::parse(o).unwrap()) }
}

fn offline(reference: &str) -> PayOrder {
    PayOrder::Offline { reference: PaymentReference::parse(reference).unwrap() }
}

/// Payments that prepare `prepay_id` for any request, recording the requests.
fn prepaying(prepay_id: &'static str) -> (MockOrderPayments, Arc<Mutex<Vec<PrepayRequest>>>) {
    let mut payments = MockOrderPayments::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    payments.expect_prepay().returning(move |tenant_id, request| {
        assert_eq!(tenant_id, TENANT);
        keep.lock().unwrap().push(request);
        Ok(prepay(prepay_id))
    });
    (payments, seen)
}

#[tokio::test]
async fn paying_online_prepares_the_platform_order_and_moves_the_order_to_paying() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let (payments, seen) = prepaying("wx_prepay_1");

    let view = svc(&db, payments).pay(&tenant_actor(), 1, jsapi(None)).await.unwrap();

    assert_eq!(view.pay_params, Some(pay_params("wx_prepay_1")));
    assert_eq!(view.order.status, OrderStatus::Paying);
    let stored = db.order(1);
    assert_eq!(stored.status, OrderStatus::Paying);
    let payment = stored.payment.unwrap();
    assert_eq!((payment.method, payment.out_trade_no.as_deref()), (PaymentMethod::WechatJsapi, Some(stored.order_no.as_str())));
    let request = seen.lock().unwrap()[0].clone();
    assert_eq!(
        request,
        PrepayRequest {
            out_trade_no: stored.order_no.clone(),
            description: "Coffee beans".into(),
            amount: Money::from_fen(1000),
            openid: "o-ann".into(),
            expires_at: stored.expires_at,
        }
    );
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id, audit.target_id), ("order.pay", Some(USER), Some(1)));
    assert_eq!(audit.after.unwrap()["status"], "paying");
}

#[tokio::test]
async fn paying_again_while_paying_answers_the_same_prepay_without_another_write() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let (payments, seen) = prepaying("wx_prepay_1");
    let svc = svc(&db, payments);

    let first = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap();
    let again = svc.pay(&tenant_actor(), 1, jsapi(Some("o-ann"))).await.unwrap();

    assert_eq!(first.pay_params, again.pay_params);
    assert_eq!(again.order.status, OrderStatus::Paying);
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].out_trade_no, requests[1].out_trade_no, "the same number: the payments side answers the same prepay");
    assert_eq!(db.actions(), ["order.pay"], "the second request writes nothing");
}

#[tokio::test]
async fn the_openid_comes_from_the_request_or_the_order() {
    let mut anonymous = order(1, OrderStatus::Pending);
    anonymous.openid = None;
    let db = Db::with(vec![anonymous.clone(), Order { id: 2, order_no: "20260401ORDER0002".into(), ..anonymous }]);
    let (payments, seen) = prepaying("wx_prepay_1");
    let svc = svc(&db, payments);

    let missing = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();
    let given = svc.pay(&tenant_actor(), 2, jsapi(Some("o-bob"))).await.unwrap();

    assert_eq!(fields_of(&missing), ["openid"]);
    assert_eq!(db.order(1).status, OrderStatus::Pending);
    assert_eq!(given.order.openid.as_deref(), Some("o-bob"), "the payer is remembered");
    assert_eq!(seen.lock().unwrap()[0].openid, "o-bob");
}

#[tokio::test]
async fn another_payer_cannot_take_over_a_payment_in_progress() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);

    let err = svc(&db, MockOrderPayments::new()).pay(&tenant_actor(), 1, jsapi(Some("o-eve"))).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
}

#[tokio::test]
async fn a_platform_order_that_cannot_be_placed_leaves_the_order_pending() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let mut payments = MockOrderPayments::new();
    payments.expect_prepay().times(1).returning(|_, _| Err(Error::conflict("payments are disabled for this tenant")));

    let err = svc(&db, payments).pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("disabled")), "{err:?}");
    assert_eq!(db.order(1).status, OrderStatus::Pending);
    assert!(db.audits().is_empty());
}

#[tokio::test]
async fn only_a_pending_or_paying_order_can_be_paid() {
    for &status in OrderStatus::VARIANTS {
        if status.is_unpaid() {
            continue;
        }
        let db = Db::with(vec![order(1, status)]);
        // No payments expectation: the platform is never asked.
        let svc = svc(&db, MockOrderPayments::new());

        let online = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();
        let cash = svc.pay(&tenant_actor(), 1, offline("CASH-1")).await.unwrap_err();

        assert!(matches!(online, Error::Conflict(_)), "{status:?}: {online:?}");
        assert!(matches!(cash, Error::Conflict(_)), "{status:?}: {cash:?}");
        assert_eq!(db.order(1).status, status);
    }
}

#[tokio::test]
async fn an_expired_order_cannot_be_paid() {
    let mut expired = order(1, OrderStatus::Pending);
    expired.expires_at = now();
    let db = Db::with(vec![expired]);
    let svc = svc(&db, MockOrderPayments::new());

    let online = svc.pay(&tenant_actor(), 1, jsapi(None)).await.unwrap_err();
    let cash = svc.pay(&tenant_actor(), 1, offline("CASH-1")).await.unwrap_err();

    assert!(matches!(online, Error::Conflict(ref m) if m.contains("expired")), "{online:?}");
    assert!(matches!(cash, Error::Conflict(ref m) if m.contains("expired")), "{cash:?}");
}

#[tokio::test]
async fn an_order_out_of_scope_cannot_be_paid() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let svc = svc(&db, MockOrderPayments::new());

    let err = svc.pay(&other_tenant_actor(), 1, offline("CASH-1")).await.unwrap_err();
    let partner = svc.pay(&partner_actor(OTHER_PARTNER), 1, jsapi(None)).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("order")), "{err:?}");
    assert!(matches!(partner, Error::NotFound("order")), "{partner:?}");
    assert_eq!(db.order(1).status, OrderStatus::Pending);
}

#[tokio::test]
async fn a_racing_request_that_moved_the_order_first_is_no_error() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let mut payments = MockOrderPayments::new();
    let racing = db.clone();
    payments.expect_prepay().times(1).returning(move |_, _| {
        // Another request for the same order wins the write while this one waits.
        let mut o = racing.order(1);
        o.status = OrderStatus::Paying;
        racing.set(o);
        Ok(prepay("wx_prepay_1"))
    });

    let view = svc(&db, payments).pay(&tenant_actor(), 1, jsapi(None)).await.unwrap();

    assert_eq!(view.order.status, OrderStatus::Paying);
    assert_eq!(view.pay_params, Some(pay_params("wx_prepay_1")));
    assert!(db.audits().is_empty(), "the winner wrote the change");
}

#[tokio::test]
async fn an_offline_payment_marks_the_order_paid_at_once_recording_who_and_the_reference() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);

    let view = svc(&db, MockOrderPayments::new()).pay(&tenant_actor(), 1, offline("BANK 2026-0042")).await.unwrap();

    assert_eq!(view.pay_params, None);
    assert_eq!((view.order.status, view.order.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    let payment = db.order(1).payment.unwrap();
    assert_eq!(
        payment,
        Payment {
            method: PaymentMethod::Offline,
            out_trade_no: None,
            transaction_id: None,
            paid_at: Some(now()),
            reference: Some("BANK 2026-0042".into()),
            paid_by: Some(USER),
        }
    );
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id), ("order.pay", Some(USER)));
    assert_eq!(audit.after.unwrap()["payment"]["reference"], "BANK 2026-0042");
}

#[tokio::test]
async fn an_offline_payment_of_a_paying_order_closes_the_platform_order_first() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let no = db.order(1).order_no;
    let mut payments = MockOrderPayments::new();
    payments.expect_close().with(eq(TENANT), eq(no)).times(1).returning(|_, _| Ok(PaymentState::Closed));

    let view = svc(&db, payments).pay(&tenant_actor(), 1, offline("CASH-7")).await.unwrap();

    assert_eq!(view.order.status, OrderStatus::Paid);
    assert_eq!(db.order(1).payment.map(|p| p.method), Some(PaymentMethod::Offline));
}

#[tokio::test]
async fn an_offline_payment_of_an_order_paid_on_the_platform_meanwhile_records_that_payment_instead() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let mut payments = MockOrderPayments::new();
    payments
        .expect_close()
        .times(1)
        .returning(|_, _| Ok(PaymentState::Paid { transaction_id: "4200000099".into(), paid_at: now() - Duration::seconds(5) }));

    let err = svc(&db, payments).pay(&tenant_actor(), 1, offline("CASH-7")).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(ref m) if m.contains("paid")), "{err:?}");
    let stored = db.order(1);
    assert_eq!((stored.status, stored.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    let payment = stored.payment.unwrap();
    assert_eq!((payment.method, payment.transaction_id.as_deref()), (PaymentMethod::WechatJsapi, Some("4200000099")));
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id), ("order.paid", None));
}

#[tokio::test]
async fn an_offline_payment_waits_while_the_platform_order_cannot_be_closed() {
    let db = Db::with(vec![order(1, OrderStatus::Paying)]);
    let mut payments = MockOrderPayments::new();
    payments.expect_close().times(1).returning(|_, _| Ok(PaymentState::Unpaid));

    let err = svc(&db, payments).pay(&tenant_actor(), 1, offline("CASH-7")).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert_eq!(db.order(1).status, OrderStatus::Paying);
    assert!(db.audits().is_empty());
}
