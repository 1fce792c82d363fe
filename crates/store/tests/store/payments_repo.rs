//! Contract tests of the payment repository — the one ledger of the payment routes' and the
//! orders' money — on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{AuditRecord, Error, Event, Money, NewJob, Party, Reason, Timestamp};
use atrium_orders::{Order, OrderRepo, OrderStatus};
use atrium_org::*;
use atrium_payments::*;
use atrium_store::schema::{
    audit_logs, events, jobs, pay_provider, payment_configs, payment_refunds, payment_shares, payment_transactions, tenants,
};
use atrium_store::{Db, FieldCipher, OrdersStore, OrgStore, PaymentStore, store_test};
use chrono::{Duration, TimeZone, Utc};
use diesel::prelude::*;
use serde_json::json;
use std::sync::Arc;

const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n";
const API_V3_KEY: &str = "0123456789abcdefghijABCDEFGHIJkl";

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid") + Duration::microseconds(123_456)
}

struct Fixture {
    repo: PaymentStore,
    orders: OrdersStore,
    partner: i64,
    tenant: i64,
    /// A tenant of another partner.
    other: i64,
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
    for partner in &partners {
        let t = Tenant::draft(Some(*partner), "T", t0());
        tenants.push(org.insert_tenant(t, Effects::audited(AuditRecord::system(t0(), "tenant.create", "tenant", None))).await.unwrap().id);
    }
    Fixture {
        repo: PaymentStore::new(db.clone(), FieldCipher::new(&[9u8; 32])),
        orders: OrdersStore::new(db.clone()),
        partner: partners[0],
        tenant: tenants[0],
        other: tenants[1],
    }
}

fn config(tenant_id: i64) -> PaymentConfig {
    PaymentConfig {
        credentials: credentials(),
        enabled: true,
        ..PaymentConfig::new(tenant_id, "1900000109".into(), "wx8888888888888888".into(), t0())
    }
}

fn credentials() -> MerchantCredentials {
    MerchantCredentials {
        merchant_serial_no: Some("5157F09EFDC096DE15EBE81A47057A7232F1B8E1".into()),
        merchant_cert_not_after: Some(t0() + Duration::days(365)),
        merchant_private_key: Some(Secret::new(KEY_PEM)),
        merchant_key_fingerprint: Some("ab".repeat(32)),
        api_v3_key: Some(Secret::new(API_V3_KEY)),
        platform_public_key_id: Some("PUB_KEY_ID_0114232134912410000000000000".into()),
        platform_public_key: Some("-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n".into()),
        platform_key_fingerprint: Some("cd".repeat(32)),
    }
}

fn config_audit(tenant_id: i64) -> AuditRecord {
    AuditRecord { tenant_id: Some(tenant_id), ..AuditRecord::system(t0(), "payment_config.update", "payment_config", Some(tenant_id)) }
}

fn transaction(tenant_id: i64, out_trade_no: &str, amount: i64) -> Transaction {
    Transaction::unpaid(
        tenant_id,
        out_trade_no.into(),
        "Membership".into(),
        Money::from_fen(amount),
        "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o".into(),
        t0() + Duration::minutes(30),
        t0(),
    )
}

fn refund(tenant_id: i64, out_trade_no: &str, out_refund_no: &str, amount: i64) -> Refund {
    Refund {
        id: 0,
        tenant_id,
        out_trade_no: out_trade_no.into(),
        order_id: None,
        out_refund_no: out_refund_no.into(),
        refund_id: None,
        amount: Money::from_fen(amount),
        status: RefundStatus::Processing,
        reason: Some("changed mind".into()),
        requested_by: None,
        fail_reason: None,
        succeeded_at: None,
        created_at: t0(),
        updated_at: t0(),
    }
}

/// No effects.
fn none() -> Effects {
    Effects::default()
}

/// Effects tagged `tag`, to find them again with [`written`]: a job of kind `tag`, an audit
/// record with action `tag` and an event carrying `tag`.
fn effects(tenant_id: i64, tag: &str) -> Effects {
    Effects {
        jobs: vec![NewJob { kind: tag.into(), tenant_id: Some(tenant_id), payload: json!({ "tag": tag }), run_at: t0(), dedupe_key: None }],
        audit: Some(AuditRecord::system(t0(), tag, "payment", None).owned_by(None, Some(tenant_id))),
        events: vec![Event::new("test.tagged", t0(), Some(tenant_id), None, json!({ "tag": tag }))],
    }
}

/// How many jobs of kind `tag` and audit records with action `tag` are stored.
fn written(db: &Db, tag: &str) -> (i64, i64) {
    let mut conn = db.conn().unwrap();
    let jobs: i64 = jobs::table.filter(jobs::kind.eq(tag)).count().get_result(&mut *conn).unwrap();
    let audits: i64 = audit_logs::table.filter(audit_logs::action.eq(tag)).count().get_result(&mut *conn).unwrap();
    let tagged = format!("%\"tag\":\"{tag}\"%");
    let events: i64 = events::table.filter(events::data.like(tagged)).count().get_result(&mut *conn).unwrap();
    assert_eq!(events, audits, "the events of `{tag}` are written with its audit records, or neither");
    (jobs, audits)
}

/// Refunds within a year of the payment, at most `max_refunds` of them.
fn rule(max_refunds: u32) -> RefundRule {
    RefundRule { window: Duration::days(365), max_refunds }
}

/// A stored order of the tenant, pending.
async fn order(f: &Fixture, tenant_id: i64, order_no: &str, amount: i64) -> Order {
    let (o, audit) = new_order(tenant_id, order_no, amount);
    f.orders.insert_order(o, Effects::audited(audit)).await.unwrap()
}

/// A pending order of the tenant to store, with its audit record.
fn new_order(tenant_id: i64, order_no: &str, amount: i64) -> (Order, AuditRecord) {
    let o = Order {
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
        openid: None,
        payment: None,
        discrepancy: None,
        refunds: vec![],
        expires_at: t0() + Duration::minutes(30),
        created_by: None,
        created_at: t0(),
        updated_at: t0(),
    };
    let audit = AuditRecord::system(t0(), "order.create", "order", None).owned_by(None, Some(tenant_id));
    (o, audit)
}

/// The order's platform transaction: it carries the order's number.
fn online(order: &Order) -> Transaction {
    Transaction { order_id: Some(order.id), ..transaction(order.tenant_id, &order.order_no, order.amount.fen()) }
}

/// The order's payment recorded offline, paid at once, numbered as the ledger numbers them.
fn offline(order: &Order) -> Transaction {
    Transaction {
        order_id: Some(order.id),
        method: PaymentMethod::Offline,
        reference: Some("BANK 2026-0042".into()),
        paid_by: Some(42),
        openid: String::new(),
        trade_state: TradeState::Success,
        payer_total: Some(order.amount),
        success_time: Some(t0() + Duration::minutes(1)),
        ..transaction(order.tenant_id, &atrium_payments::offline_trade_no(&order.order_no), order.amount.fen())
    }
}

/// How many of the order's stored transactions are live (not closed or revoked).
fn live(db: &Db, order_id: i64) -> i64 {
    let mut conn = db.conn().unwrap();
    payment_transactions::table
        .filter(payment_transactions::order_id.eq(order_id))
        .filter(payment_transactions::trade_state.ne_all(["CLOSED", "REVOKED"]))
        .count()
        .get_result(&mut *conn)
        .unwrap()
}

/// A stored transaction the platform reported paid.
async fn paid(f: &Fixture, tenant_id: i64, out_trade_no: &str, amount: i64) -> Transaction {
    pay(f, transaction(tenant_id, out_trade_no, amount)).await
}

/// Stores `tx` and records the platform's report that it was paid.
async fn pay(f: &Fixture, tx: Transaction) -> Transaction {
    let tx = f.repo.insert_transaction(tx, none()).await.unwrap();
    let done = Transaction {
        trade_state: TradeState::Success,
        transaction_id: Some(format!("4200{}", tx.out_trade_no)),
        payer_total: Some(tx.amount),
        success_time: Some(t0() + Duration::minutes(1)),
        updated_at: t0() + Duration::minutes(1),
        ..tx
    };
    assert!(f.repo.update_transaction(done.clone(), TradeState::NotPay, None, none()).await.unwrap());
    done
}

store_test!(a_config_round_trips_with_its_secrets_encrypted_at_rest, |db| {
    let f = fixture(&db).await;
    assert_eq!(f.repo.get_config(f.tenant).await.unwrap(), None);

    let stored = f.repo.put_config(config(f.tenant), Effects::audited(config_audit(f.tenant)), false).await.unwrap();

    assert_eq!(stored, config(f.tenant));
    assert_eq!(f.repo.get_config(f.tenant).await.unwrap(), Some(config(f.tenant)));
    assert_eq!(f.repo.get_config(f.other).await.unwrap(), None);
    let mut conn = db.conn().unwrap();
    let (key, v3): (Option<String>, Option<String>) = payment_configs::table
        .find(f.tenant)
        .select((payment_configs::merchant_private_key_enc, payment_configs::api_v3_key_enc))
        .first(&mut *conn)
        .unwrap();
    let (key, v3) = (key.unwrap(), v3.unwrap());
    assert!(key.starts_with("v1:") && v3.starts_with("v1:"), "{key} {v3}");
    assert!(!key.contains("PRIVATE KEY") && !key.contains("MIIEvQ"), "{key}");
    assert!(!v3.contains(API_V3_KEY) && !v3.contains("0123456789"), "{v3}");
    let audits: Vec<(String, Option<i64>, Option<i64>)> = audit_logs::table
        .filter(audit_logs::target_type.eq("payment_config"))
        .select((audit_logs::action, audit_logs::tenant_id, audit_logs::partner_id))
        .load(&mut *conn)
        .unwrap();
    assert_eq!(audits, vec![("payment_config.update".to_owned(), Some(f.tenant), Some(f.partner))]);
});

store_test!(a_second_put_replaces_the_config_and_a_cleared_secret_is_gone, |db| {
    let f = fixture(&db).await;
    f.repo.put_config(config(f.tenant), Effects::audited(config_audit(f.tenant)), false).await.unwrap();
    let changed = PaymentConfig {
        mchid: "1900000110".into(),
        credentials: MerchantCredentials { api_v3_key: None, ..credentials() },
        enabled: false,
        updated_at: t0() + Duration::seconds(5),
        ..config(f.tenant)
    };

    f.repo.put_config(changed.clone(), Effects::audited(config_audit(f.tenant)), false).await.unwrap();

    assert_eq!(f.repo.get_config(f.tenant).await.unwrap(), Some(changed));
    let mut conn = db.conn().unwrap();
    let n: i64 = payment_configs::table.count().get_result(&mut *conn).unwrap();
    let audits: i64 = audit_logs::table.filter(audit_logs::target_type.eq("payment_config")).count().get_result(&mut *conn).unwrap();
    assert_eq!((n, audits), (1, 2));
});

store_test!(a_config_for_a_missing_tenant_is_refused_and_writes_no_audit, |db| {
    let f = fixture(&db).await;

    let err = f.repo.put_config(config(f.tenant + 1000), Effects::audited(config_audit(f.tenant)), false).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    let mut conn = db.conn().unwrap();
    let audits: i64 = audit_logs::table.filter(audit_logs::target_type.eq("payment_config")).count().get_result(&mut *conn).unwrap();
    assert_eq!(audits, 0);
});

store_test!(the_tenant_is_found_within_the_callers_scope_only, |db| {
    let f = fixture(&db).await;
    let mine = Some(PaymentTenant { id: f.tenant, partner_id: Some(f.partner) });

    assert_eq!(f.repo.tenant(Party::Platform, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Partner { partner_id: f.partner }, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Partner { partner_id: f.partner }, f.other).await.unwrap(), None);
    assert_eq!(f.repo.tenant(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Tenant { tenant_id: f.other, partner_id: None }, f.tenant).await.unwrap(), None);
    assert_eq!(f.repo.tenant(Party::Platform, f.other + 1000).await.unwrap(), None);
});

store_test!(a_transaction_number_is_unique_per_tenant, |db| {
    let f = fixture(&db).await;
    let stored = f.repo.insert_transaction(transaction(f.tenant, "T20260501000001", 100), none()).await.unwrap();
    assert!(stored.id > 0);
    assert_eq!(stored, Transaction { id: stored.id, ..transaction(f.tenant, "T20260501000001", 100) });

    let again = f.repo.insert_transaction(transaction(f.tenant, "T20260501000001", 200), effects(f.tenant, "tx.again")).await.unwrap_err();
    let elsewhere = f.repo.insert_transaction(transaction(f.other, "T20260501000001", 300), none()).await.unwrap();

    assert!(matches!(again, Error::Conflict(_, ref m) if m.contains("T20260501000001")), "{again:?}");
    assert_eq!(written(&db, "tx.again"), (0, 0), "the refused insert wrote none of its effects");
    assert_eq!(elsewhere.amount, Money::from_fen(300));
    assert_eq!(f.repo.get_transaction(f.tenant, "T20260501000001".into()).await.unwrap(), Some(stored));
    assert_eq!(f.repo.get_transaction(f.tenant, "nope".into()).await.unwrap(), None);
});

