//! Contract tests of the order repository, on SQLite and PostgreSQL. An order's payment and
//! refunds are the payments ledger's: they are written here through [`PaymentStore`], and an
//! order's refunds are read back from it by order, as the ledger's port reads them.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{AuditRecord, Effects, Error, Event, ListQuery, Money, Party, Timestamp};
use atrium_orders::*;
use atrium_org::*;
use atrium_payments as ledger;
use atrium_payments::PaymentRepo;
use atrium_store::schema::{audit_logs, events};
use atrium_store::{Db, FieldCipher, OrdersStore, OrgStore, PaymentStore, store_test};
use chrono::{Duration, TimeZone, Utc};
use diesel::prelude::*;
use std::sync::Arc;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid") + Duration::microseconds(123_456)
}

struct Fixture {
    repo: OrdersStore,
    ledger: PaymentStore,
    partner: i64,
    tenant: i64,
    /// A second tenant of the same partner.
    sibling: i64,
    /// A tenant of another partner.
    other: i64,
    other_partner: i64,
}

async fn fixture(db: &Db) -> Fixture {
    let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let mut partners = vec![];
    for name in ["P", "Q"] {
        let p = Partner {
            id: 0,
            name: name.into(),
            contact_name: None,
            phone: None,
            email: None,
            status: PartnerStatus::Active,
            created_at: t0(),
            updated_at: t0(),
        };
        partners
            .push(org.insert_partner(p, Effects::audited(AuditRecord::system(t0(), "partner.create", "partner", None))).await.unwrap().id);
    }
    let mut tenants = vec![];
    for partner in [partners[0], partners[0], partners[1]] {
        let t = Tenant::draft(Some(partner), "T", t0());
        tenants.push(org.insert_tenant(t, Effects::audited(AuditRecord::system(t0(), "tenant.create", "tenant", None))).await.unwrap().id);
    }
    Fixture {
        repo: OrdersStore::new(db.clone()),
        ledger: PaymentStore::new(db.clone(), FieldCipher::new(&[9u8; 32])),
        partner: partners[0],
        tenant: tenants[0],
        sibling: tenants[1],
        other: tenants[2],
        other_partner: partners[1],
    }
}

fn draft(tenant_id: i64, order_no: &str, amount: i64) -> Order {
    Order {
        id: 0,
        order_no: order_no.into(),
        tenant_id,
        partner_id: None,
        subject: format!("Subject of {order_no}"),
        amount: Money::from_fen(amount),
        paid_amount: Money::ZERO,
        refunded_amount: Money::ZERO,
        status: OrderStatus::Pending,
        items: vec![],
        openid: Some("oUpF8uMuAJO_M2pxb1Q9zNjWeS6o".into()),
        payment: None,
        discrepancy: None,
        refunds: vec![],
        expires_at: t0() + Duration::minutes(30),
        created_by: Some(42),
        created_at: t0(),
        updated_at: t0(),
    }
}

/// Effects tagged `action`: an audit record with that action, and an event carrying it (for a
/// create, naming the new order once stored); [`audits`] finds both again.
fn audit(action: &str, tenant_id: i64, target: Option<i64>) -> Effects {
    Effects::audited(AuditRecord::system(t0(), action, "order", target).owned_by(None, Some(tenant_id))).with_event(Event::new(
        "test.tagged",
        t0(),
        Some(tenant_id),
        target,
        serde_json::json!({ "tag": action }),
    ))
}

async fn insert(f: &Fixture, order: Order) -> Order {
    let tenant = order.tenant_id;
    f.repo.insert_order(order, audit("order.create", tenant, None)).await.unwrap()
}

/// A stored order the platform reported paid (its projection only: the ledger holds nothing).
async fn paid(f: &Fixture, tenant_id: i64, order_no: &str, amount: i64) -> Order {
    let o = insert(f, draft(tenant_id, order_no, amount)).await;
    let read = o.state();
    let done = Order {
        status: OrderStatus::Paid,
        paid_amount: o.amount,
        payment: Some(Payment {
            method: PaymentMethod::WechatJsapi,
            out_trade_no: Some(o.order_no.clone()),
            transaction_id: Some(format!("4200{order_no}")),
            paid_at: Some(t0() + Duration::minutes(1)),
            reference: None,
            paid_by: None,
            sub_merchant: false,
        }),
        updated_at: t0() + Duration::minutes(1),
        ..o
    };
    assert!(f.repo.update_order(done.clone(), read, audit("order.paid", tenant_id, Some(done.id))).await.unwrap());
    done
}

/// The order's platform transaction in the ledger: it carries the order's number.
fn transaction(order: &Order) -> ledger::Transaction {
    ledger::Transaction {
        id: 0,
        tenant_id: order.tenant_id,
        out_trade_no: order.order_no.clone(),
        order_id: Some(order.id),
        method: PaymentMethod::WechatJsapi,
        reference: None,
        paid_by: None,
        description: order.subject.clone(),
        amount: order.amount,
        openid: "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o".into(),
        attach: None,
        prepay_id: None,
        trade_state: ledger::TradeState::NotPay,
        transaction_id: None,
        payer_total: None,
        success_time: None,
        discrepancy: None,
        sub_mchid: None,
        expires_at: order.expires_at,
        created_at: t0(),
        updated_at: t0(),
    }
}

