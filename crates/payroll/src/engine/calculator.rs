use super::input::{EmployeeMonth, SheetKind};
use super::line::{CalculatedLine, YearToDate};
use super::tax::{annual_bonus_tax, cumulative_tax, mul_div_round};
use atrium_kernel::payroll::{PPM, PayrollPolicy, Rate, SpecialDeduction};
use atrium_kernel::{Error, FieldError, Money, Period};
use chrono::Datelike;

/// The basic deduction (减除费用) per month employed: 5,000 yuan.
pub const BASIC_DEDUCTION_PER_MONTH: Money = Money::from_fen(500_000);

/// A validated policy bound to the period being calculated. Build one per sheet and call
/// [`Calculator::calculate`] for each employee; it allocates nothing unless the input is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calculator {
    policy: PayrollPolicy,
    period: Period,
}

/// Months since year 0, so that month arithmetic is plain integer arithmetic.
fn month_index(year: i32, month: u32) -> i64 {
    i64::from(year) * 12 + i64::from(month) - 1
}

fn period_index(period: Period) -> i64 {
    month_index(period.year(), period.month())
}

/// `amount × rate`, rounded to the fen half up.
fn apply(amount: Money, rate: Rate) -> Money {
    Money::from_fen(mul_div_round(amount.fen(), i64::from(rate.ppm()), PPM))
}

impl Calculator {
    /// Fails with the policy's field errors when it is invalid.
    pub fn new(policy: PayrollPolicy, period: Period) -> Result<Calculator, Error> {
        policy.validate()?;
        Ok(Calculator { policy, period })
    }

    /// The validated policy.
    pub fn policy(&self) -> &PayrollPolicy {
        &self.policy
    }

    /// The month being calculated.
    pub fn period(&self) -> Period {
        self.period
    }

    /// Calculates one employee's month from their input and the sums of their earlier months
    /// this tax year. For a supplementary month (`input.kind`), `ytd` must also hold the
    /// month's regular sheet and its supplementary sheets approved before this one: the
    /// result is then the cumulative method over all of them — cumulative tax on the new
    /// cumulative taxable income less all tax withheld so far, never negative.
    ///
    /// Fails, naming the fields, when the input is inconsistent: an amount
    /// outside `0..=Money::MAX_INPUT`, a leave deduction above the month's earnings, tax-free
    /// income above gross, or a hire date after the period. Every sum is checked: a figure
    /// that would not fit is an error naming the field it came from, never a wrong figure.
    pub fn calculate(&self, input: &EmployeeMonth<'_>, ytd: &YearToDate) -> Result<CalculatedLine, Error> {
        let start = self.first_month_employed(input);
        check(input, start, self.period)?;
        let earnings = sum(&[
            ("base_salary", input.base_salary),
            ("allowance", input.allowance),
            ("overtime", input.overtime),
            ("bonus", input.bonus),
        ])?;
        let gross = minus(earnings, "leave_deduction", input.leave_deduction)?;
        let Contributions { si_base, hf_base, pension, medical, unemployment, housing_fund, total: contributions } =
            self.contributions(input)?;

        // Cumulative withholding: this year's months at this employer through this period.
        let end = period_index(self.period);
        let months_employed = u32::try_from(end - start + 1).unwrap_or(0);
        let cumulative_special_deduction = special_deductions_through(input.special_deductions, start, end)?;
        let basic_deduction = BASIC_DEDUCTION_PER_MONTH.checked_mul(i64::from(months_employed)).map_err(|_| too_large("hire_date"))?;
        // Taxable: this year's gross less exempt income and every deduction, never below zero.
        // This month's bounded figures come first, so an overflow names the year-to-date sum.
        let cumulative_income = sum(&[("gross", gross), ("year_to_date.gross", ytd.gross)])?;
        let cumulative_deductions = sum(&[
            ("tax_free_income", input.tax_free_income),
            ("hire_date", basic_deduction),
            ("contributions", contributions),
            ("special_deductions", cumulative_special_deduction),
            ("other_pre_tax_deduction", input.other_pre_tax_deduction),
            ("year_to_date.tax_free_income", ytd.tax_free_income),
            ("year_to_date.contributions", ytd.contributions),
            ("year_to_date.other_deductions", ytd.other_deductions),
        ])?;
        let cumulative_taxable = minus(cumulative_income, "year_to_date", cumulative_deductions)?.max(Money::ZERO);
        let cumulative_tax = cumulative_tax(cumulative_taxable);
        let tax = minus(cumulative_tax, "year_to_date.tax_withheld", ytd.tax_withheld)?.max(Money::ZERO);

        let annual_bonus_tax = annual_bonus_tax(input.annual_bonus);
        let paid = sum(&[("gross", gross), ("annual_bonus", input.annual_bonus)])?;
        let withheld = sum(&[
            ("contributions", contributions),
            ("tax", tax),
            ("after_tax_deduction", input.after_tax_deduction),
            ("annual_bonus", annual_bonus_tax),
        ])?;
        let net_pay = minus(paid, "after_tax_deduction", withheld)?;
        let special_deduction = minus(cumulative_special_deduction, "year_to_date.special_deductions", ytd.special_deductions)?;

        Ok(CalculatedLine {
            gross,
            tax_free_income: input.tax_free_income,
            si_base,
            hf_base,
            pension,
            medical,
            unemployment,
            housing_fund,
            contributions,
            other_deduction: input.other_pre_tax_deduction,
            months_employed,
            special_deduction,
            cumulative_special_deduction,
            cumulative_taxable,
            cumulative_tax,
            tax,
            after_tax_deduction: input.after_tax_deduction,
            annual_bonus: input.annual_bonus,
            annual_bonus_tax,
            net_pay,
        })
    }

