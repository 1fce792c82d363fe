use atrium_kernel::{Money, Overflow};
use serde::{Deserialize, Serialize};

/// The engine's result for one employee and month: what a calculated sheet item stores,
/// and everything the next month's [`YearToDate`] needs. Its figures are computed, not
/// entered, so they read back whatever their sign or size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CalculatedLine {
    /// Base + allowance + overtime + bonus − leave deduction (annual bonus excluded).
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub gross: Money,
    /// The tax-exempt part of gross (echoed from the input).
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub tax_free_income: Money,
    /// Social-insurance base after clamping to the policy's floor and cap.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub si_base: Money,
    /// Housing-fund base after clamping to the policy's floor and cap.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub hf_base: Money,
    /// The employee's pension insurance: the social-insurance base × the pension rate.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub pension: Money,
    /// The employee's medical insurance: the base × the medical rate, plus the fixed amount.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub medical: Money,
    /// The employee's unemployment insurance: the base × the unemployment rate.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub unemployment: Money,
    /// The employee's housing fund: the housing-fund base × the employee's rate.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub housing_fund: Money,
    /// Pension + medical + unemployment + housing fund.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub contributions: Money,
    /// Other pre-tax deductions this month (echoed from the input).
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub other_deduction: Money,
    /// Months employed here this tax year, through this month.
    pub months_employed: u32,
    /// Special additional deductions counted this month: the cumulative figure minus what
    /// earlier months already used. Includes any catch-up for a late declaration; negative
    /// when a declaration was withdrawn after being used.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub special_deduction: Money,
    /// Special additional deductions for every month employed this year through this month.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub cumulative_special_deduction: Money,
    /// This tax year's taxable income through this month: gross and earlier gross, less tax-free
    /// income, basic deductions, contributions, special and other deductions; never negative.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub cumulative_taxable: Money,
    /// Tax on `cumulative_taxable` by the annual withholding table.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub cumulative_tax: Money,
    /// Tax withheld this month: cumulative tax − tax withheld earlier, never negative.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub tax: Money,
    /// Echoed from the input.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub after_tax_deduction: Money,
    /// Echoed from the input.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub annual_bonus: Money,
    /// The annual bonus's separate tax: the bonus × the rate of the monthly-table band of a twelfth
    /// of it, less that band's quick deduction.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub annual_bonus_tax: Money,
    /// Gross − contributions − tax − after-tax deduction + annual bonus − annual bonus tax.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub net_pay: Money,
}

/// Sums over the employee's earlier calculated months of the same tax year at this employer
/// (from approved or sent sheets). Fold them with [`YearToDate::add`] or `collect()` into a
/// `Result<YearToDate, Overflow>`.
///
/// The annual bonus and its tax stay out: they are taxed apart from the cumulative method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct YearToDate {
    /// Sum of earlier gross.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub gross: Money,
    /// Sum of earlier tax-free income.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub tax_free_income: Money,
    /// Employee social insurance + housing fund.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub contributions: Money,
    /// Special additional deductions already used.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub special_deductions: Money,
    /// Other pre-tax deductions.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub other_deductions: Money,
    /// Tax actually withheld (not counting annual bonus tax).
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub tax_withheld: Money,
}

impl YearToDate {
    /// No earlier months: the year to date of January, or of a new hire's first month.
    pub const ZERO: YearToDate = YearToDate {
        gross: Money::ZERO,
        tax_free_income: Money::ZERO,
        contributions: Money::ZERO,
        special_deductions: Money::ZERO,
        other_deductions: Money::ZERO,
        tax_withheld: Money::ZERO,
    };

    /// Adds one earlier month; on `Overflow` `self` is unchanged.
    pub fn add(&mut self, line: &CalculatedLine) -> Result<(), Overflow> {
        *self = self.with(line)?;
        Ok(())
    }

    /// `self` with one more month added.
    pub fn with(self, line: &CalculatedLine) -> Result<YearToDate, Overflow> {
        Ok(YearToDate {
            gross: self.gross.checked_add(line.gross)?,
            tax_free_income: self.tax_free_income.checked_add(line.tax_free_income)?,
            contributions: self.contributions.checked_add(line.contributions)?,
            special_deductions: self.special_deductions.checked_add(line.special_deduction)?,
            other_deductions: self.other_deductions.checked_add(line.other_deduction)?,
            tax_withheld: self.tax_withheld.checked_add(line.tax)?,
        })
    }
}

impl<'a> FromIterator<&'a CalculatedLine> for Result<YearToDate, Overflow> {
    fn from_iter<I: IntoIterator<Item = &'a CalculatedLine>>(lines: I) -> Result<YearToDate, Overflow> {
        lines.into_iter().try_fold(YearToDate::ZERO, |ytd, line| ytd.with(line))
    }
}
