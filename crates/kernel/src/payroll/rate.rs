use crate::Error;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Parts per million in one whole.
pub const PPM: i64 = 1_000_000;

/// A contribution rate in `[0, 1)`, written as a decimal string such as `"0.08"`.
///
/// Held as whole parts per million so the engine multiplies integers only; a rate therefore
/// has at most six decimal places (`"0.005"` is fine, `"0.0000005"` is rejected rather than
/// silently rounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rate(u32);

impl Rate {
    /// A rate of 0 (the contribution is not paid).
    pub const ZERO: Rate = Rate(0);

    /// Only for the crate's own constants, whose values are known to be in range.
    pub(crate) const fn from_ppm_const(ppm: u32) -> Rate {
        assert!((ppm as i64) < PPM);
        Rate(ppm)
    }

    /// A rate of `ppm` parts per million; fails unless `ppm < 1_000_000`.
    pub fn from_ppm(ppm: u32) -> Result<Rate, String> {
        if i64::from(ppm) < PPM { Ok(Rate(ppm)) } else { Err("must be at least 0 and less than 1".into()) }
    }

    /// Accepts a decimal in `[0, 1)` with at most six decimal places.
    pub fn new(value: Decimal) -> Result<Rate, String> {
        let value = value.normalize();
        let mantissa = value.mantissa();
        if mantissa < 0 || value >= Decimal::ONE {
            return Err("must be at least 0 and less than 1".into());
        }
        let scale = value.scale();
        if scale > 6 {
            return Err("must have at most six decimal places".into());
        }
        // 0 <= value < 1 with scale <= 6, so mantissa * 10^(6 - scale) < 10^6.
        let ppm = mantissa * 10_i128.pow(6 - scale);
        u32::try_from(ppm).map_err(|_| "must be at least 0 and less than 1".to_string()).and_then(Rate::from_ppm)
    }

    /// Parses a decimal string such as `"0.08"`.
    pub fn parse(raw: &str) -> Result<Rate, String> {
        let value = Decimal::from_str(raw.trim()).map_err(|_| "must be a decimal number written like \"0.08\"".to_string())?;
        Rate::new(value)
    }

    /// Parses a field's value, or a 400 naming the field.
    pub fn parse_field(field: &str, raw: &str) -> Result<Rate, Error> {
        Rate::parse(raw).map_err(|m| Error::invalid(field, m))
    }

    /// Parts per million, e.g. 80,000 for 8 %.
    pub const fn ppm(self) -> u32 {
        self.0
    }

    /// The rate as a decimal number, e.g. 0.08 for 8 % (for display and files).
    pub fn as_decimal(self) -> Decimal {
        Decimal::new(i64::from(self.0), 6).normalize()
    }
}

impl fmt::Display for Rate {
    /// The shortest decimal, e.g. `0.08`, `0.005`, `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.as_decimal(), f)
    }
}

impl TryFrom<String> for Rate {
    type Error = String;
    fn try_from(raw: String) -> Result<Rate, String> {
        Rate::parse(&raw)
    }
}

impl From<Rate> for String {
    fn from(rate: Rate) -> String {
        rate.to_string()
    }
}

/// An employee's housing-fund rate: a [`Rate`] between 5 % and 12 % inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HousingFundRate(Rate);

impl HousingFundRate {
    /// The lowest housing-fund rate allowed: 5 %.
    pub const MIN: HousingFundRate = HousingFundRate(Rate::from_ppm_const(50_000));
    /// The highest housing-fund rate allowed: 12 %.
    pub const MAX: HousingFundRate = HousingFundRate(Rate::from_ppm_const(120_000));

    /// The rate, if it is between 5 % and 12 % inclusive; the error says the range otherwise.
    pub fn new(rate: Rate) -> Result<HousingFundRate, String> {
        if (Self::MIN.0..=Self::MAX.0).contains(&rate) { Ok(HousingFundRate(rate)) } else { Err("must be between 0.05 and 0.12".into()) }
    }

    /// Parses a decimal string between `"0.05"` and `"0.12"`.
    pub fn parse(raw: &str) -> Result<HousingFundRate, String> {
        Rate::parse(raw).map_err(|_| "must be a decimal between 0.05 and 0.12".to_string()).and_then(HousingFundRate::new)
    }

    /// Parses a field's value, or a 400 naming the field.
    pub fn parse_field(field: &str, raw: &str) -> Result<HousingFundRate, Error> {
        HousingFundRate::parse(raw).map_err(|m| Error::invalid(field, m))
    }

    /// The rate as a plain [`Rate`].
    pub const fn rate(self) -> Rate {
        self.0
    }
}

impl fmt::Display for HousingFundRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl TryFrom<String> for HousingFundRate {
    type Error = String;
    fn try_from(raw: String) -> Result<HousingFundRate, String> {
        HousingFundRate::parse(&raw)
    }
}

impl From<HousingFundRate> for String {
    fn from(rate: HousingFundRate) -> String {
        rate.to_string()
    }
}

impl From<HousingFundRate> for Rate {
    fn from(rate: HousingFundRate) -> Rate {
        rate.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_strings_become_parts_per_million() {
        let cases = [("0.08", 80_000), ("0.005", 5_000), ("0", 0), ("0.999999", 999_999), ("0.0800", 80_000)];

        for (raw, ppm) in cases {
            assert_eq!(Rate::parse(raw).unwrap().ppm(), ppm, "{raw}");
        }
    }

    #[test]
    fn rates_outside_zero_to_one_or_too_precise_are_rejected() {
        for bad in ["1", "1.0", "-0.01", "2", "0.0000001", "abc", "", "8%"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_rate_displays_and_serialises_as_its_shortest_decimal_string() {
        let rate = Rate::parse("0.0050").unwrap();

        let json = serde_json::to_string(&rate).unwrap();

        assert_eq!((rate.to_string(), json), ("0.005".to_string(), "\"0.005\"".to_string()));
    }

    #[test]
    fn a_rate_deserialises_from_a_string_but_not_from_a_json_number() {
        let parsed: Rate = serde_json::from_str("\"0.02\"").unwrap();

        assert_eq!(parsed.ppm(), 20_000);
        assert!(serde_json::from_str::<Rate>("0.02").is_err());
        assert!(serde_json::from_str::<Rate>("\"1.5\"").is_err());
    }

    #[test]
    fn housing_fund_rate_accepts_five_to_twelve_percent_inclusive() {
        for ok in ["0.05", "0.07", "0.12"] {
            assert!(HousingFundRate::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["0.049999", "0.120001", "0", "0.5", "x"] {
            assert!(HousingFundRate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bad_housing_fund_rate_field_is_reported_by_name() {
        let err = HousingFundRate::parse_field("housing_fund_rate", "0.2").unwrap_err();

        assert!(err.to_string().contains("housing_fund_rate"), "{err}");
    }
}