store_test!(a_transaction_update_applies_only_over_the_state_it_read, |db| {
    let f = fixture(&db).await;
    let tx = f.repo.insert_transaction(transaction(f.tenant, "T1", 100), none()).await.unwrap();
    let paying =
        Transaction { prepay_id: Some("wx201410272009395522657a690389285100".into()), trade_state: TradeState::UserPaying, ..tx.clone() };
    let closed = Transaction { trade_state: TradeState::Closed, ..tx.clone() };

    assert!(f.repo.update_transaction(paying.clone(), TradeState::NotPay, None, none()).await.unwrap());
    // A racing writer that also read NOTPAY loses and must read again.
    assert!(!f.repo.update_transaction(closed, TradeState::NotPay, None, none()).await.unwrap());
    assert_eq!(f.repo.get_transaction(f.tenant, "T1".into()).await.unwrap(), Some(paying.clone()));

    let done = paid(&f, f.tenant, "T2", 500).await;
    assert_eq!(f.repo.get_transaction(f.tenant, "T2".into()).await.unwrap(), Some(done.clone()));
    let window = f.repo.paid_between(f.tenant, t0(), t0() + Duration::minutes(1)).await.unwrap();
    assert!(window.is_empty(), "to is exclusive");
    let window = f.repo.paid_between(f.tenant, t0() + Duration::minutes(1), t0() + Duration::hours(1)).await.unwrap();
    assert_eq!(window, vec![done.clone()]);
    assert!(f.repo.paid_between(f.other, t0(), t0() + Duration::hours(1)).await.unwrap().is_empty());
    let found = f.repo.transactions_by_numbers(f.tenant, vec!["T2".into(), "T1".into(), "T9".into()]).await.unwrap();
    assert_eq!(found, vec![paying, done]);
    assert!(f.repo.transactions_by_numbers(f.other, vec!["T1".into()]).await.unwrap().is_empty());
    assert!(f.repo.transactions_by_numbers(f.tenant, vec![]).await.unwrap().is_empty());
});

store_test!(an_update_never_erases_a_recorded_discrepancy, |db| {
    let f = fixture(&db).await;
    let tx = f.repo.insert_transaction(transaction(f.tenant, "T1", 100), none()).await.unwrap();
    let why = "the pay platform reported 99 fen in CNY paid for a transaction of 100 fen in CNY";
    let mismatched = Transaction {
        transaction_id: Some("4200T1".into()),
        discrepancy: Some(why.into()),
        updated_at: t0() + Duration::minutes(1),
        ..tx.clone()
    };
    assert!(f.repo.update_transaction(mismatched.clone(), TradeState::NotPay, None, none()).await.unwrap());
    assert_eq!(f.repo.get_transaction(f.tenant, "T1".into()).await.unwrap(), Some(mismatched.clone()));

    // A writer that never saw it (an older read) closes the transaction: the state moves, the
    // discrepancy stays.
    let closed = Transaction { trade_state: TradeState::Closed, updated_at: t0() + Duration::minutes(2), ..tx.clone() };
    assert!(f.repo.update_transaction(closed, TradeState::NotPay, None, none()).await.unwrap());
    let stored = f.repo.get_transaction(f.tenant, "T1".into()).await.unwrap().unwrap();
    assert_eq!((stored.trade_state, stored.discrepancy.as_deref()), (TradeState::Closed, Some(why)));
    // Another discrepancy does not replace the first.
    let other = Transaction {
        trade_state: TradeState::Success,
        discrepancy: Some("the pay platform reported 100 fen in USD".into()),
        updated_at: t0() + Duration::minutes(3),
        ..stored
    };
    assert!(f.repo.update_transaction(other, TradeState::Closed, None, none()).await.unwrap());
    let stored = f.repo.get_transaction(f.tenant, "T1".into()).await.unwrap().unwrap();
    assert_eq!((stored.trade_state, stored.discrepancy.as_deref()), (TradeState::Success, Some(why)));
    assert!(!stored.is_paid(), "a transaction with a discrepancy is not paid");
});

store_test!(a_transaction_cannot_take_an_orders_number_unless_it_is_that_orders, |db| {
    let f = fixture(&db).await;
    let mine = order(&f, f.tenant, "O0000001", 100).await;
    let another = order(&f, f.tenant, "O0000002", 100).await;

    let routes = f.repo.insert_transaction(transaction(f.tenant, "O0000001", 100), effects(f.tenant, "tx.routes")).await.unwrap_err();
    let others = f
        .repo
        .insert_transaction(Transaction { order_id: Some(another.id), ..online(&mine) }, effects(f.tenant, "tx.others"))
        .await
        .unwrap_err();

    assert!(matches!(routes, Error::Conflict(_, ref m) if m.contains("O0000001")), "{routes:?}");
    assert!(matches!(others, Error::Conflict(_, ref m) if m.contains("O0000001")), "{others:?}");
    assert_eq!(f.repo.get_transaction(f.tenant, "O0000001".into()).await.unwrap(), None, "nothing written");
    assert_eq!(f.repo.order_transaction(f.tenant, another.id).await.unwrap(), None);
    assert_eq!((written(&db, "tx.routes"), written(&db, "tx.others")), ((0, 0), (0, 0)), "no job, no audit");
    // The order's own transaction takes it, and another tenant's any: orders' numbers are per tenant.
    let own = f.repo.insert_transaction(online(&mine), effects(f.tenant, "tx.own")).await.unwrap();
    assert_eq!(f.repo.get_transaction(f.tenant, "O0000001".into()).await.unwrap(), Some(own));
    assert_eq!(written(&db, "tx.own"), (1, 1));
    f.repo.insert_transaction(transaction(f.other, "O0000002", 100), none()).await.unwrap();
});

/// Inserts `txs` all at once (each task waits for the others before it writes); returns what
/// each insert answered, in the order of `txs`.
async fn insert_at_once(f: &Fixture, txs: Vec<(Transaction, Effects)>) -> Vec<Result<Transaction, Error>> {
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(txs.len()));
    let tasks: Vec<_> = txs
        .into_iter()
        .map(|(tx, effects)| {
            let (repo, start) = (repo.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                repo.insert_transaction(tx, effects).await
            })
        })
        .collect();
    let mut answers = vec![];
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    answers
}

store_test!(one_live_transaction_per_order_when_an_online_and_an_offline_insert_race, |db| {
    let f = fixture(&db).await;
    let mut orders = vec![];
    for i in 0..8 {
        orders.push(order(&f, f.tenant, &format!("L000000{i}"), 100).await);
    }
    // 8 pairs, all 16 inserts at once: each order's platform payment against its offline one.
    let pairs: Vec<(Transaction, Effects)> =
        orders.iter().flat_map(|o| [(online(o), effects(f.tenant, "tx.race")), (offline(o), effects(f.tenant, "tx.race"))]).collect();

    let answers = insert_at_once(&f, pairs).await;

    for (o, pair) in orders.iter().zip(answers.chunks(2)) {
        let won: Vec<&Transaction> = pair.iter().filter_map(|a| a.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "exactly one of the pair of {} is stored: {pair:?}", o.order_no);
        let lost = pair.iter().find_map(|a| a.as_ref().err()).unwrap();
        assert!(matches!(lost, Error::Conflict(..)), "{lost:?}");
        assert_eq!(live(&db, o.id), 1);
        assert_eq!(f.repo.order_transaction(f.tenant, o.id).await.unwrap().as_ref(), Some(won[0]));
    }
    assert_eq!(written(&db, "tx.race"), (8, 8), "the effects of the winners only");

    // Once the live one is closed (whichever won), the other may be inserted — and then no third.
    for (o, pair) in orders.iter().zip(answers.chunks(2)) {
        let winner = pair.iter().find_map(|a| a.as_ref().ok()).unwrap().clone();
        let loser = if winner.method == PaymentMethod::Offline { online(o) } else { offline(o) };
        let read = winner.trade_state;
        assert!(f.repo.update_transaction(Transaction { trade_state: TradeState::Closed, ..winner }, read, None, none()).await.unwrap());
        let second = f.repo.insert_transaction(loser, none()).await.unwrap();
        assert_eq!(f.repo.order_transaction(f.tenant, o.id).await.unwrap(), Some(second));
        let third = Transaction { out_trade_no: format!("{}-2", o.order_no), ..offline(o) };
        assert!(matches!(f.repo.insert_transaction(third, none()).await.unwrap_err(), Error::Conflict(..)));
        assert_eq!(live(&db, o.id), 1);
    }
});

store_test!(a_closed_or_revoked_transaction_makes_way_for_another_of_its_order, |db| {
    let f = fixture(&db).await;
    let o = order(&f, f.tenant, "W0000001", 100).await;
    let first = f.repo.insert_transaction(online(&o), none()).await.unwrap();
    let err = f.repo.insert_transaction(offline(&o), effects(f.tenant, "tx.second")).await.unwrap_err();
    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    assert_eq!(written(&db, "tx.second"), (0, 0));
    // Nor may an order's transaction be stored closed beside its live one.
    let closed = Transaction { out_trade_no: "W0000001-closed".into(), trade_state: TradeState::Closed, ..online(&o) };
    assert!(matches!(f.repo.insert_transaction(closed, none()).await.unwrap_err(), Error::Conflict(..)));

    assert!(
        f.repo
            .update_transaction(Transaction { trade_state: TradeState::Closed, ..first }, TradeState::NotPay, None, none())
            .await
            .unwrap()
    );
    let second = f.repo.insert_transaction(offline(&o), effects(f.tenant, "tx.second")).await.unwrap();
    assert_eq!(written(&db, "tx.second"), (1, 1));
    assert!(
        f.repo
            .update_transaction(Transaction { trade_state: TradeState::Revoked, ..second }, TradeState::Success, None, none())
            .await
            .unwrap()
    );
    let third = Transaction { out_trade_no: "W0000001-3".into(), ..offline(&o) };
    f.repo.insert_transaction(third, none()).await.unwrap();
    assert_eq!(live(&db, o.id), 1);
    // Transactions of the payment routes (no order) are not limited.
    f.repo.insert_transaction(transaction(f.tenant, "T1", 100), none()).await.unwrap();
    f.repo.insert_transaction(transaction(f.tenant, "T2", 100), none()).await.unwrap();
});

store_test!(the_orders_transaction_is_its_live_one_even_before_a_newer_closed_one_else_its_latest, |db| {
    let f = fixture(&db).await;
    let o = order(&f, f.tenant, "P0000001", 100).await;
    assert_eq!(f.repo.order_transaction(f.tenant, o.id).await.unwrap(), None);
    let close = |tx: Transaction| {
        let repo = f.repo.clone();
        async move {
            let read = tx.trade_state;
            let closed = Transaction { trade_state: TradeState::Closed, updated_at: t0() + Duration::minutes(5), ..tx };
            assert!(repo.update_transaction(closed.clone(), read, None, none()).await.unwrap());
            closed
        }
    };
    let older = close(f.repo.insert_transaction(online(&o), none()).await.unwrap()).await;
    let newer = f.repo.insert_transaction(Transaction { trade_state: TradeState::NotPay, ..offline(&o) }, none()).await.unwrap();
    assert_eq!(f.repo.order_transaction(f.tenant, o.id).await.unwrap(), Some(newer.clone()), "the live one");
    let newer = close(newer).await;
    assert_eq!(f.repo.order_transaction(f.tenant, o.id).await.unwrap(), Some(newer.clone()), "none live: the latest");

    // The platform reports the older one paid after all: live again, it is the order's.
    let late = Transaction {
        trade_state: TradeState::Success,
        transaction_id: Some("4200P0000001".into()),
        payer_total: Some(o.amount),
        success_time: Some(t0() + Duration::minutes(6)),
        updated_at: t0() + Duration::minutes(6),
        ..older
    };
    assert!(f.repo.update_transaction(late.clone(), TradeState::Closed, None, none()).await.unwrap());
    assert!(newer.id > late.id);
    assert_eq!(f.repo.order_transaction(f.tenant, o.id).await.unwrap(), Some(late));
    assert_eq!(f.repo.order_transaction(f.other, o.id).await.unwrap(), None, "another tenant's order id");
});

store_test!(refund_reservations_follow_the_rules_in_order, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;
    let reserve = |r: Refund, max: u32| {
        let repo = f.repo.clone();
        let tenant = r.tenant_id;
        async move { repo.reserve_refund(r, rule(max), effects(tenant, "refund.reserve")).await.unwrap() }
    };

    let RefundReservation::Reserved(first) = reserve(refund(f.tenant, "T1", "R1", 60), 3).await else { panic!("not reserved") };
    assert!(first.id > 0);
    assert_eq!(first, Refund { id: first.id, ..refund(f.tenant, "T1", "R1", 60) });
    // 1. The same number again is the same refund, whatever else it says.
    assert_eq!(reserve(refund(f.tenant, "T1", "R1", 99), 3).await, RefundReservation::Existing(first.clone()));
    // 3. More than is left.
    assert_eq!(
        reserve(refund(f.tenant, "T1", "R2", 41), 3).await,
        RefundReservation::Refused(RefundRefusal::ExceedsPaid { refundable: Money::from_fen(40) })
    );
    // A failed refund gives its amount back; a settlement applies once.
    let failed = Refund { status: RefundStatus::Failed, updated_at: t0() + Duration::minutes(2), ..first.clone() };
    assert!(f.repo.update_refund(failed.clone(), RefundStatus::Processing, effects(f.tenant, "refund.settle")).await.unwrap());
    let late = Refund { status: RefundStatus::Succeeded, ..first.clone() };
    assert!(!f.repo.update_refund(late, RefundStatus::Processing, effects(f.tenant, "refund.settle")).await.unwrap());
    assert_eq!(f.repo.get_refund(f.tenant, "R1".into()).await.unwrap(), Some(failed));
    assert_eq!(written(&db, "refund.settle"), (1, 1), "the effects of the settlement that applied only");
    // Stored with the status it carries: an offline payment's refund succeeds at once.
    let at_once = Refund { status: RefundStatus::Succeeded, succeeded_at: Some(t0()), ..refund(f.tenant, "T1", "R2", 70) };
    let RefundReservation::Reserved(second) = reserve(at_once.clone(), 3).await else { panic!("not reserved") };
    assert_eq!(second, Refund { id: second.id, ..at_once });
    assert!(matches!(reserve(refund(f.tenant, "T1", "R3", 30), 3).await, RefundReservation::Reserved(_)));
    // 2. Three refunds of any status is the maximum here, checked before the amount.
    assert_eq!(reserve(refund(f.tenant, "T1", "R4", 1), 3).await, RefundReservation::Refused(RefundRefusal::TooManyRefunds { max: 3 }));
    // An existing number still answers Existing when the maximum is reached.
    assert!(matches!(reserve(refund(f.tenant, "T1", "R3", 30), 3).await, RefundReservation::Existing(_)));
    // Nothing left after 70 + 30: a fully refunded transaction takes no more.
    assert_eq!(
        reserve(refund(f.tenant, "T1", "R5", 1), 50).await,
        RefundReservation::Refused(RefundRefusal::ExceedsPaid { refundable: Money::ZERO })
    );
    let numbers: Vec<String> = f.repo.refunds_of(f.tenant, "T1".into()).await.unwrap().into_iter().map(|r| r.out_refund_no).collect();
    assert_eq!(numbers, ["R1", "R2", "R3"], "oldest first");
    assert!(f.repo.refunds_of(f.other, "T1".into()).await.unwrap().is_empty());

    // An unpaid transaction, one with a discrepancy, and one paid longer ago than the window.
    f.repo.insert_transaction(transaction(f.tenant, "T2", 100), none()).await.unwrap();
    assert_eq!(reserve(refund(f.tenant, "T2", "R6", 1), 50).await, RefundReservation::Refused(RefundRefusal::NotPaid));
    let odd = pay(&f, transaction(f.tenant, "T3", 100)).await;
    let odd = Transaction { discrepancy: Some("reported in USD".into()), ..odd };
    assert!(f.repo.update_transaction(odd, TradeState::Success, None, none()).await.unwrap());
    assert_eq!(reserve(refund(f.tenant, "T3", "R7", 1), 50).await, RefundReservation::Refused(RefundRefusal::NotPaid));
    paid(&f, f.tenant, "T4", 100).await;
    let too_late = Refund { created_at: t0() + Duration::days(366), ..refund(f.tenant, "T4", "R8", 1) };
    assert_eq!(reserve(too_late, 50).await, RefundReservation::Refused(RefundRefusal::WindowClosed { days: 365 }));

    // No such transaction of this tenant.
    let err = f.repo.reserve_refund(refund(f.tenant, "T9", "R9", 1), rule(3), effects(f.tenant, "refund.reserve")).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let err = f.repo.reserve_refund(refund(f.other, "T1", "R9", 1), rule(3), effects(f.other, "refund.reserve")).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert_eq!(f.repo.get_refund(f.other, "R1".into()).await.unwrap(), None);
    assert_eq!(written(&db, "refund.reserve"), (3, 3), "one job and one audit record per stored refund");
});