/// Stores `tx` in the ledger, paid.
async fn pay_in_ledger(f: &Fixture, tx: ledger::Transaction) -> ledger::Transaction {
    let tx = f.ledger.insert_transaction(tx, ledger::Effects::default()).await.unwrap();
    let done = ledger::Transaction {
        trade_state: ledger::TradeState::Success,
        transaction_id: Some(format!("4200{}", tx.out_trade_no)),
        payer_total: Some(tx.amount),
        success_time: Some(t0() + Duration::minutes(1)),
        updated_at: t0() + Duration::minutes(1),
        ..tx
    };
    assert!(f.ledger.update_transaction(done.clone(), ledger::TradeState::NotPay, None, ledger::Effects::default()).await.unwrap());
    done
}

/// A refund of `tx` in the ledger, of its order.
fn ledger_refund(tx: &ledger::Transaction, out_refund_no: &str, amount: i64, minutes: i64) -> ledger::Refund {
    let at = t0() + Duration::minutes(minutes);
    ledger::Refund {
        id: 0,
        tenant_id: tx.tenant_id,
        out_trade_no: tx.out_trade_no.clone(),
        order_id: tx.order_id,
        out_refund_no: out_refund_no.into(),
        refund_id: None,
        amount: Money::from_fen(amount),
        status: RefundStatus::Processing,
        reason: Some("changed mind".into()),
        requested_by: Some(7),
        fail_reason: None,
        succeeded_at: None,
        created_at: at,
        updated_at: at,
    }
}

/// Reserves `refund` in the ledger; it must be accepted.
async fn reserve(f: &Fixture, refund: ledger::Refund) -> ledger::Refund {
    let rule = ledger::RefundRule { window: Duration::days(365), max_refunds: 50 };
    match f.ledger.reserve_refund(refund, rule, ledger::Effects::default()).await.unwrap() {
        ledger::RefundReservation::Reserved(r) => r,
        other => panic!("not reserved: {other:?}"),
    }
}

fn query() -> OrderQuery {
    OrderQuery::default()
}

fn ids(page: &atrium_kernel::Page<Order>) -> Vec<i64> {
    page.items.iter().map(|o| o.id).collect()
}

/// The audit records of `action` as (target, tenant, partner); the events tagged with it must
/// match them one for one (written with them or not at all, about the same order).
fn audits(db: &Db, action: &str) -> Vec<(Option<i64>, Option<i64>, Option<i64>)> {
    let mut conn = db.conn().unwrap();
    let audits: Vec<(Option<i64>, Option<i64>, Option<i64>)> = audit_logs::table
        .filter(audit_logs::action.eq(action))
        .order(audit_logs::id.asc())
        .select((audit_logs::target_id, audit_logs::tenant_id, audit_logs::partner_id))
        .load(&mut *conn)
        .unwrap();
    let tagged: Vec<(Option<i64>, Option<i64>, Option<i64>)> = events::table
        .filter(events::data.like(format!("%\"tag\":\"{action}\"%")))
        .order(events::id.asc())
        .select((events::subject_id, events::tenant_id, events::partner_id))
        .load(&mut *conn)
        .unwrap();
    assert_eq!(tagged, audits, "the events of `{action}` are written with its audit records, about the same order and owner");
    audits
}

store_test!(an_order_round_trips_with_its_items_and_its_audit_record, |db| {
    let f = fixture(&db).await;
    let items = vec![
        OrderItem { name: "Beans 500 g".into(), quantity: 2, unit_price: Money::from_fen(4400) },
        OrderItem { name: "Filter papers".into(), quantity: 1, unit_price: Money::ZERO },
        OrderItem { name: "Mug".into(), quantity: 3, unit_price: Money::from_fen(1) },
    ];
    let order = Order { items: items.clone(), ..draft(f.tenant, "20260501AAAA0001", 8803) };

    let stored = insert(&f, order.clone()).await;

    assert!(stored.id > 0);
    assert_eq!(stored, Order { id: stored.id, partner_id: Some(f.partner), ..order });
    assert_eq!(f.repo.get_order(Party::Platform, stored.id).await.unwrap(), Some(stored.clone()));
    assert_eq!(audits(&db, "order.create"), vec![(Some(stored.id), Some(f.tenant), Some(f.partner))]);
});

store_test!(an_order_number_is_unique_per_tenant, |db| {
    let f = fixture(&db).await;
    insert(&f, draft(f.tenant, "N0000001", 100)).await;

    let again = f.repo.insert_order(draft(f.tenant, "N0000001", 200), audit("order.create", f.tenant, None)).await.unwrap_err();
    let elsewhere = insert(&f, draft(f.other, "N0000001", 300)).await;

    assert!(matches!(again, Error::Conflict(_, ref m) if m.contains("N0000001")), "{again:?}");
    assert_eq!(elsewhere.amount, Money::from_fen(300));
    assert_eq!(audits(&db, "order.create").len(), 2, "the refused insert wrote no audit record");
});

