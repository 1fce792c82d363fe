//! Contract tests of the order repository, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{AuditRecord, Error, ListQuery, Money, Party, Timestamp};
use atrium_orders::*;
use atrium_org::*;
use atrium_store::schema::{audit_logs, order_refunds};
use atrium_store::{Db, FieldCipher, OrdersStore, OrgStore, store_test};
use chrono::{Duration, TimeZone, Utc};
use diesel::prelude::*;
use std::sync::Arc;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid") + Duration::microseconds(123_456)
}

struct Fixture {
    repo: OrdersStore,
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
        partners.push(org.insert_partner(p, AuditRecord::system(t0(), "partner.create", "partner", None)).await.unwrap().id);
    }
    let mut tenants = vec![];
    for partner in [partners[0], partners[0], partners[1]] {
        let t = Tenant::draft(Some(partner), "T", t0());
        tenants.push(org.insert_tenant(t, AuditRecord::system(t0(), "tenant.create", "tenant", None)).await.unwrap().id);
    }
    Fixture {
        repo: OrdersStore::new(db.clone()),
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
        refunds: vec![],
        expires_at: t0() + Duration::minutes(30),
        created_by: Some(42),
        created_at: t0(),
        updated_at: t0(),
    }
}

fn audit(action: &str, tenant_id: i64, target: Option<i64>) -> AuditRecord {
    AuditRecord::system(t0(), action, "order", target).owned_by(None, Some(tenant_id))
}

async fn insert(f: &Fixture, order: Order) -> Order {
    let tenant = order.tenant_id;
    f.repo.insert_order(order, audit("order.create", tenant, None)).await.unwrap()
}

/// A stored order the platform reported paid.
async fn paid(f: &Fixture, tenant_id: i64, order_no: &str, amount: i64) -> Order {
    let o = insert(f, draft(tenant_id, order_no, amount)).await;
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
        }),
        updated_at: t0() + Duration::minutes(1),
        ..o
    };
    assert!(f.repo.update_order(done.clone(), OrderStatus::Pending, audit("order.paid", tenant_id, Some(done.id))).await.unwrap());
    done
}

fn refund(order: &Order, out_refund_no: &str, amount: i64, status: RefundStatus) -> Refund {
    Refund {
        id: 0,
        order_id: order.id,
        tenant_id: order.tenant_id,
        out_refund_no: out_refund_no.into(),
        amount: Money::from_fen(amount),
        status,
        reason: Some("changed mind".into()),
        settled_at: status.is_final().then(|| t0() + Duration::minutes(3)),
        created_at: t0() + Duration::minutes(2),
        updated_at: t0() + Duration::minutes(2),
    }
}

fn query() -> OrderQuery {
    OrderQuery::default()
}

fn ids(page: &atrium_kernel::Page<Order>) -> Vec<i64> {
    page.items.iter().map(|o| o.id).collect()
}

fn audits(db: &Db, action: &str) -> Vec<(Option<i64>, Option<i64>, Option<i64>)> {
    let mut conn = db.conn().unwrap();
    audit_logs::table
        .filter(audit_logs::action.eq(action))
        .order(audit_logs::id.asc())
        .select((audit_logs::target_id, audit_logs::tenant_id, audit_logs::partner_id))
        .load(&mut *conn)
        .unwrap()
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
    assert_eq!(f.repo.order_by_out_trade_no(f.tenant, "20260501AAAA0001".into()).await.unwrap(), Some(stored.clone()));
    assert_eq!(f.repo.order_by_out_trade_no(f.other, "20260501AAAA0001".into()).await.unwrap(), None);
});

