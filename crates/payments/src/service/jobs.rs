//! The payment jobs: what settles a transaction or refund the platform never told us about,
//! and the daily reconciliation that settles what the trade bill proves.
//!
//! - `payment.settle_transaction` is queued with each new transaction, due at its expiry. A
//!   transaction still unpaid then is queried; if the platform still has it unpaid it is
//!   closed there and here, if the payer is still paying the job tries again.
//! - `payment.settle_refund` is queued with each refund, due a minute later, and queries the
//!   platform until the refund settles (a refund the platform never received is asked
//!   again under its own number, which the platform treats as the same refund).
//! - `payment.reconcile_day` runs each morning at [`RECONCILE_AT_CST`] China Standard Time,
//!   queues `payment.reconcile` for every tenant with payment activity the day before, and
//!   queues itself for the next day. `payment.reconcile` compares the day's trade bill and
//!   queries every payment and refund the bill shows settled but we do not;
//!   `payment.reconcile_shares`, queued with it, checks the day's shares and returns against
//!   the platform's answers ([`super::share_checks`]).
//!
//! Every job is idempotent (a job whose runner crashed runs again) and retries on the
//! [`SETTLE_BACKOFF`] schedule while the platform cannot answer.
use super::ledger::closed_report;
use super::payments::PaymentService;
use super::returns::TakenBack;
use super::share_checks::{RECONCILE_SHARES, SharesPage};
use super::sharing::SHARE;
use crate::lifecycle::TradeState;
use crate::model::*;
use crate::ports::PayPlatformError;
use atrium_kernel::RefundStatus;
use atrium_kernel::jobs::backoff;
use atrium_kernel::{Error, Id, Job, JobHandler, JobOutcome, NewJob, Result, Timestamp, china_day, china_standard_time};
use chrono::{Duration, NaiveDate, NaiveTime};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The job that settles a transaction at its expiry (queried, closed if still unpaid).
pub const SETTLE_TRANSACTION: &str = "payment.settle_transaction";
/// The job that queries a refund until the platform settles it.
pub const SETTLE_REFUND: &str = "payment.settle_refund";
/// The daily job that queues a reconciliation for each tenant with activity the day before.
pub const RECONCILE_DAY: &str = "payment.reconcile_day";
/// The job that reconciles one tenant's day against the platform's trade bill.
pub const RECONCILE: &str = "payment.reconcile";
/// The periodic job that queues settle jobs for what is past its deadline and still open
/// (a lost settle job).
pub const SWEEP: &str = "payment.sweep";

/// How often the sweep runs, and how long past its deadline something must be to be swept.
pub const SWEEP_EVERY_SECS: i64 = 600;
/// At most this many transactions and as many refunds per sweep; the next sweep takes more.
const SWEEP_BATCH: u32 = 500;

/// The waits between tries of a job the platform could not settle yet: 1, 5, 10, then every
/// 30 minutes.
pub const SETTLE_BACKOFF: [Duration; 4] = [Duration::minutes(1), Duration::minutes(5), Duration::minutes(10), Duration::minutes(30)];
/// Tries before a job is given up (about a day on [`SETTLE_BACKOFF`]), and kept as failed.
pub const MAX_ATTEMPTS: i32 = 50;
/// When the daily reconciliation runs, China Standard Time: the platform's bills of the day
/// before are ready by then.
pub const RECONCILE_AT_CST: NaiveTime = match NaiveTime::from_hms_opt(10, 30, 0) {
    Some(t) => t,
    None => NaiveTime::MIN,
};
/// A refund is first queried this long after it was requested.
const FIRST_REFUND_QUERY: Duration = Duration::minutes(1);