    /// The employee's contributions, each on its clamped base and rounded to the fen; none
    /// for a supplementary month (the month's regular sheet paid them).
    fn contributions(&self, input: &EmployeeMonth<'_>) -> Result<Contributions, Error> {
        if input.kind == SheetKind::Supplementary {
            return Ok(Contributions::default());
        }
        let policy = &self.policy;
        let raw_base = input.si_base.unwrap_or(input.base_salary);
        let si_base = raw_base.clamp(policy.si_base_floor, policy.si_base_cap);
        let hf_base = raw_base.clamp(policy.hf_base_floor, policy.hf_base_cap);
        let pension = apply(si_base, policy.pension_rate);
        let medical = sum(&[("si_base", apply(si_base, policy.medical_rate)), ("medical_fixed", policy.medical_fixed)])?;
        let unemployment = apply(si_base, policy.unemployment_rate);
        let housing_fund = apply(hf_base, input.housing_fund_rate.rate());
        let total = sum(&[("si_base", pension), ("si_base", medical), ("si_base", unemployment), ("housing_fund_rate", housing_fund)])?;
        Ok(Contributions { si_base, hf_base, pension, medical, unemployment, housing_fund, total })
    }

    /// Month index of January of the period's year, or of the hire month if later.
    fn first_month_employed(&self, input: &EmployeeMonth<'_>) -> i64 {
        let january = month_index(self.period.year(), 1);
        match input.hire_date {
            Some(hired) => month_index(hired.year(), hired.month()).max(january),
            None => january,
        }
    }
}

/// Validates a policy and calculates one employee-month: [`Calculator::new`] followed by
/// [`Calculator::calculate`]. Prefer a [`Calculator`] when calculating a whole sheet.
pub fn calculate(policy: &PayrollPolicy, period: Period, input: &EmployeeMonth<'_>, ytd: &YearToDate) -> Result<CalculatedLine, Error> {
    Calculator::new(*policy, period)?.calculate(input, ytd)
}

