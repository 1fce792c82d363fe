//! An employee's tax year at their tenant, from the approved and sent sheets of every kind:
//! month by month what was paid and withheld, the year's sums, and an estimate of the annual
//! settlement (the employee's own reconciliation with the tax office after the year).
//!
//! The settlement taxes the year's comprehensive income by the annual table: income less
//! tax-free income, less 60,000 (the basic deduction of a whole year, however many months the
//! employee worked here), contributions, special additional deductions and other pre-tax
//! deductions. Less the tax withheld by the cumulative method (the separately taxed annual
//! bonus stays apart, as it does at withholding), that is what would be left to pay or to
//! refund. It is an estimate: income from other payers, deductions claimed only at the
//! settlement and the choice to fold the annual bonus into comprehensive income are unknown
//! here.
use crate::engine::{SheetKind, cumulative_tax};
use crate::model::{PayrollEmployee, TaxYearLine};
use atrium_kernel::{Error, Id, Money, Overflow, Period};
use serde::Serialize;

/// The basic deduction of a whole year at the annual settlement: 12 × 5,000 yuan.
pub const ANNUAL_BASIC_DEDUCTION: Money = Money::from_fen(6_000_000);

/// One sheet that paid the employee in a month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaxMonthSheet {
    /// The sheet's id.
    pub id: Id,
    /// Whether the sheet is regular or supplementary.
    pub kind: SheetKind,
}

/// One month of the tax year: the sums of the employee's items on that month's approved and
/// sent sheets (regular and supplementary). Money is fen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaxMonth {
    /// `YYYY-MM`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "2026-01"))]
    pub period: Period,
    /// The sheets that paid the employee this month, in the order they were approved.
    pub sheets: Vec<TaxMonthSheet>,
    /// Gross pay (the annual bonus taxed separately excluded).
    pub gross: Money,
    /// The tax-exempt part of gross.
    pub tax_free_income: Money,
    /// Employee social insurance and housing fund.
    pub contributions: Money,
    /// Special additional deductions counted this month (a late declaration catches up here).
    pub special_deduction: Money,
    /// Other pre-tax deductions.
    pub other_deduction: Money,
    /// Cumulative taxable income of the year after this month's last sheet.
    pub cumulative_taxable: Money,
    /// Cumulative tax of the year after this month's last sheet (annual table).
    pub cumulative_tax: Money,
    /// Tax withheld this month by the cumulative method.
    pub tax: Money,
    /// The annual one-off bonus taxed separately this month, and its tax.
    pub annual_bonus: Money,
    /// The annual bonus's separate tax.
    pub annual_bonus_tax: Money,
}

/// The year's sums over the months.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaxYearTotals {
    /// Gross pay over the year.
    pub gross: Money,
    /// Tax-free income over the year.
    pub tax_free_income: Money,
    /// Employee social insurance and housing fund over the year.
    pub contributions: Money,
    /// Special additional deductions counted over the year.
    pub special_deductions: Money,
    /// Other pre-tax deductions over the year.
    pub other_deductions: Money,
    /// Tax withheld by the cumulative method (the annual bonus's separate tax excluded).
    pub tax_withheld: Money,
    /// The annual one-off bonus paid this year (at most one, taxed separately).
    pub annual_bonus: Money,
    /// Its separate tax.
    pub annual_bonus_tax: Money,
}

/// The annual settlement as this tenant's sheets show it: an estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Settlement {
    /// Always `true`: income from elsewhere, and deductions claimed only at the settlement,
    /// are unknown here.
    pub estimate: bool,
    /// Comprehensive income: gross less tax-free income.
    pub income: Money,
    /// 60,000 yuan: the whole year's basic deduction, however many months were worked here.
    pub basic_deduction: Money,
    /// Employee social insurance and housing fund over the year.
    pub contributions: Money,
    /// Special additional deductions counted over the year.
    pub special_deductions: Money,
    /// Other pre-tax deductions over the year.
    pub other_deductions: Money,
    /// Income less the deductions, never below zero.
    pub taxable: Money,
    /// Tax on `taxable` by the annual table.
    pub tax: Money,
    /// Tax withheld by the cumulative method this year (not the annual bonus's separate tax).
    pub tax_withheld: Money,
    /// `tax − tax_withheld` when positive, else 0.
    pub to_pay: Money,
    /// `tax_withheld − tax` when positive, else 0. At most one of `to_pay` and `to_refund` is
    /// not zero.
    pub to_refund: Money,
}