store_test!(the_tenant_is_found_within_the_callers_scope_only, |db| {
    let f = fixture(&db).await;
    let mine = Some(OrderTenant { id: f.tenant, partner_id: Some(f.partner) });

    assert_eq!(f.repo.tenant(Party::Platform, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Partner { partner_id: f.partner }, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Partner { partner_id: f.partner }, f.other).await.unwrap(), None);
    assert_eq!(f.repo.tenant(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Tenant { tenant_id: f.sibling, partner_id: Some(f.partner) }, f.tenant).await.unwrap(), None);
    assert_eq!(f.repo.tenant(Party::Platform, f.other + 1000).await.unwrap(), None);
});

store_test!(get_and_list_see_the_callers_scope_only, |db| {
    let f = fixture(&db).await;
    let a = insert(&f, draft(f.tenant, "A0000001", 100)).await;
    let b = insert(&f, draft(f.sibling, "B0000001", 100)).await;
    let c = insert(&f, draft(f.other, "C0000001", 100)).await;
    let partner = Party::Partner { partner_id: f.partner };
    let tenant = Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) };
    let stranger = Party::Tenant { tenant_id: f.other, partner_id: Some(f.other_partner) };

    assert_eq!(ids(&f.repo.list_orders(Party::Platform, query()).await.unwrap()), [c.id, b.id, a.id]);
    assert_eq!(ids(&f.repo.list_orders(partner, query()).await.unwrap()), [b.id, a.id]);
    assert_eq!(ids(&f.repo.list_orders(tenant, query()).await.unwrap()), [a.id]);
    assert_eq!(ids(&f.repo.list_orders(stranger, query()).await.unwrap()), [c.id]);
    assert!(f.repo.get_order(partner, a.id).await.unwrap().is_some());
    assert!(f.repo.get_order(partner, c.id).await.unwrap().is_none());
    assert!(f.repo.get_order(tenant, b.id).await.unwrap().is_none());
    assert!(f.repo.get_order(stranger, a.id).await.unwrap().is_none());
    assert!(f.repo.get_order(Party::Platform, c.id + 1000).await.unwrap().is_none());
    // A filter never widens the scope.
    let theirs = OrderQuery { tenant_id: Some(f.other), ..query() };
    assert!(f.repo.list_orders(partner, theirs).await.unwrap().items.is_empty());
});

store_test!(lists_filter_by_status_tenant_partner_keyword_and_time_and_sort_and_page, |db| {
    let f = fixture(&db).await;
    let mut made = vec![];
    for (i, (tenant, amount)) in [(f.tenant, 300), (f.tenant, 100), (f.sibling, 200), (f.other, 400)].into_iter().enumerate() {
        let o = Order {
            subject: ["Coffee beans", "Green TEA", "Mug 100%", "Coffee filter"][i].into(),
            created_at: t0() + Duration::hours(i as i64),
            updated_at: t0() + Duration::hours(i as i64),
            expires_at: t0() + Duration::hours(10 - i as i64),
            ..draft(tenant, &format!("20260501X{i}abcDEF"), amount)
        };
        made.push(insert(&f, o).await.id);
    }
    paid(&f, f.tenant, "PAID00001", 50).await;
    let by = |q: OrderQuery| {
        let repo = f.repo.clone();
        async move { ids(&repo.list_orders(Party::Platform, q).await.unwrap()) }
    };
    let keyword = |k: &str| OrderQuery { list: ListQuery::parse(None, None, Some(k.into()), None).unwrap(), ..query() };
    let sorted =
        |s: &str| OrderQuery { list: ListQuery::parse(None, None, None, Some(s)).unwrap(), status: Some(OrderStatus::Pending), ..query() };

    assert_eq!(by(OrderQuery { status: Some(OrderStatus::Pending), tenant_id: Some(f.tenant), ..query() }).await, [made[1], made[0]]);
    assert_eq!(by(OrderQuery { partner_id: Some(f.other_partner), ..query() }).await, [made[3]]);
    assert_eq!(by(keyword("coffee")).await, [made[3], made[0]], "subject, case-insensitive");
    assert_eq!(by(keyword("green tea")).await, [made[1]]);
    assert_eq!(by(keyword("x2ABCdef")).await, [made[2]], "order number, case-insensitive");
    assert_eq!(by(keyword("100%")).await, [made[2]], "LIKE wildcards are literal");
    assert!(by(keyword("_")).await.is_empty());
    let window = OrderQuery { created_from: Some(t0() + Duration::hours(1)), created_to: Some(t0() + Duration::hours(3)), ..query() };
    assert_eq!(by(window).await, [made[2], made[1]], "from inclusive, to exclusive");
    assert_eq!(by(sorted("amount")).await, [made[1], made[2], made[0], made[3]]);
    assert_eq!(by(sorted("-amount")).await, [made[3], made[0], made[2], made[1]]);
    assert_eq!(by(sorted("expires_at")).await, [made[3], made[2], made[1], made[0]]);
    assert_eq!(by(sorted("created_at")).await, made);

    let page2 = OrderQuery { list: ListQuery::parse(Some(2), Some(2), None, Some("id")).unwrap(), ..query() };
    let page = f.repo.list_orders(Party::Platform, page2).await.unwrap();
    assert_eq!((ids(&page), page.total, page.page, page.page_size), (vec![made[2], made[3]], 5, 2, 2));
});

