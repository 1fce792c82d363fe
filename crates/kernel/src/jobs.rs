//! Durable jobs: work that outlives a request (settling unpaid transactions and processing
//! refunds, closing expired orders, retrying deliveries), queued in the database so that
//! several instances never run one job at once and a crash loses none.
//!
//! A runner [`claim`](JobStore::claim)s a due job, which leases it for `lease_secs`; it then
//! [`complete`](JobStore::complete)s, [`retry`](JobStore::retry)s or
//! [`fail`](JobStore::fail)s it. A job whose runner crashed becomes claimable again when its
//! lease runs out, with `attempts` counting every claim — so a lease must outlast the work,
//! and a job may run more than once after a crash (make jobs idempotent).
use crate::{Id, Result, Timestamp};
use async_trait::async_trait;

/// A job to queue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// What to do, e.g. `payment.settle`; runners claim by kind.
    pub kind: String,
    pub tenant_id: Option<Id>,
    pub payload: serde_json::Value,
    /// Not before this.
    pub run_at: Timestamp,
    /// While a pending job of this kind has this key, another is not queued.
    pub dedupe_key: Option<String>,
}

/// A claimed job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: Id,
    pub kind: String,
    pub tenant_id: Option<Id>,
    pub payload: serde_json::Value,
    /// Claims so far, this one included.
    pub attempts: i32,
    pub run_at: Timestamp,
}

/// The job queue.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait JobStore: Send + Sync + 'static {
    /// Queues a job; `None` (nothing queued) when a pending job of the same kind has the same
    /// `dedupe_key`.
    async fn enqueue(&self, job: NewJob) -> Result<Option<Id>>;
    /// Claims the due job (`run_at <= now`) of one of `kinds` with the earliest `run_at`
    /// whose lease is free, leasing it until `now + lease_secs` and counting the attempt.
    /// Concurrent claimers, on any instance, never get the same job while its lease holds.
    async fn claim(&self, kinds: Vec<String>, now: Timestamp, lease_secs: i64) -> Result<Option<Job>>;
    /// The job is done: it leaves the queue.
    async fn complete(&self, id: Id) -> Result<()>;
    /// The job is to run again at `run_at` (a back-off); `error` says why it did not finish.
    async fn retry(&self, id: Id, run_at: Timestamp, error: String) -> Result<()>;
    /// The job failed for good: it stays, failed, with `error`, and is never claimed again.
    async fn fail(&self, id: Id, error: String) -> Result<()>;
    /// How many pending jobs of `kind` are due at `now` (claimed ones included).
    async fn depth(&self, kind: String, now: Timestamp) -> Result<u64>;
}
