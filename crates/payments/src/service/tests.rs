//! The payment use cases against mocked storage, pay platform and key inspector.
//!
//! Most tests hold one transaction (or refund) in memory behind the mocked repository
//! ([`repo_holding`], [`repo_with_refund`]); the order-facing ones and those that check the
//! refund rule run against [`Ledger`], an in-memory ledger keeping the store's contract
//! (unique numbers, one live transaction per order, the refund rule under the lock,
//! conditional writes) and recording the [`Effects`] of every write.
use crate::NewDiscrepancy;
use crate::api::*;
use crate::config::PaymentSettings;
use crate::lifecycle::TradeState;
use crate::model::*;
use crate::ports::__mock_MockPaymentRepo_PaymentRepo as repo_mock;
use crate::ports::{MockMerchantKeys, MockPayPlatform, MockPaymentRepo, PayPlatformError};
use crate::service::{
    MAX_ATTEMPTS, ORDER_CHANGED, PaymentService, RECONCILE, RECONCILE_DAY, SETTLE_REFUND, SETTLE_TRANSACTION, platform_error,
};
use atrium_kernel::Reason;
use atrium_kernel::jobs::MockJobStore;
use atrium_kernel::pay::{Charge, OfflineCharge, OrderLedger, OrderMoney, OrderRefund, RefundCharge};
use atrium_kernel::{
    Actor, AuditRecord, Error, FixedClock, Id, IdempotencyKey, Job, JobHandler, JobOutcome, Money, NewJob, Openid, Party, PayParams,
    PaymentMethod, RefundStatus, RequestKey, Secret, Timestamp,
};
use chrono::{Duration, NaiveDate, TimeZone, Utc};
use mockall::Sequence;
use mockall::predicate::eq;
use std::sync::{Arc, Mutex};

mod config;
mod jobs;
mod notifications;
mod orders;
mod plans;
mod provider;
mod reconciliation;
mod refunds;
mod sharing;
mod transactions;

const TENANT: Id = 3;
const PARTNER: Id = 9;
const FP: &str = "ab12";
/// The order whose transactions the order-facing tests pay, refund and close.
const ORDER: Id = 42;
/// That order's number, which is its platform transaction's `out_trade_no`.
const ORDER_NO: &str = "O2026040100001";

fn now() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 4, 1, 4, 0, 0).single().expect("valid")
}

fn tenant_actor() -> Actor {
    Actor::new(10, "s", Party::Tenant { tenant_id: TENANT, partner_id: Some(PARTNER) }, ["miniprogram:payment"])
}

fn platform_actor() -> Actor {
    Actor::new(1, "s", Party::Platform, ["*"])
}

/// A complete, enabled configuration.
fn config() -> PaymentConfig {
    let mut c = PaymentConfig::new(TENANT, "1900000109".into(), "wx_mp".into(), now() - Duration::days(30));
    c.credentials.merchant_serial_no = Some("5157F09EFDC096DE15EBE81A47057A7232F1B8E1".into());
    c.credentials.merchant_cert_not_after = Some(now() + Duration::days(365));
    c.credentials.merchant_private_key = Some(Secret::new("-----BEGIN PRIVATE KEY-----merchant"));
    c.credentials.merchant_key_fingerprint = Some(FP.into());
    c.credentials.api_v3_key = Some(Secret::new("k".repeat(32)));
    c.credentials.platform_public_key_id = Some("PUB_KEY_ID_0114232134912410000000000000000000".into());
    c.credentials.platform_public_key = Some("-----BEGIN PUBLIC KEY-----platform".into());
    c.credentials.platform_key_fingerprint = Some("cd34".into());
    c.enabled = true;
    c
}