store_test!(a_status_update_applies_only_over_the_status_it_read, |db| {
    let f = fixture(&db).await;
    let o = insert(&f, draft(f.tenant, "U0000001", 100)).await;
    let paying = Order {
        status: OrderStatus::Paying,
        openid: Some("o-bob".into()),
        payment: Some(Payment {
            method: PaymentMethod::WechatJsapi,
            out_trade_no: Some(o.order_no.clone()),
            transaction_id: None,
            paid_at: None,
            reference: None,
            paid_by: None,
            // Placed for a sub-merchant: written and read back as it is.
            sub_merchant: true,
        }),
        updated_at: t0() + Duration::seconds(5),
        ..o.clone()
    };
    let closed = Order { status: OrderStatus::Closed, updated_at: t0() + Duration::seconds(6), ..o.clone() };

    assert!(f.repo.update_order(paying.clone(), o.state(), audit("order.pay", f.tenant, Some(o.id))).await.unwrap());
    // A racing writer that also read `pending` loses and writes nothing, its audit record included.
    assert!(!f.repo.update_order(closed, o.state(), audit("order.close", f.tenant, Some(o.id))).await.unwrap());

    assert_eq!(f.repo.get_order(Party::Platform, o.id).await.unwrap(), Some(paying.clone()));
    assert_eq!(audits(&db, "order.pay").len(), 1);
    assert!(audits(&db, "order.close").is_empty());
    // Wrong tenant: no write.
    let foreign = Order { tenant_id: f.other, status: OrderStatus::Closed, ..paying.clone() };
    assert!(!f.repo.update_order(foreign, paying.state(), audit("order.close", f.other, Some(o.id))).await.unwrap());

    let cash = insert(&f, draft(f.tenant, "U0000002", 100)).await;
    let read = cash.state();
    let offline = Order {
        status: OrderStatus::Paid,
        paid_amount: cash.amount,
        payment: Some(Payment {
            method: PaymentMethod::Offline,
            out_trade_no: None,
            transaction_id: None,
            paid_at: Some(t0() + Duration::minutes(1)),
            reference: Some("BANK 2026-0042".into()),
            paid_by: Some(42),
            sub_merchant: false,
        }),
        updated_at: t0() + Duration::minutes(1),
        ..cash
    };
    assert!(f.repo.update_order(offline.clone(), read, audit("order.pay", f.tenant, Some(offline.id))).await.unwrap());
    assert_eq!(f.repo.get_order(Party::Platform, offline.id).await.unwrap(), Some(offline));
});

store_test!(an_order_cannot_be_created_with_a_number_a_transaction_already_has, |db| {
    let f = fixture(&db).await;
    let routes = ledger::Transaction { order_id: None, ..transaction(&draft(f.tenant, "T0000001", 100)) };
    f.ledger.insert_transaction(routes, ledger::Effects::default()).await.unwrap();

    let err = f.repo.insert_order(draft(f.tenant, "T0000001", 100), audit("order.create", f.tenant, None)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("T0000001")), "{err:?}");
    assert!(audits(&db, "order.create").is_empty(), "the refused insert wrote no audit record");
    assert_eq!(f.repo.list_orders(Party::Platform, query()).await.unwrap().total, 0);
    // Transactions' numbers are per tenant too.
    insert(&f, draft(f.other, "T0000001", 100)).await;
});

