//! Background job runners of an instance. None are registered yet; payment jobs will be,
//! through [`Jobs::spawn`]. Readiness fails while a runner has died, a stop tells every runner
//! to claim no new work, and each reports its queue depth and failures to the metrics.
use atrium_api::Metrics;
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

    /// Reports how many jobs of this kind wait to run.
    pub fn queue_depth(&self, depth: u64) {
        self.metrics.job_queue_depth(self.kind, depth);
    }

    /// Counts a failed run.
    pub fn failed(&self) {
        self.metrics.job_failed(self.kind);
    }
}

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
                ctx.queue_depth(3);
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
        jobs.spawn("refund", |ctx| async move { ctx.failed() });
        assert!(jobs.wait(Duration::from_secs(2)).await);
        assert_eq!(jobs.check(), Err("refund"));
        assert!(jobs.metrics.render().contains("atrium_jobs_failed_total{kind=\"refund\"} 1"));
    }
}
