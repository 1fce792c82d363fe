use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, Neg, Sub};

/// An amount of renminbi in fen (1 yuan = 100 fen). Never a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct Money(i64);

impl Money {
    pub const ZERO: Money = Money(0);

    pub const fn from_fen(fen: i64) -> Self {
        Money(fen)
    }

    /// Whole yuan; saturates rather than overflowing.
    pub const fn from_yuan(yuan: i64) -> Self {
        Money(yuan.saturating_mul(100))
    }

    pub const fn fen(self) -> i64 {
        self.0
    }

    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    pub const fn is_positive(self) -> bool {
        self.0 > 0
    }

    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.0.checked_add(other.0).map(Money)
    }

    pub fn checked_sub(self, other: Money) -> Option<Money> {
        self.0.checked_sub(other.0).map(Money)
    }

    pub fn max(self, other: Money) -> Money {
        Money(self.0.max(other.0))
    }

    pub fn min(self, other: Money) -> Money {
        Money(self.0.min(other.0))
    }
}

impl Add for Money {
    type Output = Money;
    fn add(self, rhs: Money) -> Money {
        Money(self.0.saturating_add(rhs.0))
    }
}

impl Sub for Money {
    type Output = Money;
    fn sub(self, rhs: Money) -> Money {
        Money(self.0.saturating_sub(rhs.0))
    }
}

impl Neg for Money {
    type Output = Money;
    fn neg(self) -> Money {
        Money(self.0.saturating_neg())
    }
}

impl std::iter::Sum for Money {
    fn sum<I: Iterator<Item = Money>>(iter: I) -> Money {
        iter.fold(Money::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for Money {
    /// Yuan with two decimals, e.g. `-12.05`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_yuan_with_two_decimals() {
        assert_eq!(Money::from_fen(123_456).to_string(), "1234.56");
        assert_eq!(Money::from_fen(-5).to_string(), "-0.05");
        assert_eq!(Money::from_yuan(3).to_string(), "3.00");
    }

    #[test]
    fn arithmetic_saturates_instead_of_overflowing() {
        assert_eq!(Money::from_fen(i64::MAX) + Money::from_fen(1), Money::from_fen(i64::MAX));
        assert_eq!(Money::from_fen(1).checked_add(Money::from_fen(i64::MAX)), None);
    }

    #[test]
    fn serialises_as_a_bare_integer() {
        assert_eq!(serde_json::to_string(&Money::from_fen(100)).unwrap(), "100");
    }
}