store_test!(an_order_number_is_unique_per_tenant, |db| {
    let f = fixture(&db).await;
    insert(&f, draft(f.tenant, "N0000001", 100)).await;

    let again = f.repo.insert_order(draft(f.tenant, "N0000001", 200), audit("order.create", f.tenant, None)).await.unwrap_err();
    let elsewhere = insert(&f, draft(f.other, "N0000001", 300)).await;

    assert!(matches!(again, Error::Conflict(ref m) if m.contains("N0000001")), "{again:?}");
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
        }),
        updated_at: t0() + Duration::seconds(5),
        ..o.clone()
    };
    let closed = Order { status: OrderStatus::Closed, updated_at: t0() + Duration::seconds(6), ..o.clone() };

    assert!(f.repo.update_order(paying.clone(), OrderStatus::Pending, audit("order.pay", f.tenant, Some(o.id))).await.unwrap());
    // A racing writer that also read `pending` loses and writes nothing, its audit record included.
    assert!(!f.repo.update_order(closed, OrderStatus::Pending, audit("order.close", f.tenant, Some(o.id))).await.unwrap());

    assert_eq!(f.repo.get_order(Party::Platform, o.id).await.unwrap(), Some(paying.clone()));
    assert_eq!(audits(&db, "order.pay").len(), 1);
    assert!(audits(&db, "order.close").is_empty());
    // Wrong tenant: no write.
    let foreign = Order { tenant_id: f.other, status: OrderStatus::Closed, ..paying.clone() };
    assert!(!f.repo.update_order(foreign, OrderStatus::Paying, audit("order.close", f.other, Some(o.id))).await.unwrap());

    let cash = insert(&f, draft(f.tenant, "U0000002", 100)).await;
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
        }),
        updated_at: t0() + Duration::minutes(1),
        ..cash
    };
    assert!(f.repo.update_order(offline.clone(), OrderStatus::Pending, audit("order.pay", f.tenant, Some(offline.id))).await.unwrap());
    assert_eq!(f.repo.get_order(Party::Platform, offline.id).await.unwrap(), Some(offline));
});

store_test!(refund_reservations_follow_the_rules_in_order, |db| {
    let f = fixture(&db).await;
    let o = paid(&f, f.tenant, "R0000001", 100).await;
    let reserve = |r: Refund, max: u32| {
        let repo = f.repo.clone();
        let tenant = r.tenant_id;
        async move { repo.reserve_refund(r, max, audit("order.refund", tenant, None)).await }
    };

    let RefundReservation::Reserved { order, refund: first } = reserve(refund(&o, "RF1", 60, RefundStatus::Processing), 4).await.unwrap()
    else {
        panic!("not reserved")
    };
    assert!(first.id > 0);
    assert_eq!(first, Refund { id: first.id, ..refund(&o, "RF1", 60, RefundStatus::Processing) });
    assert_eq!((order.status, order.refunded_amount, order.refunds.clone()), (OrderStatus::Paid, Money::ZERO, vec![first.clone()]));
    // 1. The same number again is the same refund, whatever else it says.
    assert_eq!(reserve(refund(&o, "RF1", 99, RefundStatus::Processing), 4).await.unwrap(), RefundReservation::Existing(first.clone()));
    // 4. More than is left.
    assert_eq!(
        reserve(refund(&o, "RF2", 41, RefundStatus::Processing), 4).await.unwrap(),
        RefundReservation::ExceedsPaid { refundable: Money::from_fen(40) }
    );
    // A failed refund gives its amount back; a settlement applies once.
    let failed = Refund {
        status: RefundStatus::Failed,
        settled_at: Some(t0() + Duration::minutes(4)),
        updated_at: t0() + Duration::minutes(4),
        ..first.clone()
    };
    assert!(
        f.repo.update_refund(failed.clone(), RefundStatus::Processing, audit("order.refund_settled", f.tenant, Some(o.id))).await.unwrap()
    );
    let late = Refund { status: RefundStatus::Succeeded, ..first.clone() };
    assert!(!f.repo.update_refund(late, RefundStatus::Processing, audit("order.refund_settled", f.tenant, Some(o.id))).await.unwrap());
    assert_eq!(f.repo.refund_by_out_refund_no(f.tenant, "RF1".into()).await.unwrap(), Some(failed));
    assert_eq!(audits(&db, "order.refund_settled").len(), 1);
    // A refund settled at once (offline) counts in the order at once.
    let RefundReservation::Reserved { order, refund: second } = reserve(refund(&o, "RF2", 70, RefundStatus::Succeeded), 4).await.unwrap()
    else {
        panic!("not reserved")
    };
    assert_eq!((order.status, order.refunded_amount), (OrderStatus::PartiallyRefunded, Money::from_fen(70)));
    assert_eq!(order.updated_at, second.updated_at);
    let third = reserve(refund(&o, "RF3", 30, RefundStatus::Processing), 4).await.unwrap();
    let RefundReservation::Reserved { refund: third, .. } = third else { panic!("{third:?}") };
    let done = Refund {
        status: RefundStatus::Succeeded,
        settled_at: Some(t0() + Duration::minutes(5)),
        updated_at: t0() + Duration::minutes(5),
        ..third
    };
    assert!(f.repo.update_refund(done, RefundStatus::Processing, audit("order.refund_settled", f.tenant, Some(o.id))).await.unwrap());
    let settled = f.repo.get_order(Party::Platform, o.id).await.unwrap().unwrap();
    assert_eq!((settled.status, settled.refunded_amount), (OrderStatus::Refunded, Money::from_fen(100)));
    assert_eq!(settled.refunds.iter().map(|r| r.out_refund_no.as_str()).collect::<Vec<_>>(), ["RF1", "RF2", "RF3"]);
    // 2. A refunded order takes no more refunds.
    let err = reserve(refund(&o, "RF4", 1, RefundStatus::Processing), 50).await.unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    // 3. Checked before the amount: three refunds of any status are the most here.
    let o2 = paid(&f, f.tenant, "R0000002", 100).await;
    for (i, status) in [RefundStatus::Failed, RefundStatus::Closed, RefundStatus::Processing].into_iter().enumerate() {
        assert!(matches!(reserve(refund(&o2, &format!("RX{i}"), 1, status), 3).await.unwrap(), RefundReservation::Reserved { .. }));
    }
    assert_eq!(reserve(refund(&o2, "RX9", 1, RefundStatus::Processing), 3).await.unwrap(), RefundReservation::TooManyRefunds);
    // 2. No such order of this tenant.
    let foreign = Refund { tenant_id: f.other, ..refund(&o2, "RY1", 1, RefundStatus::Processing) };
    assert!(matches!(reserve(foreign, 50).await.unwrap_err(), Error::NotFound(_)));
    let unpaid = insert(&f, draft(f.tenant, "R0000003", 100)).await;
    assert!(matches!(reserve(refund(&unpaid, "RZ1", 1, RefundStatus::Processing), 50).await.unwrap_err(), Error::Conflict(_)));
    assert_eq!(f.repo.refund_by_out_refund_no(f.other, "RF1".into()).await.unwrap(), None);
    assert_eq!(audits(&db, "order.refund").len(), 6, "one per stored refund");
});

