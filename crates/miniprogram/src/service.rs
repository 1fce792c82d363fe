//! The code-release use cases: [`ReleaseService`] and its jobs.
mod release_jobs;
mod releases;

pub use release_jobs::{AUDIT_POLL_MAX, UPLOAD_BACKOFF};
pub use releases::{AUDIT_POLL_JOB, ReleaseService, UPLOAD_JOB, release_platform_error};

#[cfg(test)]
mod tests;