/// A platform transaction of the payment routes (no order) of 1000 fen, paid a day ago when
/// `state` is paid.
fn tx(no: &str, state: TradeState) -> Transaction {
    Transaction {
        id: 5,
        tenant_id: TENANT,
        out_trade_no: no.into(),
        order_id: None,
        method: PaymentMethod::WechatJsapi,
        reference: None,
        paid_by: None,
        description: "Coffee".into(),
        amount: Money::from_fen(1000),
        openid: "o-ann".into(),
        attach: None,
        prepay_id: Some("wx201410272009395522657a690389285100".into()),
        trade_state: state,
        transaction_id: state.is_paid().then(|| "4200000001".into()),
        payer_total: state.is_paid().then_some(Money::from_fen(1000)),
        success_time: state.is_paid().then(|| now() - Duration::days(1)),
        discrepancy: None,
        sub_mchid: None,
        expires_at: now() + Duration::hours(2),
        created_at: now() - Duration::days(1),
        updated_at: now() - Duration::days(1),
    }
}

/// Order [`ORDER`]'s platform transaction (number [`ORDER_NO`], 1000 fen).
fn order_tx(state: TradeState) -> Transaction {
    Transaction { order_id: Some(ORDER), ..tx(ORDER_NO, state) }
}

/// Order [`ORDER`]'s payment of 1000 fen recorded as made outside the platform.
fn offline_tx() -> Transaction {
    Transaction {
        id: 6,
        out_trade_no: offline_trade_no(ORDER_NO),
        order_id: Some(ORDER),
        method: PaymentMethod::Offline,
        reference: Some("BANK-20260401-1".into()),
        paid_by: Some(10),
        openid: String::new(),
        prepay_id: None,
        transaction_id: None,
        ..tx(ORDER_NO, TradeState::Success)
    }
}

/// The orders' record of a request about order [`ORDER`], handed to the ledger to write.
fn order_audit(action: &str) -> AuditRecord {
    AuditRecord::system(now(), action, "order", Some(ORDER)).owned_by(Some(PARTNER), Some(TENANT))
}

/// A request key of the tenant's user for `route`.
fn request_key(route: &str, key: &str) -> RequestKey {
    RequestKey::of(&IdempotencyKey { caller: "user:10".into(), route: route.into(), key: key.into() })
}

fn refund(no: &str, amount: i64, status: RefundStatus) -> Refund {
    Refund {
        id: 7,
        tenant_id: TENANT,
        out_trade_no: "T0000001".into(),
        order_id: None,
        out_refund_no: no.into(),
        refund_id: None,
        amount: Money::from_fen(amount),
        status,
        reason: None,
        requested_by: None,
        fail_reason: None,
        succeeded_at: None,
        created_at: now(),
        updated_at: now(),
    }
}

/// The platform reporting `state` for `no`, an order of 1000 fen (in CNY, by default).
fn report(no: &str, state: TradeState) -> PlatformTransaction {
    PlatformTransaction {
        out_trade_no: no.into(),
        trade_state: state,
        transaction_id: state.is_paid().then(|| "4200000001".into()),
        amount: Some(Money::from_fen(1000)),
        currency: None,
        payer_total: state.is_paid().then_some(Money::from_fen(900)),
        success_time: state.is_paid().then(now),
        sub_mchid: None,
    }
}

fn refused(status: u16, code: &str) -> PayPlatformError {
    PayPlatformError::Refused { status, code: code.into(), message: "refused".into() }
}

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

/// A repository that sees the tenant and holds `config`.
fn repo_with(config: Option<PaymentConfig>) -> MockPaymentRepo {
    let mut repo = MockPaymentRepo::new();
    repo.expect_tenant().returning(|_, id| Ok((id == TENANT).then_some(PaymentTenant { id, partner_id: Some(PARTNER) })));
    repo.expect_get_config().returning(move |_| Ok(config.clone()));
    repo
}

/// A repository holding one transaction in memory, with conditional writes as the store
/// does them.
fn repo_holding(config: Option<PaymentConfig>, stored: Transaction) -> (MockPaymentRepo, Arc<Mutex<Transaction>>) {
    let (mut repo, cell) = repo_holding_unshared(config, stored);
    // Not shared: no refund of it takes anything back from a share.
    repo.expect_returns_of().returning(|_, _| Ok(vec![]));
    (repo, cell)
}