store_test!(settled_refunds_are_found_by_time_and_number, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;
    let RefundReservation::Reserved(r1) = f.repo.reserve_refund(refund(f.tenant, "T1", "R1", 10), rule(50), none()).await.unwrap() else {
        panic!("not reserved")
    };
    let RefundReservation::Reserved(r2) = f.repo.reserve_refund(refund(f.tenant, "T1", "R2", 20), rule(50), none()).await.unwrap() else {
        panic!("not reserved")
    };
    let done = Refund {
        refund_id: Some("50000000382019052709732678859".into()),
        status: RefundStatus::Succeeded,
        succeeded_at: Some(t0() + Duration::hours(2)),
        updated_at: t0() + Duration::hours(2),
        ..r1
    };
    assert!(f.repo.update_refund(done.clone(), RefundStatus::Processing, none()).await.unwrap());

    let window = f.repo.refunds_succeeded_between(f.tenant, t0() + Duration::hours(1), t0() + Duration::hours(3)).await.unwrap();

    assert_eq!(window, vec![done.clone()]);
    assert!(f.repo.refunds_succeeded_between(f.tenant, t0(), t0() + Duration::hours(2)).await.unwrap().is_empty());
    assert_eq!(f.repo.refunds_by_numbers(f.tenant, vec!["R2".into(), "R1".into(), "R7".into()]).await.unwrap(), vec![done, r2]);
    assert!(f.repo.refunds_by_numbers(f.other, vec!["R1".into()]).await.unwrap().is_empty());
});

store_test!(the_effects_of_a_refused_ledger_write_are_not_written_and_of_an_accepted_one_are, |db| {
    let f = fixture(&db).await;
    let o = order(&f, f.tenant, "E0000001", 100).await;
    // Insert: refused (its number is taken), then accepted.
    f.repo.insert_transaction(transaction(f.tenant, "T1", 100), none()).await.unwrap();
    assert!(f.repo.insert_transaction(transaction(f.tenant, "T1", 100), effects(f.tenant, "insert.refused")).await.is_err());
    f.repo.insert_transaction(online(&o), effects(f.tenant, "insert.accepted")).await.unwrap();
    // Update: a stale read writes nothing; a current one writes.
    let tx = f.repo.get_transaction(f.tenant, "E0000001".into()).await.unwrap().unwrap();
    let paying = Transaction { trade_state: TradeState::UserPaying, ..tx.clone() };
    assert!(!f.repo.update_transaction(paying.clone(), TradeState::Closed, None, effects(f.tenant, "update.stale")).await.unwrap());
    assert!(f.repo.update_transaction(paying, TradeState::NotPay, None, effects(f.tenant, "update.current")).await.unwrap());
    // Reservation: refused by the rule (unpaid), refused for its number (existing), accepted.
    let wanted = Refund { order_id: Some(o.id), ..refund(f.tenant, "E0000001", "R1", 10) };
    let refused = f.repo.reserve_refund(wanted.clone(), rule(50), effects(f.tenant, "reserve.refused")).await.unwrap();
    assert_eq!(refused, RefundReservation::Refused(RefundRefusal::NotPaid));
    let done = pay(&f, transaction(f.tenant, "T2", 100)).await;
    let of_t2 = refund(f.tenant, &done.out_trade_no, "R2", 10);
    assert!(matches!(f.repo.reserve_refund(of_t2.clone(), rule(50), none()).await.unwrap(), RefundReservation::Reserved(_)));
    let again = f.repo.reserve_refund(of_t2.clone(), rule(50), effects(f.tenant, "reserve.existing")).await.unwrap();
    assert!(matches!(again, RefundReservation::Existing(_)), "{again:?}");
    let next = refund(f.tenant, &done.out_trade_no, "R3", 10);
    assert!(matches!(
        f.repo.reserve_refund(next, rule(50), effects(f.tenant, "reserve.accepted")).await.unwrap(),
        RefundReservation::Reserved(_)
    ));
    // Refund update: stale, then current.
    let settled = Refund { status: RefundStatus::Succeeded, succeeded_at: Some(t0()), ..of_t2 };
    assert!(!f.repo.update_refund(settled.clone(), RefundStatus::Failed, effects(f.tenant, "settle.stale")).await.unwrap());
    assert!(f.repo.update_refund(settled, RefundStatus::Processing, effects(f.tenant, "settle.current")).await.unwrap());

    for refused in ["insert.refused", "update.stale", "reserve.refused", "reserve.existing", "settle.stale"] {
        assert_eq!(written(&db, refused), (0, 0), "{refused}");
    }
    for accepted in ["insert.accepted", "update.current", "reserve.accepted", "settle.current"] {
        assert_eq!(written(&db, accepted), (1, 1), "{accepted}");
    }
    let mut conn = db.conn().unwrap();
    let job: (Option<i64>, String, String) = jobs::table
        .filter(jobs::kind.eq("insert.accepted"))
        .select((jobs::tenant_id, jobs::payload, jobs::status))
        .first(&mut *conn)
        .unwrap();
    assert_eq!(
        (job.0, serde_json::from_str::<serde_json::Value>(&job.1).unwrap(), job.2.as_str()),
        (Some(f.tenant), json!({ "tag": "insert.accepted" }), "pending")
    );
});

store_test!(a_ledger_write_whose_effects_cannot_be_written_is_undone_whole, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;
    // A job of a tenant that does not exist breaks the jobs table's foreign key (the jobs are
    // written last: the audit record and the event before it are undone with the change).
    let broken = |tag: &str| {
        let mut e = effects(f.tenant, tag);
        e.jobs.insert(0, NewJob { tenant_id: Some(f.other + 1000), ..e.jobs[0].clone() });
        e
    };

    assert!(f.repo.insert_transaction(transaction(f.tenant, "T2", 100), broken("broken.insert")).await.is_err());
    assert!(f.repo.reserve_refund(refund(f.tenant, "T1", "R1", 10), rule(50), broken("broken.reserve")).await.is_err());
    let stored = f.repo.get_transaction(f.tenant, "T1".into()).await.unwrap().unwrap();
    let refunding = Transaction { trade_state: TradeState::Refund, ..stored.clone() };
    assert!(f.repo.update_transaction(refunding, TradeState::Success, None, broken("broken.update")).await.is_err());

    assert_eq!(f.repo.get_transaction(f.tenant, "T2".into()).await.unwrap(), None);
    assert_eq!(f.repo.get_refund(f.tenant, "R1".into()).await.unwrap(), None);
    assert_eq!(f.repo.get_transaction(f.tenant, "T1".into()).await.unwrap(), Some(stored));
    for tag in ["broken.insert", "broken.reserve", "broken.update"] {
        assert_eq!(written(&db, tag), (0, 0), "{tag}");
    }
    // The ledger takes the same writes with effects that can be written.
    f.repo.insert_transaction(transaction(f.tenant, "T2", 100), effects(f.tenant, "fine")).await.unwrap();
    assert!(matches!(
        f.repo.reserve_refund(refund(f.tenant, "T1", "R1", 10), rule(50), effects(f.tenant, "fine")).await.unwrap(),
        RefundReservation::Reserved(_)
    ));
    assert_eq!(written(&db, "fine"), (2, 2));
});

/// Spawns `n` reservations of `fen` each against `out_trade_no` at once, each through its own
/// write; returns the accepted amounts' sum and how many were accepted.
async fn race(f: &Fixture, out_trade_no: &str, order_id: Option<i64>, n: usize, fen: i64, max_refunds: u32) -> (i64, usize) {
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = vec![];
    for i in 0..n {
        let (repo, start, tenant) = (repo.clone(), start.clone(), f.tenant);
        let r = Refund { order_id, ..refund(tenant, out_trade_no, &format!("{out_trade_no}-R{i}"), fen) };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.reserve_refund(r, rule(max_refunds), effects(tenant, "refund.race")).await
        }));
    }
    let (mut sum, mut accepted) = (0, 0);
    for t in tasks {
        match t.await.unwrap().unwrap() {
            RefundReservation::Reserved(r) => {
                sum += r.amount.fen();
                accepted += 1;
            }
            RefundReservation::Refused(RefundRefusal::ExceedsPaid { .. } | RefundRefusal::TooManyRefunds { .. }) => {}
            other => panic!("neither reserved nor refused for the amount or count: {other:?}"),
        }
    }
    (sum, accepted)
}

fn stored_sum(db: &Db, out_trade_no: &str) -> (i64, i64) {
    let mut conn = db.conn().unwrap();
    let amounts: Vec<i64> = payment_refunds::table
        .filter(payment_refunds::out_trade_no.eq(out_trade_no))
        .select(payment_refunds::amount)
        .load(&mut *conn)
        .unwrap();
    (amounts.iter().sum(), amounts.len() as i64)
}

store_test!(fifty_concurrent_refunds_never_exceed_what_was_paid, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;

    let (sum, accepted) = race(&f, "T1", None, 50, 3, 50).await;

    assert!(sum <= 100, "accepted {sum} fen of 100");
    assert_eq!((sum, accepted), (99, 33), "33 refunds of 3 fen fit");
    assert_eq!(stored_sum(&db, "T1"), (99, 33));
    assert_eq!(written(&db, "refund.race"), (33, 33), "the effects of the accepted ones only");
});

store_test!(fifty_concurrent_refunds_never_exceed_the_maximum_count, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;

    let (sum, accepted) = race(&f, "T1", None, 50, 3, 10).await;

    assert_eq!((sum, accepted), (30, 10));
    assert_eq!(stored_sum(&db, "T1"), (30, 10));
    assert_eq!(written(&db, "refund.race"), (10, 10));
});

store_test!(fifty_concurrent_refunds_of_an_orders_payment_never_exceed_what_was_paid, |db| {
    let f = fixture(&db).await;
    let o = order(&f, f.tenant, "C0000001", 100).await;
    let tx = pay(&f, online(&o)).await;

    let (sum, accepted) = race(&f, &tx.out_trade_no, Some(o.id), 50, 3, 50).await;

    assert_eq!((sum, accepted), (99, 33), "33 refunds of 3 fen fit");
    assert_eq!(stored_sum(&db, &tx.out_trade_no), (99, 33));
    let shown = f.repo.refunds_of_orders(vec![o.id]).await.unwrap();
    assert_eq!((shown.iter().map(|r| r.amount.fen()).sum::<i64>(), shown.len()), (99, 33), "the order's refunds are them all");
});

