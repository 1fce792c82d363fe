//! The release jobs, run from the durable job queue:
//!
//! - `miniprogram.upload` is queued with each upload task and runs it
//!   ([`PipelineService::run_upload`]). While the platform or the uploader is unavailable it
//!   runs again on [`UPLOAD_BACKOFF`]; the task itself fails after the configured attempts.
//! - `miniprogram.audit_poll` is queued with each audit, due the configured time after the
//!   submission (30 minutes by default). While the audit still runs it asks the platform again
//!   after as long, so an event the platform never delivered costs time, not correctness; it
//!   gives up after [`AUDIT_POLL_MAX`] polls (`GET /miniprogram/audit/status` still asks).
//!
//! Both are idempotent: a finished task is left alone, and every write is conditional on the
//! state it was read in.
use super::pipeline::{AUDIT_POLL_JOB, PipelineService, UPLOAD_JOB};
use atrium_kernel::jobs::backoff;
use atrium_kernel::{Error, Id, Job, JobHandler, JobOutcome};
use chrono::Duration;
use serde::Deserialize;

/// The waits between runs of an upload job that could not finish: 1, 5, then 10 minutes.
pub const UPLOAD_BACKOFF: [Duration; 3] = [Duration::minutes(1), Duration::minutes(5), Duration::minutes(10)];
/// Polls of one audit before the job gives up: two weeks at the default half hour.
pub const AUDIT_POLL_MAX: i32 = 672;
/// Runs of an upload job that failed for reasons of our own (the database) before it is
/// given up.
const UPLOAD_RUNS_MAX: i32 = 20;

#[derive(Deserialize)]
struct UploadPayload {
    upload_task_id: Id,
}

#[derive(Deserialize)]
struct AuditPayload {
    audit_task_id: Id,
}

fn parse<T: for<'de> Deserialize<'de>>(job: &Job) -> Result<T, JobOutcome> {
    serde_json::from_value(job.payload.clone()).map_err(|e| JobOutcome::Failed(format!("unreadable {} payload: {e}", job.kind)))
}

impl PipelineService {
    async fn upload_job(&self, job: &Job) -> JobOutcome {
        let id = match parse::<UploadPayload>(job) {
            Ok(p) => p.upload_task_id,
            Err(outcome) => return outcome,
        };
        let attempt = u32::try_from(job.attempts.max(1)).unwrap_or(u32::MAX);
        match self.run_upload(id, attempt).await {
            Ok(_) => JobOutcome::Done,
            Err(Error::NotFound(what)) => JobOutcome::Failed(format!("{what} {id} not found")),
            Err(e) => match backoff(job.attempts, &UPLOAD_BACKOFF, UPLOAD_RUNS_MAX) {
                Some(wait) => JobOutcome::Retry { at: self.clock().now() + wait, reason: e.to_string() },
                None => JobOutcome::Failed(format!("given up after {} runs: {e}", job.attempts)),
            },
        }
    }

    async fn audit_poll_job(&self, job: &Job) -> JobOutcome {
        let id = match parse::<AuditPayload>(job) {
            Ok(p) => p.audit_task_id,
            Err(outcome) => return outcome,
        };
        let why = match self.poll_audit(id).await {
            Ok(view) if !view.status.is_running() => return JobOutcome::Done,
            Ok(view) => format!("the audit is still {}", atrium_kernel::StrEnum::as_str(view.status)),
            Err(Error::NotFound(what)) => return JobOutcome::Failed(format!("{what} {id} not found")),
            Err(e) => e.to_string(),
        };
        if job.attempts >= AUDIT_POLL_MAX {
            return JobOutcome::Failed(format!("given up after {} polls: {why}", job.attempts));
        }
        JobOutcome::Retry { at: self.clock().now() + self.settings().audit_poll_after, reason: why }
    }
}

#[async_trait::async_trait]
impl JobHandler for PipelineService {
    fn kinds(&self) -> Vec<String> {
        [UPLOAD_JOB, AUDIT_POLL_JOB].map(String::from).to_vec()
    }

    async fn run(&self, job: &Job) -> JobOutcome {
        match job.kind.as_str() {
            UPLOAD_JOB => self.upload_job(job).await,
            AUDIT_POLL_JOB => self.audit_poll_job(job).await,
            other => JobOutcome::Failed(format!("the release jobs do not run {other} jobs")),
        }
    }
}
