//! Background job runners of an instance. [`Jobs::run_queue`] drains the durable job queue
//! for one [`JobHandler`] (the payment jobs, the idempotency purge): it claims one due job at
//! a time — several instances share the queue, and a claim leases the job so no two run it
//! at once — and settles each claim by the handler's outcome. Readiness fails while a runner
//! has died, a stop tells every runner to claim no new work, and each reports its queue
//! depth, completions and failures to the metrics.
use atrium_api::Metrics;
use atrium_kernel::{IdempotencyStore, Job, JobHandler, JobOutcome, JobStore};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What a runner gets: whether to stop claiming work, and its metrics.
#[derive(Clone)]
pub struct JobContext {
    pub kind: &'static str,
    stop: watch::Receiver<bool>,
    metrics: Arc<Metrics>,
}

impl JobContext {
    /// True once the instance is stopping: claim no new job, finish the one in hand.
    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Resolves when the instance starts stopping (to wake a runner that waits for work).
    pub async fn stopped(&mut self) {
        let _ = self.stop.wait_for(|s| *s).await;
    }

    /// Reports how many jobs of `kind` wait to run.
    pub fn queue_depth(&self, kind: &str, depth: u64) {
        self.metrics.job_queue_depth(kind, depth);
    }

    /// Counts a finished run of a job of `kind`.
    pub fn completed(&self, kind: &str) {
        self.metrics.job_completed(kind);
    }

    /// Counts a failed run of a job of `kind`.
    pub fn failed(&self, kind: &str) {
        self.metrics.job_failed(kind);
    }
}

/// How long a claim leases a job: longer than any run (a few platform calls, each with its
/// time-out and retries), so a job is claimed again only after its runner died.
pub const LEASE_SECS: i64 = 600;
/// How often a runner reports its queue depth.
const DEPTH_EVERY: Duration = Duration::from_secs(15);

struct Runner {
    kind: &'static str,
    task: JoinHandle<()>,
}

/// The runners of one instance.
pub struct Jobs {
    stop: watch::Sender<bool>,
    runners: Mutex<Vec<Runner>>,
    metrics: Arc<Metrics>,
}

impl Jobs {
    pub fn new(metrics: Arc<Metrics>) -> Jobs {
        Jobs { stop: watch::Sender::new(false), runners: Mutex::new(Vec::new()), metrics }
    }

    /// Starts the runner of `kind` on the runtime; it should loop until
    /// [`JobContext::stopping`], claiming one job at a time.
    pub fn spawn<F, Fut>(&self, kind: &'static str, run: F)
    where
        F: FnOnce(JobContext) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let ctx = JobContext { kind, stop: self.stop.subscribe(), metrics: self.metrics.clone() };
        let metrics = self.metrics.clone();
        metrics.job_runner(kind, true);
        let work = run(ctx);
        let task = tokio::spawn(async move {
            work.await;
            metrics.job_runner(kind, false);
        });
        self.lock().push(Runner { kind, task });
    }

    /// Starts a runner named `name` that claims and runs `handler`'s jobs from `store` until
    /// the instance stops, looking again every `poll` while nothing is due.
    pub fn run_queue(&self, name: &'static str, store: Arc<dyn JobStore>, handler: Arc<dyn JobHandler>, poll: Duration) {
        self.spawn(name, move |mut ctx| async move {
            let kinds = handler.kinds();
            let mut depth_at = tokio::time::Instant::now();
            while !ctx.stopping() {
                if tokio::time::Instant::now() >= depth_at {
                    depth_at += DEPTH_EVERY;
                    for kind in &kinds {
                        if let Ok(depth) = store.depth(kind.clone(), chrono::Utc::now()).await {
                            ctx.queue_depth(kind, depth);
                        }
                    }
                }
                match store.claim(kinds.clone(), chrono::Utc::now(), LEASE_SECS).await {
                    Ok(Some(job)) => {
                        run_one(&ctx, store.as_ref(), &handler, job).await;
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => log::warn!("{name} jobs: claiming failed: {e}"),
                }
                tokio::select! {
                    () = tokio::time::sleep(poll) => {}
                    () = ctx.stopped() => {}
                }
            }
        });
    }

    /// `Err(kind)` for a runner that has ended although the instance is not stopping.
    pub fn check(&self) -> Result<(), &'static str> {
        if *self.stop.borrow() {
            return Ok(());
        }
        match self.lock().iter().find(|r| r.task.is_finished()) {
            Some(dead) => Err(dead.kind),
            None => Ok(()),
        }
    }

