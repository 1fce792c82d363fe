use atrium_kernel::Money;
use atrium_kernel::payroll::{HousingFundRate, SpecialDeduction};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// What a sheet pays: a month's regular pay, or something extra for a month whose regular
/// sheet is approved or sent.
///
/// A `supplementary` month pays arrears, corrections or an extra bonus. It has no base
/// salary, no leave deduction and no contributions, and it does not count the month's basic
/// deduction or special deductions again: the year to date it is calculated with includes the
/// month's regular sheet (and the month's supplementary sheets approved before it), and the
/// cumulative formula counts the basic deduction by months employed, not by sheets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum SheetKind {
    /// A month's regular pay: salary, contributions and tax.
    #[default]
    Regular,
    /// Something extra for a month whose regular sheet is approved or sent.
    Supplementary,
}

/// What the engine needs about one employee in one month.
///
/// Build it with [`EmployeeMonth::new`] and struct-update syntax for the optional amounts:
/// `EmployeeMonth { bonus, ..EmployeeMonth::new(base_salary, housing_fund_rate) }`.
/// [`Calculator::calculate`](super::Calculator::calculate) rejects negative amounts, a
/// leave deduction larger than the month's earnings, tax-free income above gross, and a hire
/// date after the period; for a supplementary month (`kind`), also a base salary, a leave
/// deduction or a contribution base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmployeeMonth<'a> {
    /// Regular, or supplementary (no base salary, leave deduction or contributions).
    pub kind: SheetKind,
    /// The monthly base salary (zero on a supplementary month).
    pub base_salary: Money,
    /// Allowances, taxed with the salary.
    pub allowance: Money,
    /// Overtime pay, taxed with the salary.
    pub overtime: Money,
    /// A bonus paid with this month's salary and taxed with it.
    pub bonus: Money,
    /// Unpaid-leave deduction, subtracted from gross.
    pub leave_deduction: Money,
    /// Pre-tax deductions other than contributions and special deductions (e.g. enterprise
    /// annuity, commercial health insurance); reduces taxable income, not gross.
    pub other_pre_tax_deduction: Money,
    /// Deducted from pay after tax.
    pub after_tax_deduction: Money,
    /// An annual one-off bonus taxed separately; it stays out of gross and the cumulative figures.
    pub annual_bonus: Money,
    /// The part of gross exempt from tax.
    pub tax_free_income: Money,
    /// Social-insurance and housing-fund base before clamping; `None` means the base salary.
    pub si_base: Option<Money>,
    /// The employee's housing-fund rate, 5–12 %.
    pub housing_fund_rate: HousingFundRate,
    /// `None` means employed here since before this tax year.
    pub hire_date: Option<NaiveDate>,
    /// Every deduction the employee has declared, whatever its months.
    pub special_deductions: &'a [SpecialDeduction],
}

impl<'a> EmployeeMonth<'a> {
    /// An employee with only a base salary: every other amount zero, no deductions, employed
    /// since before this year.
    pub const fn new(base_salary: Money, housing_fund_rate: HousingFundRate) -> EmployeeMonth<'a> {
        EmployeeMonth {
            kind: SheetKind::Regular,
            base_salary,
            allowance: Money::ZERO,
            overtime: Money::ZERO,
            bonus: Money::ZERO,
            leave_deduction: Money::ZERO,
            other_pre_tax_deduction: Money::ZERO,
            after_tax_deduction: Money::ZERO,
            annual_bonus: Money::ZERO,
            tax_free_income: Money::ZERO,
            si_base: None,
            housing_fund_rate,
            hire_date: None,
            special_deductions: &[],
        }
    }

    /// A supplementary month with nothing on it yet: set the amounts it pays with
    /// struct-update syntax, `EmployeeMonth { bonus, ..EmployeeMonth::supplementary() }`.
    /// (The housing fund rate is unused: a supplementary month has no contributions.)
    pub const fn supplementary() -> EmployeeMonth<'a> {
        EmployeeMonth { kind: SheetKind::Supplementary, ..EmployeeMonth::new(Money::ZERO, HousingFundRate::MIN) }
    }
}
