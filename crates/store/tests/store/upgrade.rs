//! An upgrade to the one ledger, on SQLite and PostgreSQL: a database as the release before
//! it left it — orders paid on the platform (their refunds in both books) and offline (their
//! refunds in the orders' book only), a transaction of the payment routes, an order paid
//! offline after its platform order was closed — migrates with every fen in the ledger, each
//! order's payment and refunds linked to it, and nothing counted twice.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{JobStore, Money, Party, PaymentMethod, RefundStatus};
use atrium_orders::OrderRepo;
use atrium_payments::{PaymentRepo, TradeState};
use atrium_store::testing::{TestDatabase, skip_postgres};
use atrium_store::{Db, FieldCipher, OrdersStore, PaymentStore};
use diesel::RunQueryDsl;

/// The last migration before the one ledger.
const BEFORE: &str = "2026-11-25-000060";

/// What the release before the one ledger wrote, in its own tables.
const BEFORE_ROWS: &[&str] = &[
    "INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES (1, 'T', 'active', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    // 1: paid on the platform, 300 refunded through the payments side (both books).
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, openid, out_trade_no, pay_method, \
     transaction_id, paid_at, expires_at, created_at, updated_at) VALUES (1, 1, 'ORD0000000000000001', 'A', 1000, 1000, 300, \
     'partially_refunded', 'o1', 'ORD0000000000000001', 'wechat_jsapi', '4200', '2026-01-02 00:00:00', '2026-01-03 00:00:00', \
     '2026-01-01 00:00:00', '2026-01-02 00:00:00')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, description, amount, openid, trade_state, transaction_id, success_time, \
     expires_at, created_at, updated_at) VALUES (10, 1, 'ORD0000000000000001', 'A', 1000, 'o1', 'REFUND', '4200', '2026-01-02 00:00:00', \
     '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00')",
    "INSERT INTO payment_refunds (tenant_id, payment_id, out_trade_no, out_refund_no, amount, status, succeeded_at, created_at, updated_at) \
     VALUES (1, 10, 'ORD0000000000000001', 'ORD0000000000000001R1', 300, 'succeeded', '2026-01-02 01:00:00', '2026-01-02 00:30:00', \
     '2026-01-02 01:00:00')",
    "INSERT INTO order_refunds (tenant_id, order_id, out_refund_no, amount, status, settled_at, created_at, updated_at) VALUES (1, 1, \
     'ORD0000000000000001R1', 300, 'succeeded', '2026-01-02 01:00:00', '2026-01-02 00:30:00', '2026-01-02 01:00:00')",
    // 2: paid offline, 500 refunded (the orders' book only).
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, out_trade_no, pay_method, paid_at, \
     pay_reference, paid_by, expires_at, created_at, updated_at) VALUES (2, 1, 'ORD0000000000000002', 'B', 2000, 2000, 500, \
     'partially_refunded', 'ORD0000000000000002', 'offline', '2026-01-02 00:00:00', 'BANK 1', 7, '2026-01-03 00:00:00', \
     '2026-01-01 00:00:00', '2026-01-02 00:00:00')",
    "INSERT INTO order_refunds (tenant_id, order_id, out_refund_no, amount, status, settled_at, created_at, updated_at) VALUES (1, 2, \
     'ORD0000000000000002R1', 500, 'succeeded', '2026-01-02 02:00:00', '2026-01-02 02:00:00', '2026-01-02 02:00:00')",
    // A transaction of the payment routes, no order's.
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, description, amount, openid, trade_state, expires_at, created_at, \
     updated_at) VALUES (11, 1, 'T_ROUTE_1', 'D', 400, 'o2', 'NOTPAY', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    // 4: paid offline after its platform order was closed.
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, out_trade_no, pay_method, paid_at, \
     pay_reference, paid_by, expires_at, created_at, updated_at) VALUES (4, 1, 'ORD0000000000000004', 'E', 900, 900, 0, 'paid', \
     'ORD0000000000000004', 'offline', '2026-01-02 00:00:00', 'CASH', 7, '2026-01-03 00:00:00', '2026-01-01 00:00:00', \
     '2026-01-02 00:00:00')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, description, amount, openid, trade_state, expires_at, created_at, \
     updated_at) VALUES (12, 1, 'ORD0000000000000004', 'E', 900, 'o4', 'CLOSED', '2026-01-03 00:00:00', '2026-01-01 00:00:00', \
     '2026-01-01 00:00:00')",
];