    /// Tells every runner to claim no new job.
    pub fn stop_claiming(&self) {
        self.stop.send_replace(true);
    }

    /// Waits up to `timeout` for every runner to finish its job in hand; true if all did.
    pub async fn wait(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.lock().iter().all(|r| r.task.is_finished()) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Runner>> {
        self.runners.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Runs one claimed job and settles the claim. A panicking run is retried later like a
/// failed one; it never takes the runner down.
async fn run_one(ctx: &JobContext, store: &dyn JobStore, handler: &Arc<dyn JobHandler>, job: Job) {
    let run = {
        let (handler, job) = (handler.clone(), job.clone());
        tokio::spawn(async move { handler.run(&job).await })
    };
    let outcome = match run.await {
        Ok(outcome) => outcome,
        Err(_) => JobOutcome::Retry { at: chrono::Utc::now() + chrono::Duration::minutes(5), reason: "the run panicked".into() },
    };
    let (id, kind) = (job.id, job.kind.as_str());
    let settled = match outcome {
        JobOutcome::Done => {
            ctx.completed(kind);
            store.complete(id).await
        }
        JobOutcome::Retry { at, reason } => {
            log::info!("job {id} ({kind}, try {}) runs again at {at}: {reason}", job.attempts);
            store.retry(id, at, reason).await
        }
        JobOutcome::Failed(reason) => {
            log::error!("job {id} ({kind}) failed for good after {} tries: {reason}", job.attempts);
            ctx.failed(kind);
            store.fail(id, reason).await
        }
    };
    if let Err(e) = settled {
        // The lease runs out and the job is claimed again: runs are idempotent.
        log::error!("job {id} ({kind}): recording its outcome failed: {e}");
    }
}

/// `idempotency.purge`: removes idempotency records older than a day, every hour.
pub struct IdempotencyPurge {
    pub records: Arc<dyn IdempotencyStore>,
    pub jobs: Arc<dyn JobStore>,
}

pub const PURGE: &str = "idempotency.purge";
/// Idempotency records are kept at least this long.
const KEEP_RECORDS: chrono::Duration = chrono::Duration::hours(24);

impl IdempotencyPurge {
    /// Queues the purge of the next full hour (once across instances: the hour is its key).
    pub async fn schedule(&self) -> atrium_kernel::Result<()> {
        atrium_kernel::jobs::schedule_every(self.jobs.as_ref(), PURGE, 3600, chrono::Utc::now()).await
    }
}

#[async_trait::async_trait]
impl JobHandler for IdempotencyPurge {
    fn kinds(&self) -> Vec<String> {
        vec![PURGE.into()]
    }

    async fn run(&self, _job: &Job) -> JobOutcome {
        let now = chrono::Utc::now();
        match self.records.purge(now - KEEP_RECORDS).await {
            Ok(n) => log::info!("idempotency records purged: {n}"),
            Err(e) => return JobOutcome::Retry { at: now + chrono::Duration::minutes(5), reason: e.to_string() },
        }
        match self.schedule().await {
            Ok(()) => JobOutcome::Done,
            Err(e) => JobOutcome::Retry { at: now + chrono::Duration::minutes(5), reason: e.to_string() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs() -> Jobs {
        Jobs::new(Arc::new(Metrics::new(atrium_api::DbPoolStats::default)))
    }

    #[tokio::test]
    async fn a_stop_ends_runners_that_watch_it_and_readiness_stays_ok() {
        let jobs = jobs();
        jobs.spawn("payout", |mut ctx| async move {
            while !ctx.stopping() {
                ctx.queue_depth("payout", 3);
                ctx.stopped().await;
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(jobs.check(), Ok(()));
        assert!(jobs.metrics.render().contains("atrium_job_runners{kind=\"payout\"} 1"));

        jobs.stop_claiming();

        assert!(jobs.wait(Duration::from_secs(2)).await);
        assert_eq!(jobs.check(), Ok(()));
        assert!(jobs.metrics.render().contains("atrium_job_runners{kind=\"payout\"} 0"));
    }

    #[tokio::test]
    async fn a_runner_that_died_makes_the_instance_unready() {
        let jobs = jobs();
        jobs.spawn("refund", |ctx| async move { ctx.failed("refund") });
        assert!(jobs.wait(Duration::from_secs(2)).await);
        assert_eq!(jobs.check(), Err("refund"));
        assert!(jobs.metrics.render().contains("atrium_jobs_failed_total{kind=\"refund\"} 1"));
    }
}