/// An employee's social insurance and housing fund for one month.
#[derive(Debug, Default)]
struct Contributions {
    si_base: Money,
    hf_base: Money,
    pension: Money,
    medical: Money,
    unemployment: Money,
    housing_fund: Money,
    total: Money,
}

/// A figure derived from `field` that does not fit in i64 fen.
fn too_large(field: &str) -> Error {
    Error::invalid(field, "is too large to calculate")
}

/// The checked sum of named amounts; an overflow names the amount that tipped it over.
fn sum(parts: &[(&str, Money)]) -> Result<Money, Error> {
    parts.iter().try_fold(Money::ZERO, |total, (field, amount)| total.checked_add(*amount).map_err(|_| too_large(field)))
}

/// `from − amount`, checked; an overflow names `field`.
fn minus(from: Money, field: &str, amount: Money) -> Result<Money, Error> {
    from.checked_sub(amount).map_err(|_| too_large(field))
}

/// Sum of every deduction active in each month from `start` through `end` (month indices).
fn special_deductions_through(deductions: &[SpecialDeduction], start: i64, end: i64) -> Result<Money, Error> {
    let mut total = Money::ZERO;
    for deduction in deductions {
        let from = period_index(deduction.from()).max(start);
        let to = deduction.to().map_or(end, period_index).min(end);
        if to >= from {
            let months = deduction.monthly_amount().checked_mul(to - from + 1);
            total = months.and_then(|m| total.checked_add(m)).map_err(|_| too_large("special_deductions"))?;
        }
    }
    Ok(total)
}

/// Every amount must be one a caller could enter (so that no sum can overflow) and the
/// amounts must fit together; every problem is reported, each naming its field.
fn check(input: &EmployeeMonth<'_>, start: i64, period: Period) -> Result<(), Error> {
    let mut problems = Vec::new();
    let amounts = [
        ("base_salary", input.base_salary),
        ("allowance", input.allowance),
        ("overtime", input.overtime),
        ("bonus", input.bonus),
        ("leave_deduction", input.leave_deduction),
        ("other_pre_tax_deduction", input.other_pre_tax_deduction),
        ("after_tax_deduction", input.after_tax_deduction),
        ("annual_bonus", input.annual_bonus),
        ("tax_free_income", input.tax_free_income),
        ("si_base", input.si_base.unwrap_or(Money::ZERO)),
    ];
    for (field, amount) in amounts {
        if let Err(message) = amount.check_input() {
            problems.push(FieldError::new(field, message));
        }
    }
    // In i128, exact whatever the amounts, so the checks below hold even for bad ones.
    let fen = |m: Money| i128::from(m.fen());
    let earnings = fen(input.base_salary) + fen(input.allowance) + fen(input.overtime) + fen(input.bonus);
    let gross = earnings - fen(input.leave_deduction);
    if fen(input.leave_deduction) > earnings {
        problems.push(FieldError::new("leave_deduction", "must not exceed base salary + allowance + overtime + bonus"));
    }
    if gross >= 0 && fen(input.tax_free_income) > gross {
        problems.push(FieldError::new("tax_free_income", "must not exceed gross pay"));
    }
    if start > period_index(period) {
        problems.push(FieldError::new("hire_date", format!("must not be after the period {period}")));
    }
    if input.kind == SheetKind::Supplementary {
        // The month's regular sheet paid the salary and its contributions.
        if input.base_salary != Money::ZERO {
            problems.push(FieldError::new("base_salary", "a supplementary sheet pays no base salary; the regular sheet does"));
        }
        if input.leave_deduction != Money::ZERO {
            problems.push(FieldError::new("leave_deduction", "a supplementary sheet carries no leave deduction; the regular sheet does"));
        }
        if input.si_base.is_some() {
            problems.push(FieldError::new("si_base", "a supplementary sheet has no contributions; the regular sheet paid them"));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(Error::Invalid(problems)) }
}