/// An employee's tax year at their tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxYear {
    /// The employee.
    pub employee_id: Id,
    /// The employer.
    pub tenant_id: Id,
    /// The employee's name.
    pub employee_name: String,
    /// The employee's number in the tenant, if it has one.
    pub employee_no: Option<String>,
    /// The tax year (a calendar year).
    pub year: i32,
    /// Months with at least one approved or sent sheet paying the employee, in order.
    pub months: Vec<TaxMonth>,
    /// The year's sums over `months`.
    pub totals: TaxYearTotals,
    /// The annual settlement estimate.
    pub settlement: Settlement,
}

fn too_large(_: Overflow) -> Error {
    Error::internal("the employee's tax-year sums are too large to add up")
}

impl TaxMonth {
    fn new(period: Period) -> TaxMonth {
        TaxMonth {
            period,
            sheets: Vec::new(),
            gross: Money::ZERO,
            tax_free_income: Money::ZERO,
            contributions: Money::ZERO,
            special_deduction: Money::ZERO,
            other_deduction: Money::ZERO,
            cumulative_taxable: Money::ZERO,
            cumulative_tax: Money::ZERO,
            tax: Money::ZERO,
            annual_bonus: Money::ZERO,
            annual_bonus_tax: Money::ZERO,
        }
    }

    /// Adds a sheet's line; being the latest, its cumulative figures are the month's.
    fn add(&mut self, l: &TaxYearLine) -> Result<(), Overflow> {
        let x = &l.line;
        self.sheets.push(TaxMonthSheet { id: l.sheet_id, kind: l.kind });
        self.gross = self.gross.checked_add(x.gross)?;
        self.tax_free_income = self.tax_free_income.checked_add(x.tax_free_income)?;
        self.contributions = self.contributions.checked_add(x.contributions)?;
        self.special_deduction = self.special_deduction.checked_add(x.special_deduction)?;
        self.other_deduction = self.other_deduction.checked_add(x.other_deduction)?;
        self.tax = self.tax.checked_add(x.tax)?;
        self.annual_bonus = self.annual_bonus.checked_add(x.annual_bonus)?;
        self.annual_bonus_tax = self.annual_bonus_tax.checked_add(x.annual_bonus_tax)?;
        self.cumulative_taxable = x.cumulative_taxable;
        self.cumulative_tax = x.cumulative_tax;
        Ok(())
    }
}

impl TaxYearTotals {
    fn add(&mut self, m: &TaxMonth) -> Result<(), Overflow> {
        self.gross = self.gross.checked_add(m.gross)?;
        self.tax_free_income = self.tax_free_income.checked_add(m.tax_free_income)?;
        self.contributions = self.contributions.checked_add(m.contributions)?;
        self.special_deductions = self.special_deductions.checked_add(m.special_deduction)?;
        self.other_deductions = self.other_deductions.checked_add(m.other_deduction)?;
        self.tax_withheld = self.tax_withheld.checked_add(m.tax)?;
        self.annual_bonus = self.annual_bonus.checked_add(m.annual_bonus)?;
        self.annual_bonus_tax = self.annual_bonus_tax.checked_add(m.annual_bonus_tax)?;
        Ok(())
    }
}