#[derive(Debug, Serialize, Deserialize)]
struct TransactionJob {
    out_trade_no: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct RefundJob {
    out_refund_no: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct DayJob {
    date: NaiveDate,
}

/// How one settling attempt ended.
pub(super) enum Step {
    Settled,
    Again(String),
}

impl PaymentService {
    /// The job that settles transaction `out_trade_no`, due at `at` (once per transaction),
    /// written with the transaction.
    pub(super) fn settle_transaction_job(&self, tenant_id: Id, out_trade_no: &str, at: Timestamp) -> NewJob {
        NewJob {
            kind: SETTLE_TRANSACTION.into(),
            tenant_id: Some(tenant_id),
            payload: serde_json::json!({ "out_trade_no": out_trade_no }),
            run_at: at,
            dedupe_key: Some(format!("{tenant_id}:{out_trade_no}")),
        }
    }

    /// The job that settles refund `out_refund_no` (once per refund), written with the
    /// refund's reservation.
    pub(super) fn settle_refund_job(&self, tenant_id: Id, out_refund_no: &str) -> NewJob {
        NewJob {
            kind: SETTLE_REFUND.into(),
            tenant_id: Some(tenant_id),
            payload: serde_json::json!({ "out_refund_no": out_refund_no }),
            run_at: self.clock.now() + FIRST_REFUND_QUERY,
            dedupe_key: Some(format!("{tenant_id}:{out_refund_no}")),
        }
    }

    /// Queues the next sweep, at the next multiple of [`SWEEP_EVERY_SECS`] (Unix time), keyed
    /// by that time so that every instance queuing it queues one. The server calls it at
    /// start; each sweep queues the next.
    pub async fn schedule_sweep(&self) -> Result<()> {
        atrium_kernel::jobs::schedule_every(self.jobs.as_ref(), SWEEP, SWEEP_EVERY_SECS, self.clock.now()).await
    }

    /// Settles what was left behind: every platform transaction still unpaid past its expiry
    /// and every refund still processing past its first query gets its settle job again (a
    /// pending one is not doubled), so nothing stays `paying` or `processing` because a
    /// settle job was given up or lost. Then queues the next sweep.
    async fn sweep(&self) -> Result<()> {
        let before = self.clock.now() - Duration::seconds(SWEEP_EVERY_SECS);
        let found = self.repo.unsettled(before, SWEEP_BATCH).await?;
        for (tenant_id, out_trade_no, expires_at) in &found.transactions {
            self.jobs.enqueue(self.settle_transaction_job(*tenant_id, out_trade_no, (*expires_at).max(self.clock.now()))).await?;
        }
        for (tenant_id, out_refund_no) in &found.refunds {
            let mut job = self.settle_refund_job(*tenant_id, out_refund_no);
            job.run_at = self.clock.now();
            self.jobs.enqueue(job).await?;
        }
        if !found.transactions.is_empty() || !found.refunds.is_empty() {
            log::warn!(
                "sweep: {} unpaid transactions past their expiry and {} processing refunds sent to be settled again",
                found.transactions.len(),
                found.refunds.len()
            );
        }
        self.schedule_sweep().await
    }

    /// Queues the next daily reconciliation (the server calls it at start; the daily job
    /// queues the one after). Several instances queue it once: the day is its dedupe key.
    pub async fn schedule_reconciliation(&self) -> Result<()> {
        let now_cst = self.clock.now().with_timezone(&china_standard_time()).naive_local();
        // The first morning run still ahead reconciles the day before it.
        let run_day = if now_cst.time() < RECONCILE_AT_CST { now_cst.date() } else { now_cst.date() + Duration::days(1) };
        self.queue_reconcile_day(run_day - Duration::days(1)).await
    }

    async fn queue_reconcile_day(&self, date: NaiveDate) -> Result<()> {
        let (next_day, _) = china_day(date + Duration::days(1));
        let run_at = next_day + (RECONCILE_AT_CST - NaiveTime::MIN);
        self.jobs
            .enqueue(NewJob {
                kind: RECONCILE_DAY.into(),
                tenant_id: None,
                payload: json(&DayJob { date })?,
                run_at,
                dedupe_key: Some(date.to_string()),
            })
            .await
            .map(drop)
    }

    /// Settles a transaction past its expiry: queries the platform; one still unpaid there is
    /// closed (here too), one the payer is still paying is tried again.
    async fn settle_transaction(&self, tenant_id: Id, out_trade_no: &str) -> Result<Step> {
        let Some(tx) = self.repo.get_transaction(tenant_id, out_trade_no.to_owned()).await? else {
            log::warn!("settle job: tenant {tenant_id} has no transaction {out_trade_no}");
            return Ok(Step::Settled);
        };
        if !unsettled(tx.trade_state) {
            return Ok(Step::Settled);
        }
        if let Some(why) = &tx.discrepancy {
            // Nothing a query or a close can settle: a person resolves it.
            log::error!("settle job: transaction {out_trade_no} of tenant {tenant_id} has a discrepancy: {why}");
            return Ok(Step::Settled);
        }
        let account = self.account_of(&tx).await?;
        let report = match self.platform.query_order(&account, out_trade_no).await {
            Ok(report) => report,
            // The order never reached the platform (its placing failed): nothing can pay it.
            Err(PayPlatformError::Refused { code, .. }) if code == "ORDER_NOT_EXIST" => closed_report(out_trade_no),
            Err(e) => return Ok(Step::Again(e.to_string())),
        };
        let tx = self.apply_transaction_report(tenant_id, &report).await?;
        match tx.trade_state {
            state if !unsettled(state) || tx.discrepancy.is_some() => Ok(Step::Settled),
            TradeState::UserPaying => Ok(Step::Again("the payer is still paying".into())),
            _ if self.clock.now() < tx.expires_at => Ok(Step::Again("not expired yet".into())),
            _ => match self.platform.close_order(&account, out_trade_no).await {
                Ok(()) => {
                    self.apply_transaction_report(tenant_id, &closed_report(out_trade_no)).await?;
                    Ok(Step::Settled)
                }
                // Paid at the last moment: the next try's query records it.
                Err(PayPlatformError::Refused { code, .. }) if code == "ORDERPAID" => Ok(Step::Again("paid meanwhile".into())),
                Err(e) => Ok(Step::Again(e.to_string())),
            },
        }
    }

    /// Settles a processing refund by querying it; a refund the platform never received is
    /// requested again under its own number.
    async fn settle_refund(&self, tenant_id: Id, out_refund_no: &str) -> Result<Step> {
        let Some(refund) = self.repo.get_refund(tenant_id, out_refund_no.to_owned()).await? else {
            log::warn!("settle job: tenant {tenant_id} has no refund {out_refund_no}");
            return Ok(Step::Settled);
        };
        if refund.status.is_final() {
            return Ok(Step::Settled);
        }
        let tx = self.transaction(tenant_id, &refund.out_trade_no).await?;
        // A shared payment's receivers give their parts back first; the refund is sent after.
        match self.take_back(&tx, &refund).await? {
            TakenBack::Done => {}
            TakenBack::Waiting(why) => return Ok(Step::Again(why)),
            TakenBack::Unreachable(e) => return Ok(Step::Again(e.to_string())),
            TakenBack::Failed(e) => {
                log::warn!("settle job: refund {out_refund_no} of tenant {tenant_id} not sent: {e}");
                return Ok(Step::Settled);
            }
        }
        let account = self.account_of(&tx).await?;
        let report = match self.platform.query_refund(&account, out_refund_no).await {
            Ok(report) => report,
            Err(PayPlatformError::Refused { code, .. }) if code == "RESOURCE_NOT_EXISTS" => {
                let order = RefundOrder {
                    out_trade_no: refund.out_trade_no.clone(),
                    out_refund_no: out_refund_no.to_owned(),
                    reason: refund.reason.clone(),
                    amount: refund.amount,
                    total: tx.amount,
                    notify_url: self.settings.notify_url(tenant_id),
                };
                match self.platform.refund(&account, &order).await {
                    Ok(report) => report,
                    Err(e @ PayPlatformError::Unavailable(_)) => return Ok(Step::Again(e.to_string())),
                    Err(e) => {
                        log::warn!("settle job: refund {out_refund_no} of tenant {tenant_id} refused: {e}");
                        failed_refund(out_refund_no)
                    }
                }
            }
            Err(e) => return Ok(Step::Again(e.to_string())),
        };
        let refund = self.apply_refund_report(tenant_id, out_refund_no, &report).await?;
        Ok(if refund.status.is_final() { Step::Settled } else { Step::Again("the refund is still processing".into()) })
    }

    /// Queues `payment.reconcile` of `date` for every tenant with payment activity that day,
    /// and the next day's run.
    async fn reconcile_day(&self, date: NaiveDate) -> Result<()> {
        let (from, to) = china_day(date);
        for tenant_id in self.repo.tenants_with_activity(from, to).await? {
            self.jobs
                .enqueue(NewJob {
                    kind: RECONCILE.into(),
                    tenant_id: Some(tenant_id),
                    payload: json(&DayJob { date })?,
                    run_at: self.clock.now(),
                    dedupe_key: Some(format!("{tenant_id}:{date}")),
                })
                .await?;
            self.jobs.enqueue(self.reconcile_shares_job(tenant_id, date, 0, 0)).await?;
        }
        self.queue_reconcile_day(date + Duration::days(1)).await
    }

    /// [`account_of`](Self::account_of) `tx`, read once per merchant into `accounts`.
    pub(super) async fn account_once(
        &self,
        accounts: &mut HashMap<Option<String>, MerchantAccount>,
        tx: &Transaction,
    ) -> Result<MerchantAccount> {
        if let Some(account) = accounts.get(&tx.sub_mchid) {
            return Ok(account.clone());
        }
        let account = self.account_of(tx).await?;
        accounts.insert(tx.sub_mchid.clone(), account.clone());
        Ok(account)
    }

    /// Compares `date`'s trade bill and settles what it proves: every payment and refund the
    /// bill shows settled and we do not is queried and recorded.
    async fn reconcile_and_settle(&self, tenant_id: Id, date: NaiveDate) -> Result<Step> {
        let view = match self.compare(tenant_id, date).await {
            Ok(view) => view,
            Err(Error::Upstream(m)) => return Ok(Step::Again(m)),
            Err(e) => return Err(e),
        };
        let mut settled = 0;
        // The day's payments were placed with one or two merchants: each account read once.
        let mut accounts = HashMap::new();
        for item in &view.missing_locally {
            let done = match &item.out_refund_no {
                None => {
                    let Some(tx) = self.repo.get_transaction(tenant_id, item.out_trade_no.clone()).await? else {
                        log::error!(
                            "reconciliation {date}: tenant {tenant_id} has no transaction {} the bill shows paid",
                            item.out_trade_no
                        );
                        continue;
                    };
                    let account = self.account_once(&mut accounts, &tx).await?;
                    match self.platform.query_order(&account, &item.out_trade_no).await {
                        Ok(report) => self.apply_transaction_report(tenant_id, &report).await?.trade_state.is_paid(),
                        Err(e) => return Ok(Step::Again(e.to_string())),
                    }
                }
                Some(out_refund_no) => {
                    let Some(refund) = self.repo.get_refund(tenant_id, out_refund_no.clone()).await? else {
                        log::error!("reconciliation {date}: tenant {tenant_id} has no refund {out_refund_no} the bill shows");
                        continue;
                    };
                    let tx = self.transaction(tenant_id, &refund.out_trade_no).await?;
                    let account = self.account_once(&mut accounts, &tx).await?;
                    match self.platform.query_refund(&account, out_refund_no).await {
                        Ok(report) => self.apply_refund_report(tenant_id, out_refund_no, &report).await?.status == RefundStatus::Succeeded,
                        Err(e) => return Ok(Step::Again(e.to_string())),
                    }
                }
            };
            settled += usize::from(done);
        }
        if !view.missing_on_platform.is_empty() || !view.amount_mismatch.is_empty() {
            log::error!(
                "reconciliation {date}: tenant {tenant_id}: {} missing on the platform, {} amount mismatches",
                view.missing_on_platform.len(),
                view.amount_mismatch.len()
            );
        }
        log::info!("reconciliation {date}: tenant {tenant_id}: {} lines, {} matched, {settled} settled", view.bill_lines, view.matched);
        Ok(Step::Settled)
    }
}

#[async_trait::async_trait]
impl JobHandler for PaymentService {
    fn kinds(&self) -> Vec<String> {
        [SETTLE_TRANSACTION, SETTLE_REFUND, RECONCILE_DAY, RECONCILE, RECONCILE_SHARES, SWEEP, SHARE].map(String::from).to_vec()
    }

    async fn run(&self, job: &Job) -> JobOutcome {
        let step = match (job.kind.as_str(), job.tenant_id) {
            (SETTLE_TRANSACTION, Some(tenant)) => match parse::<TransactionJob>(job) {
                Ok(p) => self.settle_transaction(tenant, &p.out_trade_no).await,
                Err(outcome) => return outcome,
            },
            (SETTLE_REFUND, Some(tenant)) => match parse::<RefundJob>(job) {
                Ok(p) => self.settle_refund(tenant, &p.out_refund_no).await,
                Err(outcome) => return outcome,
            },
            (RECONCILE_DAY, _) => match parse::<DayJob>(job) {
                Ok(p) => self.reconcile_day(p.date).await.map(|()| Step::Settled),
                Err(outcome) => return outcome,
            },
            (RECONCILE, Some(tenant)) => match parse::<DayJob>(job) {
                Ok(p) => self.reconcile_and_settle(tenant, p.date).await,
                Err(outcome) => return outcome,
            },
            (RECONCILE_SHARES, Some(tenant)) => match parse::<SharesPage>(job) {
                Ok(p) => self.reconcile_shares(tenant, p).await,
                Err(outcome) => return outcome,
            },
            (SWEEP, _) => self.sweep().await.map(|()| Step::Settled),
            (SHARE, Some(tenant)) => match parse::<TransactionJob>(job) {
                Ok(p) => self.share_payment(tenant, &p.out_trade_no).await,
                Err(outcome) => return outcome,
            },
            (kind, _) => return JobOutcome::Failed(format!("the payment jobs cannot run a {kind} job without a tenant")),
        };
        let why = match step {
            Ok(Step::Settled) => return JobOutcome::Done,
            Ok(Step::Again(why)) => why,
            // A configuration removed since: nothing will ever settle it here.
            Err(Error::NotFound(what)) => return JobOutcome::Failed(format!("{what} not found")),
            Err(e) => e.to_string(),
        };
        // The sweep and the daily reconciliation each queue their next run: they never give
        // up, or their chain would end.
        let max_attempts = if matches!(job.kind.as_str(), SWEEP | RECONCILE_DAY) { i32::MAX } else { MAX_ATTEMPTS };
        // The sharing job's waits are the settle jobs' scaled to its first (1, 5, 10, 30 ×).
        let first = self.settings.sharing_retry;
        let steps = if job.kind == SHARE { [first, first * 5, first * 10, first * 30] } else { SETTLE_BACKOFF };
        match backoff(job.attempts, &steps, max_attempts) {
            Some(wait) => JobOutcome::Retry { at: self.clock.now() + wait, reason: why },
            None => JobOutcome::Failed(format!("given up after {} tries: {why}", job.attempts)),
        }
    }
}

/// Not yet paid or closed: the payer may still pay, or the order may still be closed.
fn unsettled(state: TradeState) -> bool {
    matches!(state, TradeState::NotPay | TradeState::UserPaying | TradeState::PayError)
}

fn failed_refund(out_refund_no: &str) -> PlatformRefund {
    PlatformRefund {
        out_refund_no: out_refund_no.to_owned(),
        out_trade_no: None,
        refund_id: None,
        status: RefundStatus::Failed,
        amount: None,
        success_time: None,
        sub_mchid: None,
    }
}

fn json<T: Serialize>(payload: &T) -> Result<serde_json::Value> {
    serde_json::to_value(payload).map_err(|e| Error::Internal(e.into()))
}

/// A job's payload, or the outcome of one that cannot be read (it never will be).
fn parse<T: for<'de> Deserialize<'de>>(job: &Job) -> std::result::Result<T, JobOutcome> {
    serde_json::from_value(job.payload.clone()).map_err(|e| JobOutcome::Failed(format!("unreadable {} payload: {e}", job.kind)))
}
