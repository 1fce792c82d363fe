//! What each tenant may spend of the third-party platform's audit resources, which every
//! mini-program shares: the audit quota (one unit per submission), the speed-ups, and the
//! undos that make room for another submission. Without a budget, one tenant's admin could
//! submit, speed up and withdraw in a loop until the platform's quota is 0 for everyone.
//!
//! - Each tenant has a budget per kind — at most `limit` in any `period`, for every window
//!   given (`3/1h,10/30d`: three an hour and ten in thirty days) — counted on the database, so
//!   every instance shares it, and never passed even by calls at the same moment. A call over
//!   it is a 429 whose `Retry-After` says when the oldest spend leaves the full window.
//! - The platform keeps a share of its own: a tenant's or partner's submission or speed-up is
//!   refused (429) while the platform's quota is at or below `reserve_percent` of its limit.
//!   The platform's users and release campaigns spend without a tenant budget and may use the
//!   reserve.
//! - A call the platform refuses or does not answer gives its spend back.
use atrium_kernel::Party;

/// What a tenant spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// An audit submission: one unit of the platform's audit quota.
    Submit,
    /// A speed-up of a running audit: one of the platform's speed-ups.
    Speedup,
    /// A withdrawal of a running audit (the quota unit is not given back).
    Undo,
}

impl Spend {
    /// The name in buckets and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Spend::Submit => "submit",
            Spend::Speedup => "speedup",
            Spend::Undo => "undo",
        }
    }

    /// The words for it in a refusal.
    fn words(self) -> &'static str {
        match self {
            Spend::Submit => "audit submissions",
            Spend::Speedup => "audit speed-ups",
            Spend::Undo => "audit withdrawals",
        }
    }

    /// The counter of `tenant_id`'s spends of this kind.
    pub fn bucket(self, tenant_id: atrium_kernel::Id) -> String {
        format!("mp-{}:tenant:{tenant_id}", self.as_str())
    }
}

/// Whose share a call spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// The tenant's budget (a tenant's or a partner's user on the routes).
    Tenant,
    /// The platform's own (its users, and release campaigns): no tenant budget, and the
    /// reserve is theirs.
    Platform,
}

impl Share {
    /// The share a caller of the routes spends.
    pub fn of(party: Party) -> Share {
        match party {
            Party::Platform => Share::Platform,
            Party::Partner { .. } | Party::Tenant { .. } => Share::Tenant,
        }
    }
}

/// At most `limit` spends in any `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// How many.
    pub limit: u32,
    /// In how long.
    pub period: chrono::Duration,
}

impl Window {
    /// `limit` in `period`.
    pub fn new(limit: u32, period: chrono::Duration) -> Self {
        Window { limit, period }
    }

    /// `3/1h` and the like.
    fn describe(&self) -> String {
        let s = self.period.num_seconds();
        let period = if s % 86_400 == 0 {
            format!("{} day(s)", s / 86_400)
        } else if s % 3_600 == 0 {
            format!("{} hour(s)", s / 3_600)
        } else if s % 60 == 0 {
            format!("{} minute(s)", s / 60)
        } else {
            format!("{s} second(s)")
        };
        format!("{} in {period}", self.limit)
    }
}

/// What [`crate::ReleaseTaskRepo::spend`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spent {
    /// Recorded.
    Recorded,
    /// Not recorded: a window is full.
    Refused {
        /// The full window.
        window: Window,
        /// When its oldest spend leaves it, from now.
        retry_after: chrono::Duration,
    },
}

/// Each tenant's budgets, and the platform's reserve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditBudgets {
    /// Submissions (`ATRIUM_MINIPROGRAM_SUBMIT_BUDGET`, default `3/1h,10/30d`).
    pub submit: Vec<Window>,
    /// Speed-ups (`ATRIUM_MINIPROGRAM_SPEEDUP_BUDGET`, default `1/1h,3/30d`).
    pub speedup: Vec<Window>,
    /// Undos (`ATRIUM_MINIPROGRAM_UNDO_BUDGET`, default `2/1h,5/30d`).
    pub undo: Vec<Window>,
    /// The percentage of the platform's audit quota and speed-ups that tenants' and partners'
    /// calls leave to the platform and its campaigns (`ATRIUM_MINIPROGRAM_QUOTA_RESERVE`,
    /// default 20).
    pub reserve_percent: u8,
}