/// As [`repo_holding`], leaving the returns of its refunds to the test.
fn repo_holding_unshared(config: Option<PaymentConfig>, stored: Transaction) -> (MockPaymentRepo, Arc<Mutex<Transaction>>) {
    let mut repo = repo_with(config);
    let cell = Arc::new(Mutex::new(stored));
    let read = cell.clone();
    repo.expect_get_transaction().returning(move |_, no| {
        let t = read.lock().unwrap().clone();
        Ok((t.out_trade_no == no).then_some(t))
    });
    (repo, cell)
}

/// Conditional writes of the transaction in `cell`, expected `times` times; returns the
/// [`Effects`] of each write that took.
fn conditional_writes(repo: &mut MockPaymentRepo, cell: &Arc<Mutex<Transaction>>, times: usize) -> Arc<Mutex<Vec<Effects>>> {
    let write = cell.clone();
    let written = Arc::new(Mutex::new(Vec::new()));
    let log = written.clone();
    repo.expect_update_transaction().times(times).returning(move |t, read_state, _found, effects| {
        let mut stored = write.lock().unwrap();
        if stored.trade_state != read_state {
            return Ok(false);
        }
        *stored = t;
        log.lock().unwrap().push(effects);
        Ok(true)
    });
    written
}

/// A repository holding one refund in memory with conditional writes, over a paid transaction.
fn repo_with_refund(status: RefundStatus) -> (MockPaymentRepo, Arc<Mutex<Refund>>) {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    let cell = Arc::new(Mutex::new(refund("R1", 300, status)));
    let read = cell.clone();
    repo.expect_get_refund().returning(move |_, no| {
        let r = read.lock().unwrap().clone();
        Ok((r.out_refund_no == no).then_some(r))
    });
    let write = cell.clone();
    repo.expect_update_refund().returning(move |r, read_status, _| {
        let mut stored = write.lock().unwrap();
        if stored.status != read_status {
            return Ok(false);
        }
        *stored = r;
        Ok(true)
    });
    (repo, cell)
}

fn refund_report(status: RefundStatus) -> PlatformRefund {
    PlatformRefund {
        out_refund_no: "R1".into(),
        out_trade_no: Some("T0000001".into()),
        refund_id: Some("50000000382019052709732678859".into()),
        status,
        amount: Some(Money::from_fen(300)),
        success_time: (status == RefundStatus::Succeeded).then(now),
        sub_mchid: None,
    }
}

/// A job queue that accepts every job.
fn jobs() -> MockJobStore {
    let mut jobs = MockJobStore::new();
    jobs.expect_enqueue().returning(|_| Ok(Some(1)));
    jobs
}

/// A job queue nothing may be queued on: what a change brings about is written with it.
fn no_queued_jobs() -> MockJobStore {
    let mut jobs = MockJobStore::new();
    jobs.expect_enqueue().never();
    jobs
}

/// A job queue that records what is queued.
fn recording_jobs() -> (MockJobStore, Arc<Mutex<Vec<NewJob>>>) {
    let queued = Arc::new(Mutex::new(Vec::new()));
    let mut jobs = MockJobStore::new();
    let q = queued.clone();
    jobs.expect_enqueue().returning(move |j| {
        q.lock().unwrap().push(j);
        Ok(Some(1))
    });
    (jobs, queued)
}

fn service(repo: MockPaymentRepo, platform: MockPayPlatform, keys: MockMerchantKeys) -> PaymentService {
    with_jobs(repo, platform, keys, jobs())
}

fn with_jobs(repo: MockPaymentRepo, platform: MockPayPlatform, keys: MockMerchantKeys, jobs: MockJobStore) -> PaymentService {
    PaymentService::new(
        Arc::new(repo),
        Arc::new(platform),
        Arc::new(keys),
        Arc::new(jobs),
        Arc::new(FixedClock::new(now())),
        PaymentSettings::new("https://atrium.example.com"),
    )
}

fn svc(repo: MockPaymentRepo, platform: MockPayPlatform) -> PaymentService {
    service(repo, platform, MockMerchantKeys::new())
}

