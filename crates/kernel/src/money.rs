use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// An amount of renminbi in fen (1 yuan = 100 fen). Never a float.
///
/// There is no `+` or `-`: every sum of money is checked ([`Money::checked_add`] and friends
/// return [`Overflow`]), so an out-of-range figure is an error, never a silently wrong one.
///
/// Deserialising is for amounts a caller enters: it accepts `0..=`[`Money::MAX_INPUT`] only.
/// Figures the system computed (which may be negative or larger) are read back with
/// [`Money::deserialize_computed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct Money(i64);

/// A money operation whose result does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the amount is out of range")]
pub struct Overflow;

impl Money {
    /// No money.
    pub const ZERO: Money = Money(0);

    /// The largest amount a caller may enter: 10,000,000,000.00 yuan. Far above any salary or
    /// policy figure, and small enough that a year of a large sheet's sums stays exact in i64.
    pub const MAX_INPUT: Money = Money(1_000_000_000_000);

    /// An amount of `fen` fen (1 yuan = 100 fen), as stored and sent on the wire.
    pub const fn from_fen(fen: i64) -> Self {
        Money(fen)
    }

    /// Whole yuan; saturates rather than overflowing (for constants and tests, not input).
    pub const fn from_yuan(yuan: i64) -> Self {
        Money(yuan.saturating_mul(100))
    }

    /// The amount in fen.
    pub const fn fen(self) -> i64 {
        self.0
    }

    /// Whether the amount is below zero (a refund or an adjustment, never an input).
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// Whether the amount is above zero.
    pub const fn is_positive(self) -> bool {
        self.0 > 0
    }

    /// `self + other`, or [`Overflow`] when the sum does not fit in i64 fen.
    ///
    /// ```
    /// use atrium_kernel::Money;
    ///
    /// let total = Money::from_yuan(12).checked_add(Money::from_fen(50))?;
    /// assert_eq!(total, Money::from_fen(1_250));
    /// assert!(Money::from_fen(i64::MAX).checked_add(Money::from_fen(1)).is_err());
    /// # Ok::<(), atrium_kernel::Overflow>(())
    /// ```
    pub fn checked_add(self, other: Money) -> Result<Money, Overflow> {
        self.0.checked_add(other.0).map(Money).ok_or(Overflow)
    }

    /// `self − other`, or [`Overflow`] when the difference does not fit in i64 fen.
    pub fn checked_sub(self, other: Money) -> Result<Money, Overflow> {
        self.0.checked_sub(other.0).map(Money).ok_or(Overflow)
    }

    /// `self × n`, e.g. a monthly amount over `n` months.
    pub fn checked_mul(self, n: i64) -> Result<Money, Overflow> {
        self.0.checked_mul(n).map(Money).ok_or(Overflow)
    }

    /// The sum of `amounts`, or `Overflow` as soon as it no longer fits.
    pub fn checked_sum(amounts: impl IntoIterator<Item = Money>) -> Result<Money, Overflow> {
        amounts.into_iter().try_fold(Money::ZERO, Money::checked_add)
    }

    /// Whether this is an amount a caller may enter: `0..=MAX_INPUT`. The message suits a
    /// field error.
    pub fn check_input(self) -> Result<Money, &'static str> {
        if self.0 < 0 {
            Err("must not be negative")
        } else if self > Money::MAX_INPUT {
            Err("must be at most 1000000000000 fen (10,000,000,000.00 yuan)")
        } else {
            Ok(self)
        }
    }

    /// Any i64 fen, for figures the system computed and stored (sums, results, negative
    /// adjustments): `#[serde(deserialize_with = "Money::deserialize_computed")]`.
    pub fn deserialize_computed<'de, D: Deserializer<'de>>(d: D) -> Result<Money, D::Error> {
        i64::deserialize(d).map(Money)
    }

    /// The larger of the two amounts.
    pub fn max(self, other: Money) -> Money {
        Money(self.0.max(other.0))
    }

    /// The smaller of the two amounts.
    pub fn min(self, other: Money) -> Money {
        Money(self.0.min(other.0))
    }
}

/// Input amounts only: out of `0..=MAX_INPUT` is an error naming the field it came from.
impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Money, D::Error> {
        Money(i64::deserialize(d)?).check_input().map_err(serde::de::Error::custom)
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
    fn arithmetic_is_checked_instead_of_saturating() {
        assert_eq!(Money::from_fen(i64::MAX).checked_add(Money::from_fen(1)), Err(Overflow));
        assert_eq!(Money::from_fen(i64::MIN).checked_sub(Money::from_fen(1)), Err(Overflow));
        assert_eq!(Money::from_fen(i64::MAX / 2 + 1).checked_mul(2), Err(Overflow));
        assert_eq!(Money::checked_sum([Money::from_fen(i64::MAX), Money::from_fen(1), Money::from_fen(-1)]), Err(Overflow));
        assert_eq!(Money::from_fen(2).checked_add(Money::from_fen(3)), Ok(Money::from_fen(5)));
        assert_eq!(Money::from_fen(2).checked_sub(Money::from_fen(3)), Ok(Money::from_fen(-1)));
        assert_eq!(Money::checked_sum([Money::from_fen(1), Money::from_fen(2)]), Ok(Money::from_fen(3)));
    }

    #[test]
    fn serialises_as_a_bare_integer() {
        assert_eq!(serde_json::to_string(&Money::from_fen(100)).unwrap(), "100");
    }

    #[test]
    fn an_input_amount_is_between_zero_and_ten_billion_yuan() {
        assert_eq!(serde_json::from_str::<Money>("0").unwrap(), Money::ZERO);
        assert_eq!(serde_json::from_str::<Money>("1000000000000").unwrap(), Money::MAX_INPUT);
        for bad in ["1000000000001", "9223372036854775807", "9223372036854775808", "-1", "1.5", "\"100\""] {
            assert!(serde_json::from_str::<Money>(bad).is_err(), "{bad} was accepted");
        }
        let err = serde_json::from_str::<Money>("9223372036854775807").unwrap_err().to_string();
        assert!(err.contains("at most"), "{err}");
    }

    #[test]
    fn a_computed_figure_reads_back_whatever_its_size_or_sign() {
        #[derive(Deserialize)]
        struct Stored {
            #[serde(deserialize_with = "Money::deserialize_computed")]
            figure: Money,
        }
        for fen in [-5, i64::MAX] {
            let stored: Stored = serde_json::from_value(serde_json::json!({ "figure": fen })).unwrap();
            assert_eq!(stored.figure, Money::from_fen(fen));
        }
    }
}
