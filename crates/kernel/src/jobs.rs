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
    /// The tenant the job works for, if any (for metrics and for finding a tenant's jobs).
    pub tenant_id: Option<Id>,
    /// What the job's handler needs to do it, as JSON.
    pub payload: serde_json::Value,
    /// Not before this.
    pub run_at: Timestamp,
    /// While a pending job of this kind has this key, another is not queued.
    pub dedupe_key: Option<String>,
}

/// A claimed job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The job's id.
    pub id: Id,
    /// What to do; the handler registered for this kind runs it.
    pub kind: String,
    /// The tenant the job works for, if any.
    pub tenant_id: Option<Id>,
    /// What the job's handler needs to do it, as JSON.
    pub payload: serde_json::Value,
    /// Claims so far, this one included.
    pub attempts: i32,
    /// When it was due to run.
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

/// What became of one run of a job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobOutcome {
    /// Finished: the job leaves the queue.
    Done,
    /// Not finished yet (the platform is unreachable, the payer is still paying): run again
    /// at `at`.
    Retry {
        /// When to run it again.
        at: Timestamp,
        /// Why it did not finish, kept with the job as its last error.
        reason: String,
    },
    /// Failed for good: kept with its error, never run again.
    Failed(String),
}

/// Runs the jobs of some kinds. A domain implements it for the work it queues; the server
/// claims due jobs of [`kinds`](JobHandler::kinds) from the [`JobStore`] and settles each
/// claim by the [`JobOutcome`]. A run must be idempotent: after a crash, a job whose lease
/// ran out is claimed again.
#[async_trait]
pub trait JobHandler: Send + Sync + 'static {
    /// The job kinds this handler runs, e.g. `payment.settle_transaction`.
    fn kinds(&self) -> Vec<String>;
    /// Runs one claimed job. Errors are outcomes (`Retry` or `Failed`), never panics.
    async fn run(&self, job: &Job) -> JobOutcome;
}

/// The delay before retry number `attempts` (the claims so far, 1 after the first run) on a
/// schedule of `steps`: the first step after the first run, then the next, staying at the
/// last. `None` once `attempts` reaches `max_attempts` (give up).
pub fn backoff(attempts: i32, steps: &[chrono::Duration], max_attempts: i32) -> Option<chrono::Duration> {
    if attempts >= max_attempts {
        return None;
    }
    let index = usize::try_from(attempts.max(1) - 1).unwrap_or(0);
    steps.get(index).or(steps.last()).copied()
}

/// Queues a job of `kind` at the next multiple of `every_secs` (Unix time) after `now`, keyed
/// by that time, so every instance queuing it queues one: a recurring job's run queues the
/// next (the sweep, the order expiry, the idempotency purge).
pub async fn schedule_every(jobs: &dyn JobStore, kind: &str, every_secs: i64, now: Timestamp) -> Result<()> {
    let next = now.timestamp() - now.timestamp().rem_euclid(every_secs) + every_secs;
    let run_at = chrono::DateTime::from_timestamp(next, 0).unwrap_or(now);
    jobs.enqueue(NewJob {
        kind: kind.into(),
        tenant_id: None,
        payload: serde_json::json!({}),
        run_at,
        dedupe_key: Some(run_at.to_rfc3339()),
    })
    .await
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn backoff_walks_the_steps_stays_at_the_last_and_gives_up() {
        let steps = [Duration::minutes(1), Duration::minutes(5), Duration::minutes(10), Duration::minutes(30)];
        let delays: Vec<_> = (1..=6).map(|a| backoff(a, &steps, 6)).collect();
        assert_eq!(
            delays,
            vec![
                Some(Duration::minutes(1)),
                Some(Duration::minutes(5)),
                Some(Duration::minutes(10)),
                Some(Duration::minutes(30)),
                Some(Duration::minutes(30)),
                None
            ]
        );
        assert_eq!(backoff(1, &[], 3), None);
    }
}