store_test!(an_orders_refunds_are_the_ledgers_of_its_payment_read_by_order, |db| {
    let f = fixture(&db).await;
    let o = insert(&f, draft(f.tenant, "F0000001", 100)).await;
    let neighbour = insert(&f, draft(f.tenant, "F0000002", 100)).await;
    let tx = pay_in_ledger(&f, transaction(&o)).await;
    let processing = reserve(&f, ledger_refund(&tx, "RF1", 30, 2)).await;
    let succeeded = reserve(&f, ledger_refund(&tx, "RF2", 20, 3)).await;
    let succeeded = ledger::Refund {
        refund_id: Some("50000000382019052709732678859".into()),
        status: RefundStatus::Succeeded,
        succeeded_at: Some(t0() + Duration::minutes(4)),
        updated_at: t0() + Duration::minutes(5),
        ..succeeded
    };
    assert!(f.ledger.update_refund(succeeded.clone(), RefundStatus::Processing, ledger::Effects::default()).await.unwrap());
    let failed = reserve(&f, ledger_refund(&tx, "RF3", 10, 4)).await;
    let failed = ledger::Refund { status: RefundStatus::Failed, updated_at: t0() + Duration::minutes(6), ..failed };
    assert!(f.ledger.update_refund(failed.clone(), RefundStatus::Processing, ledger::Effects::default()).await.unwrap());
    // Refunds of another order's payment, and of a transaction of the payment routes.
    let theirs = pay_in_ledger(&f, transaction(&neighbour)).await;
    let elsewhere = reserve(&f, ledger_refund(&theirs, "RF4", 5, 2)).await;
    let routes = pay_in_ledger(&f, ledger::Transaction { order_id: None, ..transaction(&draft(f.tenant, "T0000001", 100)) }).await;
    reserve(&f, ledger_refund(&routes, "RF5", 5, 2)).await;

    let shown: Vec<OrderRefund> =
        f.ledger.refunds_of_orders(vec![o.id]).await.unwrap().iter().map(|r| r.as_order_refund().unwrap()).collect();

    let as_shown = |r: &ledger::Refund, order_id: i64, settled_at: Option<Timestamp>| OrderRefund {
        id: r.id,
        order_id,
        tenant_id: r.tenant_id,
        out_refund_no: r.out_refund_no.clone(),
        amount: r.amount,
        status: r.status,
        reason: r.reason.clone(),
        requested_by: Some(7),
        fail_reason: r.fail_reason.clone(),
        settled_at,
        created_at: r.created_at,
        updated_at: r.updated_at,
    };
    assert_eq!(
        shown,
        vec![
            as_shown(&processing, o.id, None),
            as_shown(&succeeded, o.id, succeeded.succeeded_at),
            as_shown(&failed, o.id, Some(failed.updated_at)),
        ],
        "oldest first, who asked kept; settled when it succeeded, else when it last changed"
    );
    let order = f.repo.get_order(Party::Platform, o.id).await.unwrap().unwrap();
    assert_eq!(
        (order.status, order.refunded_amount),
        (OrderStatus::Pending, Money::ZERO),
        "the projection is written by update_order only"
    );
    let both = f.ledger.refunds_of_orders(vec![neighbour.id, o.id]).await.unwrap();
    assert_eq!(
        both.iter().map(|r| (r.order_id, r.out_refund_no.as_str())).collect::<Vec<_>>(),
        [(Some(o.id), "RF1"), (Some(o.id), "RF2"), (Some(o.id), "RF3"), (Some(neighbour.id), "RF4")],
        "by order, none of the payment routes' transaction"
    );
    assert_eq!(both[3], elsewhere);
    assert!(f.ledger.refunds_of_orders(vec![]).await.unwrap().is_empty());
    // More orders than one IN (…) list holds: every refund found once.
    let many: Vec<i64> = (0..1_200).map(|i| o.id + 10_000 + i).chain([o.id]).collect();
    assert_eq!(f.ledger.refunds_of_orders(many).await.unwrap().len(), 3);
});

/// A refund of `order` as the ledger tells it, requested at `t0()`.
fn known_refund(order: &Order, id: i64, fen: i64, status: RefundStatus) -> OrderRefund {
    let settled = status.settled_at(None, t0() + Duration::minutes(id));
    OrderRefund {
        id,
        order_id: order.id,
        tenant_id: order.tenant_id,
        out_refund_no: format!("RF{id}"),
        amount: Money::from_fen(fen),
        status,
        reason: Some("damaged".into()),
        requested_by: Some(42),
        fail_reason: (status == RefundStatus::Failed).then(|| "BALANCE_NOT_ENOUGH".into()),
        settled_at: settled,
        created_at: t0(),
        updated_at: settled.unwrap_or(t0()),
    }
}

store_test!(an_order_keeps_its_refunds_and_an_older_view_never_takes_a_final_one_back, |db| {
    let f = fixture(&db).await;
    let o = paid(&f, f.tenant, "K0000001", 100).await;
    let neighbour = paid(&f, f.tenant, "K0000002", 100).await;
    let (a, b) = (known_refund(&o, 1, 30, RefundStatus::Processing), known_refund(&o, 2, 20, RefundStatus::Failed));
    let noted = Order { refunds: vec![a.clone(), b.clone()], updated_at: t0() + Duration::minutes(5), ..o.clone() };
    assert!(f.repo.update_order(noted.clone(), o.state(), Effects::none()).await.unwrap(), "a change of the refunds alone, unaudited");
    assert_eq!(f.repo.get_order(Party::Platform, o.id).await.unwrap(), Some(noted.clone()));

    let a_done = known_refund(&o, 1, 30, RefundStatus::Succeeded);
    let settled = Order {
        status: OrderStatus::PartiallyRefunded,
        refunded_amount: Money::from_fen(30),
        refunds: vec![a_done.clone(), b.clone()],
        updated_at: t0() + Duration::minutes(6),
        ..o.clone()
    };
    assert!(f.repo.update_order(settled.clone(), noted.state(), audit("order.refund_settled", f.tenant, Some(o.id))).await.unwrap());
    // A writer holding an older view of the refunds (the first still processing, none of them,
    // or another order's) takes nothing back and adds nothing of another order.
    let elsewhere = known_refund(&neighbour, 3, 10, RefundStatus::Succeeded);
    for view in [vec![a.clone(), b.clone()], vec![], vec![elsewhere]] {
        let older = Order { refunds: view, ..settled.clone() };
        assert!(f.repo.update_order(older, settled.state(), Effects::none()).await.unwrap());
    }

    let stored = f.repo.get_order(Party::Platform, o.id).await.unwrap().unwrap();
    assert_eq!(stored.refunds, [a_done.clone(), b.clone()]);
    assert_eq!(stored.refunds[0].settled_at, Some(t0() + Duration::minutes(1)));
    assert!(f.repo.get_order(Party::Platform, neighbour.id).await.unwrap().unwrap().refunds.is_empty());
    let page = f.repo.list_orders(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, OrderQuery::default()).await.unwrap();
    let listed: Vec<(i64, Vec<OrderRefund>)> = page.items.into_iter().map(|o| (o.id, o.refunds)).collect();
    assert_eq!(listed, [(neighbour.id, vec![]), (o.id, vec![a_done.clone(), b])], "a page reads each order's own");
    // The last processing one settles later: it moves.
    let c = known_refund(&o, 4, 5, RefundStatus::Processing);
    let more = Order { refunds: vec![c.clone()], ..stored.clone() };
    assert!(f.repo.update_order(more, stored.state(), Effects::none()).await.unwrap());
    let c_closed = known_refund(&o, 4, 5, RefundStatus::Closed);
    assert!(
        f.repo.update_order(Order { refunds: vec![c_closed.clone()], ..stored.clone() }, stored.state(), Effects::none()).await.unwrap()
    );
    let last = f.repo.get_order(Party::Platform, o.id).await.unwrap().unwrap();
    assert_eq!(last.refunds.last(), Some(&c_closed));
    // A final one takes in what the ledger filled in later (when it settled), in its status
    // only: another final status never replaces it.
    let a_later = OrderRefund { settled_at: Some(t0() + Duration::minutes(9)), updated_at: t0() + Duration::minutes(9), ..a_done.clone() };
    let a_failed = OrderRefund { status: RefundStatus::Failed, ..a_done.clone() };
    for view in [vec![a_later.clone()], vec![a_failed]] {
        assert!(f.repo.update_order(Order { refunds: view, ..last.clone() }, last.state(), Effects::none()).await.unwrap());
    }
    let refreshed = f.repo.get_order(Party::Platform, o.id).await.unwrap().unwrap();
    assert_eq!(refreshed.refunds[0], a_later);
    assert_eq!(audits(&db, "order.refund_settled").len(), 1, "only the audited write left an entry");
});