store_test!(a_notification_is_seen_once_recorded, |db| {
    let f = fixture(&db).await;
    let id = "EV-2018022511223320873".to_owned();
    assert!(!f.repo.notification_seen(f.tenant, id.clone()).await.unwrap());

    f.repo.record_notification(f.tenant, id.clone(), "TRANSACTION.SUCCESS".into(), t0()).await.unwrap();
    // Two deliveries racing both record it: no error.
    let repo = Arc::new(f.repo.clone());
    let mut tasks = vec![];
    for _ in 0..5 {
        let (repo, id, tenant) = (repo.clone(), id.clone(), f.tenant);
        tasks.push(tokio::spawn(async move { repo.record_notification(tenant, id, "TRANSACTION.SUCCESS".into(), t0()).await }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    assert!(f.repo.notification_seen(f.tenant, id.clone()).await.unwrap());
    assert!(!f.repo.notification_seen(f.other, id).await.unwrap(), "event ids are per tenant");
});

store_test!(tenants_with_activity_are_those_with_payments_or_refunds_changed_in_the_window, |db| {
    let f = fixture(&db).await;
    // Created at t0 and paid a minute later.
    paid(&f, f.tenant, "T1", 100).await;
    let day = |from: i64, to: i64| (t0() + Duration::minutes(from), t0() + Duration::minutes(to));

    let (from, to) = day(0, 60);
    assert_eq!(f.repo.tenants_with_activity(from, to).await.unwrap(), vec![f.tenant]);
    let (from, to) = day(2, 60);
    assert!(f.repo.tenants_with_activity(from, to).await.unwrap().is_empty(), "nothing changed after the payment");
    let (from, to) = day(-60, 0);
    assert!(f.repo.tenants_with_activity(from, to).await.unwrap().is_empty(), "created at `to` is outside");

    // A refund of the other tenant's payment, changed later, brings it in once.
    paid(&f, f.other, "T2", 100).await;
    f.repo
        .reserve_refund(
            Refund { created_at: t0() + Duration::minutes(5), updated_at: t0() + Duration::minutes(5), ..refund(f.other, "T2", "R2", 10) },
            rule(50),
            none(),
        )
        .await
        .unwrap();
    let (from, to) = day(3, 60);
    assert_eq!(f.repo.tenants_with_activity(from, to).await.unwrap(), vec![f.other]);
    let (from, to) = day(0, 60);
    let mut both = vec![f.tenant, f.other];
    both.sort_unstable();
    assert_eq!(f.repo.tenants_with_activity(from, to).await.unwrap(), both);
});

// --- the sweep's reads, the discrepancy count ------------------------------------------------------

/// A transaction of the payment routes, unpaid in `state`, expiring `minutes` after t0.
fn expiring(tenant_id: i64, out_trade_no: &str, state: TradeState, minutes: i64) -> Transaction {
    Transaction { trade_state: state, expires_at: t0() + Duration::minutes(minutes), ..transaction(tenant_id, out_trade_no, 100) }
}

/// Reserves a refund of `out_trade_no` requested `minutes` after t0, with `status`.
async fn requested(f: &Fixture, tenant_id: i64, out_trade_no: &str, out_refund_no: &str, minutes: i64, status: RefundStatus) {
    let at = t0() + Duration::minutes(minutes);
    let r = Refund { status, created_at: at, updated_at: at, ..refund(tenant_id, out_trade_no, out_refund_no, 1) };
    let reserved = f.repo.reserve_refund(r, rule(50), none()).await.unwrap();
    assert!(matches!(reserved, RefundReservation::Reserved(_)), "{reserved:?}");
}

store_test!(unsettled_finds_platform_transactions_unpaid_past_the_bound_and_refunds_processing_before_it_oldest_first, |db| {
    // Arrange: the bound is an hour after t0.
    let f = fixture(&db).await;
    let bound = t0() + Duration::minutes(60);
    // Found (inserted out of expiry order; one of another tenant).
    for tx in [
        expiring(f.tenant, "U_NOTPAY", TradeState::NotPay, 10),
        expiring(f.tenant, "U_PAYERROR", TradeState::PayError, 20),
        expiring(f.other, "U_PAYING", TradeState::UserPaying, 5),
    ] {
        f.repo.insert_transaction(tx, none()).await.unwrap();
    }
    // Not found: not yet expired (after the bound, or exactly at it), paid, closed, revoked,
    // offline, holding a discrepancy.
    let o = order(&f, f.tenant, "O0000001", 100).await;
    for tx in [
        expiring(f.tenant, "N_AHEAD", TradeState::NotPay, 61),
        expiring(f.tenant, "N_AT_BOUND", TradeState::NotPay, 60),
        expiring(f.tenant, "N_CLOSED", TradeState::Closed, 1),
        expiring(f.tenant, "N_REVOKED", TradeState::Revoked, 1),
        Transaction { trade_state: TradeState::NotPay, expires_at: t0(), payer_total: None, success_time: None, ..offline(&o) },
        Transaction { discrepancy: Some("reported 1 fen".into()), ..expiring(f.tenant, "N_ODD", TradeState::NotPay, 1) },
    ] {
        f.repo.insert_transaction(tx, none()).await.unwrap();
    }
    let done = pay(&f, expiring(f.tenant, "N_PAID", TradeState::NotPay, 1)).await;
    paid(&f, f.other, "P_OTHER", 100).await;
    // Refunds: processing before the bound (found), at or after it, succeeded, failed.
    requested(&f, f.tenant, &done.out_trade_no, "R_OLD", 30, RefundStatus::Processing).await;
    requested(&f, f.other, "P_OTHER", "R_OTHER", 10, RefundStatus::Processing).await;
    requested(&f, f.tenant, &done.out_trade_no, "R_AT_BOUND", 60, RefundStatus::Processing).await;
    requested(&f, f.tenant, &done.out_trade_no, "R_NEW", 61, RefundStatus::Processing).await;
    requested(&f, f.tenant, &done.out_trade_no, "R_DONE", 1, RefundStatus::Succeeded).await;
    requested(&f, f.tenant, &done.out_trade_no, "R_FAILED", 2, RefundStatus::Processing).await;
    let failed = f.repo.get_refund(f.tenant, "R_FAILED".into()).await.unwrap().unwrap();
    assert!(f.repo.update_refund(Refund { status: RefundStatus::Failed, ..failed }, RefundStatus::Processing, none()).await.unwrap());

    // Act
    let all = f.repo.unsettled(bound, 500).await.unwrap();
    let two = f.repo.unsettled(bound, 2).await.unwrap();
    let one = f.repo.unsettled(bound, 1).await.unwrap();
    let early = f.repo.unsettled(t0() + Duration::minutes(6), 500).await.unwrap();

    // Assert
    let at = |minutes: i64| t0() + Duration::minutes(minutes);
    assert_eq!(
        all,
        Unsettled {
            transactions: vec![
                (f.other, "U_PAYING".into(), at(5)),
                (f.tenant, "U_NOTPAY".into(), at(10)),
                (f.tenant, "U_PAYERROR".into(), at(20)),
            ],
            refunds: vec![(f.other, "R_OTHER".into()), (f.tenant, "R_OLD".into())],
        }
    );
    assert_eq!(two, Unsettled { transactions: all.transactions[..2].to_vec(), refunds: all.refunds.clone() }, "at most two of each");
    assert_eq!(one, Unsettled { transactions: all.transactions[..1].to_vec(), refunds: all.refunds[..1].to_vec() });
    assert_eq!(early, Unsettled { transactions: all.transactions[..1].to_vec(), refunds: vec![] });
});

store_test!(unsettled_passes_over_what_a_settle_job_gave_up_on, |db| {
    // Arrange: two unpaid transactions and two processing refunds past the bound; one of
    // each had its settle job fail for good, the other's job is pending (or gone).
    use atrium_kernel::JobStore;
    let f = fixture(&db).await;
    let jobs = atrium_store::DbJobStore::new(db.clone());
    let bound = t0() + Duration::minutes(60);
    for no in ["G_GAVE_UP", "G_OPEN"] {
        f.repo.insert_transaction(expiring(f.tenant, no, TradeState::NotPay, 10), none()).await.unwrap();
    }
    let done = pay(&f, expiring(f.tenant, "G_PAID", TradeState::NotPay, 1)).await;
    requested(&f, f.tenant, &done.out_trade_no, "GR_GAVE_UP", 20, RefundStatus::Processing).await;
    requested(&f, f.tenant, &done.out_trade_no, "GR_OPEN", 21, RefundStatus::Processing).await;
    for (kind, key) in
        [("payment.settle_transaction", format!("{}:G_GAVE_UP", f.tenant)), ("payment.settle_refund", format!("{}:GR_GAVE_UP", f.tenant))]
    {
        let job = NewJob { kind: kind.into(), tenant_id: Some(f.tenant), payload: json!({}), run_at: t0(), dedupe_key: Some(key) };
        let id = jobs.enqueue(job).await.unwrap().unwrap();
        jobs.fail(id, "given up after 50 tries".into()).await.unwrap();
    }

    // Act
    let found = f.repo.unsettled(bound, 500).await.unwrap();

    // Assert
    assert_eq!(
        found,
        Unsettled {
            transactions: vec![(f.tenant, "G_OPEN".into(), t0() + Duration::minutes(10))],
            refunds: vec![(f.tenant, "GR_OPEN".into())]
        }
    );
});

store_test!(open_discrepancies_counts_the_transactions_holding_one_in_every_tenant, |db| {
    // Arrange
    let f = fixture(&db).await;
    f.repo.insert_transaction(transaction(f.tenant, "T1", 100), none()).await.unwrap();
    paid(&f, f.tenant, "T2", 100).await;
    assert_eq!(f.repo.open_discrepancies().await.unwrap(), 0);
    let why = Some("the pay platform reported 1 fen in CNY paid for a transaction of 100 fen in CNY".to_owned());
    let tx = f.repo.insert_transaction(transaction(f.tenant, "T3", 100), none()).await.unwrap();
    let other = f.repo.insert_transaction(transaction(f.other, "T3", 100), none()).await.unwrap();

    // Act
    assert!(
        f.repo.update_transaction(Transaction { discrepancy: why.clone(), ..tx.clone() }, TradeState::NotPay, None, none()).await.unwrap()
    );
    assert!(f.repo.update_transaction(Transaction { discrepancy: why.clone(), ..other }, TradeState::NotPay, None, none()).await.unwrap());
    // Closing it later keeps the discrepancy, and the count.
    assert!(
        f.repo.update_transaction(Transaction { trade_state: TradeState::Closed, ..tx }, TradeState::NotPay, None, none()).await.unwrap()
    );

    // Assert
    assert_eq!(f.repo.open_discrepancies().await.unwrap(), 2);
});

// --- whose refund a reservation is ------------------------------------------------------------

store_test!(a_reservation_naming_another_order_or_none_is_stored_as_the_refund_of_its_transactions_order, |db| {
    // Arrange: order A paid through the platform, order B unpaid, a payment of the routes.
    let f = fixture(&db).await;
    let a = order(&f, f.tenant, "A0000001", 100).await;
    let b = order(&f, f.tenant, "B0000001", 100).await;
    let paid_a = pay(&f, online(&a)).await;
    paid(&f, f.tenant, "T1", 100).await;
    let claiming = |out_trade_no: &str, out_refund_no: &str, order_id: Option<i64>| Refund {
        order_id,
        ..refund(f.tenant, out_trade_no, out_refund_no, 10)
    };

    // Act
    let mut stored = vec![];
    for r in [
        claiming(&paid_a.out_trade_no, "R_B", Some(b.id)),
        claiming(&paid_a.out_trade_no, "R_NONE", None),
        claiming("T1", "R_ROUTES", Some(a.id)),
    ] {
        match f.repo.reserve_refund(r, rule(50), none()).await.unwrap() {
            RefundReservation::Reserved(r) => stored.push(r),
            other => panic!("not reserved: {other:?}"),
        }
    }

    // Assert: what is answered and what is stored both name the transaction's order.
    let owners: Vec<(&str, &str, Option<i64>)> =
        stored.iter().map(|r| (r.out_refund_no.as_str(), r.out_trade_no.as_str(), r.order_id)).collect();
    assert_eq!(owners, [("R_B", "A0000001", Some(a.id)), ("R_NONE", "A0000001", Some(a.id)), ("R_ROUTES", "T1", None)]);
    for r in &stored {
        assert_eq!(f.repo.get_refund(f.tenant, r.out_refund_no.clone()).await.unwrap().as_ref(), Some(r));
    }
    let mut conn = db.conn().unwrap();
    let rows: Vec<(String, Option<i64>)> = payment_refunds::table
        .order(payment_refunds::id.asc())
        .select((payment_refunds::out_refund_no, payment_refunds::order_id))
        .load(&mut *conn)
        .unwrap();
    assert_eq!(rows, [("R_B".to_owned(), Some(a.id)), ("R_NONE".to_owned(), Some(a.id)), ("R_ROUTES".to_owned(), None)]);
    drop(conn);
    let shown = |id: i64| {
        let repo = f.repo.clone();
        async move { repo.refunds_of_orders(vec![id]).await.unwrap().iter().map(|r| r.out_refund_no.clone()).collect::<Vec<_>>() }
    };
    assert_eq!(shown(a.id).await, ["R_B", "R_NONE"], "order A shows both of its payment's refunds");
    assert!(shown(b.id).await.is_empty(), "order B shows none");
});

// --- one number, an order or a transaction --------------------------------------------------------

/// Whether the tenant has an order numbered `order_no`.
fn has_order(db: &Db, tenant_id: i64, order_no: &str) -> bool {
    use atrium_store::schema::orders;
    let mut conn = db.conn().unwrap();
    let n: i64 =
        orders::table.filter(orders::tenant_id.eq(tenant_id)).filter(orders::order_no.eq(order_no)).count().get_result(&mut *conn).unwrap();
    n > 0
}

store_test!(an_order_and_a_transaction_racing_for_one_number_cannot_both_take_it, |db| {
    // Arrange: 8 numbers; for each an order and a payment-routes transaction, all 16 at once.
    let f = fixture(&db).await;
    let numbers: Vec<String> = (0..8).map(|i| format!("X000000{i}")).collect();
    let start = Arc::new(tokio::sync::Barrier::new(2 * numbers.len()));
    let mut orders = vec![];
    let mut txs = vec![];
    for no in &numbers {
        let (o, audit) = new_order(f.tenant, no, 100);
        let (repo, go) = (f.orders.clone(), start.clone());
        orders.push(tokio::spawn(async move {
            go.wait().await;
            repo.insert_order(o, Effects::audited(audit)).await
        }));
        let tx = transaction(f.tenant, no, 100);
        let (repo, go, effects) = (f.repo.clone(), start.clone(), effects(f.tenant, "tx.number"));
        txs.push(tokio::spawn(async move {
            go.wait().await;
            repo.insert_transaction(tx, effects).await
        }));
    }

    // Act
    let mut answers = vec![];
    for (o, t) in orders.into_iter().zip(txs) {
        answers.push((o.await.unwrap(), t.await.unwrap()));
    }

    // Assert: exactly one of each pair took the number, and the other was refused.
    let mut won_by_transactions = 0;
    for (no, (order, tx)) in numbers.iter().zip(&answers) {
        let refused = match (order, tx) {
            (Ok(_), Err(e)) => e,
            (Err(e), Ok(_)) => {
                won_by_transactions += 1;
                e
            }
            _ => panic!("{no}: both or neither took the number: {order:?} {tx:?}"),
        };
        assert!(matches!(refused, Error::Conflict(_, m) if m.contains(no.as_str())), "{no}: {refused:?}");
        let stored_order = has_order(&db, f.tenant, no);
        let stored_tx = f.repo.get_transaction(f.tenant, no.clone()).await.unwrap();
        assert_eq!((stored_order, stored_tx.is_some()), (order.is_ok(), tx.is_ok()), "{no}: what is stored");
    }
    assert_eq!(written(&db, "tx.number"), (won_by_transactions, won_by_transactions), "the effects of the winning transactions only");
});

// --- service-provider mode ---------------------------------------------------------------------

fn sub_config(tenant_id: i64, sub_mchid: &str) -> PaymentConfig {
    PaymentConfig {
        mode: PaymentMode::SubMerchant,
        sub_mchid: Some(sub_mchid.into()),
        sub_appid: Some("wx_sub".into()),
        ..config(tenant_id)
    }
}

fn provider() -> ProviderConfig {
    ProviderConfig {
        sp_name: Some("Atrium Platform Ltd".into()),
        credentials: credentials(),
        enabled: true,
        platform_bp: 100,
        default_commission_bp: 10_000,
        ..ProviderConfig::new("1900000100".into(), "wx_sp".into(), t0())
    }
}

store_test!(the_provider_account_round_trips_once_with_its_secrets_encrypted_at_rest, |db| {
    let f = fixture(&db).await;
    assert_eq!(f.repo.get_provider().await.unwrap(), None);
    let audit = || AuditRecord::system(t0(), "pay_provider.update", "pay_provider", None);

    f.repo.put_provider(provider(), Effects::audited(audit())).await.unwrap();
    let changed = ProviderConfig { platform_bp: 0, sp_name: None, updated_at: t0() + Duration::seconds(1), ..provider() };
    f.repo.put_provider(changed.clone(), Effects::audited(audit())).await.unwrap();

    assert_eq!(f.repo.get_provider().await.unwrap(), Some(changed));
    let mut conn = db.conn().unwrap();
    let rows: Vec<(Option<String>, Option<String>)> =
        pay_provider::table.select((pay_provider::merchant_private_key_enc, pay_provider::api_v3_key_enc)).load(&mut *conn).unwrap();
    assert_eq!(rows.len(), 1, "one provider account");
    let (key, v3) = (rows[0].0.clone().unwrap(), rows[0].1.clone().unwrap());
    assert!(key.starts_with("v1:") && !key.contains("PRIVATE KEY") && !v3.contains(API_V3_KEY), "{key} {v3}");
    let audits: i64 = audit_logs::table.filter(audit_logs::target_type.eq("pay_provider")).count().get_result(&mut *conn).unwrap();
    assert_eq!(audits, 2);
});

store_test!(a_sub_merchant_configuration_round_trips_and_one_sub_merchant_has_one_tenant, |db| {
    let f = fixture(&db).await;
    f.repo.put_config(sub_config(f.tenant, "1900000201"), Effects::audited(config_audit(f.tenant)), false).await.unwrap();

    let taken = f.repo.put_config(sub_config(f.other, "1900000201"), Effects::audited(config_audit(f.other)), false).await.unwrap_err();

    assert_eq!(f.repo.get_config(f.tenant).await.unwrap(), Some(sub_config(f.tenant, "1900000201")));
    assert!(matches!(taken, Error::Conflict(Reason::Duplicate, ref m) if m.contains("1900000201")), "{taken:?}");
    assert_eq!(f.repo.get_config(f.other).await.unwrap(), None, "nothing written");
    // Two tenants without a sub-merchant are no conflict.
    f.repo.put_config(config(f.other), Effects::audited(config_audit(f.other)), false).await.unwrap();
});

store_test!(a_switch_of_mode_waits_until_every_payment_and_refund_is_final, |db| {
    let f = fixture(&db).await;
    f.repo.put_config(config(f.tenant), Effects::audited(config_audit(f.tenant)), false).await.unwrap();
    let unpaid = f.repo.insert_transaction(transaction(f.tenant, "T0000001", 100), none()).await.unwrap();
    let switch = || f.repo.put_config(sub_config(f.tenant, "1900000201"), Effects::audited(config_audit(f.tenant)), true);

    assert_eq!(f.repo.unfinished(f.tenant).await.unwrap(), 1);
    let refused = switch().await.unwrap_err();
    assert!(matches!(refused, Error::Conflict(Reason::State, ref m) if m.contains("1 payments")), "{refused:?}");
    assert_eq!(f.repo.get_config(f.tenant).await.unwrap().unwrap().mode, PaymentMode::Direct, "nothing written");

    let paid = Transaction { trade_state: TradeState::Success, success_time: Some(t0() + Duration::minutes(1)), ..unpaid };
    assert!(f.repo.update_transaction(paid.clone(), TradeState::NotPay, None, none()).await.unwrap());
    let reserved = f.repo.reserve_refund(refund(f.tenant, &paid.out_trade_no, "R1", 50), rule(50), none()).await.unwrap();
    assert!(matches!(reserved, RefundReservation::Reserved(_)), "{reserved:?}");
    assert_eq!(f.repo.unfinished(f.tenant).await.unwrap(), 1, "a processing refund is in flight");
    assert!(switch().await.is_err());

    let mut settled = f.repo.get_refund(f.tenant, "R1".into()).await.unwrap().unwrap();
    settled.status = RefundStatus::Succeeded;
    assert!(f.repo.update_refund(settled, RefundStatus::Processing, none()).await.unwrap());
    assert_eq!(f.repo.unfinished(f.tenant).await.unwrap(), 0);
    assert_eq!(f.repo.unfinished(f.other).await.unwrap(), 0);
    switch().await.unwrap();
    assert_eq!(f.repo.get_config(f.tenant).await.unwrap().unwrap().mode, PaymentMode::SubMerchant);
});

store_test!(a_transaction_keeps_the_sub_merchant_it_was_placed_for, |db| {
    let f = fixture(&db).await;
    let placed = Transaction { sub_mchid: Some("1900000201".into()), ..transaction(f.tenant, "T0000001", 100) };

    let paid = pay(&f, placed).await;

    let read = f.repo.get_transaction(f.tenant, "T0000001".into()).await.unwrap().unwrap();
    assert_eq!(read.sub_mchid.as_deref(), Some("1900000201"));
    assert_eq!(read, paid);
});

// --- share plans -------------------------------------------------------------------------------

fn share_plan(partner_id: i64, version: i64, commission_bp: Option<u32>) -> SharePlan {
    SharePlan {
        partner_id,
        version,
        commission_bp,
        platform_bp: None,
        receiver: Receiver { kind: ReceiverType::MerchantId, account: "1900000301".into(), name: Some("Harbour Agency Ltd".into()) },
        created_at: t0() + Duration::minutes(version),
    }
}

fn plan_audit(partner_id: i64) -> AuditRecord {
    AuditRecord::system(t0(), "share_plan.update", "share_plan", Some(partner_id)).owned_by(Some(partner_id), None)
}

fn plan_audits(db: &Db) -> i64 {
    let mut conn = db.conn().unwrap();
    audit_logs::table.filter(audit_logs::target_type.eq("share_plan")).count().get_result(&mut *conn).unwrap()
}

store_test!(share_plans_are_versioned_the_latest_is_current_and_a_version_is_never_written_twice, |db| {
    let f = fixture(&db).await;
    assert_eq!(f.repo.share_plan(f.partner).await.unwrap(), None);
    assert!(f.repo.partner(Party::Platform, f.partner).await.unwrap());
    assert!(f.repo.partner(Party::Partner { partner_id: f.partner }, f.partner).await.unwrap());
    assert!(!f.repo.partner(Party::Partner { partner_id: f.partner + 1 }, f.partner).await.unwrap(), "another partner's");
    assert!(!f.repo.partner(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, f.partner).await.unwrap());
    assert!(!f.repo.partner(Party::Platform, f.partner + 100).await.unwrap());

    f.repo.put_share_plan(share_plan(f.partner, 1, Some(500)), Effects::audited(plan_audit(f.partner))).await.unwrap();
    let person = SharePlan {
        platform_bp: Some(0),
        receiver: Receiver { kind: ReceiverType::PersonalOpenid, account: "o-ann".into(), name: None },
        ..share_plan(f.partner, 2, None)
    };
    f.repo.put_share_plan(person.clone(), Effects::audited(plan_audit(f.partner))).await.unwrap();
    let again = f.repo.put_share_plan(share_plan(f.partner, 2, Some(900)), Effects::audited(plan_audit(f.partner))).await.unwrap_err();
    let missing =
        f.repo.put_share_plan(share_plan(f.partner + 100, 1, Some(1)), Effects::audited(plan_audit(f.partner + 100))).await.unwrap_err();

    assert_eq!(f.repo.share_plan(f.partner).await.unwrap(), Some(person));
    assert!(matches!(again, Error::Conflict(Reason::TryAgain, _)), "{again:?}");
    assert!(matches!(missing, Error::NotFound("partner")), "{missing:?}");
    assert_eq!(plan_audits(&db), 2, "a refused write writes no audit either");
});

store_test!(concurrent_changes_of_one_plan_store_one_version_each, |db| {
    let f = Arc::new(fixture(&db).await);
    f.repo.put_share_plan(share_plan(f.partner, 1, Some(500)), Effects::audited(plan_audit(f.partner))).await.unwrap();

    let racing: Vec<_> = (0..8)
        .map(|i| {
            let f = f.clone();
            tokio::spawn(async move {
                f.repo.put_share_plan(share_plan(f.partner, 2, Some(600 + i)), Effects::audited(plan_audit(f.partner))).await
            })
        })
        .collect();
    let mut won = Vec::new();
    for r in racing {
        match r.await.unwrap() {
            Ok(p) => won.push(p),
            Err(e) => assert!(matches!(e, Error::Conflict(Reason::TryAgain, _)), "{e:?}"),
        }
    }

    assert_eq!(won.len(), 1, "one change read version 1 and wrote version 2");
    assert_eq!(f.repo.share_plan(f.partner).await.unwrap(), Some(won[0].clone()));
    assert_eq!(plan_audits(&db), 2);
});

store_test!(sub_merchant_tenants_come_with_their_partners_current_plan, |db| {
    let f = fixture(&db).await;
    let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let own = org
        .insert_tenant(Tenant::draft(None, "Own", t0()), Effects::audited(AuditRecord::system(t0(), "tenant.create", "tenant", None)))
        .await
        .unwrap();
    f.repo.put_config(sub_config(f.tenant, "1900000201"), Effects::audited(config_audit(f.tenant)), false).await.unwrap();
    f.repo.put_config(sub_config(f.other, "1900000202"), Effects::audited(config_audit(f.other)), false).await.unwrap();
    f.repo.put_config(config(own.id), Effects::audited(config_audit(own.id)), false).await.unwrap();
    f.repo.put_share_plan(share_plan(f.partner, 1, Some(500)), Effects::audited(plan_audit(f.partner))).await.unwrap();
    f.repo.put_share_plan(share_plan(f.partner, 2, Some(700)), Effects::audited(plan_audit(f.partner))).await.unwrap();

    let all = f.repo.sub_merchant_tenants(None).await.unwrap();
    let of_partner = f.repo.sub_merchant_tenants(Some(f.partner)).await.unwrap();

    let seen: Vec<_> = all.iter().map(|t| (t.tenant_id, t.sub.sub_mchid.as_str(), t.plan.as_ref().map(|p| p.version))).collect();
    assert_eq!(seen, [(f.tenant, "1900000201", Some(2)), (f.other, "1900000202", None)], "a direct tenant is not one");
    assert_eq!(of_partner.len(), 1);
    assert_eq!(of_partner[0].partner_id, Some(f.partner));
    assert_eq!(of_partner[0].sub.sub_appid.as_deref(), Some("wx_sub"));
    assert_eq!(of_partner[0].plan, Some(share_plan(f.partner, 2, Some(700))));
});

// --- shares --------------------------------------------------------------------------------------

fn sharing_of(tx: &Transaction, base: i64) -> Sharing {
    Sharing {
        payment_id: tx.id,
        tenant_id: tx.tenant_id,
        base: Money::from_fen(base),
        rates: Rates { platform_bp: 60, commission_bp: 250 },
        unfrozen_at: None,
        created_at: t0() + Duration::minutes(3),
    }
}

fn share(tx: &Transaction, partner_id: Option<i64>, role: ShareRole, fen: i64) -> Share {
    let (kind, account, name) = match role {
        ShareRole::Platform => (ReceiverType::MerchantId, "1900000100", Some("Atrium Platform Ltd".to_owned())),
        ShareRole::Partner => (ReceiverType::PersonalOpenid, "o-partner", None),
    };
    Share {
        id: 0,
        tenant_id: tx.tenant_id,
        payment_id: tx.id,
        out_trade_no: tx.out_trade_no.clone(),
        partner_id,
        role,
        receiver: Receiver { kind, account: account.into(), name },
        amount: Money::from_fen(fen),
        returned: Money::ZERO,
        withheld: Money::ZERO,
        status: ShareStatus::Pending,
        fail_reason: None,
        out_order_no: share_order_no(tx.id),
        retries: 0,
        plan_version: partner_id.map(|_| 2),
        created_at: t0() + Duration::minutes(3),
        settled_at: None,
        updated_at: t0() + Duration::minutes(3),
        discrepancy: None,
    }
}

/// A paid sub-merchant transaction of the tenant, its sharing begun with two shares.
async fn shared(f: &Fixture, tenant_id: i64, no: &str) -> (Transaction, Vec<Share>) {
    let tx = pay(f, Transaction { sub_mchid: Some("1900000201".into()), ..transaction(tenant_id, no, 10_001) }).await;
    let shares = vec![share(&tx, Some(f.partner), ShareRole::Platform, 60), share(&tx, Some(f.partner), ShareRole::Partner, 250)];
    let (_, stored) = f.repo.begin_sharing(sharing_of(&tx, 10_001), shares).await.unwrap();
    (tx, stored)
}

store_test!(a_sharing_round_trips_and_is_begun_once, |db| {
    let f = fixture(&db).await;
    let (tx, stored) = shared(&f, f.tenant, "T0000001").await;

    let again = f.repo.begin_sharing(sharing_of(&tx, 9_999), vec![share(&tx, None, ShareRole::Platform, 1)]).await.unwrap();
    let read = f.repo.sharing(tx.id).await.unwrap().unwrap();

    assert_eq!(read, again, "the second begin returns what the first stored");
    assert_eq!(read.0, sharing_of(&tx, 10_001));
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|s| s.id > 0));
    let expected: Vec<Share> = [share(&tx, Some(f.partner), ShareRole::Platform, 60), share(&tx, Some(f.partner), ShareRole::Partner, 250)]
        .into_iter()
        .zip(&stored)
        .map(|(s, got)| Share { id: got.id, ..s })
        .collect();
    assert_eq!(read.1, expected);
    assert_eq!(f.repo.sharing(tx.id + 1000).await.unwrap(), None);
});

store_test!(runners_beginning_one_sharing_at_once_store_it_once, |db| {
    let f = Arc::new(fixture(&db).await);
    let tx = pay(&f, Transaction { sub_mchid: Some("1900000201".into()), ..transaction(f.tenant, "T0000001", 10_001) }).await;

    let racing: Vec<_> = (0..8)
        .map(|i| {
            let (f, tx) = (f.clone(), tx.clone());
            tokio::spawn(async move {
                let shares = vec![share(&tx, None, ShareRole::Platform, 60 + i)];
                f.repo.begin_sharing(Sharing { created_at: t0() + Duration::seconds(i), ..sharing_of(&tx, 10_001) }, shares).await.unwrap()
            })
        })
        .collect();
    let mut seen = Vec::new();
    for r in racing {
        seen.push(r.await.unwrap());
    }

    assert!(seen.windows(2).all(|w| w[0] == w[1]), "every runner got the one stored: {seen:?}");
    let mut conn = db.conn().unwrap();
    let rows: i64 = payment_shares::table.count().get_result(&mut *conn).unwrap();
    assert_eq!(rows, 1);
});

store_test!(a_share_is_written_only_over_the_status_and_number_it_was_read_with, |db| {
    let f = fixture(&db).await;
    let (tx, stored) = shared(&f, f.tenant, "T0000001").await;
    let closed = Share { status: ShareStatus::Closed, fail_reason: Some("ACCOUNT_ABNORMAL".into()), ..stored[1].clone() };
    let retried = Share { status: ShareStatus::Pending, out_order_no: retry_order_no("PS1", closed.id, 1), retries: 1, ..closed.clone() };
    let with_job = effects(f.tenant, "share.retry");

    let first =
        f.repo.update_shares(vec![closed.clone()], vec![(ShareStatus::Pending, stored[1].out_order_no.clone())], none()).await.unwrap();
    let stale = f
        .repo
        .update_shares(vec![retried.clone()], vec![(ShareStatus::Pending, closed.out_order_no.clone())], with_job.clone())
        .await
        .unwrap();
    let retry = f
        .repo
        .update_shares(vec![retried.clone()], vec![(ShareStatus::Closed, closed.out_order_no.clone())], with_job.clone())
        .await
        .unwrap();
    let twice =
        f.repo.update_shares(vec![retried.clone()], vec![(ShareStatus::Closed, closed.out_order_no.clone())], with_job).await.unwrap();

    assert_eq!((first, stale, retry, twice), (1, 0, 1, 0));
    assert_eq!(written(&db, "share.retry"), (1, 1), "the effects of the write that took, only");
    let read = f.repo.sharing(tx.id).await.unwrap().unwrap().1;
    assert_eq!(read[1], retried);
    assert_eq!(read[0], stored[0], "the other share is untouched");
    assert_eq!(f.repo.shares_in_order(f.tenant, retried.out_order_no.clone()).await.unwrap(), vec![retried.clone()]);
    assert_eq!(f.repo.shares_in_order(f.other, retried.out_order_no.clone()).await.unwrap(), vec![], "another tenant's numbers are apart");

    f.repo.set_unfrozen(tx.id, t0() + Duration::minutes(9)).await.unwrap();
    f.repo.set_unfrozen(tx.id, t0() + Duration::minutes(10)).await.unwrap();
    assert_eq!(f.repo.sharing(tx.id).await.unwrap().unwrap().0.unfrozen_at, Some(t0() + Duration::minutes(9)), "set once");
});

store_test!(shares_are_listed_in_the_callers_scope_newest_first_with_their_filters, |db| {
    let f = fixture(&db).await;
    let (_, mine) = shared(&f, f.tenant, "T0000001").await;
    let (_, later) = shared(&f, f.tenant, "T0000002").await;
    let (_, theirs) = shared(&f, f.other, "T0000003").await;
    let closed = Share { status: ShareStatus::Closed, fail_reason: Some("NO_RELATION".into()), ..later[0].clone() };
    f.repo.update_shares(vec![closed.clone()], vec![(ShareStatus::Pending, later[0].out_order_no.clone())], none()).await.unwrap();
    let ids = |page: atrium_kernel::Page<Share>| page.items.iter().map(|s| s.id).collect::<Vec<_>>();
    let all = ShareQuery::default();
    let tenant = Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) };

    let platform = f.repo.list_shares(Party::Platform, all.clone()).await.unwrap();
    let partner = f.repo.list_shares(Party::Partner { partner_id: f.partner }, all.clone()).await.unwrap();
    let own = f.repo.list_shares(tenant, all.clone()).await.unwrap();
    let peeking = f.repo.list_shares(tenant, ShareQuery { tenant_id: Some(f.other), ..all.clone() }).await.unwrap();
    let by_status = f.repo.list_shares(Party::Platform, ShareQuery { status: Some(ShareStatus::Closed), ..all.clone() }).await.unwrap();
    let by_no = f.repo.list_shares(Party::Platform, ShareQuery { out_trade_no: Some("T0000001".into()), ..all.clone() }).await.unwrap();
    let by_partner = f.repo.list_shares(Party::Platform, ShareQuery { partner_id: Some(f.partner), ..all.clone() }).await.unwrap();
    let small = ShareQuery { page: atrium_kernel::PageRequest::new(Some(2), Some(2)).unwrap(), ..all.clone() };
    let second_page = f.repo.list_shares(Party::Platform, small).await.unwrap();

    assert_eq!(platform.total, 6);
    assert_eq!(ids(platform), vec![theirs[1].id, theirs[0].id, later[1].id, later[0].id, mine[1].id, mine[0].id]);
    assert_eq!(ids(partner), vec![later[1].id, later[0].id, mine[1].id, mine[0].id]);
    assert_eq!(ids(own).len(), 4);
    assert!(peeking.items.is_empty(), "a tenant never sees another's shares");
    assert_eq!(by_status.items, vec![closed]);
    assert_eq!(ids(by_no), vec![mine[1].id, mine[0].id]);
    assert_eq!(ids(by_partner).len(), 4);
    assert_eq!((ids(second_page), 6), (vec![later[1].id, later[0].id], 6));

    assert_eq!(f.repo.get_share(Party::Partner { partner_id: f.partner }, theirs[0].id).await.unwrap(), None);
    assert_eq!(f.repo.get_share(tenant, mine[0].id).await.unwrap(), Some(mine[0].clone()));
    assert_eq!(f.repo.get_share(Party::Platform, theirs[0].id).await.unwrap(), Some(theirs[0].clone()));
});

