//! The mini-program use cases, one service per resource: [`PaymentService`] (with its jobs)
//! and [`ReleaseService`].
mod payment_jobs;
mod payments;
mod release_jobs;
mod releases;

pub use payment_jobs::{MAX_ATTEMPTS, RECONCILE, RECONCILE_AT_CST, RECONCILE_DAY, SETTLE_BACKOFF, SETTLE_REFUND, SETTLE_TRANSACTION};
pub use payments::{PaymentService, platform_error};
pub use release_jobs::{AUDIT_POLL_MAX, UPLOAD_BACKOFF};
pub use releases::{AUDIT_POLL_JOB, ReleaseService, UPLOAD_JOB, release_platform_error};

#[cfg(test)]
mod tests;