/// Reserves `n` refunds of `fen` each of `order` at once; returns the accepted amounts' sum
/// and how many were accepted.
async fn race(f: &Fixture, order: &Order, n: usize, fen: i64) -> (i64, usize) {
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = vec![];
    for i in 0..n {
        let (repo, start) = (repo.clone(), start.clone());
        let r = refund(order, &format!("{}-R{i}", order.order_no), fen, RefundStatus::Processing);
        let tenant = order.tenant_id;
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.reserve_refund(r, 50, audit("order.refund", tenant, None)).await
        }));
    }
    let (mut sum, mut accepted) = (0, 0);
    for t in tasks {
        match t.await.unwrap().unwrap() {
            RefundReservation::Reserved { refund, .. } => {
                sum += refund.amount.fen();
                accepted += 1;
            }
            RefundReservation::ExceedsPaid { .. } | RefundReservation::TooManyRefunds => {}
            RefundReservation::Existing(r) => panic!("a fresh number came back existing: {r:?}"),
        }
    }
    (sum, accepted)
}

store_test!(fifty_concurrent_refunds_never_exceed_what_was_paid, |db| {
    let f = fixture(&db).await;
    let o = paid(&f, f.tenant, "C0000001", 100).await;

    let (sum, accepted) = race(&f, &o, 50, 3).await;

    assert!(sum <= 100, "accepted {sum} fen of 100");
    assert_eq!((sum, accepted), (99, 33), "33 refunds of 3 fen fit");
    let mut conn = db.conn().unwrap();
    let stored: Vec<i64> =
        order_refunds::table.filter(order_refunds::order_id.eq(o.id)).select(order_refunds::amount).load(&mut *conn).unwrap();
    assert_eq!((stored.iter().sum::<i64>(), stored.len()), (99, 33));
});

