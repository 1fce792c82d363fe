//! Service tests against mocked ports, one file per service.
use crate::ports::MockAccessChanged;
use atrium_kernel::{Actor, FixedClock, Party, Timestamp};
use chrono::TimeZone;
use std::sync::Arc;

mod audit;
mod employees;
mod partners;
mod tenants;

fn now() -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).single().expect("valid")
}

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(now()))
}

fn actor(party: Party, perms: &[&str]) -> Actor {
    Actor::new(10, "s", party, perms.iter().copied())
}

fn quiet_access() -> Arc<MockAccessChanged> {
    Arc::new(MockAccessChanged::new())
}