store_test!(a_sharing_is_not_begun_while_a_refund_is_processing_nor_on_a_base_its_refunds_changed, |db| {
    let f = fixture(&db).await;
    let tx = pay(&f, Transaction { sub_mchid: Some("1900000201".into()), ..transaction(f.tenant, "T0000001", 10_000) }).await;
    let reserve = |r: Refund| f.repo.reserve_refund(r, rule(50), none());
    reserve(refund(f.tenant, "T0000001", "R1", 4_000)).await.unwrap();
    let shares = || vec![share(&tx, None, ShareRole::Platform, 60)];

    let processing = f.repo.begin_sharing(sharing_of(&tx, 10_000), shares()).await.unwrap_err();
    let stored = f.repo.get_refund(f.tenant, "R1".into()).await.unwrap().unwrap();
    let settled = Refund { status: RefundStatus::Succeeded, succeeded_at: Some(t0()), ..stored };
    assert!(f.repo.update_refund(settled, RefundStatus::Processing, none()).await.unwrap());
    let stale = f.repo.begin_sharing(sharing_of(&tx, 10_000), shares()).await.unwrap_err();
    let begun = f.repo.begin_sharing(sharing_of(&tx, 6_000), shares()).await.unwrap();

    assert!(matches!(processing, Error::Conflict(Reason::TryAgain, _)), "{processing:?}");
    assert!(matches!(stale, Error::Conflict(Reason::TryAgain, _)), "{stale:?}");
    assert_eq!(begun.0.base, Money::from_fen(6_000));
    assert_eq!(begun.1.len(), 1);
});

