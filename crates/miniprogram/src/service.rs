//! The mini-program use cases, one service per resource: [`PaymentService`] for now.
mod payment_jobs;
mod payments;

pub use payment_jobs::{MAX_ATTEMPTS, RECONCILE, RECONCILE_AT_CST, RECONCILE_DAY, SETTLE_BACKOFF, SETTLE_REFUND, SETTLE_TRANSACTION};
pub use payments::{PaymentService, platform_error};

#[cfg(test)]
mod tests;
