//! The expiry job: closing orders left unpaid past their expiry, through the ledger when a
//! platform payment was started.
use super::*;

#[tokio::test]
async fn expiry_closes_a_pending_order_without_asking_the_ledger() {
    let db = Db::with(vec![expired(1, OrderStatus::Pending, Duration::seconds(1)), order(2, OrderStatus::Pending)]);
    let ledger = Ledger::default();

    let changed = svc(&db, &ledger).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    assert_eq!((db.order(1).status, db.order(2).status), (OrderStatus::Closed, OrderStatus::Pending));
    assert!(ledger.calls().is_empty());
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.actor_user_id, audit.target_id), ("order.close", None, Some(1)));
    assert_eq!((audit.tenant_id, audit.partner_id), (Some(TENANT), Some(PARTNER)));
    assert_eq!(
        db.events(),
        [(
            "order.closed",
            serde_json::json!({"id": 1, "tenant_id": TENANT, "order_no": order_no_of(1), "status": "closed", "amount": 1000})
        )]
    );
}

#[tokio::test]
async fn expiry_asks_the_ledger_to_close_a_paying_order_then_syncs_it_closed() {
    let due = expired(1, OrderStatus::Paying, Duration::seconds(0));
    let db = Db::with(vec![due.clone()]);
    let ledger = Ledger::holding(&due, online(&due, PaymentState::Unpaid));
    // What the ledger had been asked when the order was written: the order is written closed
    // only after the ledger closed its payment and was read again.
    let at_write = Arc::new(Mutex::new(Vec::new()));
    let (seen, asked) = (at_write.clone(), ledger.clone());
    db.before_write(move || seen.lock().unwrap().push(asked.calls()));

    let changed = svc(&db, &ledger).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    assert_eq!(ledger.calls(), [Call::Close(TENANT, 1), Call::Money(TENANT, 1)]);
    assert_eq!(
        *at_write.lock().unwrap(),
        [vec![Call::Close(TENANT, 1), Call::Money(TENANT, 1)]],
        "one write, after the close and the sync's read"
    );
    assert_eq!(ledger.state(1).payment.map(|p| p.state), Some(PaymentState::Closed));
    assert_eq!(db.order(1).status, OrderStatus::Closed);
    assert_eq!(db.actions(), ["order.close"]);
    assert_eq!(db.event_kinds(), ["order.closed"]);
}

#[tokio::test]
async fn a_ledger_error_leaves_the_order_for_the_next_run() {
    let stuck = expired(1, OrderStatus::Paying, Duration::minutes(9));
    let db = Db::with(vec![stuck.clone(), expired(2, OrderStatus::Pending, Duration::minutes(1))]);
    let ledger = Ledger::holding(&stuck, online(&stuck, PaymentState::Unpaid));
    ledger.fail("close", || Error::Upstream("the pay platform is unavailable".into()));
    let svc = svc(&db, &ledger);

    let changed = svc.expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    assert_eq!((db.order(1).status, db.order(2).status), (OrderStatus::Paying, OrderStatus::Closed));
    assert_eq!(ledger.calls(), [Call::Close(TENANT, 1)], "no sync after a failed close");

    ledger.failures.lock().unwrap().clear();
    assert_eq!(svc.expire_due(now(), 100).await.unwrap(), 1, "the next run closes it");
    assert_eq!(db.order(1).status, OrderStatus::Closed);
}

#[tokio::test]
async fn a_payment_that_won_the_race_with_expiry_is_recorded_as_paid() {
    let due = expired(1, OrderStatus::Paying, Duration::minutes(5));
    let db = Db::with(vec![due.clone()]);
    // The payer paid just before the close; the ledger's event has not been synced yet.
    let ledger = Ledger::holding(&due, online_paid(&due));

    let changed = svc(&db, &ledger).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 1);
    let stored = db.order(1);
    assert_eq!((stored.status, stored.paid_amount), (OrderStatus::Paid, Money::from_fen(1000)));
    assert_eq!(stored.payment.and_then(|p| p.transaction_id).as_deref(), Some("4200000001"));
    assert_eq!(db.actions(), ["order.paid"]);
}

#[tokio::test]
async fn an_order_whose_payment_stays_open_is_not_counted() {
    let due = expired(1, OrderStatus::Paying, Duration::seconds(0));
    let db = Db::with(vec![due.clone()]);
    let ledger = Ledger::holding(&due, online(&due, PaymentState::Unpaid));
    // The ledger answers the close, yet the payment still reads as open.
    let reopen = ledger.clone();
    ledger.before_money(move || reopen.set(1, Some(online(&due, PaymentState::Unpaid)), Vec::new()));

    let changed = svc(&db, &ledger).expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 0);
    assert_eq!(db.order(1).status, OrderStatus::Paying);
}

#[tokio::test]
async fn a_pending_order_paid_meanwhile_is_left_to_whoever_won() {
    let due = expired(1, OrderStatus::Pending, Duration::seconds(1));
    let db = Db::with(vec![due]);
    // The order is read as due, then paid offline before the close is written.
    let racing = db.clone();
    db.before_write(move || {
        if racing.order(1).status == OrderStatus::Pending {
            racing.set(paid(1, PaymentMethod::Offline));
        }
    });
    let svc = svc(&db, &Ledger::default());

    let changed = svc.expire_due(now(), 100).await.unwrap();

    assert_eq!(changed, 0);
    assert_eq!(db.order(1).status, OrderStatus::Paid);
    assert!(db.audits().is_empty());
}

#[tokio::test]
async fn expiry_takes_at_most_a_batch_the_longest_expired_first() {
    let orders: Vec<Order> = (1..=5).map(|id| expired(id, OrderStatus::Pending, Duration::minutes(10 - id))).collect();
    let db = Db::with(orders);

    let changed = svc(&db, &Ledger::default()).expire_due(now(), 2).await.unwrap();

    assert_eq!(changed, 2);
    let closed: Vec<Id> = (1..=5).filter(|id| db.order(*id).status == OrderStatus::Closed).collect();
    assert_eq!(closed, [1, 2]);
}
