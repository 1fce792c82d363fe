use crate::Error;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A payroll or tax month, written `YYYY-MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Period {
    year: i32,
    month: u32,
}

impl Period {
    /// The month `month` (1–12) of `year` (2000–2100); the error says which part is out of range.
    pub fn new(year: i32, month: u32) -> Result<Self, String> {
        if !(2000..=2100).contains(&year) {
            return Err("year must be between 2000 and 2100".into());
        }
        if !(1..=12).contains(&month) {
            return Err("month must be between 01 and 12".into());
        }
        Ok(Period { year, month })
    }

    /// Parses `YYYY-MM`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let bad = || "must be a month written YYYY-MM".to_string();
        let (y, m) = raw.trim().split_once('-').ok_or_else(bad)?;
        if y.len() != 4 || m.len() != 2 || !y.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        Period::new(y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?)
    }

    /// Parses a field's value, or a 400 naming the field.
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Error> {
        Period::parse(raw).map_err(|m| Error::invalid(field, m))
    }

    /// The year, e.g. 2025.
    pub fn year(self) -> i32 {
        self.year
    }

    /// The month, 1–12.
    pub fn month(self) -> u32 {
        self.month
    }

    /// January of the same year.
    pub fn year_start(self) -> Period {
        Period { year: self.year, month: 1 }
    }

    /// The month after.
    pub fn next(self) -> Period {
        if self.month == 12 { Period { year: self.year + 1, month: 1 } } else { Period { year: self.year, month: self.month + 1 } }
    }

    /// The month before.
    pub fn prev(self) -> Period {
        if self.month == 1 { Period { year: self.year - 1, month: 12 } } else { Period { year: self.year, month: self.month - 1 } }
    }

    /// Months from `self` to `other` inclusive (0 if `other` is earlier).
    pub fn months_through(self, other: Period) -> u32 {
        let a = self.year * 12 + self.month as i32;
        let b = other.year * 12 + other.month as i32;
        if b < a { 0 } else { (b - a + 1) as u32 }
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Period {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            // Period::new's years, 2000 to 2100.
            .pattern(Some(r"^(20[0-9]{2}|2100)-(0[1-9]|1[0-2])$"))
            .description(Some("A month, YYYY-MM, of the years 2000 to 2100"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Period {}

impl TryFrom<String> for Period {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Period::parse(&s)
    }
}

impl From<Period> for String {
    fn from(p: Period) -> String {
        p.to_string()
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays_year_month() {
        let p = Period::parse("2026-03").unwrap();
        assert_eq!((p.year(), p.month(), p.to_string()), (2026, 3, "2026-03".to_string()));
    }

    #[test]
    fn rejects_malformed_months() {
        for bad in ["2026-3", "2026-13", "2026-00", "26-03", "2026/03", "abcd-ef", ""] {
            assert!(Period::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn steps_across_year_boundaries() {
        assert_eq!(Period::parse("2026-12").unwrap().next().to_string(), "2027-01");
        assert_eq!(Period::parse("2026-01").unwrap().prev().to_string(), "2025-12");
    }

    #[test]
    fn counts_months_inclusively() {
        let jan = Period::parse("2026-01").unwrap();
        assert_eq!(jan.months_through(Period::parse("2026-03").unwrap()), 3);
        assert_eq!(Period::parse("2026-03").unwrap().months_through(jan), 0);
    }
}
