use crate::Timestamp;
use std::sync::Mutex;

/// The time source. Services take it as a port so tests can fix or advance time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The wall clock, to the microsecond: what both databases store, so a record a repository
/// writes is exactly the record it would read back (and writes need not read back).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        use chrono::SubsecRound;
        chrono::Utc::now().trunc_subsecs(6)
    }
}

/// A clock for tests: starts at a given instant and moves only when told to.
#[derive(Debug)]
pub struct FixedClock(Mutex<Timestamp>);

impl FixedClock {
    pub fn new(at: Timestamp) -> Self {
        FixedClock(Mutex::new(at))
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *t += by;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