async fn an_upgrade_moves_every_orders_money_into_the_ledger(test_db: TestDatabase) {
    // Arrange: the database as the release before left it.
    let db = Db::connect(&test_db.url, 4).unwrap();
    assert!(db.migrate_until(BEFORE).unwrap() > 0);
    for row in BEFORE_ROWS {
        let sql = row.to_string();
        db.write(move |conn| diesel::sql_query(sql).execute(conn).map_err(atrium_store::db_error)).await.unwrap();
    }

    // Act
    assert!(db.migrate().unwrap() > 0, "the one ledger's migration runs");

    // Assert
    let ledger = PaymentStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let orders = OrdersStore::new(db.clone());
    let online = ledger.order_transaction(1, 1).await.unwrap().unwrap();
    assert_eq!(
        (online.out_trade_no.as_str(), online.method, online.trade_state),
        ("ORD0000000000000001", PaymentMethod::WechatJsapi, TradeState::Refund)
    );
    let offline = ledger.order_transaction(1, 2).await.unwrap().unwrap();
    assert_eq!(
        (offline.out_trade_no.as_str(), offline.method, offline.amount, offline.reference.as_deref(), offline.paid_by, offline.is_paid()),
        ("ORD0000000000000002-offline", PaymentMethod::Offline, Money::from_fen(2000), Some("BANK 1"), Some(7), true)
    );
    let reopened = ledger.order_transaction(1, 4).await.unwrap().unwrap();
    assert_eq!((reopened.method, reopened.is_paid()), (PaymentMethod::Offline, true), "the live payment of order 4 is the offline one");
    let route = ledger.get_transaction(1, "T_ROUTE_1".into()).await.unwrap().unwrap();
    assert_eq!(route.order_id, None);
    for (order_id, refund_no, amount) in [(1, "ORD0000000000000001R1", 300), (2, "ORD0000000000000002R1", 500)] {
        let order = orders.get_order(Party::Platform, order_id).await.unwrap().unwrap();
        let of_order = ledger.refunds_of_orders(vec![order_id]).await.unwrap();
        let refunds: Vec<_> = of_order.iter().map(|r| (r.out_refund_no.as_str(), r.amount.fen(), r.status)).collect();
        assert_eq!(refunds, [(refund_no, amount, RefundStatus::Succeeded)], "order {order_id}: one refund, not two books' worth");
        assert_eq!(order.refunded_amount, Money::from_fen(amount));
        let refund = ledger.get_refund(1, refund_no.into()).await.unwrap().unwrap();
        assert_eq!(refund.order_id, Some(order_id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_moves_every_orders_money_into_the_ledger_on_sqlite() {
    an_upgrade_moves_every_orders_money_into_the_ledger(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_moves_every_orders_money_into_the_ledger_on_postgres() {
    let Some(db) = TestDatabase::postgres_empty() else {
        skip_postgres(module_path!());
        return;
    };
    an_upgrade_moves_every_orders_money_into_the_ledger(db).await;
}

/// The last migration before profit sharing.
const BEFORE_SHARING: &str = "2026-12-08-000100";

/// Payments of the release before sharing: only the sub-merchant's paid platform payments are
/// to be shared.
const BEFORE_SHARING_ROWS: &[&str] = &[
    "INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES (1, 'T', 'active', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    // Paid and refunded in part, as a sub-merchant: to be shared.
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, description, amount, openid, trade_state, transaction_id, success_time, \
     expires_at, created_at, updated_at, method, sub_mchid) VALUES (20, 1, 'T_SUB_PAID', 'A', 1000, 'o1', 'REFUND', '4201', \
     '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00', 'wechat_jsapi', '1900000201')",
    // Unpaid, as a sub-merchant; paid in direct mode; a sub-merchant payment with a discrepancy.
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, description, amount, openid, trade_state, expires_at, created_at, \
     updated_at, method, sub_mchid) VALUES (21, 1, 'T_SUB_UNPAID', 'B', 1000, 'o1', 'NOTPAY', '2026-01-03 00:00:00', \
     '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'wechat_jsapi', '1900000201')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, description, amount, openid, trade_state, transaction_id, success_time, \
     expires_at, created_at, updated_at, method) VALUES (22, 1, 'T_DIRECT_PAID', 'C', 1000, 'o1', 'SUCCESS', '4202', \
     '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00', 'wechat_jsapi')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, description, amount, openid, trade_state, expires_at, created_at, \
     updated_at, method, sub_mchid, discrepancy) VALUES (23, 1, 'T_SUB_ODD', 'D', 1000, 'o1', 'NOTPAY', '2026-01-03 00:00:00', \
     '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'wechat_jsapi', '1900000201', '1 fen paid for 1000')",
];

async fn an_upgrade_queues_the_sharing_of_sub_merchant_payments_paid_before(test_db: TestDatabase) {
    let db = Db::connect(&test_db.url, 4).unwrap();
    assert!(db.migrate_until(BEFORE_SHARING).unwrap() > 0);
    for row in BEFORE_SHARING_ROWS {
        let sql = row.to_string();
        db.write(move |conn| diesel::sql_query(sql).execute(conn).map_err(atrium_store::db_error)).await.unwrap();
    }

    assert!(db.migrate().unwrap() > 0, "the sharing migration runs");

    let jobs = atrium_store::DbJobStore::new(db.clone());
    let claimed = jobs.claim(vec![atrium_payments::SHARE.into()], chrono::Utc::now(), 60).await.unwrap();
    let job = claimed.expect("the paid sub-merchant payment's sharing is queued and due");
    assert_eq!((job.tenant_id, job.payload.clone()), (Some(1), serde_json::json!({"out_trade_no": "T_SUB_PAID"})));
    let again = jobs.claim(vec![atrium_payments::SHARE.into()], chrono::Utc::now(), 60).await.unwrap();
    assert_eq!(again, None, "nothing else is to be shared");
    let queued = jobs
        .enqueue(atrium_kernel::NewJob {
            kind: atrium_payments::SHARE.into(),
            tenant_id: Some(1),
            payload: serde_json::json!({"out_trade_no": "T_SUB_PAID"}),
            run_at: chrono::Utc::now(),
            dedupe_key: Some("1:T_SUB_PAID".into()),
        })
        .await
        .unwrap();
    assert_eq!(queued, None, "keyed as a payment's sharing job is: it is not queued twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_queues_the_sharing_of_sub_merchant_payments_paid_before_on_sqlite() {
    an_upgrade_queues_the_sharing_of_sub_merchant_payments_paid_before(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_queues_the_sharing_of_sub_merchant_payments_paid_before_on_postgres() {
    let Some(db) = TestDatabase::postgres_empty() else {
        skip_postgres(module_path!());
        return;
    };
    an_upgrade_queues_the_sharing_of_sub_merchant_payments_paid_before(db).await;
}

/// The last migration before orders knew whether their payment is shared.
const BEFORE_ORDER_SHARED: &str = "2026-12-13-000100";

/// Orders paid before: one through a sub-merchant (shared), one by a direct merchant, and one
/// whose sub-merchant payment is still unpaid.
const BEFORE_ORDER_SHARED_ROWS: &[&str] = &[
    "INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES (1, 'T', 'active', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, openid, out_trade_no, pay_method, \
     transaction_id, paid_at, expires_at, created_at, updated_at) VALUES (1, 1, 'ORD_SUB_PAID', 'A', 1000, 1000, 0, 'paid', 'o1', \
     'ORD_SUB_PAID', 'wechat_jsapi', '4301', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, order_id, description, amount, openid, trade_state, transaction_id, \
     success_time, expires_at, created_at, updated_at, method, sub_mchid) VALUES (30, 1, 'ORD_SUB_PAID', 1, 'A', 1000, 'o1', 'SUCCESS', \
     '4301', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00', 'wechat_jsapi', '1900000201')",
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, openid, out_trade_no, pay_method, \
     transaction_id, paid_at, expires_at, created_at, updated_at) VALUES (2, 1, 'ORD_DIRECT_PAID', 'B', 1000, 1000, 0, 'paid', 'o1', \
     'ORD_DIRECT_PAID', 'wechat_jsapi', '4302', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, order_id, description, amount, openid, trade_state, transaction_id, \
     success_time, expires_at, created_at, updated_at, method) VALUES (31, 1, 'ORD_DIRECT_PAID', 2, 'B', 1000, 'o1', 'SUCCESS', '4302', \
     '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00', 'wechat_jsapi')",
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, openid, out_trade_no, pay_method, \
     expires_at, created_at, updated_at) VALUES (3, 1, 'ORD_SUB_PAYING', 'C', 1000, 0, 0, 'paying', 'o1', 'ORD_SUB_PAYING', 'wechat_jsapi', \
     '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, order_id, description, amount, openid, trade_state, expires_at, \
     created_at, updated_at, method, sub_mchid) VALUES (32, 1, 'ORD_SUB_PAYING', 3, 'C', 1000, 'o1', 'NOTPAY', '2026-01-03 00:00:00', \
     '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'wechat_jsapi', '1900000201')",
];

async fn an_upgrade_marks_the_orders_paid_through_a_sub_merchant(test_db: TestDatabase) {
    let db = Db::connect(&test_db.url, 4).unwrap();
    assert!(db.migrate_until(BEFORE_ORDER_SHARED).unwrap() > 0);
    for row in BEFORE_ORDER_SHARED_ROWS {
        let sql = row.to_string();
        db.write(move |conn| diesel::sql_query(sql).execute(conn).map_err(atrium_store::db_error)).await.unwrap();
    }

    assert!(db.migrate().unwrap() > 0, "the migration runs");

    let orders = OrdersStore::new(db.clone());
    let mut shared = Vec::new();
    for id in 1..=3 {
        let order = orders.get_order(Party::Platform, id).await.unwrap().unwrap();
        shared.push((id, order.payment.map(|p| p.sub_merchant)));
    }
    assert_eq!(shared, [(1, Some(true)), (2, Some(false)), (3, Some(false))], "only the order paid through a sub-merchant is shared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_marks_the_orders_paid_through_a_sub_merchant_on_sqlite() {
    an_upgrade_marks_the_orders_paid_through_a_sub_merchant(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_marks_the_orders_paid_through_a_sub_merchant_on_postgres() {
    let Some(db) = TestDatabase::postgres_empty() else {
        skip_postgres(module_path!());
        return;
    };
    an_upgrade_marks_the_orders_paid_through_a_sub_merchant(db).await;
}

/// The last migration before orders kept their refunds.
const BEFORE_ORDER_REFUNDS: &str = "2026-12-14-000100";

/// A paid order refunded three times (succeeded, failed for a share not returned, still
/// processing), another order's refund, and a refund of a payment the payment routes made (of
/// no order).
const BEFORE_ORDER_REFUNDS_ROWS: &[&str] = &[
    "INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES (1, 'T', 'active', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, openid, out_trade_no, pay_method, \
     transaction_id, paid_at, expires_at, created_at, updated_at) VALUES (1, 1, 'ORD_REFUNDED', 'A', 1000, 1000, 300, 'partially_refunded', \
     'o1', 'ORD_REFUNDED', 'wechat_jsapi', '4301', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-04 00:00:00')",
    "INSERT INTO orders (id, tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, openid, out_trade_no, pay_method, \
     transaction_id, paid_at, expires_at, created_at, updated_at) VALUES (2, 1, 'ORD_OTHER', 'B', 500, 500, 0, 'paid', 'o1', 'ORD_OTHER', \
     'wechat_jsapi', '4302', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00')",
    "INSERT INTO payment_transactions (id, tenant_id, out_trade_no, order_id, description, amount, openid, trade_state, transaction_id, \
     success_time, expires_at, created_at, updated_at, method) VALUES \
     (30, 1, 'ORD_REFUNDED', 1, 'A', 1000, 'o1', 'REFUND', '4301', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', \
      '2026-01-04 00:00:00', 'wechat_jsapi'), \
     (31, 1, 'ORD_OTHER', 2, 'B', 500, 'o1', 'SUCCESS', '4302', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', \
      '2026-01-02 00:00:00', 'wechat_jsapi'), \
     (32, 1, 'PAY_ROUTE_TX', NULL, 'C', 100, 'o1', 'REFUND', '4303', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-01 00:00:00', \
      '2026-01-04 00:00:00', 'wechat_jsapi')",
    "INSERT INTO payment_refunds (id, tenant_id, payment_id, out_trade_no, out_refund_no, refund_id, amount, status, reason, succeeded_at, \
     created_at, updated_at, order_id, requested_by, fail_reason) VALUES \
     (40, 1, 30, 'ORD_REFUNDED', 'R40', '5040', 300, 'succeeded', 'damaged', '2026-01-04 00:00:00', '2026-01-03 00:00:00', '2026-01-04 00:00:01', 1, 7, NULL), \
     (41, 1, 30, 'ORD_REFUNDED', 'R41', NULL, 100, 'failed', NULL, NULL, '2026-01-03 00:00:00', '2026-01-05 00:00:00', 1, NULL, 'BALANCE_NOT_ENOUGH'), \
     (42, 1, 30, 'ORD_REFUNDED', 'R42', NULL, 50, 'processing', NULL, NULL, '2026-01-06 00:00:00', '2026-01-06 00:00:00', 1, 7, NULL), \
     (43, 1, 31, 'ORD_OTHER', 'R43', NULL, 20, 'closed', NULL, NULL, '2026-01-03 00:00:00', '2026-01-07 00:00:00', 2, NULL, NULL), \
     (44, 1, 32, 'PAY_ROUTE_TX', 'R44', NULL, 10, 'succeeded', NULL, '2026-01-04 00:00:00', '2026-01-03 00:00:00', '2026-01-04 00:00:00', NULL, NULL, NULL)",
];

async fn an_upgrade_copies_each_orders_refunds_to_the_order(test_db: TestDatabase) {
    let db = Db::connect(&test_db.url, 4).unwrap();
    assert!(db.migrate_until(BEFORE_ORDER_REFUNDS).unwrap() > 0);
    for row in BEFORE_ORDER_REFUNDS_ROWS {
        let sql = row.to_string();
        db.write(move |conn| diesel::sql_query(sql).execute(conn).map_err(atrium_store::db_error)).await.unwrap();
    }

    assert!(db.migrate().unwrap() > 0, "the migration runs");

    let orders = OrdersStore::new(db.clone());
    let at = |s: &str| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap().and_utc();
    let refunded = orders.get_order(Party::Platform, 1).await.unwrap().unwrap();
    let shown: Vec<_> = refunded
        .refunds
        .iter()
        .map(|r| (r.id, r.out_refund_no.as_str(), r.amount.fen(), r.status, r.requested_by, r.fail_reason.as_deref(), r.settled_at))
        .collect();
    assert_eq!(
        shown,
        [
            (40, "R40", 300, RefundStatus::Succeeded, Some(7), None, Some(at("2026-01-04 00:00:00"))),
            (41, "R41", 100, RefundStatus::Failed, None, Some("BALANCE_NOT_ENOUGH"), Some(at("2026-01-05 00:00:00"))),
            (42, "R42", 50, RefundStatus::Processing, Some(7), None, None),
        ],
        "every refund of the order, as the ledger tells it"
    );
    assert_eq!((refunded.refunds[0].reason.as_deref(), refunded.refunds[0].created_at), (Some("damaged"), at("2026-01-03 00:00:00")));
    let other = orders.get_order(Party::Platform, 2).await.unwrap().unwrap();
    assert_eq!(
        other.refunds.iter().map(|r| (r.id, r.status, r.settled_at)).collect::<Vec<_>>(),
        [(43, RefundStatus::Closed, Some(at("2026-01-07 00:00:00")))],
        "each order its own; a refund of no order is copied to none"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_copies_each_orders_refunds_to_the_order_on_sqlite() {
    an_upgrade_copies_each_orders_refunds_to_the_order(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_copies_each_orders_refunds_to_the_order_on_postgres() {
    let Some(db) = TestDatabase::postgres_empty() else {
        skip_postgres(module_path!());
        return;
    };
    an_upgrade_copies_each_orders_refunds_to_the_order(db).await;
}
