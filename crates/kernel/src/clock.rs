use crate::Timestamp;
use std::sync::Mutex;

/// The time source. Services take it as a port so tests can fix or advance time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant, in UTC.
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
    /// A clock that reads `at` until it is advanced.
    pub fn new(at: Timestamp) -> Self {
        FixedClock(Mutex::new(at))
    }

    /// Moves the clock forward by `by` (backward if `by` is negative).
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

/// China Standard Time, UTC+8, without daylight saving: the pay platform's day (trade bills,
/// `time_expire`, `success_time`) and the payroll's calendar.
pub fn china_standard_time() -> chrono::FixedOffset {
    use chrono::Offset;
    chrono::FixedOffset::east_opt(8 * 3600).unwrap_or_else(|| chrono::Utc.fix())
}

/// The UTC bounds `[from, to)` of China Standard Time day `date`.
pub fn china_day(date: chrono::NaiveDate) -> (Timestamp, Timestamp) {
    let offset = chrono::Duration::seconds(i64::from(china_standard_time().local_minus_utc()));
    let from = date.and_time(chrono::NaiveTime::MIN).and_utc() - offset;
    (from, from + chrono::Duration::days(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_china_day_starts_at_sixteen_hours_utc_the_day_before() {
        let date = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap_or_default();
        let (from, to) = china_day(date);
        assert_eq!(from.to_rfc3339(), "2026-02-28T16:00:00+00:00");
        assert_eq!(to - from, chrono::Duration::days(1));
        assert_eq!(china_standard_time().local_minus_utc(), 8 * 3600);
    }
}