store_test!(an_order_update_writes_what_the_order_knows_and_is_refused_when_what_it_read_is_stale, |db| {
    let f = fixture(&db).await;
    let o = paid(&f, f.tenant, "V0000001", 100).await;
    let read = o.state();
    let synced = Order {
        status: OrderStatus::PartiallyRefunded,
        refunded_amount: Money::from_fen(30),
        updated_at: t0() + Duration::minutes(3),
        ..o.clone()
    };
    assert!(f.repo.update_order(synced.clone(), read, audit("order.sync", f.tenant, Some(o.id))).await.unwrap());

    // A writer that read the order before that refund was counted writes nothing.
    let stale = Order { refunded_amount: Money::from_fen(20), updated_at: t0() + Duration::minutes(4), ..synced.clone() };
    assert!(!f.repo.update_order(stale.clone(), read, audit("order.stale", f.tenant, Some(o.id))).await.unwrap());
    // Nor one whose read differs only in the paid amount, or in whether a discrepancy is set.
    let now = synced.state();
    for wrong in [
        OrderState { paid_amount: Money::ZERO, ..now },
        OrderState { discrepancy: true, ..now },
        OrderState { status: OrderStatus::Paid, ..now },
    ] {
        assert!(!f.repo.update_order(stale.clone(), wrong, audit("order.stale", f.tenant, Some(o.id))).await.unwrap(), "{wrong:?}");
    }
    assert_eq!(f.repo.get_order(Party::Platform, o.id).await.unwrap(), Some(synced.clone()));
    assert!(audits(&db, "order.stale").is_empty());

    // Every projection field is written: status, amounts, openid, payment and discrepancy.
    let other = insert(&f, draft(f.tenant, "V0000002", 100)).await;
    let odd = Order {
        status: OrderStatus::Paying,
        openid: Some("o-carol".into()),
        payment: Some(Payment {
            method: PaymentMethod::WechatJsapi,
            out_trade_no: Some(other.order_no.clone()),
            transaction_id: Some("4200V0000002".into()),
            paid_at: None,
            reference: None,
            paid_by: None,
            sub_merchant: false,
        }),
        discrepancy: Some("the pay platform reported 99 fen in CNY paid for a transaction of 100 fen in CNY".into()),
        updated_at: t0() + Duration::minutes(5),
        ..other.clone()
    };
    assert!(f.repo.update_order(odd.clone(), other.state(), audit("order.sync", f.tenant, Some(other.id))).await.unwrap());
    assert_eq!(f.repo.get_order(Party::Platform, other.id).await.unwrap(), Some(odd.clone()));
    // Once a discrepancy is set, only a writer that read it may write.
    let resolved = Order { status: OrderStatus::Closed, discrepancy: None, updated_at: t0() + Duration::minutes(6), ..odd.clone() };
    assert!(!f.repo.update_order(resolved.clone(), other.state(), audit("order.stale", f.tenant, Some(other.id))).await.unwrap());
    assert!(f.repo.update_order(resolved.clone(), odd.state(), audit("order.sync", f.tenant, Some(other.id))).await.unwrap());
    assert_eq!(f.repo.get_order(Party::Platform, other.id).await.unwrap(), Some(resolved));
    assert_eq!(audits(&db, "order.sync").len(), 3);
    assert!(audits(&db, "order.stale").is_empty());
});