store_test!(concurrent_settlements_of_one_orders_refunds_sum_every_one, |db| {
    let f = fixture(&db).await;
    let o = paid(&f, f.tenant, "S0000001", 100).await;
    let mut reserved = vec![];
    for i in 0..10 {
        let r = refund(&o, &format!("S-R{i}"), 10, RefundStatus::Processing);
        let RefundReservation::Reserved { refund, .. } = f.repo.reserve_refund(r, 50, audit("order.refund", f.tenant, None)).await.unwrap()
        else {
            panic!("not reserved")
        };
        reserved.push(refund);
    }
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(reserved.len()));
    let mut tasks = vec![];
    for r in reserved {
        let (repo, start, tenant) = (repo.clone(), start.clone(), f.tenant);
        let done = Refund {
            status: RefundStatus::Succeeded,
            settled_at: Some(t0() + Duration::hours(1)),
            updated_at: t0() + Duration::hours(1),
            ..r
        };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.update_refund(done, RefundStatus::Processing, audit("order.refund_settled", tenant, None)).await
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().unwrap());
    }

    let settled = f.repo.get_order(Party::Platform, o.id).await.unwrap().unwrap();
    assert_eq!((settled.status, settled.refunded_amount), (OrderStatus::Refunded, Money::from_fen(100)));
});

store_test!(orders_due_for_expiry_are_the_unpaid_ones_past_it_oldest_first, |db| {
    let f = fixture(&db).await;
    let at = |minutes: i64| t0() + Duration::minutes(minutes);
    let late = insert(&f, Order { expires_at: at(5), ..draft(f.tenant, "E0000001", 100) }).await;
    let later = insert(&f, Order { expires_at: at(10), ..draft(f.other, "E0000002", 100) }).await;
    let paying = insert(&f, Order { expires_at: at(1), ..draft(f.tenant, "E0000003", 100) }).await;
    let moved = Order { status: OrderStatus::Paying, updated_at: at(0), ..paying.clone() };
    assert!(f.repo.update_order(moved, OrderStatus::Pending, audit("order.pay", f.tenant, Some(paying.id))).await.unwrap());
    insert(&f, Order { expires_at: at(60), ..draft(f.tenant, "E0000004", 100) }).await;
    // A paid order is not due, whatever its expiry says.
    let cash = insert(&f, Order { expires_at: at(2), ..draft(f.tenant, "E0000005", 100) }).await;
    let cash = Order { status: OrderStatus::Paid, paid_amount: cash.amount, ..cash };
    assert!(f.repo.update_order(cash, OrderStatus::Pending, audit("order.pay", f.tenant, None)).await.unwrap());

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
        let refunded: i64 = order.refunds.iter().map(|r| r.amount.fen()).sum();
        assert_eq!(refunded, order.refunded_amount.fen(), "{order:?}");
        assert!(order.refunded_amount <= order.paid_amount);
    }
    let from = Utc.with_ymd_and_hms(2026, 1, 1, 0, 3, 0).single().unwrap();
    let window = OrderQuery { tenant_id: Some(f.tenant), created_from: Some(from), status: Some(OrderStatus::Paid), ..query() };
    // Order n was created n minutes after midnight; n % 5 of 1 or 2 is paid: from minute 3, orders 6 and 7.
    let paid_late: Vec<String> = f.repo.list_orders(Party::Platform, window).await.unwrap().items.into_iter().map(|o| o.order_no).collect();
    assert_eq!(paid_late, [format!("SEED{}-7", f.tenant), format!("SEED{}-6", f.tenant)]);
    assert!(f.repo.list_orders(Party::Platform, OrderQuery { tenant_id: Some(f.other), ..query() }).await.unwrap().items.is_empty());
    let again = atrium_store::seed::seed_orders(&db, f.tenant, f.tenant, 10).unwrap_err();
    assert!(matches!(again, Error::Conflict(_)), "seeding a tenant twice reuses its order numbers: {again:?}");
    assert_eq!(f.repo.list_orders(Party::Platform, query()).await.unwrap().total, 20, "the refused seed added nothing");
});
