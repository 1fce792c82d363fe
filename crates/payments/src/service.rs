//! The payment use cases ([`PaymentService`]) and their jobs.
mod discrepancies;
mod earnings;
mod jobs;
mod ledger;
mod payments;
mod plans;
mod provider;
mod returns;
mod share_checks;
mod sharing;

pub use jobs::{
    MAX_ATTEMPTS, RECONCILE, RECONCILE_AT_CST, RECONCILE_DAY, SETTLE_BACKOFF, SETTLE_REFUND, SETTLE_TRANSACTION, SWEEP, SWEEP_EVERY_SECS,
};
pub use payments::{ORDER_CHANGED, OrderChanged, PaymentService, platform_error};
pub use plans::MAX_BP;
pub use share_checks::RECONCILE_SHARES;
pub use sharing::SHARE;

#[cfg(test)]
mod tests;