store_test!(racing_order_updates_over_one_read_let_exactly_one_apply, |db| {
    let f = fixture(&db).await;
    let o = paid(&f, f.tenant, "X0000001", 100).await;
    let read = o.state();
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(8));
    let mut tasks = vec![];
    for i in 1..=8 {
        let (repo, start, tenant) = (repo.clone(), start.clone(), f.tenant);
        let next = Order {
            status: OrderStatus::PartiallyRefunded,
            refunded_amount: Money::from_fen(i),
            updated_at: t0() + Duration::minutes(i),
            ..o.clone()
        };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            let wrote = repo.update_order(next.clone(), read, audit("order.sync", tenant, Some(next.id))).await.unwrap();
            (wrote, next)
        }));
    }
    let mut winners = vec![];
    for t in tasks {
        let (wrote, next) = t.await.unwrap();
        if wrote {
            winners.push(next);
        }
    }

    assert_eq!(winners.len(), 1, "exactly one of 8 writers over one read applies");
    assert_eq!(f.repo.get_order(Party::Platform, o.id).await.unwrap().as_ref(), winners.first());
    assert_eq!(audits(&db, "order.sync").len(), 1);
});

store_test!(concurrent_settlements_of_one_orders_refunds_all_show_on_the_order, |db| {
    let f = fixture(&db).await;
    let o = insert(&f, draft(f.tenant, "S0000001", 100)).await;
    let tx = pay_in_ledger(&f, transaction(&o)).await;
    let mut reserved = vec![];
    for i in 0..10 {
        reserved.push(reserve(&f, ledger_refund(&tx, &format!("S-R{i}"), 10, 2)).await);
    }
    let repo = Arc::new(f.ledger.clone());
    let start = Arc::new(tokio::sync::Barrier::new(reserved.len()));
    let mut tasks = vec![];
    for r in reserved {
        let (repo, start) = (repo.clone(), start.clone());
        let done = ledger::Refund {
            status: RefundStatus::Succeeded,
            succeeded_at: Some(t0() + Duration::hours(1)),
            updated_at: t0() + Duration::hours(1),
            ..r
        };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.update_refund(done, RefundStatus::Processing, ledger::Effects::default()).await
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().unwrap());
    }

    let settled: Vec<OrderRefund> =
        f.ledger.refunds_of_orders(vec![o.id]).await.unwrap().iter().filter_map(ledger::Refund::as_order_refund).collect();
    assert_eq!(settled.len(), 10);
    assert!(settled.iter().all(|r| r.status == RefundStatus::Succeeded && r.settled_at == Some(t0() + Duration::hours(1))));
    assert_eq!(settled.iter().map(|r| r.amount.fen()).sum::<i64>(), 100);
});

store_test!(orders_due_for_expiry_are_the_unpaid_ones_past_it_oldest_first, |db| {
    let f = fixture(&db).await;
    let at = |minutes: i64| t0() + Duration::minutes(minutes);
    let late = insert(&f, Order { expires_at: at(5), ..draft(f.tenant, "E0000001", 100) }).await;
    let later = insert(&f, Order { expires_at: at(10), ..draft(f.other, "E0000002", 100) }).await;
    let paying = insert(&f, Order { expires_at: at(1), ..draft(f.tenant, "E0000003", 100) }).await;
    let moved = Order { status: OrderStatus::Paying, updated_at: at(0), ..paying.clone() };
    assert!(f.repo.update_order(moved, paying.state(), audit("order.pay", f.tenant, Some(paying.id))).await.unwrap());
    insert(&f, Order { expires_at: at(60), ..draft(f.tenant, "E0000004", 100) }).await;
    // A paid order is not due, whatever its expiry says.
    let cash = insert(&f, Order { expires_at: at(2), ..draft(f.tenant, "E0000005", 100) }).await;
    let read = cash.state();
    let cash = Order { status: OrderStatus::Paid, paid_amount: cash.amount, ..cash };
    assert!(f.repo.update_order(cash, read, audit("order.pay", f.tenant, None)).await.unwrap());
    // Nor is one with a discrepancy: a person resolves it, expiry does not close it.
    let odd = insert(&f, Order { expires_at: at(3), ..draft(f.tenant, "E0000006", 100) }).await;
    let read = odd.state();
    let odd = Order { status: OrderStatus::Paying, discrepancy: Some("the pay platform reported 99 fen".into()), ..odd };
    assert!(f.repo.update_order(odd, read, audit("order.pay", f.tenant, None)).await.unwrap());

    let due = f.repo.due_for_expiry(at(10), 10).await.unwrap();
    let first = f.repo.due_for_expiry(at(10), 1).await.unwrap();

    assert_eq!(
        due.iter().map(|o| (o.id, o.status)).collect::<Vec<_>>(),
        [(paying.id, OrderStatus::Paying), (late.id, OrderStatus::Pending), (later.id, OrderStatus::Pending)]
    );
    assert_eq!(due[2].partner_id, Some(f.other_partner));
    assert_eq!(first.iter().map(|o| o.id).collect::<Vec<_>>(), [paying.id]);
    assert!(f.repo.due_for_expiry(at(0), 10).await.unwrap().is_empty());
});