impl Settlement {
    /// The settlement estimate of a year with these sums.
    pub fn of(t: &TaxYearTotals) -> Result<Settlement, Error> {
        let income = t.gross.checked_sub(t.tax_free_income).map_err(too_large)?;
        let deductions =
            Money::checked_sum([ANNUAL_BASIC_DEDUCTION, t.contributions, t.special_deductions, t.other_deductions]).map_err(too_large)?;
        let taxable = income.checked_sub(deductions).map_err(too_large)?.max(Money::ZERO);
        let tax = cumulative_tax(taxable);
        let balance = tax.checked_sub(t.tax_withheld).map_err(too_large)?;
        let to_refund = t.tax_withheld.checked_sub(tax).map_err(too_large)?.max(Money::ZERO);
        Ok(Settlement {
            estimate: true,
            income,
            basic_deduction: ANNUAL_BASIC_DEDUCTION,
            contributions: t.contributions,
            special_deductions: t.special_deductions,
            other_deductions: t.other_deductions,
            taxable,
            tax,
            tax_withheld: t.tax_withheld,
            to_pay: balance.max(Money::ZERO),
            to_refund,
        })
    }
}

impl TaxYear {
    /// The tax year `year` of `employee` from their items on approved and sent sheets (in any
    /// order; lines of other years are ignored).
    pub fn of(employee: &PayrollEmployee, year: i32, lines: &[TaxYearLine]) -> Result<TaxYear, Error> {
        let mut lines: Vec<&TaxYearLine> = lines.iter().filter(|l| l.period.year() == year).collect();
        lines.sort_by_key(|l| (l.period, l.approved_at, l.sheet_id));
        let mut months: Vec<TaxMonth> = Vec::new();
        for l in lines {
            let month = match months.last_mut() {
                Some(m) if m.period == l.period => m,
                _ => {
                    months.push(TaxMonth::new(l.period));
                    months.last_mut().ok_or_else(|| Error::internal("a month just added is missing"))?
                }
            };
            month.add(l).map_err(too_large)?;
        }
        let mut totals = TaxYearTotals::default();
        for m in &months {
            totals.add(m).map_err(too_large)?;
        }
        Ok(TaxYear {
            employee_id: employee.id,
            tenant_id: employee.tenant_id,
            employee_name: employee.name.clone(),
            employee_no: employee.employee_no.clone(),
            year,
            months,
            totals,
            settlement: Settlement::of(&totals)?,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::CalculatedLine;
    use atrium_kernel::payroll::HousingFundRate;

    fn yuan(y: i64) -> Money {
        Money::from_yuan(y)
    }

    fn employee() -> PayrollEmployee {
        PayrollEmployee {
            id: 5,
            tenant_id: 7,
            name: "Li Lei".into(),
            employee_no: Some("E5".into()),
            active: true,
            base_salary: yuan(20_000),
            si_base: None,
            housing_fund_rate: HousingFundRate::MIN,
            hire_date: None,
            special_deductions: vec![],
            openid: None,
            phone: None,
            email: None,
        }
    }

    fn at(day: u32) -> Option<atrium_kernel::Timestamp> {
        use chrono::TimeZone;
        chrono::Utc.with_ymd_and_hms(2026, 3, day, 9, 0, 0).single()
    }

    #[allow(clippy::too_many_arguments)]
    fn line(sheet_id: Id, kind: SheetKind, period: &str, day: u32, gross: i64, contributions: i64, taxable: i64, tax: i64) -> TaxYearLine {
        TaxYearLine {
            sheet_id,
            kind,
            period: Period::parse(period).unwrap(),
            approved_at: at(day),
            line: CalculatedLine {
                gross: yuan(gross),
                contributions: yuan(contributions),
                cumulative_taxable: yuan(taxable),
                cumulative_tax: cumulative_tax(yuan(taxable)),
                tax: yuan(tax),
                ..CalculatedLine::default()
            },
        }
    }

    #[test]
    fn the_worked_example_sums_by_month_and_settles_to_a_refund_of_what_a_half_year_overpaid() {
        // January regular 20,000 (tax 360), January supplementary bonus 10,000 (tax 300),
        // February regular 20,000 (tax 360); given out of order.
        let lines = [
            line(3, SheetKind::Regular, "2026-02", 5, 20_000, 3_000, 34_000, 360),
            line(2, SheetKind::Supplementary, "2026-01", 2, 10_000, 0, 22_000, 300),
            line(1, SheetKind::Regular, "2026-01", 1, 20_000, 3_000, 12_000, 360),
            line(9, SheetKind::Regular, "2025-12", 1, 99_000, 0, 0, 9_000),
        ];

        let y = TaxYear::of(&employee(), 2026, &lines).unwrap();

        assert_eq!(y.months.len(), 2);
        let jan = &y.months[0];
        assert_eq!(
            jan.sheets,
            [TaxMonthSheet { id: 1, kind: SheetKind::Regular }, TaxMonthSheet { id: 2, kind: SheetKind::Supplementary }]
        );
        assert_eq!((jan.gross, jan.contributions, jan.tax), (yuan(30_000), yuan(3_000), yuan(660)));
        // The month's cumulative figures are its last sheet's.
        assert_eq!((jan.cumulative_taxable, jan.cumulative_tax), (yuan(22_000), yuan(660)));
        assert_eq!(y.months[1].cumulative_taxable, yuan(34_000));
        assert_eq!((y.totals.gross, y.totals.contributions, y.totals.tax_withheld), (yuan(50_000), yuan(6_000), yuan(1_020)));
        // Settlement: 50,000 − 60,000 − 6,000 < 0 → taxable 0, tax 0; 1,020 withheld comes back.
        let s = y.settlement;
        assert_eq!((s.taxable, s.tax, s.to_pay, s.to_refund), (Money::ZERO, Money::ZERO, Money::ZERO, yuan(1_020)));
        assert!(s.estimate);
    }

    #[test]
    fn a_full_year_withheld_exactly_settles_to_nothing() {
        // 12 × (20,000 gross, 3,000 contributions): taxable 204,000 − 60,000 − 36,000 = 144,000
        // → 14,400 − 2,520 = 11,880, which is what the cumulative method withheld.
        let lines: Vec<TaxYearLine> = (1..=12_i64)
            .map(|m| {
                let taxable = 12_000 * m;
                let mut l = line(m, SheetKind::Regular, &format!("2026-{m:02}"), 1, 20_000, 3_000, taxable, 0);
                l.line.tax = cumulative_tax(yuan(taxable)).checked_sub(cumulative_tax(yuan(taxable - 12_000))).unwrap();
                l
            })
            .collect();

        let s = TaxYear::of(&employee(), 2026, &lines).unwrap().settlement;

        assert_eq!((s.income, s.taxable, s.tax, s.tax_withheld), (yuan(240_000), yuan(144_000), yuan(11_880), yuan(11_880)));
        assert_eq!((s.to_pay, s.to_refund), (Money::ZERO, Money::ZERO));
    }

    #[test]
    fn tax_withheld_below_the_years_tax_is_left_to_pay_and_the_separate_bonus_stays_apart() {
        // 100,000 gross, 10,000 contributions, 5,000 special, 1,000 other, 2,000 tax-free:
        // taxable 98,000 − 60,000 − 16,000 = 22,000 → 660. Withheld 500 → 160 to pay.
        let mut l = line(1, SheetKind::Regular, "2026-06", 1, 100_000, 10_000, 0, 500);
        l.line.special_deduction = yuan(5_000);
        l.line.other_deduction = yuan(1_000);
        l.line.tax_free_income = yuan(2_000);
        l.line.annual_bonus = yuan(36_000);
        l.line.annual_bonus_tax = yuan(1_080);

        let y = TaxYear::of(&employee(), 2026, &[l]).unwrap();

        let s = y.settlement;
        assert_eq!((s.income, s.taxable, s.tax), (yuan(98_000), yuan(22_000), yuan(660)));
        assert_eq!((s.tax_withheld, s.to_pay, s.to_refund), (yuan(500), yuan(160), Money::ZERO));
        assert_eq!((y.totals.annual_bonus, y.totals.annual_bonus_tax), (yuan(36_000), yuan(1_080)));
    }

    #[test]
    fn a_year_without_sheets_is_empty_and_settles_to_nothing() {
        let y = TaxYear::of(&employee(), 2026, &[]).unwrap();

        assert!(y.months.is_empty());
        assert_eq!((y.settlement.to_pay, y.settlement.to_refund), (Money::ZERO, Money::ZERO));
        assert_eq!((y.employee_id, y.tenant_id, y.employee_name.as_str()), (5, 7, "Li Lei"));
    }
}