fn order_request(no: Option<&str>) -> UnifiedOrderRequest {
    UnifiedOrderRequest {
        tenant_id: None,
        description: Description::parse("Coffee").unwrap(),
        amount: Money::from_fen(1000),
        openid: Openid::parse("o-ann").unwrap(),
        out_trade_no: no.map(|n| OutTradeNo::parse(n).unwrap()),
        attach: None,
        time_expire: None,
    }
}

fn refund_request(amount: i64, no: Option<&str>) -> RefundRequest {
    RefundRequest {
        tenant_id: None,
        out_trade_no: OutTradeNo::parse("T0000001").unwrap(),
        amount: Money::from_fen(amount),
        reason: None,
        out_refund_no: no.map(|n| OutRefundNo::parse(n).unwrap()),
    }
}

fn close_request() -> CloseRequest {
    CloseRequest { tenant_id: None, out_trade_no: OutTradeNo::parse("T0000001").unwrap() }
}

fn field_of(e: &Error) -> Vec<String> {
    match e {
        Error::Invalid(fields) | Error::Blocked(_, fields) => fields.iter().map(|f| f.field.clone()).collect(),
        _ => vec![],
    }
}

fn event(id: &str, resource: EventResource) -> PayEvent {
    PayEvent { id: id.into(), event_type: "TRANSACTION.SUCCESS".into(), resource }
}

// --- reconciliation ---------------------------------------------------------------------------

fn bill_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 3, 31).unwrap()
}

fn bill_line(no: &str, amount: i64, refund: Option<(&str, i64)>) -> BillLine {
    BillLine {
        transaction_id: format!("42{no}"),
        out_trade_no: no.into(),
        trade_state: if refund.is_some() { BillTradeState::Refund } else { BillTradeState::Success },
        amount: Money::from_fen(amount),
        refund: refund.map(|(r, a)| BillRefund {
            refund_id: format!("50{r}"),
            out_refund_no: r.into(),
            amount: Money::from_fen(a),
            status: "SUCCESS".into(),
        }),
    }
}

// --- jobs ----------------------------------------------------------------------------------

fn job(kind: &str, payload: serde_json::Value, attempts: i32) -> Job {
    Job { id: 1, kind: kind.into(), tenant_id: Some(TENANT), payload, attempts, run_at: now() }
}

fn settle_tx_job(attempts: i32) -> Job {
    job(SETTLE_TRANSACTION, serde_json::json!({"out_trade_no": "T0000001"}), attempts)
}

fn settle_refund_job(attempts: i32) -> Job {
    job(SETTLE_REFUND, serde_json::json!({"out_refund_no": "R1"}), attempts)
}

/// An unpaid transaction that expired a minute ago.
fn expired(state: TradeState) -> Transaction {
    Transaction { expires_at: now() - Duration::minutes(1), ..tx("T0000001", state) }
}

/// The `ledger.order_changed` event of `order_id`, as written with a change of its money.
fn order_changed(order_id: Id) -> NewJob {
    NewJob {
        kind: ORDER_CHANGED.into(),
        tenant_id: Some(TENANT),
        payload: serde_json::json!({ "order_id": order_id }),
        run_at: now(),
        dedupe_key: None,
    }
}

/// Asserts that `effects` carry exactly `jobs`, in any order.
#[track_caller]
fn assert_jobs(effects: &Effects, jobs: &[NewJob]) {
    assert_eq!(effects.jobs.len(), jobs.len(), "{:#?}", effects.jobs);
    for job in jobs {
        assert!(effects.jobs.contains(job), "{job:#?} missing in {:#?}", effects.jobs);
    }
}

/// The job that settles transaction `no`, due at `at`.
fn settle_transaction_job(no: &str, at: Timestamp) -> NewJob {
    NewJob {
        kind: SETTLE_TRANSACTION.into(),
        tenant_id: Some(TENANT),
        payload: serde_json::json!({ "out_trade_no": no }),
        run_at: at,
        dedupe_key: Some(format!("{TENANT}:{no}")),
    }
}

