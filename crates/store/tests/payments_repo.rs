//! Contract tests of the payment repository, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{AuditRecord, Error, Money, Party, Timestamp};
use atrium_org::*;
use atrium_payments::*;
use atrium_store::schema::{audit_logs, payment_configs, payment_refunds};
use atrium_store::{Db, FieldCipher, OrgStore, PaymentStore, store_test};
use chrono::{Duration, TimeZone, Utc};
use diesel::prelude::*;
use std::sync::Arc;

const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n";
const API_V3_KEY: &str = "0123456789abcdefghijABCDEFGHIJkl";

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid") + Duration::microseconds(123_456)
}

struct Fixture {
    repo: PaymentStore,
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
        partners.push(org.insert_partner(p, AuditRecord::system(t0(), "partner.create", "partner", None)).await.unwrap().id);
    }
    let mut tenants = vec![];
    for partner in &partners {
        let t = Tenant::draft(Some(*partner), "T", t0());
        tenants.push(org.insert_tenant(t, AuditRecord::system(t0(), "tenant.create", "tenant", None)).await.unwrap().id);
    }
    Fixture {
        repo: PaymentStore::new(db.clone(), FieldCipher::new(&[9u8; 32])),
        partner: partners[0],
        tenant: tenants[0],
        other: tenants[1],
    }
}

fn config(tenant_id: i64) -> PaymentConfig {
    PaymentConfig {
        merchant_serial_no: Some("5157F09EFDC096DE15EBE81A47057A7232F1B8E1".into()),
        merchant_cert_not_after: Some(t0() + Duration::days(365)),
        merchant_private_key: Some(Secret::new(KEY_PEM)),
        merchant_key_fingerprint: Some("ab".repeat(32)),
        api_v3_key: Some(Secret::new(API_V3_KEY)),
        platform_public_key_id: Some("PUB_KEY_ID_0114232134912410000000000000".into()),
        platform_public_key: Some("-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n".into()),
        platform_key_fingerprint: Some("cd".repeat(32)),
        enabled: true,
        ..PaymentConfig::new(tenant_id, "1900000109".into(), "wx8888888888888888".into(), t0())
    }
}

fn config_audit(tenant_id: i64) -> AuditRecord {
    AuditRecord { tenant_id: Some(tenant_id), ..AuditRecord::system(t0(), "payment_config.update", "payment_config", Some(tenant_id)) }
}

fn transaction(tenant_id: i64, out_trade_no: &str, amount: i64) -> Transaction {
    Transaction {
        id: 0,
        tenant_id,
        out_trade_no: out_trade_no.into(),
        description: "Membership".into(),
        amount: Money::from_fen(amount),
        openid: "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o".into(),
        attach: None,
        prepay_id: None,
        trade_state: TradeState::NotPay,
        transaction_id: None,
        payer_total: None,
        success_time: None,
        expires_at: t0() + Duration::minutes(30),
        created_at: t0(),
        updated_at: t0(),
    }
}

fn refund(tenant_id: i64, out_trade_no: &str, out_refund_no: &str, amount: i64) -> Refund {
    Refund {
        id: 0,
        tenant_id,
        out_trade_no: out_trade_no.into(),
        out_refund_no: out_refund_no.into(),
        refund_id: None,
        amount: Money::from_fen(amount),
        status: RefundStatus::Processing,
        reason: Some("changed mind".into()),
        succeeded_at: None,
        created_at: t0(),
        updated_at: t0(),
    }
}

/// A stored transaction the platform reported paid.
async fn paid(f: &Fixture, tenant_id: i64, out_trade_no: &str, amount: i64) -> Transaction {
    let tx = f.repo.insert_transaction(transaction(tenant_id, out_trade_no, amount)).await.unwrap();
    let done = Transaction {
        trade_state: TradeState::Success,
        transaction_id: Some(format!("4200{out_trade_no}")),
        payer_total: Some(Money::from_fen(amount)),
        success_time: Some(t0() + Duration::minutes(1)),
        updated_at: t0() + Duration::minutes(1),
        ..tx
    };
    assert!(f.repo.update_transaction(done.clone(), TradeState::NotPay).await.unwrap());
    done
}

