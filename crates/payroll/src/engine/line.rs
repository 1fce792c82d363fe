use atrium_kernel::Money;
use serde::{Deserialize, Serialize};

/// The engine's result for one employee and month: what a calculated sheet item stores,
/// and everything the next month's [`YearToDate`] needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CalculatedLine {
    /// Base + allowance + overtime + bonus − leave deduction (annual bonus excluded).
    pub gross: Money,
    /// The tax-exempt part of gross (echoed from the input).
    pub tax_free_income: Money,
    /// Social-insurance base after clamping to the policy's floor and cap.
    pub si_base: Money,
    /// Housing-fund base after clamping to the policy's floor and cap.
    pub hf_base: Money,
    pub pension: Money,
    pub medical: Money,
    pub unemployment: Money,
    pub housing_fund: Money,
    /// Pension + medical + unemployment + housing fund.
    pub contributions: Money,
    /// Other pre-tax deductions this month (echoed from the input).
    pub other_deduction: Money,
    /// Months employed here this tax year, through this month.
    pub months_employed: u32,
    /// Special additional deductions counted this month: the cumulative figure minus what
    /// earlier months already used. Includes any catch-up for a late declaration; negative
    /// when a declaration was withdrawn after being used.
    pub special_deduction: Money,
    /// Special additional deductions for every month employed this year through this month.
    pub cumulative_special_deduction: Money,
    pub cumulative_taxable: Money,
    pub cumulative_tax: Money,
    /// Tax withheld this month: cumulative tax − tax withheld earlier, never negative.
    pub tax: Money,
    /// Echoed from the input.
    pub after_tax_deduction: Money,
    /// Echoed from the input.
    pub annual_bonus: Money,
    pub annual_bonus_tax: Money,
    /// Gross − contributions − tax − after-tax deduction + annual bonus − annual bonus tax.
    pub net_pay: Money,
}

/// Sums over the employee's earlier calculated months of the same tax year at this employer
/// (from approved or sent sheets). Fold them with [`YearToDate::add`] or `collect()`.
///
/// The annual bonus and its tax stay out: they are taxed apart from the cumulative method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct YearToDate {
    /// Sum of earlier gross.
    pub gross: Money,
    pub tax_free_income: Money,
    /// Employee social insurance + housing fund.
    pub contributions: Money,
    /// Special additional deductions already used.
    pub special_deductions: Money,
    /// Other pre-tax deductions.
    pub other_deductions: Money,
    /// Tax actually withheld (not counting annual bonus tax).
    pub tax_withheld: Money,
}

impl YearToDate {
    pub const ZERO: YearToDate = YearToDate {
        gross: Money::ZERO,
        tax_free_income: Money::ZERO,
        contributions: Money::ZERO,
        special_deductions: Money::ZERO,
        other_deductions: Money::ZERO,
        tax_withheld: Money::ZERO,
    };

    /// Adds one earlier month.
    pub fn add(&mut self, line: &CalculatedLine) {
        self.gross = self.gross + line.gross;
        self.tax_free_income = self.tax_free_income + line.tax_free_income;
        self.contributions = self.contributions + line.contributions;
        self.special_deductions = self.special_deductions + line.special_deduction;
        self.other_deductions = self.other_deductions + line.other_deduction;
        self.tax_withheld = self.tax_withheld + line.tax;
    }

    /// `self` with one more month added.
    #[must_use]
    pub fn with(mut self, line: &CalculatedLine) -> YearToDate {
        self.add(line);
        self
    }
}

impl<'a> FromIterator<&'a CalculatedLine> for YearToDate {
    fn from_iter<I: IntoIterator<Item = &'a CalculatedLine>>(lines: I) -> YearToDate {
        lines.into_iter().fold(YearToDate::ZERO, |ytd, line| ytd.with(line))
    }
}
