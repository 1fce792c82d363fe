//! Background job runners of an instance. [`Jobs::run_queue`] drains the durable job queue
//! for one [`JobHandler`] (the payment jobs, the idempotency purge): it claims one due job at
//! a time — several instances share the queue, and a claim leases the job so no two run it
//! at once — and settles each claim by the handler's outcome. Readiness fails while a runner
//! has died, a stop tells every runner to claim no new work, and each reports its queue
//! depth, completions and failures to the metrics: the runner by its name
//! (`atrium_job_runners{runner}`), its jobs by their kind (`atrium_jobs_queued{kind}`, …).
use atrium_api::Metrics;
use atrium_kernel::{IdempotencyStore, Job, JobHandler, JobOutcome, JobStore};
use atrium_miniprogram::{AuthorizationService, RecordRetention};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What a runner gets: whether to stop claiming work, and its metrics.
#[derive(Clone)]
pub struct JobContext {
    /// The runner's name (`payments`), not a job kind.
    pub runner: &'static str,
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

    /// Makes the series of job kind `kind` appear at zero: the runner runs jobs of it.
    pub fn runs_kind(&self, kind: &str) {
        self.metrics.job_kind(kind);
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
    name: &'static str,
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

    /// Starts the runner named `name` on the runtime; it should loop until
    /// [`JobContext::stopping`], claiming one job at a time.
    pub fn spawn<F, Fut>(&self, name: &'static str, run: F)
    where
        F: FnOnce(JobContext) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let ctx = JobContext { runner: name, stop: self.stop.subscribe(), metrics: self.metrics.clone() };
        let metrics = self.metrics.clone();
        metrics.job_runner(name, true);
        let work = run(ctx);
        let task = tokio::spawn(async move {
            work.await;
            metrics.job_runner(name, false);
        });
        self.lock().push(Runner { name, task });
    }

    /// Starts a runner named `name` that claims and runs `handler`'s jobs from `store` until
    /// the instance stops, looking again every `poll` while nothing is due.
    pub fn run_queue(&self, name: &'static str, store: Arc<dyn JobStore>, handler: Arc<dyn JobHandler>, poll: Duration) {
        self.spawn(name, move |mut ctx| async move {
            let kinds = handler.kinds();
            for kind in &kinds {
                ctx.runs_kind(kind);
            }
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

    /// `Err(name)` for a runner that has ended although the instance is not stopping.
    pub fn check(&self) -> Result<(), &'static str> {
        if *self.stop.borrow() {
            return Ok(());
        }
        match self.lock().iter().find(|r| r.task.is_finished()) {
            Some(dead) => Err(dead.name),
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

/// The names of the runners of the sharing pool (`ATRIUM_SHARING_RUNNERS`, at most this many).
pub const SHARING_RUNNERS: [&str; 16] = [
    "sharing-1",
    "sharing-2",
    "sharing-3",
    "sharing-4",
    "sharing-5",
    "sharing-6",
    "sharing-7",
    "sharing-8",
    "sharing-9",
    "sharing-10",
    "sharing-11",
    "sharing-12",
    "sharing-13",
    "sharing-14",
    "sharing-15",
    "sharing-16",
];

/// Some of a handler's job kinds, so a pool of runners serves them apart from the others
/// (the sharing job's runners, which spend their time waiting on the pay platform).
pub struct OnlyKinds {
    pub handler: Arc<dyn JobHandler>,
    pub kinds: Vec<String>,
}

impl OnlyKinds {
    /// `handler`'s kinds among `kinds` (`keep`), or all but them.
    pub fn of(handler: Arc<dyn JobHandler>, kinds: &[&str], keep: bool) -> Self {
        let kinds = handler.kinds().into_iter().filter(|k| kinds.contains(&k.as_str()) == keep).collect();
        OnlyKinds { handler, kinds }
    }
}

#[async_trait::async_trait]
impl JobHandler for OnlyKinds {
    fn kinds(&self) -> Vec<String> {
        self.kinds.clone()
    }

    async fn run(&self, job: &Job) -> JobOutcome {
        self.handler.run(job).await
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

/// `miniprogram.purge`: removes authorisation attempts past their expiry and ids of processed
/// pushed events past their retention, every `every_secs` (an hour by default), a batch at a
/// time. Runs on one instance per period (the period is its key); were two to run at once,
/// each row would still go once.
pub struct ReleasePurge {
    pub authorizations: Arc<AuthorizationService>,
    pub jobs: Arc<dyn JobStore>,
    pub every_secs: i64,
    pub retention: RecordRetention,
}

pub const RELEASE_PURGE: &str = "miniprogram.purge";
/// Rows of each kind one delete removes at most.
const RELEASE_PURGE_BATCH: u32 = 500;

impl ReleasePurge {
    /// Queues the next purge (once across instances: its time is its key).
    pub async fn schedule(&self) -> atrium_kernel::Result<()> {
        atrium_kernel::jobs::schedule_every(self.jobs.as_ref(), RELEASE_PURGE, self.every_secs, chrono::Utc::now()).await
    }
}

#[async_trait::async_trait]
impl JobHandler for ReleasePurge {
    fn kinds(&self) -> Vec<String> {
        vec![RELEASE_PURGE.into()]
    }

    async fn run(&self, _job: &Job) -> JobOutcome {
        let now = chrono::Utc::now();
        match self.authorizations.purge_records(self.retention, RELEASE_PURGE_BATCH).await {
            Ok(n) if n.is_empty() => {}
            Ok(n) => log::info!(
                "purged {} expired authorisation attempts and {} processed event ids of the mini-program platform",
                n.attempts,
                n.events
            ),
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

    /// The metrics once they contain `line` (waited for up to 5 s: runners are tasks).
    async fn rendered_with(jobs: &Jobs, line: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let text = jobs.metrics.render();
            if text.contains(line) {
                return text;
            }
            assert!(tokio::time::Instant::now() < deadline, "no {line} in:\n{text}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A queue with nothing in it.
    struct Empty;

    #[async_trait::async_trait]
    impl JobStore for Empty {
        async fn enqueue(&self, _job: atrium_kernel::NewJob) -> atrium_kernel::Result<Option<atrium_kernel::Id>> {
            Ok(None)
        }
        async fn claim(&self, _: Vec<String>, _: atrium_kernel::Timestamp, _: i64) -> atrium_kernel::Result<Option<Job>> {
            Ok(None)
        }
        async fn complete(&self, _id: atrium_kernel::Id) -> atrium_kernel::Result<()> {
            Ok(())
        }
        async fn retry(&self, _id: atrium_kernel::Id, _: atrium_kernel::Timestamp, _: String) -> atrium_kernel::Result<()> {
            Ok(())
        }
        async fn fail(&self, _id: atrium_kernel::Id, _: String) -> atrium_kernel::Result<()> {
            Ok(())
        }
        async fn depth(&self, _kind: String, _: atrium_kernel::Timestamp) -> atrium_kernel::Result<u64> {
            Ok(0)
        }
    }

    /// Runs jobs of two kinds, and never gets one.
    struct TwoKinds;

    #[async_trait::async_trait]
    impl JobHandler for TwoKinds {
        fn kinds(&self) -> Vec<String> {
            vec!["letter.post".into(), "letter.return".into()]
        }
        async fn run(&self, _job: &Job) -> JobOutcome {
            JobOutcome::Done
        }
    }

    #[tokio::test]
    async fn a_queue_runner_is_labelled_by_its_name_and_its_jobs_by_their_kinds() {
        let jobs = jobs();
        jobs.run_queue("letters", Arc::new(Empty), Arc::new(TwoKinds), Duration::from_millis(10));

        let text = rendered_with(&jobs, "atrium_jobs_queued{kind=\"letter.return\"} 0").await;
        assert!(text.contains("atrium_job_runners{runner=\"letters\"} 1"), "{text}");
        for kind in ["letter.post", "letter.return"] {
            for series in ["atrium_jobs_queued", "atrium_jobs_failed_total", "atrium_jobs_completed_total"] {
                assert!(text.contains(&format!("{series}{{kind=\"{kind}\"}} 0")), "no {series} of {kind}:\n{text}");
            }
        }
        assert!(!text.contains("kind=\"letters\"") && !text.contains("runner=\"letter."), "labels mixed up:\n{text}");
        jobs.stop_claiming();
        assert!(jobs.wait(Duration::from_secs(2)).await);
    }

    #[tokio::test]
    async fn a_stop_ends_runners_that_watch_it_and_readiness_stays_ok() {
        let jobs = jobs();
        jobs.spawn("payouts", |mut ctx| async move {
            while !ctx.stopping() {
                ctx.queue_depth("payout.settle", 3);
                ctx.stopped().await;
            }
        });
        let text = rendered_with(&jobs, "atrium_jobs_queued{kind=\"payout.settle\"} 3").await;
        assert_eq!(jobs.check(), Ok(()));
        assert!(text.contains("atrium_job_runners{runner=\"payouts\"} 1"), "{text}");
        assert!(!text.contains("{kind=\"payouts\"}"), "a runner's name is not a job kind: {text}");

        jobs.stop_claiming();

        assert!(jobs.wait(Duration::from_secs(2)).await);
        assert_eq!(jobs.check(), Ok(()));
        assert!(jobs.metrics.render().contains("atrium_job_runners{runner=\"payouts\"} 0"));
    }

    #[tokio::test]
    async fn a_runner_that_died_makes_the_instance_unready() {
        let jobs = jobs();
        jobs.spawn("refunds", |ctx| async move { ctx.failed("refund.settle") });
        assert!(jobs.wait(Duration::from_secs(2)).await);
        assert_eq!(jobs.check(), Err("refunds"));
        let text = jobs.metrics.render();
        assert!(text.contains("atrium_jobs_failed_total{kind=\"refund.settle\"} 1"), "{text}");
        assert!(text.contains("atrium_job_runners{runner=\"refunds\"} 0"), "{text}");
    }

    /// The purge job, queued on an empty SQLite database every second, removes the expired
    /// attempts and old event ids it finds there and leaves the rest.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_release_purge_runs_on_its_schedule_and_removes_only_what_is_past_its_retention() {
        use atrium_miniprogram::{AuthorizationAttempt, AuthorizationRepo, ReleaseSettings};
        use atrium_org::{Tenant, TenantRepo};
        use atrium_store::{DbJobStore, FieldCipher, OrgStore, ReleaseStore, testing::TestDatabase};

        let tdb = TestDatabase::sqlite();
        let db = tdb.open();
        let now = chrono::Utc::now();
        let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
        let audit = atrium_kernel::AuditRecord::system(now, "tenant.create", "tenant", None);
        let tenant = org.insert_tenant(Tenant::draft(None, "T", now), atrium_kernel::Effects::audited(audit)).await.unwrap().id;
        let store = Arc::new(ReleaseStore::new(db.clone(), FieldCipher::new(&[9u8; 32])));
        for (state, expires_at) in [("expired", now - chrono::Duration::days(2)), ("live", now + chrono::Duration::minutes(30))] {
            let attempt = AuthorizationAttempt {
                state_hash: state.into(),
                tenant_id: tenant,
                pre_auth_code: format!("code-{state}"),
                created_by: 1,
                created_at: now - chrono::Duration::days(3),
                expires_at,
            };
            store.insert_authorization_attempt(attempt).await.unwrap();
        }
        store.record_event("old".into(), "component_verify_ticket".into(), now - chrono::Duration::days(8)).await.unwrap();
        store.record_event("recent".into(), "component_verify_ticket".into(), now - chrono::Duration::minutes(5)).await.unwrap();

        let clock: Arc<dyn atrium_kernel::Clock> = Arc::new(atrium_kernel::SystemClock);
        let authorizations = Arc::new(AuthorizationService::new(
            store.clone(),
            Arc::new(crate::adapters::UnconfiguredPlatform),
            clock,
            ReleaseSettings::new("http://127.0.0.1"),
        ));
        let job_store: Arc<dyn JobStore> = Arc::new(DbJobStore::new(db.clone()));
        let purge =
            Arc::new(ReleasePurge { authorizations, jobs: job_store.clone(), every_secs: 1, retention: RecordRetention::default() });
        purge.schedule().await.unwrap();
        let jobs = jobs();
        jobs.run_queue("release_purge", job_store, purge, Duration::from_millis(10));

        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while store.authorization_attempt_by_code("code-expired".into()).await.unwrap().is_some()
            || store.event_seen("old".into()).await.unwrap()
        {
            assert!(tokio::time::Instant::now() < deadline, "the purge did not run");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        jobs.stop_claiming();
        assert!(jobs.wait(Duration::from_secs(5)).await);
        assert!(store.authorization_attempt_by_code("code-live".into()).await.unwrap().is_some());
        assert!(store.event_seen("recent".into()).await.unwrap());
    }
}