store_test!(a_config_round_trips_with_its_secrets_encrypted_at_rest, |db| {
    let f = fixture(&db).await;
    assert_eq!(f.repo.get_config(f.tenant).await.unwrap(), None);

    let stored = f.repo.put_config(config(f.tenant), config_audit(f.tenant)).await.unwrap();

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
    f.repo.put_config(config(f.tenant), config_audit(f.tenant)).await.unwrap();
    let changed = PaymentConfig {
        mchid: "1900000110".into(),
        api_v3_key: None,
        enabled: false,
        updated_at: t0() + Duration::seconds(5),
        ..config(f.tenant)
    };

    f.repo.put_config(changed.clone(), config_audit(f.tenant)).await.unwrap();

    assert_eq!(f.repo.get_config(f.tenant).await.unwrap(), Some(changed));
    let mut conn = db.conn().unwrap();
    let n: i64 = payment_configs::table.count().get_result(&mut *conn).unwrap();
    let audits: i64 = audit_logs::table.filter(audit_logs::target_type.eq("payment_config")).count().get_result(&mut *conn).unwrap();
    assert_eq!((n, audits), (1, 2));
});

store_test!(a_config_for_a_missing_tenant_is_refused_and_writes_no_audit, |db| {
    let f = fixture(&db).await;

    let err = f.repo.put_config(config(f.tenant + 1000), config_audit(f.tenant)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
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
    let stored = f.repo.insert_transaction(transaction(f.tenant, "T20260501000001", 100)).await.unwrap();
    assert!(stored.id > 0);
    assert_eq!(stored, Transaction { id: stored.id, ..transaction(f.tenant, "T20260501000001", 100) });

    let again = f.repo.insert_transaction(transaction(f.tenant, "T20260501000001", 200)).await.unwrap_err();
    let elsewhere = f.repo.insert_transaction(transaction(f.other, "T20260501000001", 300)).await.unwrap();

    assert!(matches!(again, Error::Conflict(ref m) if m.contains("T20260501000001")), "{again:?}");
    assert_eq!(elsewhere.amount, Money::from_fen(300));
    assert_eq!(f.repo.get_transaction(f.tenant, "T20260501000001".into()).await.unwrap(), Some(stored));
    assert_eq!(f.repo.get_transaction(f.tenant, "nope".into()).await.unwrap(), None);
});

store_test!(a_transaction_update_applies_only_over_the_state_it_read, |db| {
    let f = fixture(&db).await;
    let tx = f.repo.insert_transaction(transaction(f.tenant, "T1", 100)).await.unwrap();
    let paying =
        Transaction { prepay_id: Some("wx201410272009395522657a690389285100".into()), trade_state: TradeState::UserPaying, ..tx.clone() };
    let closed = Transaction { trade_state: TradeState::Closed, ..tx.clone() };

    assert!(f.repo.update_transaction(paying.clone(), TradeState::NotPay).await.unwrap());
    // A racing writer that also read NOTPAY loses and must read again.
    assert!(!f.repo.update_transaction(closed, TradeState::NotPay).await.unwrap());
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

store_test!(refund_reservations_follow_the_rules_in_order, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;

    let first = match f.repo.reserve_refund(refund(f.tenant, "T1", "R1", 60), Money::from_fen(100), 3).await.unwrap() {
        RefundReservation::Reserved(r) => r,
        other => panic!("{other:?}"),
    };
    assert!(first.id > 0);
    assert_eq!(first, Refund { id: first.id, ..refund(f.tenant, "T1", "R1", 60) });
    // 1. The same number again is the same refund, whatever else it says.
    assert_eq!(
        f.repo.reserve_refund(refund(f.tenant, "T1", "R1", 99), Money::from_fen(100), 3).await.unwrap(),
        RefundReservation::Existing(first.clone())
    );
    // 3. More than is left.
    assert_eq!(
        f.repo.reserve_refund(refund(f.tenant, "T1", "R2", 41), Money::from_fen(100), 3).await.unwrap(),
        RefundReservation::ExceedsPaid { refundable: Money::from_fen(40) }
    );
    // A failed refund gives its amount back.
    let failed = Refund { status: RefundStatus::Failed, updated_at: t0() + Duration::minutes(2), ..first.clone() };
    assert!(f.repo.update_refund(failed.clone(), RefundStatus::Processing).await.unwrap());
    assert!(!f.repo.update_refund(Refund { status: RefundStatus::Succeeded, ..first.clone() }, RefundStatus::Processing).await.unwrap());
    assert_eq!(f.repo.get_refund(f.tenant, "R1".into()).await.unwrap(), Some(failed));
    let second = f.repo.reserve_refund(refund(f.tenant, "T1", "R2", 70), Money::from_fen(100), 3).await.unwrap();
    assert!(matches!(second, RefundReservation::Reserved(ref r) if r.amount == Money::from_fen(70)), "{second:?}");
    let third = f.repo.reserve_refund(refund(f.tenant, "T1", "R3", 30), Money::from_fen(100), 3).await.unwrap();
    assert!(matches!(third, RefundReservation::Reserved(_)), "{third:?}");
    // 2. Three refunds of any status is the maximum here, checked before the amount.
    assert_eq!(
        f.repo.reserve_refund(refund(f.tenant, "T1", "R4", 1), Money::from_fen(100), 3).await.unwrap(),
        RefundReservation::TooManyRefunds
    );
    // An existing number still answers Existing when the maximum is reached.
    assert!(matches!(
        f.repo.reserve_refund(refund(f.tenant, "T1", "R3", 30), Money::from_fen(100), 3).await.unwrap(),
        RefundReservation::Existing(_)
    ));
    // Nothing left after 70 + 30.
    assert_eq!(
        f.repo.reserve_refund(refund(f.tenant, "T1", "R5", 1), Money::from_fen(100), 50).await.unwrap(),
        RefundReservation::ExceedsPaid { refundable: Money::ZERO }
    );
    let err = f.repo.reserve_refund(refund(f.tenant, "T9", "R9", 1), Money::from_fen(100), 3).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert_eq!(f.repo.get_refund(f.other, "R1".into()).await.unwrap(), None);
});

store_test!(settled_refunds_are_found_by_time_and_number, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;
    let RefundReservation::Reserved(r1) = f.repo.reserve_refund(refund(f.tenant, "T1", "R1", 10), Money::from_fen(100), 50).await.unwrap()
    else {
        panic!("not reserved")
    };
    let RefundReservation::Reserved(r2) = f.repo.reserve_refund(refund(f.tenant, "T1", "R2", 20), Money::from_fen(100), 50).await.unwrap()
    else {
        panic!("not reserved")
    };
    let done = Refund {
        refund_id: Some("50000000382019052709732678859".into()),
        status: RefundStatus::Succeeded,
        succeeded_at: Some(t0() + Duration::hours(2)),
        updated_at: t0() + Duration::hours(2),
        ..r1
    };
    assert!(f.repo.update_refund(done.clone(), RefundStatus::Processing).await.unwrap());

    let window = f.repo.refunds_succeeded_between(f.tenant, t0() + Duration::hours(1), t0() + Duration::hours(3)).await.unwrap();

    assert_eq!(window, vec![done.clone()]);
    assert!(f.repo.refunds_succeeded_between(f.tenant, t0(), t0() + Duration::hours(2)).await.unwrap().is_empty());
    assert_eq!(f.repo.refunds_by_numbers(f.tenant, vec!["R2".into(), "R1".into(), "R7".into()]).await.unwrap(), vec![done, r2]);
    assert!(f.repo.refunds_by_numbers(f.other, vec!["R1".into()]).await.unwrap().is_empty());
});

/// Spawns `n` reservations of `fen` each against `out_trade_no` at once; returns the accepted
/// amounts and how many were accepted.
async fn race(f: &Fixture, out_trade_no: &str, n: usize, fen: i64, paid: i64, max_refunds: u32) -> (i64, usize) {
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = vec![];
    for i in 0..n {
        let (repo, start, tenant) = (repo.clone(), start.clone(), f.tenant);
        let r = refund(tenant, out_trade_no, &format!("{out_trade_no}-R{i}"), fen);
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.reserve_refund(r, Money::from_fen(paid), max_refunds).await
        }));
    }
    let (mut sum, mut accepted) = (0, 0);
    for t in tasks {
        match t.await.unwrap().unwrap() {
            RefundReservation::Reserved(r) => {
                sum += r.amount.fen();
                accepted += 1;
            }
            RefundReservation::ExceedsPaid { .. } | RefundReservation::TooManyRefunds => {}
            RefundReservation::Existing(r) => panic!("a fresh number came back existing: {r:?}"),
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

    let (sum, accepted) = race(&f, "T1", 50, 3, 100, 50).await;

    assert!(sum <= 100, "accepted {sum} fen of 100");
    assert_eq!(sum, 99, "33 refunds of 3 fen fit");
    assert_eq!(stored_sum(&db, "T1"), (sum, accepted as i64));
});

store_test!(fifty_concurrent_refunds_never_exceed_the_maximum_count, |db| {
    let f = fixture(&db).await;
    paid(&f, f.tenant, "T1", 100).await;

    let (sum, accepted) = race(&f, "T1", 50, 3, 100, 10).await;

    assert_eq!(accepted, 10);
    assert_eq!(stored_sum(&db, "T1"), (sum, 10));
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
            Money::from_fen(100),
            50,
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