// --- Returns before refunds ---------------------------------------------------------------

/// A paid sub-merchant transaction of 10,000 fen shared to two merchants (60 and 250 fen),
/// both succeeded.
async fn shared_to_merchants(f: &Fixture, no: &str) -> (Transaction, Vec<Share>) {
    let tx = pay(f, Transaction { sub_mchid: Some("1900000201".into()), ..transaction(f.tenant, no, 10_000) }).await;
    let merchant = |s: Share| Share {
        receiver: Receiver { kind: ReceiverType::MerchantId, account: "1900000109".into(), name: Some("P".into()) },
        ..s
    };
    let shares = vec![share(&tx, Some(f.partner), ShareRole::Platform, 60), merchant(share(&tx, Some(f.partner), ShareRole::Partner, 250))];
    let (_, stored) = f.repo.begin_sharing(sharing_of(&tx, 10_000), shares).await.unwrap();
    let succeeded: Vec<Share> =
        stored.iter().map(|s| Share { status: ShareStatus::Succeeded, settled_at: Some(t0()), ..s.clone() }).collect();
    let read = stored.iter().map(|s| (s.status, s.out_order_no.clone())).collect();
    assert_eq!(f.repo.update_shares(succeeded.clone(), read, none()).await.unwrap(), 2);
    (tx, succeeded)
}

store_test!(a_refund_of_a_shared_payment_is_reserved_with_its_returns_and_waits_while_a_share_is_requested, |db| {
    let f = fixture(&db).await;
    let (tx, pending) = shared(&f, f.tenant, "T0000001").await;
    let reserve = |r: Refund| f.repo.reserve_refund(r, rule(50), none());

    let waiting = reserve(refund(f.tenant, "T0000001", "R1", 5_000)).await.unwrap();
    assert_eq!(waiting, RefundReservation::Refused(RefundRefusal::BeingShared));
    // Its partner was paid to a person: the platform takes nothing back from one.
    let succeeded: Vec<Share> = pending.iter().map(|s| Share { status: ShareStatus::Succeeded, ..s.clone() }).collect();
    f.repo.update_shares(succeeded, pending.iter().map(|s| (s.status, s.out_order_no.clone())).collect(), none()).await.unwrap();
    let person = reserve(refund(f.tenant, "T0000001", "R1", 5_000)).await.unwrap();
    assert_eq!(person, RefundReservation::Refused(RefundRefusal::NotReturnable { share_id: pending[1].id }));
    assert_eq!(f.repo.refunds_of(f.tenant, tx.out_trade_no.clone()).await.unwrap(), vec![], "nothing reserved");

    let (_, shares) = shared_to_merchants(&f, "T0000002").await;
    let reserved = reserve(refund(f.tenant, "T0000002", "R2", 3_333)).await.unwrap();
    assert!(matches!(reserved, RefundReservation::Reserved(_)), "{reserved:?}");
    let returns = f.repo.returns_of(f.tenant, "R2".into()).await.unwrap();
    let got: Vec<_> = returns.iter().map(|r| (r.share_id, r.part.fen(), r.amount.fen(), r.status, r.out_return_no.clone())).collect();
    assert_eq!(
        got,
        vec![
            (shares[0].id, 19, 19, ReturnStatus::Processing, format!("PR{}-1", shares[0].id)),
            (shares[1].id, 83, 83, ReturnStatus::Processing, format!("PR{}-1", shares[1].id)),
        ]
    );
    assert!(returns.iter().all(|r| r.id > 0 && r.payment_id == shares[0].payment_id && r.tenant_id == f.tenant));
    assert_eq!(f.repo.returns_of(f.other, "R2".into()).await.unwrap(), vec![], "another tenant's numbers are apart");
});

