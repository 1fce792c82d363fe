//! The pure payroll calculation engine: one employee and month in, one [`CalculatedLine`] out.
//!
//! It computes what a Chinese employer withholds (see docs/payroll.md): employee social
//! insurance and housing fund on a clamped base, then resident individual income tax by the
//! cumulative withholding method, plus the separately taxed annual one-off bonus. A
//! supplementary month ([`SheetKind::Supplementary`]) pays something extra for a month whose
//! regular pay is settled: no base salary or contributions, the same cumulative formula over a
//! year to date that includes the month's regular pay.
//!
//! Money is integer fen throughout and rates are whole parts per million, so every result is
//! exact and rounding (to the fen, halves away from zero) happens in exactly one place per
//! figure. No floats, no I/O, no allocation on the success path.
//!
//! ```
//! use atrium_kernel::{Money, Period};
//! use atrium_payroll::engine::{Calculator, EmployeeMonth, HousingFundRate, PayrollPolicy, YearToDate};
//!
//! let period = Period::parse("2025-01")?;
//! let calculator = Calculator::new(PayrollPolicy::default(), period)?;
//! let rate = HousingFundRate::parse("0.12")?;
//! let line = calculator.calculate(&EmployeeMonth::new(Money::from_yuan(20_000), rate), &YearToDate::ZERO)?;
//! // Contributions: pension 1,600 + medical 403 + unemployment 100 + housing fund 2,400.
//! assert_eq!(line.contributions, Money::from_yuan(4_503));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod calculator;
mod input;
mod line;
mod tax;

pub use atrium_kernel::payroll::{DeductionKind, HousingFundRate, PayrollPolicy, Rate, SpecialDeduction};
pub use calculator::{BASIC_DEDUCTION_PER_MONTH, Calculator, calculate};
pub use input::{EmployeeMonth, SheetKind};
pub use line::{CalculatedLine, YearToDate};
pub use tax::{annual_bonus_tax, cumulative_tax};

#[cfg(test)]
mod examples;
#[cfg(test)]
mod properties;
