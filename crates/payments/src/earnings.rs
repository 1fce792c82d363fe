//! Statements of shared money: what a partner (its commission) or the platform (its share)
//! earned from the sub-merchant payments of a period, by day or by tenant.
//!
//! A statement covers the **paid sub-merchant transactions** whose payment succeeded in the
//! period (China Standard Time days, inclusive) and shows each as it stands now: what was paid
//! and refunded of them, and the earner's shares of them by where they stand. The sums are
//! made by the store in one query ([`PaymentRepo::earnings`](crate::PaymentRepo::earnings));
//! the rules of what counts where are written here and there once:
//!
//! - `paid`: every such transaction's amount, those too small to share anything included;
//! - `refunded`: their succeeded refunds;
//! - `shared`: what the earner's shares that succeeded paid it (a share's amount less what was
//!   withheld for refunds before a retry; a share later returned in full still counts, its
//!   return is under `returned`);
//! - `returned`: what the earner gave back of them before refunds;
//! - `pending`: its shares not settled yet (`pending` or `processing`);
//! - `failed`: its shares the platform closed and that are still closed;
//! - `net` = `shared` − `returned`: what the earner holds of the period's payments now.
use atrium_kernel::{Id, Money};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// At most this many days in one statement (a year, leap day included).
pub const MAX_STATEMENT_DAYS: i64 = 366;

/// Whose earnings a statement shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Earner {
    /// A partner's commission, over the tenants that partner brought (its tenants now).
    Partner(Id),
    /// The platform's share, over every sub-merchant tenant.
    Platform,
}

/// How a statement's rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum EarningsGroup {
    /// One row per China Standard Time day a payment succeeded on.
    #[default]
    Day,
    /// One row per tenant.
    Tenant,
}

/// What a statement row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EarningsKey {
    /// The payments that succeeded on this day (China Standard Time).
    Day(NaiveDate),
    /// The payments of this tenant.
    Tenant(Id),
}

/// The sums of a statement row (or of the whole statement), in fen (see the module
/// documentation for what each counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EarningsSums {
    /// What payers paid: every paid sub-merchant payment, those too small to share included.
    pub paid: Money,
    /// What was refunded of them (succeeded refunds).
    pub refunded: Money,
    /// What the earner's shares that succeeded paid it.
    pub shared: Money,
    /// What the earner gave back of them before refunds.
    pub returned: Money,
    /// The earner's shares not settled yet.
    pub pending: Money,
    /// The earner's shares the pay platform closed, still closed now (retry them).
    pub failed: Money,
}

impl EarningsSums {
    /// What the earner holds: shared less returned.
    pub fn net(&self) -> Money {
        Money::from_fen(self.shared.fen().saturating_sub(self.returned.fen()))
    }

    /// The sums of `self` and `other`.
    pub fn plus(self, other: EarningsSums) -> EarningsSums {
        // Sums of fen in an i64 cannot overflow with real money; they saturate rather than wrap.
        let add = |a: Money, b: Money| Money::from_fen(a.fen().saturating_add(b.fen()));
        EarningsSums {
            paid: add(self.paid, other.paid),
            refunded: add(self.refunded, other.refunded),
            shared: add(self.shared, other.shared),
            returned: add(self.returned, other.returned),
            pending: add(self.pending, other.pending),
            failed: add(self.failed, other.failed),
        }
    }
}

/// One row of a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarningsRow {
    /// The day or the tenant.
    pub key: EarningsKey,
    /// Its sums.
    pub sums: EarningsSums,
}

/// A statement: its rows in order (days ascending, tenants by id) and their totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earnings {
    /// The rows, only of days or tenants with a paid payment.
    pub rows: Vec<EarningsRow>,
    /// The sums of every row.
    pub totals: EarningsSums,
}

impl Earnings {
    /// The statement of `rows` (in any order): sorted, totalled.
    pub fn of(mut rows: Vec<EarningsRow>) -> Earnings {
        rows.sort_by_key(|r| r.key);
        let totals = rows.iter().fold(EarningsSums::default(), |sum, r| sum.plus(r.sums));
        Earnings { rows, totals }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(paid: i64, shared: i64, returned: i64) -> EarningsSums {
        EarningsSums {
            paid: Money::from_fen(paid),
            shared: Money::from_fen(shared),
            returned: Money::from_fen(returned),
            ..Default::default()
        }
    }

    #[test]
    fn a_statement_is_sorted_and_its_totals_are_the_sum_of_its_rows() {
        let day = |d| EarningsKey::Day(NaiveDate::from_ymd_opt(2026, 3, d).unwrap_or_default());
        let e =
            Earnings::of(vec![EarningsRow { key: day(3), sums: sums(10_001, 250, 0) }, EarningsRow { key: day(1), sums: sums(333, 8, 3) }]);
        assert_eq!(e.rows.iter().map(|r| r.key).collect::<Vec<_>>(), vec![day(1), day(3)]);
        assert_eq!(e.totals, sums(10_334, 258, 3));
        assert_eq!(e.totals.net(), Money::from_fen(255), "net is shared less returned");
        assert_eq!(Earnings::of(vec![]).totals, EarningsSums::default());
    }
}