store_test!(a_return_settles_once_adding_to_its_share_which_is_returned_once_it_holds_nothing, |db| {
    let f = fixture(&db).await;
    let (tx, shares) = shared_to_merchants(&f, "T0000001").await;
    f.repo.reserve_refund(refund(f.tenant, "T0000001", "R1", 10_000), rule(50), none()).await.unwrap();
    let returns = f.repo.returns_of(f.tenant, "R1".into()).await.unwrap();
    let done = |r: &ShareReturn| ShareReturn {
        status: ReturnStatus::Succeeded,
        return_id: Some("RT1".into()),
        settled_at: Some(t0() + Duration::minutes(9)),
        updated_at: t0() + Duration::minutes(9),
        ..r.clone()
    };
    let failed = ShareReturn { status: ReturnStatus::Failed, fail_reason: Some("BALANCE_NOT_ENOUGH".into()), ..returns[1].clone() };

    let first = f.repo.settle_return(done(&returns[0]), ReturnStatus::Processing).await.unwrap();
    let twice = f.repo.settle_return(done(&returns[0]), ReturnStatus::Processing).await.unwrap();
    let other = f.repo.settle_return(failed.clone(), ReturnStatus::Processing).await.unwrap();

    assert_eq!((first, twice, other), (true, false, true));
    let now = f.repo.sharing(tx.id).await.unwrap().unwrap().1;
    assert_eq!((now[0].returned.fen(), now[0].status, now[0].settled_at), (60, ShareStatus::Returned, Some(t0() + Duration::minutes(9))));
    assert_eq!((now[1].returned.fen(), now[1].status), (0, ShareStatus::Succeeded), "a failed return gives nothing back");
    assert_eq!(f.repo.returns_of(f.tenant, "R1".into()).await.unwrap(), vec![done(&returns[0]), failed]);
    assert_eq!(now[0].id, shares[0].id);
});

store_test!(a_closed_share_is_retried_less_what_refunds_took_and_not_while_a_refund_is_processing, |db| {
    let f = fixture(&db).await;
    let (tx, shares) = shared_to_merchants(&f, "T0000001").await;
    let closed = Share { status: ShareStatus::Closed, fail_reason: Some("ACCOUNT_ABNORMAL".into()), ..shares[1].clone() };
    f.repo.update_shares(vec![closed.clone()], vec![(ShareStatus::Succeeded, closed.out_order_no.clone())], none()).await.unwrap();
    f.repo.reserve_refund(refund(f.tenant, "T0000001", "R1", 4_000), rule(50), none()).await.unwrap();
    let no = retry_order_no("PS1", closed.id, 1);
    let at = t0() + Duration::minutes(20);

    let processing = f.repo.retry_share(closed.clone(), no.clone(), at, effects(f.tenant, "share.retry")).await.unwrap_err();
    let stored = f.repo.get_refund(f.tenant, "R1".into()).await.unwrap().unwrap();
    let settled = Refund { status: RefundStatus::Succeeded, succeeded_at: Some(t0()), ..stored };
    assert!(f.repo.update_refund(settled, RefundStatus::Processing, none()).await.unwrap());
    let retried = f.repo.retry_share(closed.clone(), no.clone(), at, effects(f.tenant, "share.retry")).await.unwrap();
    let stale = f.repo.retry_share(closed.clone(), no.clone(), at, effects(f.tenant, "share.retry")).await.unwrap();

    assert!(matches!(processing, Error::Conflict(Reason::TryAgain, _)), "{processing:?}");
    let retried = retried.expect("written");
    // floor(250 × 4,000 / 10,000) = 100 fen of it were refunded while it was closed.
    assert_eq!((retried.status, retried.withheld.fen(), retried.to_pay().fen(), retried.retries), (ShareStatus::Pending, 100, 150, 1));
    assert_eq!(stale, None);
    assert_eq!(written(&db, "share.retry"), (1, 1));
    assert_eq!(f.repo.sharing(tx.id).await.unwrap().unwrap().1[1], retried);
});