/// The job that settles refund `no`, due a minute from now.
fn settle_refund_job_for(no: &str) -> NewJob {
    NewJob {
        kind: SETTLE_REFUND.into(),
        tenant_id: Some(TENANT),
        payload: serde_json::json!({ "out_refund_no": no }),
        run_at: now() + Duration::minutes(1),
        dedupe_key: Some(format!("{TENANT}:{no}")),
    }
}

// --- an in-memory ledger -----------------------------------------------------------------------

/// A write the ledger took, with what it brought about in the same database transaction.
#[derive(Debug, Clone, PartialEq)]
struct Written {
    /// The repository method: `insert_transaction`, `update_transaction`, `reserve_refund`,
    /// `update_refund`.
    op: &'static str,
    /// The transaction's or refund's number.
    no: String,
    effects: Effects,
    /// The discrepancy recorded with it, if any.
    found: Option<NewDiscrepancy>,
}

#[derive(Debug, Default)]
struct Books {
    txs: Vec<Transaction>,
    refunds: Vec<Refund>,
    written: Vec<Written>,
}

/// The tenant's transactions and refunds in memory, behind a mocked repository that keeps the
/// store's contract: unique numbers, one live transaction per order, the refund rule checked
/// against what is stored, conditional writes; every write that takes is recorded with its
/// [`Effects`]. Nothing is written unless a test allows that kind of write, so many times.
#[derive(Clone, Default)]
struct Ledger(Arc<Mutex<Books>>);

impl Ledger {
    fn holding(txs: Vec<Transaction>, refunds: Vec<Refund>) -> Self {
        Ledger(Arc::new(Mutex::new(Books { txs, refunds, written: Vec::new() })))
    }

    fn tx(&self, no: &str) -> Option<Transaction> {
        self.0.lock().unwrap().txs.iter().find(|t| t.out_trade_no == no).cloned()
    }

    fn txs(&self) -> Vec<Transaction> {
        self.0.lock().unwrap().txs.clone()
    }

    fn refunds(&self) -> Vec<Refund> {
        self.0.lock().unwrap().refunds.clone()
    }

    fn written(&self) -> Vec<Written> {
        self.0.lock().unwrap().written.clone()
    }

    /// The recorded writes as `(op, number)`, in order.
    fn writes(&self) -> Vec<(&'static str, String)> {
        self.written().into_iter().map(|w| (w.op, w.no)).collect()
    }

    /// A repository that sees the tenant, holds `config` and reads these books; it writes
    /// only what [`inserts`](Self::inserts) and the like allow.
    fn repo(&self, config: Option<PaymentConfig>) -> MockPaymentRepo {
        let mut repo = repo_with(config);
        // Nothing here is shared: no refund takes anything back from a share.
        repo.expect_returns_of().returning(|_, _| Ok(vec![]));
        let books = self.0.clone();
        repo.expect_get_transaction().returning(move |_, no| Ok(books.lock().unwrap().txs.iter().find(|t| t.out_trade_no == no).cloned()));
        let books = self.0.clone();
        repo.expect_order_transaction().returning(move |_, order_id| {
            let books = books.lock().unwrap();
            let of_order = || books.txs.iter().filter(|t| t.order_id == Some(order_id));
            Ok(of_order().find(|t| !t.trade_state.is_closed()).or_else(|| of_order().next_back()).cloned())
        });
        let books = self.0.clone();
        repo.expect_get_refund().returning(move |_, no| Ok(books.lock().unwrap().refunds.iter().find(|r| r.out_refund_no == no).cloned()));
        let books = self.0.clone();
        repo.expect_refunds_of()
            .returning(move |_, no| Ok(books.lock().unwrap().refunds.iter().filter(|r| r.out_trade_no == no).cloned().collect()));
        let books = self.0.clone();
        repo.expect_refunds_of_orders().returning(move |ids| {
            let mut of: Vec<Refund> =
                books.lock().unwrap().refunds.iter().filter(|r| r.order_id.is_some_and(|o| ids.contains(&o))).cloned().collect();
            of.sort_by_key(|r| (r.order_id, r.id));
            Ok(of)
        });
        repo
    }