store_test!(seeded_orders_read_back_as_orders_in_every_seeded_status, |db| {
    let f = fixture(&db).await;

    let added = atrium_store::seed::seed_orders(&db, f.tenant, f.sibling, 10).unwrap();

    assert_eq!(added, 20);
    let mine = f.repo.list_orders(Party::Platform, OrderQuery { tenant_id: Some(f.tenant), ..query() }).await.unwrap();
    assert_eq!(mine.total, 10);
    let count = |status: OrderStatus| mine.items.iter().filter(|o| o.status == status).count();
    assert_eq!(
        [count(OrderStatus::Pending), count(OrderStatus::Paid), count(OrderStatus::PartiallyRefunded), count(OrderStatus::Closed)],
        [2, 4, 2, 2]
    );
    for order in &mine.items {
        assert_eq!(order.items.len(), 1, "{order:?}");
        assert_eq!(order.items[0].unit_price, order.amount);
        let refunded: i64 = f.ledger.refunds_of_orders(vec![order.id]).await.unwrap().iter().map(|r| r.amount.fen()).sum();
        assert_eq!(refunded, order.refunded_amount.fen(), "{order:?}");
        assert!(order.refunded_amount <= order.paid_amount);
        // The paid ones' money is the ledger's: an offline transaction of the order.
        let tx = f.ledger.order_transaction(f.tenant, order.id).await.unwrap();
        match tx {
            Some(tx) => {
                assert_eq!((tx.method, tx.amount, tx.is_paid()), (PaymentMethod::Offline, order.paid_amount, true), "{order:?}");
                let refunds = f.ledger.refunds_of(f.tenant, tx.out_trade_no).await.unwrap();
                assert_eq!(refunds.iter().map(|r| r.amount.fen()).sum::<i64>(), refunded, "{order:?}");
            }
            None => assert_eq!(order.paid_amount, Money::ZERO, "{order:?}"),
        }
    }
    let from = Utc.with_ymd_and_hms(2026, 1, 1, 0, 3, 0).single().unwrap();
    let window = OrderQuery { tenant_id: Some(f.tenant), created_from: Some(from), status: Some(OrderStatus::Paid), ..query() };
    // Order n was created n minutes after midnight; n % 5 of 1 or 2 is paid: from minute 3, orders 6 and 7.
    let paid_late: Vec<String> = f.repo.list_orders(Party::Platform, window).await.unwrap().items.into_iter().map(|o| o.order_no).collect();
    assert_eq!(paid_late, [format!("SEED{}-7", f.tenant), format!("SEED{}-6", f.tenant)]);
    assert!(f.repo.list_orders(Party::Platform, OrderQuery { tenant_id: Some(f.other), ..query() }).await.unwrap().items.is_empty());
    let again = atrium_store::seed::seed_orders(&db, f.tenant, f.tenant, 10).unwrap_err();
    assert!(matches!(again, Error::Conflict(..)), "seeding a tenant twice reuses its order numbers: {again:?}");
    assert_eq!(f.repo.list_orders(Party::Platform, query()).await.unwrap().total, 20, "the refused seed added nothing");
});

store_test!(a_tenants_orders_of_one_status_in_a_date_range_are_counted_exactly_past_a_full_page, |db| {
    let f = fixture(&db).await;
    // Order n of each seeded tenant was created n minutes after midnight; n % 5 of 1 or 2 is paid.
    atrium_store::seed::seed_orders(&db, f.tenant, f.sibling, 40).unwrap();
    let at = |minute: u32| Utc.with_ymd_and_hms(2026, 1, 1, 0, minute, 0).single().unwrap();
    let no = |n: u32| format!("SEED{}-{n}", f.tenant);
    // Paid from minute 10 up to minute 26: orders 11, 12, 16, 17, 21 and 22 — the sibling's
    // paid orders of the same minutes, the tenant's other statuses and its paid orders
    // outside the range are not counted.
    let window = |page: i64, tenant_id: Option<i64>| OrderQuery {
        list: ListQuery::parse(Some(page), Some(2), None, None).unwrap(),
        status: Some(OrderStatus::Paid),
        created_from: Some(at(10)),
        created_to: Some(at(26)),
        tenant_id,
        ..query()
    };
    // The tenant's own list, and the platform's list filtered to the tenant.
    let as_tenant = Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) };
    for (scope, tenant_id) in [(as_tenant, None), (Party::Platform, Some(f.tenant))] {
        for (page, want) in [(1, [22, 21]), (2, [17, 16]), (3, [12, 11])] {
            let got = f.repo.list_orders(scope, window(page, tenant_id)).await.unwrap();
            let order_nos: Vec<String> = got.items.iter().map(|o| o.order_no.clone()).collect();
            assert_eq!(order_nos, want.map(no), "{scope:?} page {page}");
            assert_eq!((got.total, got.total_exact), (6, true), "{scope:?} page {page}");
        }
        let past = f.repo.list_orders(scope, window(4, tenant_id)).await.unwrap();
        assert!(past.items.is_empty(), "{scope:?}");
    }
});