store_test!(racing_refunds_of_a_shared_payment_take_each_share_back_whole_never_more, |db| {
    let f = Arc::new(fixture(&db).await);
    let (tx, shares) = shared_to_merchants(&f, "T0000001").await;

    // Eight refunds of 1,250 fen at once: together the whole base, so together every share,
    // whichever is reserved last; a ninth finds nothing left.
    let racing: Vec<_> = (0..9)
        .map(|i| {
            let f = f.clone();
            tokio::spawn(async move {
                f.repo.reserve_refund(refund(f.tenant, "T0000001", &format!("R{i}"), 1_250), rule(50), none()).await.unwrap()
            })
        })
        .collect();
    let mut reserved = 0;
    for r in racing {
        match r.await.unwrap() {
            RefundReservation::Reserved(_) => reserved += 1,
            RefundReservation::Refused(RefundRefusal::ExceedsPaid { .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    assert_eq!(reserved, 8);
    let refunded: i64 = f.repo.refunds_of(f.tenant, tx.out_trade_no.clone()).await.unwrap().iter().map(|r| r.amount.fen()).sum();
    assert_eq!(refunded, 10_000);
    let mut conn = db.conn().unwrap();
    use atrium_store::schema::payment_share_returns;
    for share in &shares {
        let rows: Vec<(i64, i64)> = payment_share_returns::table
            .filter(payment_share_returns::share_id.eq(share.id))
            .select((payment_share_returns::part, payment_share_returns::amount))
            .load(&mut *conn)
            .unwrap();
        let parts: i64 = rows.iter().map(|r| r.0).sum();
        let asked: i64 = rows.iter().map(|r| r.1).sum();
        assert_eq!((parts, asked), (share.amount.fen(), share.amount.fen()), "share {}: {rows:?}", share.id);
    }
});

// --- earnings ------------------------------------------------------------------------------------

/// Every statement of the fixture's earners from the sums kept by day equals the one summed
/// payment by payment from the ledger.
async fn same_as_the_ledger(db: &Db, f: &Fixture, from: chrono::NaiveDate, to: chrono::NaiveDate) {
    let start = atrium_kernel::china_day(from).0;
    let end = atrium_kernel::china_day(to).1;
    for earner in [Earner::Platform, Earner::Partner(f.partner), Earner::Partner(f.partner + 1)] {
        for group in [EarningsGroup::Day, EarningsGroup::Tenant] {
            let mut kept = f.repo.earnings(earner, from, to, group).await.unwrap();
            let mut summed = atrium_store::testing::earnings_from_ledger(db, earner, start, end, group).unwrap();
            kept.sort_by_key(|r| r.key);
            summed.sort_by_key(|r| r.key);
            assert_eq!(kept, summed, "{earner:?} by {group:?}");
        }
    }
}

/// Stores `tx` and records it paid at `at`.
async fn pay_at(f: &Fixture, tx: Transaction, at: Timestamp) -> Transaction {
    let tx = f.repo.insert_transaction(tx, none()).await.unwrap();
    let done = Transaction {
        trade_state: TradeState::Success,
        transaction_id: Some(format!("4200{}", tx.out_trade_no)),
        payer_total: Some(tx.amount),
        success_time: Some(at),
        updated_at: at,
        ..tx
    };
    assert!(f.repo.update_transaction(done.clone(), TradeState::NotPay, None, none()).await.unwrap());
    done
}

/// `tx`'s sharing begun on `base` with a platform share and a partner's commission of `partner`,
/// moved to `statuses` (platform's, partner's).
async fn shared_as(
    f: &Fixture,
    tx: &Transaction,
    partner: i64,
    base: i64,
    fen: (i64, i64),
    statuses: (ShareStatus, ShareStatus),
) -> Vec<Share> {
    let shares = vec![share(tx, Some(partner), ShareRole::Platform, fen.0), share(tx, Some(partner), ShareRole::Partner, fen.1)];
    let (_, stored) = f.repo.begin_sharing(sharing_of(tx, base), shares).await.unwrap();
    let moved: Vec<Share> = stored.iter().zip([statuses.0, statuses.1]).map(|(s, status)| Share { status, ..s.clone() }).collect();
    let read = stored.iter().map(|s| (s.status, s.out_order_no.clone())).collect();
    f.repo.update_shares(moved.clone(), read, none()).await.unwrap();
    moved
}

fn sums(paid: i64, refunded: i64, shared: i64, returned: i64, pending: i64, failed: i64) -> EarningsSums {
    let fen = Money::from_fen;
    EarningsSums {
        paid: fen(paid),
        refunded: fen(refunded),
        shared: fen(shared),
        returned: fen(returned),
        pending: fen(pending),
        failed: fen(failed),
    }
}

store_test!(earnings_sum_the_paid_sub_merchant_payments_and_the_earners_shares_by_china_day_and_tenant, |db| {
    use ShareStatus::*;
    let f = fixture(&db).await;
    let sub = |t: Transaction| Transaction { sub_mchid: Some("1900000201".into()), ..t };
    // t0 is 17:00 China Standard Time on 1 May; 16:30 UTC is 00:30 on 2 May there.
    let may_1 = t0() + Duration::minutes(1);
    let may_2 = Utc.with_ymd_and_hms(2026, 5, 1, 16, 30, 0).single().expect("valid");

    // 10,001 fen, 3,333 refunded before sharing, shared on 6,668: 40 and 166; 50 of the
    // commission given back since.
    let big = pay_at(&f, sub(transaction(f.tenant, "T_BIG", 10_001)), may_1).await;
    let r = f.repo.reserve_refund(refund(f.tenant, "T_BIG", "R_BIG", 3_333), rule(5), none()).await.unwrap();
    let r = match r {
        RefundReservation::Reserved(r) => r,
        other => panic!("{other:?}"),
    };
    let done = Refund { status: RefundStatus::Succeeded, succeeded_at: Some(may_1), ..r };
    assert!(f.repo.update_refund(done, RefundStatus::Processing, none()).await.unwrap());
    let big_shares = shared_as(&f, &big, f.partner, 6_668, (40, 166), (Succeeded, Succeeded)).await;
    diesel::update(payment_shares::table.find(big_shares[1].id))
        .set(payment_shares::returned.eq(50))
        .execute(&mut *db.conn().unwrap())
        .unwrap();
    // Too small to share: paid, nothing shared.
    pay_at(&f, sub(transaction(f.tenant, "T_SMALL", 50)), may_1).await;
    // Paid after midnight in China: the next day's. The platform's share closed, the
    // commission still processing.
    let late = pay_at(&f, sub(transaction(f.tenant, "T_LATE", 333)), may_2).await;
    shared_as(&f, &late, f.partner, 333, (1, 8), (Closed, Processing)).await;
    // Another partner's tenant: the platform's, never this partner's.
    let other = pay_at(&f, sub(transaction(f.other, "T_OTHER", 10_001)), may_1).await;
    shared_as(&f, &other, f.partner + 1, 10_001, (60, 250), (Succeeded, Succeeded)).await;
    // Not counted: a direct payment, an unpaid one, one paid with a discrepancy.
    pay_at(&f, transaction(f.tenant, "T_DIRECT", 999), may_1).await;
    f.repo.insert_transaction(sub(transaction(f.tenant, "T_UNPAID", 777)), none()).await.unwrap();
    let odd = f.repo.insert_transaction(sub(transaction(f.tenant, "T_ODD", 555)), none()).await.unwrap();
    let odd = Transaction { discrepancy: Some("1 fen reported for 555".into()), updated_at: may_1, ..odd };
    assert!(f.repo.update_transaction(odd, TradeState::NotPay, None, none()).await.unwrap());

    let day = |d| EarningsKey::Day(chrono::NaiveDate::from_ymd_opt(2026, 5, d).unwrap());
    let date = |m, d| chrono::NaiveDate::from_ymd_opt(2026, m, d).unwrap();
    let (from, to) = (date(4, 30), date(5, 3));
    let mut by_day = f.repo.earnings(Earner::Partner(f.partner), from, to, EarningsGroup::Day).await.unwrap();
    by_day.sort_by_key(|r| r.key);
    assert_eq!(
        by_day,
        [
            EarningsRow { key: day(1), sums: sums(10_051, 3_333, 166, 50, 0, 0) },
            EarningsRow { key: day(2), sums: sums(333, 0, 0, 0, 8, 0) },
        ]
    );
    let by_tenant = f.repo.earnings(Earner::Partner(f.partner), from, to, EarningsGroup::Tenant).await.unwrap();
    assert_eq!(by_tenant, [EarningsRow { key: EarningsKey::Tenant(f.tenant), sums: sums(10_384, 3_333, 166, 50, 8, 0) }]);

    let mut platform = f.repo.earnings(Earner::Platform, from, to, EarningsGroup::Tenant).await.unwrap();
    platform.sort_by_key(|r| r.key);
    assert_eq!(
        platform,
        [
            EarningsRow { key: EarningsKey::Tenant(f.tenant), sums: sums(10_384, 3_333, 40, 0, 0, 1) },
            EarningsRow { key: EarningsKey::Tenant(f.other), sums: sums(10_001, 0, 60, 0, 0, 0) },
        ]
    );

    // Days are China Standard Time: 2 May there starts at 16:00 UTC on 1 May.
    let keys = |rows: Vec<EarningsRow>| rows.into_iter().map(|r| r.key).collect::<Vec<_>>();
    assert_eq!(keys(f.repo.earnings(Earner::Partner(f.partner), from, date(5, 1), EarningsGroup::Day).await.unwrap()), [day(1)]);
    assert_eq!(keys(f.repo.earnings(Earner::Partner(f.partner), date(5, 2), to, EarningsGroup::Day).await.unwrap()), [day(2)]);
    let theirs = f.repo.earnings(Earner::Partner(f.partner + 1), from, to, EarningsGroup::Day).await.unwrap();
    assert_eq!(
        theirs,
        [EarningsRow { key: day(1), sums: sums(10_001, 0, 250, 0, 0, 0) }],
        "the other partner's tenant and commission only"
    );
    same_as_the_ledger(&db, &f, from, to).await;

    // Later changes move the sums kept by day with them: the processing commission succeeds,
    // the closed platform share is retried, the other tenant's payment is refunded in part,
    // and a payment is deleted.
    let late_shares = f.repo.sharing(late.id).await.unwrap().unwrap().1;
    let (closed, processing) = (late_shares[0].clone(), late_shares[1].clone());
    f.repo
        .update_shares(vec![Share { status: Succeeded, ..processing.clone() }], vec![(Processing, processing.out_order_no.clone())], none())
        .await
        .unwrap();
    f.repo.retry_share(closed, "PS-r1".into(), t0(), none()).await.unwrap().unwrap();
    let r = match f.repo.reserve_refund(refund(f.other, "T_OTHER", "R_OTHER", 30), rule(5), none()).await.unwrap() {
        RefundReservation::Reserved(r) => r,
        other => panic!("{other:?}"),
    };
    assert!(f.repo.update_refund(Refund { status: RefundStatus::Succeeded, ..r }, RefundStatus::Processing, none()).await.unwrap());
    diesel::delete(payment_transactions::table.filter(payment_transactions::out_trade_no.eq("T_SMALL")))
        .execute(&mut *db.conn().unwrap())
        .unwrap();
    let mut by_day = f.repo.earnings(Earner::Partner(f.partner), from, to, EarningsGroup::Day).await.unwrap();
    by_day.sort_by_key(|r| r.key);
    assert_eq!(
        by_day,
        [
            EarningsRow { key: day(1), sums: sums(10_001, 3_333, 166, 50, 0, 0) },
            EarningsRow { key: day(2), sums: sums(333, 0, 8, 0, 0, 0) },
        ]
    );
    same_as_the_ledger(&db, &f, from, to).await;

    // The other tenant moves to this partner, and back: its payments follow it; the
    // commission paid to the other partner is not this one's.
    let move_to = |partner: i64| {
        diesel::update(tenants::table.find(f.other)).set(tenants::partner_id.eq(Some(partner))).execute(&mut *db.conn().unwrap()).unwrap()
    };
    move_to(f.partner);
    let theirs_now = f.repo.earnings(Earner::Partner(f.partner), date(5, 1), date(5, 1), EarningsGroup::Day).await.unwrap();
    assert_eq!(theirs_now, [EarningsRow { key: day(1), sums: sums(20_002, 3_363, 166, 50, 0, 0) }]);
    same_as_the_ledger(&db, &f, from, to).await;
    move_to(f.partner + 1);
    same_as_the_ledger(&db, &f, from, to).await;
});

store_test!(a_share_discrepancy_is_kept_once_over_the_share_as_read_and_is_found_counted_and_blocks_a_retry, |db| {
    let f = fixture(&db).await;
    let (tx, stored) = shared(&f, f.tenant, "T0000001").await;
    let (_, untouched) = shared(&f, f.tenant, "T0000002").await;
    let sent: Vec<Share> =
        stored.iter().map(|s| Share { status: ShareStatus::Succeeded, updated_at: t0() + Duration::minutes(5), ..s.clone() }).collect();
    f.repo.update_shares(sent.clone(), stored.iter().map(|s| (s.status, s.out_order_no.clone())).collect(), none()).await.unwrap();
    let day = (t0() - Duration::hours(1), t0() + Duration::hours(1));

    // The day's sent shares, each payment's all; a pending one was never sent.
    let changed = f.repo.shares_changed(f.tenant, day.0, day.1, 0, 10).await.unwrap();
    assert_eq!(changed, sent, "{untouched:?} is pending: not sent, not checked");
    assert_eq!(f.repo.shares_changed(f.tenant, day.0, day.1, tx.id, 10).await.unwrap(), [], "the page after it");
    assert_eq!(f.repo.shares_changed(f.other, day.0, day.1, 0, 10).await.unwrap(), []);
    assert_eq!(f.repo.shares_changed(f.tenant, day.1, day.1 + Duration::days(1), 0, 10).await.unwrap(), [], "another day");
    let open_before = f.repo.open_discrepancies().await.unwrap();

    let found = |share: &Share, why: &str| NewDiscrepancy::of_share(share, None, why, t0());
    let with = |found: &NewDiscrepancy| Effects { jobs: vec![], ..effects(f.tenant, "share.discrepancy") }.with_event(found.event(None));
    let stale_found = found(&stored[1], "read before it succeeded");
    let stale = f.repo.share_discrepancy(stored[1].clone(), stale_found.clone(), with(&stale_found)).await.unwrap();
    let why = "closed (ACCOUNT_ABNORMAL) on the platform";
    let kept = f.repo.share_discrepancy(sent[1].clone(), found(&sent[1], why), with(&found(&sent[1], why))).await.unwrap();
    let again_found = found(&sent[1], "found again");
    let again = f.repo.share_discrepancy(sent[1].clone(), again_found.clone(), with(&again_found)).await.unwrap();
    let reported: i64 = {
        let mut conn = db.conn().unwrap();
        events::table.filter(events::kind.eq("payment.discrepancy")).count().get_result(&mut *conn).unwrap()
    };
    assert_eq!(reported, 1, "one payment.discrepancy event, with the one recorded");

    assert_eq!((stale, kept, again), (false, true, false));
    assert_eq!(written(&db, "share.discrepancy").1, 1, "audited once");
    let to_resolve = f.repo.list_discrepancies(Party::Platform, DiscrepancyQuery::default()).await.unwrap();
    assert_eq!(to_resolve.items.len(), 1, "recorded once, to be resolved: {to_resolve:?}");
    let d = &to_resolve.items[0];
    assert_eq!(
        (d.kind, d.status, d.share_id, d.payment_id, d.description.as_str()),
        (DiscrepancyKind::Share, DiscrepancyStatus::Open, Some(sent[1].id), tx.id, why)
    );
    let others =
        f.repo.list_discrepancies(Party::Tenant { tenant_id: f.other, partner_id: None }, DiscrepancyQuery::default()).await.unwrap();
    assert_eq!(others.items, [], "another tenant sees none of it");
    let read = f.repo.get_share(Party::Platform, sent[1].id).await.unwrap().unwrap();
    assert_eq!(read.discrepancy.as_deref(), Some("closed (ACCOUNT_ABNORMAL) on the platform"));
    assert_eq!(f.repo.open_discrepancies().await.unwrap(), open_before + 1);
    let held = f.repo.list_shares(Party::Platform, ShareQuery { discrepancy: Some(true), ..Default::default() }).await.unwrap();
    let clean = f.repo.list_shares(Party::Platform, ShareQuery { discrepancy: Some(false), ..Default::default() }).await.unwrap();
    assert_eq!(held.items.iter().map(|s| s.id).collect::<Vec<_>>(), [sent[1].id]);
    assert_eq!(clean.total, 3);

    // A closed share holding a discrepancy is never retried, even by a caller that missed it.
    let closed = Share { status: ShareStatus::Closed, ..read.clone() };
    diesel::update(payment_shares::table.find(read.id)).set(payment_shares::status.eq("closed")).execute(&mut *db.conn().unwrap()).unwrap();
    let retried = f.repo.retry_share(Share { discrepancy: None, ..closed }, "PS1-r1".into(), t0(), none()).await.unwrap();
    assert_eq!(retried, None);
});

store_test!(payments_recorded_at_once_are_each_counted_in_the_days_sums, |db| {
    let f = Arc::new(fixture(&db).await);
    let at = t0() + Duration::minutes(1);
    let paying: Vec<_> = (0..16)
        .map(|i| {
            let f = f.clone();
            tokio::spawn(async move {
                let tx =
                    Transaction { sub_mchid: Some("1900000201".into()), ..transaction(f.tenant, &format!("T_AT_ONCE_{i:02}"), 100 + i) };
                pay_at(&f, tx, at).await
            })
        })
        .collect();
    for p in paying {
        p.await.unwrap();
    }
    let day = chrono::NaiveDate::from_ymd_opt(2026, 5, 1).unwrap();
    let kept = f.repo.earnings(Earner::Platform, day, day, EarningsGroup::Day).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].sums.paid, Money::from_fen((0..16).map(|i| 100 + i).sum()), "every payment counted once");
    same_as_the_ledger(&db, &f, day, day).await;
});

/// A transaction of `fen` reported paid at `reported`: held unpaid with its discrepancy
/// recorded, as the ledger records one.
async fn misreported(f: &Fixture, no: &str, fen: i64, reported: i64) -> Transaction {
    let tx = f.repo.insert_transaction(transaction(f.tenant, no, fen), none()).await.unwrap();
    let why = format!("the pay platform reported {reported} fen paid for {fen}");
    let marked = Transaction { discrepancy: Some(why.clone()), transaction_id: Some(format!("42000{no}")), ..tx.clone() };
    let found = NewDiscrepancy::of_payment(&marked, &why);
    assert!(f.repo.update_transaction(marked.clone(), tx.trade_state, Some(found.clone()), none()).await.unwrap());
    // Found again (a second notification): still one to resolve.
    assert!(f.repo.update_transaction(marked.clone(), tx.trade_state, Some(found), none()).await.unwrap());
    marked
}

/// Resolving `d` of `tx` (reported at `reported`) with a refund of the excess under `no`.
fn refunding(d: &Discrepancy, tx: &Transaction, reported: i64, no: &str, tag: &str) -> Resolution {
    let paid = Transaction {
        amount: Money::from_fen(reported),
        trade_state: TradeState::Success,
        discrepancy: None,
        success_time: Some(t0()),
        updated_at: t0() + Duration::minutes(1),
        ..tx.clone()
    };
    let excess = refund(tx.tenant_id, &tx.out_trade_no, no, reported - tx.amount.fen());
    Resolution {
        discrepancy: Discrepancy {
            status: DiscrepancyStatus::Resolved,
            action: Some(ResolveAction::RefundExcess),
            note: Some("payer charged twice the fee".into()),
            resolved_by: Some(1),
            out_refund_no: Some(no.into()),
            resolved_at: Some(t0() + Duration::minutes(1)),
            ..d.clone()
        },
        payment: Some((paid, tx.trade_state)),
        refund: Some(excess),
        share: None,
        ret: None,
        effects: effects(tx.tenant_id, tag),
    }
}

store_test!(a_discrepancy_is_resolved_once_with_all_it_changes_or_nothing, |db| {
    let f = fixture(&db).await;
    let tx = misreported(&f, "T_EXCESS_1", 1_000, 1_200).await;
    let open = f.repo.list_discrepancies(Party::Platform, DiscrepancyQuery::default()).await.unwrap().items;
    assert_eq!(open.len(), 1, "one to resolve however often it was found: {open:?}");
    let d = open[0].clone();
    assert_eq!((d.kind, d.status, d.payment_id, d.share_id), (DiscrepancyKind::Amount, DiscrepancyStatus::Open, tx.id, None));
    assert_eq!(f.repo.discrepancies_of(tx.id).await.unwrap(), std::slice::from_ref(&d));
    let tenant = Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) };
    assert_eq!(f.repo.get_discrepancy(tenant, d.id).await.unwrap(), Some(d.clone()));
    assert_eq!(f.repo.get_discrepancy(Party::Partner { partner_id: f.partner + 1 }, d.id).await.unwrap(), None, "not another partner's");

    // Read in another state (a report came in meanwhile): nothing at all is written.
    let mut stale = refunding(&d, &tx, 1_200, "EX-STALE", "stale");
    stale.payment.as_mut().unwrap().1 = TradeState::UserPaying;
    assert!(!f.repo.resolve_discrepancy(stale).await.unwrap());
    assert_eq!(written(&db, "stale"), (0, 0));
    assert_eq!(f.repo.get_refund(f.tenant, "EX-STALE".into()).await.unwrap(), None);
    assert_eq!(f.repo.get_discrepancy(Party::Platform, d.id).await.unwrap().unwrap().status, DiscrepancyStatus::Open);

    assert!(f.repo.resolve_discrepancy(refunding(&d, &tx, 1_200, "EX-1", "resolved")).await.unwrap());
    assert!(!f.repo.resolve_discrepancy(refunding(&d, &tx, 1_200, "EX-2", "twice")).await.unwrap(), "resolved once");
    assert_eq!((written(&db, "resolved"), written(&db, "twice")), ((1, 1), (0, 0)));
    let now = f.repo.get_transaction(f.tenant, tx.out_trade_no.clone()).await.unwrap().unwrap();
    assert_eq!((now.amount.fen(), now.trade_state, now.discrepancy.as_deref()), (1_200, TradeState::Success, None));
    assert!(now.is_paid());
    let refunds = f.repo.refunds_of(f.tenant, tx.out_trade_no.clone()).await.unwrap();
    assert_eq!(
        refunds.iter().map(|r| (r.out_refund_no.as_str(), r.amount.fen(), r.status)).collect::<Vec<_>>(),
        [("EX-1", 200, RefundStatus::Processing)]
    );
    let resolved = f.repo.get_discrepancy(Party::Platform, d.id).await.unwrap().unwrap();
    assert_eq!(
        (resolved.status, resolved.action, resolved.out_refund_no.as_deref(), resolved.resolved_by),
        (DiscrepancyStatus::Resolved, Some(ResolveAction::RefundExcess), Some("EX-1"), Some(1))
    );
    let query = DiscrepancyQuery { status: Some(DiscrepancyStatus::Open), ..Default::default() };
    assert_eq!(f.repo.list_discrepancies(Party::Platform, query).await.unwrap().items, []);
    assert_eq!(f.repo.open_discrepancies().await.unwrap(), 0);
});

store_test!(resolutions_racing_resolve_a_discrepancy_once_and_refund_once, |db| {
    let f = Arc::new(fixture(&db).await);
    let tx = misreported(&f, "T_EXCESS_RACE", 5_000, 5_500).await;
    let d = f.repo.discrepancies_of(tx.id).await.unwrap().remove(0);
    let racing: Vec<_> = (0..12)
        .map(|i| {
            let (f, d, tx) = (f.clone(), d.clone(), tx.clone());
            tokio::spawn(async move { f.repo.resolve_discrepancy(refunding(&d, &tx, 5_500, &format!("EX-RACE-{i}"), "raced")).await })
        })
        .collect();
    let mut won = 0;
    for r in racing {
        won += usize::from(r.await.unwrap().unwrap());
    }
    assert_eq!(won, 1, "one resolution wins");
    assert_eq!(written(&db, "raced"), (1, 1), "its effects once");
    let refunds = f.repo.refunds_of(f.tenant, tx.out_trade_no.clone()).await.unwrap();
    assert_eq!(refunds.len(), 1, "one refund of the excess: {refunds:?}");
    assert_eq!(refunds[0].amount.fen(), 500);
});