    /// `insert_transaction`, `times` times: `Conflict` for a number taken or an order that
    /// already has a live transaction. Returns the expectation (to put it in a `Sequence`).
    fn inserts<'r>(&self, repo: &'r mut MockPaymentRepo, times: usize) -> &'r mut repo_mock::__insert_transaction::Expectation {
        let books = self.0.clone();
        repo.expect_insert_transaction().times(times).returning(move |t, effects| {
            let mut books = books.lock().unwrap();
            if books.txs.iter().any(|s| s.out_trade_no == t.out_trade_no) {
                return Err(Error::conflict(Reason::Duplicate, "out_trade_no taken"));
            }
            if t.order_id.is_some() && books.txs.iter().any(|s| s.order_id == t.order_id && !s.trade_state.is_closed()) {
                return Err(Error::conflict(Reason::Duplicate, "the order has a live transaction"));
            }
            let stored = Transaction { id: 100 + books.txs.len() as Id, ..t };
            books.written.push(Written { op: "insert_transaction", no: stored.out_trade_no.clone(), effects, found: None });
            books.txs.push(stored.clone());
            Ok(stored)
        })
    }

    /// `update_transaction`, `times` times, conditional on the stored trade state.
    fn tx_writes<'r>(&self, repo: &'r mut MockPaymentRepo, times: usize) -> &'r mut repo_mock::__update_transaction::Expectation {
        let books = self.0.clone();
        repo.expect_update_transaction().times(times).returning(move |t, read_state, found, effects| {
            let mut books = books.lock().unwrap();
            let Some(i) = books.txs.iter().position(|s| s.out_trade_no == t.out_trade_no) else {
                return Err(Error::NotFound("payment transaction"));
            };
            if books.txs[i].trade_state != read_state {
                return Ok(false);
            }
            books.written.push(Written { op: "update_transaction", no: t.out_trade_no.clone(), effects, found });
            books.txs[i] = t;
            Ok(true)
        })
    }

    /// `reserve_refund`, `times` times: an existing number is `Existing`, the rule is checked
    /// against the stored transaction and its refunds, and only a reservation is written.
    fn reservations<'r>(&self, repo: &'r mut MockPaymentRepo, times: usize) -> &'r mut repo_mock::__reserve_refund::Expectation {
        let books = self.0.clone();
        repo.expect_reserve_refund().times(times).returning(move |r, rule, effects| {
            let mut books = books.lock().unwrap();
            if let Some(existing) = books.refunds.iter().find(|s| s.out_refund_no == r.out_refund_no) {
                return Ok(RefundReservation::Existing(existing.clone()));
            }
            let Some(tx) = books.txs.iter().find(|t| t.out_trade_no == r.out_trade_no) else {
                return Err(Error::NotFound("payment transaction"));
            };
            let of_tx: Vec<Refund> = books.refunds.iter().filter(|s| s.out_trade_no == r.out_trade_no).cloned().collect();
            if let Err(why) = rule.check(tx, &of_tx, &r) {
                return Ok(RefundReservation::Refused(why));
            }
            let stored = Refund { id: 200 + books.refunds.len() as Id, ..r };
            books.written.push(Written { op: "reserve_refund", no: stored.out_refund_no.clone(), effects, found: None });
            books.refunds.push(stored.clone());
            Ok(RefundReservation::Reserved(stored))
        })
    }

    /// `update_refund`, `times` times, conditional on the stored status.
    fn refund_writes<'r>(&self, repo: &'r mut MockPaymentRepo, times: usize) -> &'r mut repo_mock::__update_refund::Expectation {
        let books = self.0.clone();
        repo.expect_update_refund().times(times).returning(move |r, read_status, effects| {
            let mut books = books.lock().unwrap();
            let Some(i) = books.refunds.iter().position(|s| s.out_refund_no == r.out_refund_no) else {
                return Err(Error::NotFound("refund"));
            };
            if books.refunds[i].status != read_status {
                return Ok(false);
            }
            books.written.push(Written { op: "update_refund", no: r.out_refund_no.clone(), effects, found: None });
            books.refunds[i] = r;
            Ok(true)
        })
    }
}