impl Default for AuditBudgets {
    fn default() -> Self {
        let hour = chrono::Duration::hours(1);
        let month = chrono::Duration::days(30);
        AuditBudgets {
            submit: vec![Window::new(3, hour), Window::new(10, month)],
            speedup: vec![Window::new(1, hour), Window::new(3, month)],
            undo: vec![Window::new(2, hour), Window::new(5, month)],
            reserve_percent: 20,
        }
    }
}

impl AuditBudgets {
    /// The windows of `spend`.
    pub fn windows(&self, spend: Spend) -> &[Window] {
        match spend {
            Spend::Submit => &self.submit,
            Spend::Speedup => &self.speedup,
            Spend::Undo => &self.undo,
        }
    }

    /// Whether a tenant's call may take the platform's resource down from `rest` of `limit`:
    /// not when what is left is within the reserve.
    pub fn leaves_reserve(&self, rest: i64, limit: i64) -> bool {
        if limit <= 0 {
            return rest > 0;
        }
        // rest / limit > reserve / 100, in whole numbers.
        rest.saturating_mul(100) > limit.saturating_mul(i64::from(self.reserve_percent))
    }

    /// The refusal of a spend over `window`.
    pub fn refusal(spend: Spend, window: Window, retry_after: chrono::Duration) -> atrium_kernel::Error {
        atrium_kernel::Error::RateLimited {
            message: format!("the tenant has used its budget of {} ({}); try again later", spend.words(), window.describe()),
            retry_after_secs: u64::try_from(retry_after.num_seconds().max(1)).unwrap_or(1),
        }
    }
}

/// Windows as configured: `N/PERIOD` separated by commas, PERIOD a number and `s`, `m`, `h` or
/// `d` (`3/1h,10/30d`); `off` (or nothing) for no budget.
pub fn parse_windows(text: &str) -> Result<Vec<Window>, String> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("off") {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|part| {
            let part = part.trim();
            let bad = || format!("{part:?} is not N/PERIOD (such as 3/1h or 10/30d)");
            let (n, period) = part.split_once('/').ok_or_else(bad)?;
            let limit: u32 = n.trim().parse().map_err(|_| bad())?;
            let period = period.trim();
            let unit = period.chars().last().ok_or_else(bad)?;
            let amount: i64 = period[..period.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
            let seconds = match unit {
                's' => Some(1),
                'm' => Some(60),
                'h' => Some(3_600),
                'd' => Some(86_400),
                _ => None,
            }
            .ok_or_else(bad)?;
            // At most a year: the counts are kept that long.
            if !(1..=366 * 86_400).contains(&amount.saturating_mul(seconds)) {
                return Err(format!("{part:?}: the period must be 1 second to 366 days"));
            }
            Ok(Window::new(limit, chrono::Duration::seconds(amount * seconds)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_and_bad_ones_say_why() {
        assert_eq!(
            parse_windows("3/1h, 10/30d").unwrap(),
            [Window::new(3, chrono::Duration::hours(1)), Window::new(10, chrono::Duration::days(30))]
        );
        assert_eq!(parse_windows("0/90s").unwrap(), [Window::new(0, chrono::Duration::seconds(90))]);
        assert!(parse_windows("off").unwrap().is_empty());
        assert!(parse_windows("").unwrap().is_empty());
        for bad in ["3", "3/", "x/1h", "3/1w", "3/h", "-1/1h", "3/0h", "3/400d", "3/99999999999999999d"] {
            assert!(parse_windows(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_reserve_is_kept_for_the_platform() {
        let b = AuditBudgets::default();
        assert!(b.leaves_reserve(21, 100));
        assert!(!b.leaves_reserve(20, 100), "at the reserve, tenants stop");
        assert!(!b.leaves_reserve(0, 100));
        assert!(b.leaves_reserve(3, 10));
        assert!(!b.leaves_reserve(2, 10));
        let none = AuditBudgets { reserve_percent: 0, ..AuditBudgets::default() };
        assert!(none.leaves_reserve(1, 100));
        assert!(!none.leaves_reserve(0, 100));
    }

    #[test]
    fn a_refusal_says_which_budget_and_when() {
        let e = AuditBudgets::refusal(Spend::Speedup, Window::new(1, chrono::Duration::hours(1)), chrono::Duration::seconds(1800));
        match e {
            atrium_kernel::Error::RateLimited { message, retry_after_secs } => {
                assert_eq!(retry_after_secs, 1800);
                assert!(message.contains("audit speed-ups (1 in 1 hour(s))"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
