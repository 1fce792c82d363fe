//! Worked examples, each checked by hand in its comment. Amounts in comments are yuan.

use super::*;
use atrium_kernel::{Error, Money, Period};
use chrono::NaiveDate;

const YEAR: i32 = 2025;

fn yuan(amount: i64) -> Money {
    Money::from_yuan(amount)
}

fn fen(amount: i64) -> Money {
    Money::from_fen(amount)
}

fn month(m: u32) -> Period {
    Period::new(YEAR, m).unwrap()
}

fn hf(raw: &str) -> HousingFundRate {
    HousingFundRate::parse(raw).unwrap()
}

/// Pension 8 % + medical 2 % + housing fund 5 % (at the employee's 0.05) = exactly 15 % of
/// the base: no fixed medical amount, no unemployment insurance. Beijing floor and cap.
fn fifteen_percent_policy() -> PayrollPolicy {
    PayrollPolicy { medical_fixed: Money::ZERO, unemployment_rate: Rate::ZERO, ..PayrollPolicy::default() }
}

fn deduction(kind: DeductionKind, monthly_yuan: i64, from: Period, to: Option<Period>) -> SpecialDeduction {
    SpecialDeduction::new(kind, yuan(monthly_yuan), from, to).unwrap()
}

/// Calculates months `first..=last` of 2025 in order, each with the year-to-date of the
/// months before it, as the service does with approved sheets.
fn run<'a>(policy: PayrollPolicy, first: u32, last: u32, input: impl Fn(u32) -> EmployeeMonth<'a>) -> Vec<CalculatedLine> {
    let mut ytd = YearToDate::ZERO;
    let mut lines = Vec::new();
    for m in first..=last {
        let line = Calculator::new(policy, month(m)).unwrap().calculate(&input(m), &ytd).unwrap();
        ytd.add(&line).unwrap();
        lines.push(line);
    }
    lines
}

fn taxes(lines: &[CalculatedLine]) -> Vec<Money> {
    lines.iter().map(|line| line.tax).collect()
}

fn invalid_fields(err: Error) -> Vec<String> {
    match err {
        Error::Invalid(problems) => problems.into_iter().map(|p| p.field).collect(),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

// ---- worked examples of the withholding rules (docs/payroll.md, "What calculate computes") ----

#[test]
fn payroll_md_example_one_on_cumulative_figures_is_75_a_month_and_900_a_year() {
    // Taxable per month: 10,000 − 5,000 − 1,500 − 1,000 = 2,500; cumulative 2,500 × k at 3 %.
    let cumulative = |k: i64| cumulative_tax(yuan(2_500 * k));

    assert_eq!([cumulative(1), cumulative(2), cumulative(3)], [yuan(75), yuan(150), yuan(225)]);
    // 30,000 × 3 % = 900.
    assert_eq!(cumulative(12), yuan(900));
}

#[test]
fn payroll_md_example_one_through_the_engine_withholds_75_every_month() {
    // 10,000 at 15 % → contributions 1,500; child education 1,000 (2019 standard).
    let deductions = [deduction(DeductionKind::ChildrenEducation, 1_000, month(1), None)];
    let input = |_| EmployeeMonth { special_deductions: &deductions, ..EmployeeMonth::new(yuan(10_000), hf("0.05")) };

    let lines = run(fifteen_percent_policy(), 1, 12, input);

    assert_eq!(lines[0].contributions, yuan(1_500));
    assert_eq!(taxes(&lines), vec![yuan(75); 12]);
    assert_eq!(Money::checked_sum(taxes(&lines)), Ok(yuan(900)));
    assert_eq!(lines[11].cumulative_taxable, yuan(30_000));
}

#[test]
fn payroll_md_example_two_on_cumulative_figures_changes_bracket_in_month_two() {
    // Taxable per month: 30,000 − 5,000 − 4,500 − 2,000 = 18,500.
    // 18,500 × 3 % = 555; 37,000 × 10 % − 2,520 = 1,180; 55,500 × 10 % − 2,520 = 3,030.
    let cumulative = [yuan(18_500), yuan(37_000), yuan(55_500)].map(cumulative_tax);

    assert_eq!(cumulative, [yuan(555), yuan(1_180), yuan(3_030)]);
    // Withheld: 555, 1,180 − 555 = 625, 3,030 − 1,180 = 1,850.
    assert_eq!(
        [Ok(cumulative[0]), cumulative[1].checked_sub(cumulative[0]), cumulative[2].checked_sub(cumulative[1])],
        [Ok(yuan(555)), Ok(yuan(625)), Ok(yuan(1_850))]
    );
}

#[test]
fn payroll_md_example_two_through_the_engine_withholds_555_625_and_1850() {
    // 30,000 at 15 % → contributions 4,500; deductions 2,000.
    let deductions = [deduction(DeductionKind::ChildrenEducation, 2_000, month(1), None)];
    let input = |_| EmployeeMonth { special_deductions: &deductions, ..EmployeeMonth::new(yuan(30_000), hf("0.05")) };

    let lines = run(fifteen_percent_policy(), 1, 3, input);

    assert_eq!(lines[0].contributions, yuan(4_500));
    assert_eq!(taxes(&lines), [yuan(555), yuan(625), yuan(1_850)]);
    assert_eq!(lines[2].cumulative_tax, yuan(3_030));
}

// ---- Our own examples ----

#[test]
fn crossing_into_the_twenty_percent_band_in_august_raises_that_months_tax() {
    // 30,000 at 15 % → 4,500; taxable per month 30,000 − 5,000 − 4,500 = 20,500.
    // June: 123,000 × 10 % − 2,520 = 9,780.  July: 143,500 × 10 % − 2,520 = 11,830 → 2,050.
    // August: 164,000 × 20 % − 16,920 = 15,880 → 15,880 − 11,830 = 4,050.
    let lines = run(fifteen_percent_policy(), 1, 8, |_| EmployeeMonth::new(yuan(30_000), hf("0.05")));

    assert_eq!(lines[5].cumulative_tax, yuan(9_780));
    assert_eq!((lines[6].cumulative_taxable, lines[6].tax), (yuan(143_500), yuan(2_050)));
    assert_eq!((lines[7].cumulative_taxable, lines[7].tax), (yuan(164_000), yuan(4_050)));
}

#[test]
fn a_pay_cut_after_a_high_month_withholds_nothing_and_refunds_nothing() {
    // January: 20,000 + bonus 30,000 = 50,000 gross; contributions 15 % × 20,000 = 3,000.
    //   Taxable 50,000 − 5,000 − 3,000 = 42,000 → 4,200 − 2,520 = 1,680 withheld.
    // February: 3,000; base clamps to the floor 7,162 → 572.96 + 143.24 + 358.10 = 1,074.30.
    //   Taxable 53,000 − 10,000 − 4,074.30 = 38,925.70 → 3,892.57 − 2,520 = 1,372.57 < 1,680.
    //   Tax 0; net 3,000 − 1,074.30 = 1,925.70.
    let input = |m| match m {
        1 => EmployeeMonth { bonus: yuan(30_000), ..EmployeeMonth::new(yuan(20_000), hf("0.05")) },
        _ => EmployeeMonth::new(yuan(3_000), hf("0.05")),
    };

    let lines = run(fifteen_percent_policy(), 1, 2, input);

    assert_eq!(lines[0].tax, yuan(1_680));
    assert_eq!(lines[1].contributions, fen(107_430));
    assert_eq!(lines[1].cumulative_taxable, fen(3_892_570));
    assert_eq!(lines[1].cumulative_tax, fen(137_257));
    assert_eq!(lines[1].tax, Money::ZERO);
    assert_eq!(lines[1].net_pay, fen(192_570));
}

#[test]
fn a_base_below_the_floor_contributes_on_the_floor() {
    // Beijing default, base 5,000 → 7,162. Pension 572.96; medical 143.24 + 3 = 146.24;
    // unemployment 35.81; housing fund 12 % = 859.44; total 1,614.45.
    // Taxable 5,000 − 5,000 − 1,614.45 < 0 → 0. Net 5,000 − 1,614.45 = 3,385.55.
    let input = EmployeeMonth::new(yuan(5_000), hf("0.12"));

    let line = calculate(&PayrollPolicy::default(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!(line.si_base, yuan(7_162));
    assert_eq!([line.pension, line.medical, line.unemployment, line.housing_fund], [fen(57_296), fen(14_624), fen(3_581), fen(85_944)]);
    assert_eq!(line.contributions, fen(161_445));
    assert_eq!((line.cumulative_taxable, line.tax), (Money::ZERO, Money::ZERO));
    assert_eq!(line.net_pay, fen(338_555));
}

#[test]
fn a_base_above_the_cap_contributes_on_the_cap() {
    // Beijing default, base 50,000 → 35,811. Pension 2,864.88; medical 716.22 + 3 = 719.22;
    // unemployment 179.055 → 179.06; housing fund 12 % = 4,297.32; total 8,060.48.
    // Taxable 50,000 − 5,000 − 8,060.48 = 36,939.52 → 3,693.952 − 2,520 = 1,173.952 → 1,173.95.
    // Net 50,000 − 8,060.48 − 1,173.95 = 40,765.57.
    let input = EmployeeMonth::new(yuan(50_000), hf("0.12"));

    let line = calculate(&PayrollPolicy::default(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!((line.si_base, line.hf_base), (yuan(35_811), yuan(35_811)));
    assert_eq!([line.pension, line.medical, line.unemployment, line.housing_fund], [fen(286_488), fen(71_922), fen(17_906), fen(429_732)]);
    assert_eq!(line.contributions, fen(806_048));
    assert_eq!(line.tax, fen(117_395));
    assert_eq!(line.net_pay, fen(4_076_557));
}

#[test]
fn a_high_earner_reaches_the_45_percent_band_by_december() {
    // 100,000 a month, Beijing default, housing fund 12 %: contributions 8,060.48 (at the cap).
    // Taxable per month 100,000 − 5,000 − 8,060.48 = 86,939.52.
    // January: 8,693.952 − 2,520 = 6,173.95.
    // December: 1,043,274.24 × 45 % − 181,920 = 287,553.408 → 287,553.41 withheld in the year.
    let lines = run(PayrollPolicy::default(), 1, 12, |_| EmployeeMonth::new(yuan(100_000), hf("0.12")));

    assert_eq!(lines[0].tax, fen(617_395));
    assert_eq!(lines[11].cumulative_taxable, fen(104_327_424));
    assert_eq!(lines[11].cumulative_tax, fen(28_755_341));
    assert_eq!(Money::checked_sum(taxes(&lines)), Ok(fen(28_755_341)));
}

#[test]
fn the_housing_fund_base_is_clamped_by_its_own_floor_and_cap() {
    // Housing fund capped at 25,000, insurance at 35,811; base 30,000, housing fund 10 %:
    // housing fund 2,500 on 25,000; pension 2,400 on 30,000.
    let policy = PayrollPolicy { hf_base_cap: yuan(25_000), ..PayrollPolicy::default() };
    let input = EmployeeMonth::new(yuan(30_000), hf("0.10"));

    let line = calculate(&policy, month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!((line.si_base, line.hf_base), (yuan(30_000), yuan(25_000)));
    assert_eq!((line.pension, line.housing_fund), (yuan(2_400), yuan(2_500)));
}

#[test]
fn a_declared_contribution_base_replaces_the_base_salary() {
    // Base salary 20,000 but declared base 15,000: 15 % × 15,000 = 2,250.
    // Taxable 20,000 − 5,000 − 2,250 = 12,750 → 382.50.
    let input = EmployeeMonth { si_base: Some(yuan(15_000)), ..EmployeeMonth::new(yuan(20_000), hf("0.05")) };

    let line = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!(line.si_base, yuan(15_000));
    assert_eq!(line.contributions, yuan(2_250));
    assert_eq!(line.tax, fen(38_250));
}

#[test]
fn the_fixed_medical_amount_is_added_to_the_medical_contribution() {
    // Base 10,000, housing fund 5 %. With 3 yuan fixed: 800 + 203 + 50 + 500 = 1,553;
    //   taxable 3,447 → 103.41. Without: 1,550; taxable 3,450 → 103.50.
    let input = EmployeeMonth::new(yuan(10_000), hf("0.05"));
    let without = PayrollPolicy { medical_fixed: Money::ZERO, ..PayrollPolicy::default() };

    let beijing = calculate(&PayrollPolicy::default(), month(1), &input, &YearToDate::ZERO).unwrap();
    let plain = calculate(&without, month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!((beijing.medical, beijing.contributions, beijing.tax), (yuan(203), yuan(1_553), fen(10_341)));
    assert_eq!((plain.medical, plain.contributions, plain.tax), (yuan(200), yuan(1_550), fen(10_350)));
}

#[test]
fn a_contribution_of_exactly_half_a_fen_rounds_up() {
    // Unemployment 0.5 %: 10,001.00 → 50.005 → 50.01; 10,000.99 → 50.00495 → 50.00.
    let policy = PayrollPolicy::default();
    let at_half = EmployeeMonth::new(fen(1_000_100), hf("0.05"));
    let below_half = EmployeeMonth::new(fen(1_000_099), hf("0.05"));

    let up = calculate(&policy, month(1), &at_half, &YearToDate::ZERO).unwrap();
    let down = calculate(&policy, month(1), &below_half, &YearToDate::ZERO).unwrap();

    assert_eq!(up.unemployment, fen(5_001));
    assert_eq!(down.unemployment, fen(5_000));
}

#[test]
fn an_employee_hired_in_april_gets_the_basic_deduction_from_april_only() {
    // Hired 15 April; 20,000 at 15 % → 3,000; taxable per month 20,000 − 5,000 − 3,000 = 12,000.
    // June: 3 months employed, cumulative 36,000 → 1,080 (3 %, band includes its bound);
    // 360 withheld each month.
    let hired = NaiveDate::from_ymd_opt(YEAR, 4, 15);
    let input = |_| EmployeeMonth { hire_date: hired, ..EmployeeMonth::new(yuan(20_000), hf("0.05")) };

    let lines = run(fifteen_percent_policy(), 4, 6, input);

    assert_eq!(lines[2].months_employed, 3);
    assert_eq!(lines[2].cumulative_taxable, yuan(36_000));
    assert_eq!(lines[2].cumulative_tax, yuan(1_080));
    assert_eq!(taxes(&lines), [yuan(360); 3]);
}

#[test]
fn an_employee_hired_in_an_earlier_year_counts_months_from_january() {
    // Hired August 2019; March 2025 is the third month of the tax year.
    let input = EmployeeMonth { hire_date: NaiveDate::from_ymd_opt(2019, 8, 1), ..EmployeeMonth::new(yuan(1), hf("0.05")) };

    let line = calculate(&fifteen_percent_policy(), month(3), &input, &YearToDate::ZERO).unwrap();

    assert_eq!(line.months_employed, 3);
}

#[test]
fn a_hire_date_after_the_period_is_rejected() {
    let input = EmployeeMonth { hire_date: NaiveDate::from_ymd_opt(YEAR, 7, 1), ..EmployeeMonth::new(yuan(9_000), hf("0.05")) };

    let err = calculate(&fifteen_percent_policy(), month(6), &input, &YearToDate::ZERO).unwrap_err();

    assert_eq!(invalid_fields(err), ["hire_date"]);
}

#[test]
fn a_special_deduction_declared_late_catches_up_in_full_in_the_month_it_is_seen() {
    // 10,000 at 15 % → 1,500. Jan: taxable 3,500 → 105. Feb: 7,000 → 210, withheld 105.
    // March: rent 1,500 declared from January → 3 × 1,500 = 4,500 at once;
    //   taxable 30,000 − 15,000 − 4,500 − 4,500 = 6,000 → 180 < 210 withheld → 0.
    // April: 40,000 − 20,000 − 6,000 − 6,000 = 8,000 → 240 → 240 − 210 = 30.
    let rent = [deduction(DeductionKind::HousingRent, 1_500, month(1), None)];
    let input = |m| EmployeeMonth { special_deductions: if m >= 3 { &rent } else { &[] }, ..EmployeeMonth::new(yuan(10_000), hf("0.05")) };

    let lines = run(fifteen_percent_policy(), 1, 4, input);

    assert_eq!(taxes(&lines), [yuan(105), yuan(105), Money::ZERO, yuan(30)]);
    assert_eq!(lines[2].special_deduction, yuan(4_500));
    assert_eq!(lines[3].special_deduction, yuan(1_500));
    assert_eq!(lines[3].cumulative_special_deduction, yuan(6_000));
}

#[test]
fn a_special_deduction_counts_only_months_inside_its_range_and_the_employment() {
    // Child education 2,000 from September 2024 to February 2025 and rent 1,500 from March,
    // calculated for May 2025 (earlier years never count).
    let deductions = [
        deduction(DeductionKind::ChildrenEducation, 2_000, Period::new(2024, 9).unwrap(), Some(month(2))),
        deduction(DeductionKind::HousingRent, 1_500, month(3), None),
    ];
    let hired_early = EmployeeMonth { special_deductions: &deductions, ..EmployeeMonth::new(yuan(10_000), hf("0.05")) };
    let hired_april = EmployeeMonth { hire_date: NaiveDate::from_ymd_opt(YEAR, 4, 15), ..hired_early };

    let early = calculate(&fifteen_percent_policy(), month(5), &hired_early, &YearToDate::ZERO).unwrap();
    let april = calculate(&fifteen_percent_policy(), month(5), &hired_april, &YearToDate::ZERO).unwrap();

    // Hired before 2025: 4,000 + 3 × 1,500 = 8,500.
    assert_eq!(early.cumulative_special_deduction, yuan(8_500));
    // Hired in April: the child deduction ended before, rent counts April and May = 3,000.
    assert_eq!(april.cumulative_special_deduction, yuan(3_000));
}

#[test]
fn an_annual_bonus_of_36000_is_taxed_apart_at_three_percent() {
    // 10,000 at 15 %: taxable 3,500 → 105. Bonus 36,000 → 1,080, outside the cumulative figures.
    // Net 10,000 − 1,500 − 105 + 36,000 − 1,080 = 43,315.
    let input = EmployeeMonth { annual_bonus: yuan(36_000), ..EmployeeMonth::new(yuan(10_000), hf("0.05")) };

    let line = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!((line.cumulative_taxable, line.tax), (yuan(3_500), yuan(105)));
    assert_eq!(line.annual_bonus_tax, yuan(1_080));
    assert_eq!(line.net_pay, yuan(43_315));
}

#[test]
fn an_annual_bonus_of_36001_is_taxed_at_ten_percent_and_nets_less() {
    // Bonus 36,001 → 3,600.10 − 210 = 3,390.10.
    // Net 10,000 − 1,500 − 105 + 36,001 − 3,390.10 = 41,005.90 (less than with 36,000).
    let input = EmployeeMonth { annual_bonus: yuan(36_001), ..EmployeeMonth::new(yuan(10_000), hf("0.05")) };

    let line = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!(line.annual_bonus_tax, fen(339_010));
    assert_eq!(line.net_pay, fen(4_100_590));
}

#[test]
fn an_unpaid_leave_deduction_lowers_gross_but_not_the_contribution_base() {
    // Base 10,000, leave 1,000 → gross 9,000; contributions still on 10,000 = 1,500.
    // Taxable 9,000 − 5,000 − 1,500 = 2,500 → 75. Net 9,000 − 1,500 − 75 = 7,425.
    let input = EmployeeMonth { leave_deduction: yuan(1_000), ..EmployeeMonth::new(yuan(10_000), hf("0.05")) };

    let line = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!((line.gross, line.contributions), (yuan(9_000), yuan(1_500)));
    assert_eq!(line.tax, yuan(75));
    assert_eq!(line.net_pay, yuan(7_425));
}

#[test]
fn tax_free_income_is_paid_but_not_taxed() {
    // Base 10,000 + allowance 1,000, all of the allowance tax-free: gross 11,000.
    // Taxable 11,000 − 1,000 − 5,000 − 1,500 = 3,500 → 105. Net 11,000 − 1,500 − 105 = 9,395.
    let input = EmployeeMonth { allowance: yuan(1_000), tax_free_income: yuan(1_000), ..EmployeeMonth::new(yuan(10_000), hf("0.05")) };

    let line = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!(line.gross, yuan(11_000));
    assert_eq!(line.tax, yuan(105));
    assert_eq!(line.net_pay, yuan(9_395));
}

#[test]
fn allowance_overtime_and_bonus_add_to_gross_but_not_to_the_contribution_base() {
    // 8,000 + 500 + 700 + 800 = 10,000 gross; contributions 15 % × 8,000 = 1,200.
    // Taxable 10,000 − 5,000 − 1,200 = 3,800 → 114.
    let input =
        EmployeeMonth { allowance: yuan(500), overtime: yuan(700), bonus: yuan(800), ..EmployeeMonth::new(yuan(8_000), hf("0.05")) };

    let line = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!((line.gross, line.contributions, line.tax), (yuan(10_000), yuan(1_200), yuan(114)));
}

#[test]
fn other_pre_tax_deductions_lower_tax_and_after_tax_deductions_lower_net_pay() {
    // 10,000 at 15 %, other pre-tax 500, after-tax 200.
    // Taxable 10,000 − 5,000 − 1,500 − 500 = 3,000 → 90. Net 10,000 − 1,500 − 90 − 200 = 8,210.
    let input = EmployeeMonth {
        other_pre_tax_deduction: yuan(500),
        after_tax_deduction: yuan(200),
        ..EmployeeMonth::new(yuan(10_000), hf("0.05"))
    };

    let line = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap();

    assert_eq!((line.cumulative_taxable, line.tax), (yuan(3_000), yuan(90)));
    assert_eq!(line.net_pay, yuan(8_210));
}

#[test]
fn the_year_to_date_carries_every_cumulative_figure_into_the_next_month() {
    // Month 1: gross 11,000 (1,000 tax-free), contributions 1,500, other 500, child 2,000.
    // Month 2 taxable: 22,000 − 2,000 − 10,000 − 3,000 − 4,000 − 1,000 = 2,000 → 60;
    // month 1 was 1,000 → 30, so month 2 withholds 30.
    let child = [deduction(DeductionKind::ChildrenEducation, 2_000, month(1), None)];
    let input = |_| EmployeeMonth {
        allowance: yuan(1_000),
        tax_free_income: yuan(1_000),
        other_pre_tax_deduction: yuan(500),
        special_deductions: &child,
        ..EmployeeMonth::new(yuan(10_000), hf("0.05"))
    };

    let lines = run(fifteen_percent_policy(), 1, 2, input);
    let ytd: YearToDate = lines.iter().collect::<Result<_, _>>().unwrap();

    assert_eq!(taxes(&lines), [yuan(30), yuan(30)]);
    assert_eq!(lines[1].cumulative_taxable, yuan(2_000));
    assert_eq!(
        ytd,
        YearToDate {
            gross: yuan(22_000),
            tax_free_income: yuan(2_000),
            contributions: yuan(3_000),
            special_deductions: yuan(4_000),
            other_deductions: yuan(1_000),
            tax_withheld: yuan(60),
        }
    );
}

#[test]
fn negative_amounts_and_a_leave_deduction_above_earnings_are_rejected_by_field() {
    let input = EmployeeMonth { allowance: fen(-1), leave_deduction: yuan(9_000), ..EmployeeMonth::new(yuan(8_000), hf("0.05")) };

    let err = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap_err();

    assert_eq!(invalid_fields(err), ["allowance", "leave_deduction"]);
}

#[test]
fn tax_free_income_above_gross_is_rejected() {
    let input = EmployeeMonth { tax_free_income: yuan(8_001), ..EmployeeMonth::new(yuan(8_000), hf("0.05")) };

    let err = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap_err();

    assert_eq!(invalid_fields(err), ["tax_free_income"]);
}

#[test]
fn an_invalid_policy_is_rejected_before_any_calculation() {
    let policy = PayrollPolicy { si_base_cap: yuan(1), ..PayrollPolicy::default() };

    let err = Calculator::new(policy, month(1)).unwrap_err();

    assert_eq!(invalid_fields(err), ["si_base_floor"]);
}

#[test]
fn a_calculated_line_serialises_with_the_api_field_names_in_fen() {
    let line = calculate(&fifteen_percent_policy(), month(1), &EmployeeMonth::new(yuan(10_000), hf("0.05")), &YearToDate::ZERO).unwrap();

    let json = serde_json::to_value(line).unwrap();

    for field in [
        "gross",
        "si_base",
        "pension",
        "medical",
        "unemployment",
        "housing_fund",
        "special_deduction",
        "cumulative_taxable",
        "cumulative_tax",
        "tax",
        "annual_bonus_tax",
        "net_pay",
    ] {
        assert!(json.get(field).is_some(), "{field}");
    }
    assert_eq!(json["gross"], 1_000_000);
    assert_eq!(json["tax"], 10_500);
}

#[test]
fn amounts_beyond_what_a_caller_may_enter_are_refused_by_field_not_saturated() {
    let input = EmployeeMonth { bonus: fen(i64::MAX), ..EmployeeMonth::new(fen(i64::MAX), hf("0.05")) };

    let err = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap_err();

    assert_eq!(invalid_fields(err), ["base_salary", "bonus"]);
}

#[test]
fn a_year_to_date_that_no_longer_fits_is_an_error_naming_it_not_a_saturated_figure() {
    let input = EmployeeMonth::new(yuan(10_000), hf("0.05"));
    let huge = YearToDate { gross: fen(i64::MAX - 1), ..YearToDate::ZERO };
    let overpaid = YearToDate { tax_withheld: fen(i64::MIN), ..YearToDate::ZERO };

    let gross = calculate(&fifteen_percent_policy(), month(2), &input, &huge).unwrap_err();
    let withheld = calculate(&fifteen_percent_policy(), month(2), &input, &overpaid).unwrap_err();

    assert_eq!(invalid_fields(gross), ["year_to_date.gross"]);
    assert_eq!(invalid_fields(withheld), ["year_to_date.tax_withheld"]);
}

#[test]
fn amounts_at_the_input_bound_calculate_exactly() {
    let max = Money::MAX_INPUT;
    let input = EmployeeMonth { allowance: max, overtime: max, bonus: max, annual_bonus: max, ..EmployeeMonth::new(max, hf("0.05")) };
    let policy = PayrollPolicy { si_base_cap: max, hf_base_cap: max, ..fifteen_percent_policy() };

    let line = calculate(&policy, month(12), &input, &YearToDate::ZERO).unwrap();

    assert_eq!(line.gross, fen(4 * max.fen()));
    // 15 % of the 10^12 base.
    assert_eq!(line.contributions, fen(150_000_000_000));
    let taxable = 4 * max.fen() - 12 * 500_000 - 150_000_000_000;
    assert_eq!(line.cumulative_taxable, fen(taxable));
    assert_eq!(line.tax, fen((taxable * 45 + 50) / 100 - 18_192_000));
    let net = line.gross.fen() - line.contributions.fen() - line.tax.fen() + max.fen() - line.annual_bonus_tax.fen();
    assert_eq!(line.net_pay, fen(net));
}

#[test]
fn a_year_to_date_that_would_overflow_is_left_unchanged() {
    let line = calculate(&fifteen_percent_policy(), month(1), &EmployeeMonth::new(yuan(10_000), hf("0.05")), &YearToDate::ZERO).unwrap();
    let mut ytd = YearToDate { gross: fen(i64::MAX), ..YearToDate::ZERO };

    assert_eq!(ytd.add(&line), Err(atrium_kernel::Overflow));
    assert_eq!(ytd.gross, fen(i64::MAX));
    assert_eq!([line, line].iter().collect::<Result<YearToDate, _>>().map(|y| y.gross), Ok(fen(2 * line.gross.fen())));
}

// ---- Supplementary months: extra pay for a month whose regular sheet is approved ----
//
// A supplementary month has no base salary and no contributions; its year to date holds the
// month's regular sheet (and the month's supplementary sheets approved before it), so the
// cumulative formula does not count the month's 5,000 or special deductions again.

/// Calculates one sheet of `period` over `ytd` and adds it to `ytd`, as approving it would.
fn pay<'a>(policy: PayrollPolicy, period: Period, input: EmployeeMonth<'a>, ytd: &mut YearToDate) -> CalculatedLine {
    let line = Calculator::new(policy, period).unwrap().calculate(&input, ytd).unwrap();
    ytd.add(&line).unwrap();
    line
}

fn extra<'a>() -> EmployeeMonth<'a> {
    EmployeeMonth::supplementary()
}

#[test]
fn payroll_md_supplementary_example_withholds_360_then_300_then_360() {
    // Salary 20,000, contributions 3,000 (15 %), no special deductions.
    // January regular: 20,000 − 5,000 − 3,000 = 12,000 → 360.
    // January supplementary bonus 10,000: 30,000 − 5,000 − 3,000 = 22,000 → 660; 660 − 360 = 300.
    // February regular: 50,000 − 10,000 − 6,000 = 34,000 → 1,020; 1,020 − 660 = 360.
    let mut ytd = YearToDate::ZERO;
    let salary = EmployeeMonth::new(yuan(20_000), hf("0.05"));

    let jan = pay(fifteen_percent_policy(), month(1), salary, &mut ytd);
    let bonus = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(10_000), ..extra() }, &mut ytd);
    let feb = pay(fifteen_percent_policy(), month(2), salary, &mut ytd);

    assert_eq!((jan.cumulative_taxable, jan.tax), (yuan(12_000), yuan(360)));
    assert_eq!((bonus.cumulative_taxable, bonus.cumulative_tax, bonus.tax), (yuan(22_000), yuan(660), yuan(300)));
    assert_eq!((feb.cumulative_taxable, feb.cumulative_tax, feb.tax), (yuan(34_000), yuan(1_020), yuan(360)));
    // The supplementary line: no contributions, no second basic deduction, net 10,000 − 300.
    assert_eq!((bonus.contributions, bonus.si_base, bonus.hf_base, bonus.months_employed), (Money::ZERO, Money::ZERO, Money::ZERO, 1));
    assert_eq!((bonus.gross, bonus.net_pay), (yuan(10_000), yuan(9_700)));
}

#[test]
fn a_supplementary_bonus_that_crosses_into_the_ten_percent_band_is_taxed_across_it() {
    // Salary 30,000, contributions 4,500: January regular 30,000 − 5,000 − 4,500 = 20,500 → 615.
    // Supplementary bonus 20,000: 40,500 → 4,050 − 2,520 = 1,530; 1,530 − 615 = 915
    // (15,500 at 3 % = 465 plus 4,500 at 10 % = 450: 915, not 20,000 × 3 % = 600).
    let mut ytd = YearToDate::ZERO;

    pay(fifteen_percent_policy(), month(1), EmployeeMonth::new(yuan(30_000), hf("0.05")), &mut ytd);
    let bonus = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(20_000), ..extra() }, &mut ytd);

    assert_eq!((bonus.cumulative_taxable, bonus.cumulative_tax, bonus.tax), (yuan(40_500), yuan(1_530), yuan(915)));
}

#[test]
fn a_supplementary_correction_whose_tax_would_be_negative_withholds_nothing_and_refunds_nothing() {
    // Salary 20,000, contributions 3,000: January regular 12,000 → 360.
    // Supplementary: allowance 1,000 with an enterprise-annuity correction of 6,000 pre-tax:
    //   21,000 − 5,000 − 3,000 − 6,000 = 7,000 → 210 < 360 → tax 0 (not −150). Net 1,000.
    // February regular: 41,000 − 10,000 − 6,000 − 6,000 = 19,000 → 570; 570 − 360 = 210.
    let mut ytd = YearToDate::ZERO;
    let salary = EmployeeMonth::new(yuan(20_000), hf("0.05"));

    pay(fifteen_percent_policy(), month(1), salary, &mut ytd);
    let correction = pay(
        fifteen_percent_policy(),
        month(1),
        EmployeeMonth { allowance: yuan(1_000), other_pre_tax_deduction: yuan(6_000), ..extra() },
        &mut ytd,
    );
    let feb = pay(fifteen_percent_policy(), month(2), salary, &mut ytd);

    assert_eq!((correction.cumulative_taxable, correction.cumulative_tax), (yuan(7_000), yuan(210)));
    assert_eq!((correction.tax, correction.net_pay), (Money::ZERO, yuan(1_000)));
    assert_eq!((feb.cumulative_taxable, feb.tax), (yuan(19_000), yuan(210)));
}

#[test]
fn a_supplementary_sheet_in_june_counts_the_half_year_before_it() {
    // 10,000 at 15 % → 1,500; taxable 3,500 a month, 105 withheld each of January–June.
    // June supplementary overtime 2,000: 62,000 − 30,000 − 9,000 = 23,000 → 690; 690 − 630 = 60.
    let mut ytd = YearToDate::ZERO;
    for m in 1..=6 {
        pay(fifteen_percent_policy(), month(m), EmployeeMonth::new(yuan(10_000), hf("0.05")), &mut ytd);
    }

    let overtime = pay(fifteen_percent_policy(), month(6), EmployeeMonth { overtime: yuan(2_000), ..extra() }, &mut ytd);

    assert_eq!(overtime.months_employed, 6);
    assert_eq!((overtime.cumulative_taxable, overtime.cumulative_tax, overtime.tax), (yuan(23_000), yuan(690), yuan(60)));
}

#[test]
fn a_supplementary_sheet_does_not_count_the_months_special_deductions_again() {
    // 10,000 at 15 %, children's education 2,000: January regular 10,000 − 5,000 − 1,500 − 2,000
    // = 1,500 → 45. Supplementary bonus 3,000: 13,000 − 5,000 − 1,500 − 2,000 = 4,500 → 135;
    // 135 − 45 = 90. The deduction counted by the supplementary line: 2,000 − 2,000 = 0.
    let child = [deduction(DeductionKind::ChildrenEducation, 2_000, month(1), None)];
    let mut ytd = YearToDate::ZERO;

    pay(
        fifteen_percent_policy(),
        month(1),
        EmployeeMonth { special_deductions: &child, ..EmployeeMonth::new(yuan(10_000), hf("0.05")) },
        &mut ytd,
    );
    let bonus =
        pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(3_000), special_deductions: &child, ..extra() }, &mut ytd);

    assert_eq!((bonus.cumulative_taxable, bonus.tax), (yuan(4_500), yuan(90)));
    assert_eq!((bonus.special_deduction, bonus.cumulative_special_deduction), (Money::ZERO, yuan(2_000)));
    assert_eq!(ytd.special_deductions, yuan(2_000));
}

#[test]
fn a_supplementary_sheet_for_someone_hired_in_april_counts_the_basic_deduction_from_april() {
    // Hired 15 April; 20,000 at 15 %: April regular 12,000 → 360.
    // April supplementary allowance 5,000: 25,000 − 5,000 − 3,000 = 17,000 → 510; 510 − 360 = 150.
    let hired = NaiveDate::from_ymd_opt(YEAR, 4, 15);
    let mut ytd = YearToDate::ZERO;

    pay(fifteen_percent_policy(), month(4), EmployeeMonth { hire_date: hired, ..EmployeeMonth::new(yuan(20_000), hf("0.05")) }, &mut ytd);
    let arrears = pay(fifteen_percent_policy(), month(4), EmployeeMonth { allowance: yuan(5_000), hire_date: hired, ..extra() }, &mut ytd);

    assert_eq!(arrears.months_employed, 1);
    assert_eq!((arrears.cumulative_taxable, arrears.tax), (yuan(17_000), yuan(150)));
}

#[test]
fn two_supplementary_sheets_of_a_month_each_count_the_ones_approved_before() {
    // Salary 20,000: January regular 12,000 → 360. First supplementary bonus 10,000:
    // 22,000 → 660 → 300. Second, bonus 20,000, over both: 50,000 − 5,000 − 3,000 = 42,000
    // → 4,200 − 2,520 = 1,680; 1,680 − 660 = 1,020.
    let mut ytd = YearToDate::ZERO;

    pay(fifteen_percent_policy(), month(1), EmployeeMonth::new(yuan(20_000), hf("0.05")), &mut ytd);
    let first = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(10_000), ..extra() }, &mut ytd);
    let second = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(20_000), ..extra() }, &mut ytd);

    assert_eq!(first.tax, yuan(300));
    assert_eq!((second.cumulative_taxable, second.cumulative_tax, second.tax), (yuan(42_000), yuan(1_680), yuan(1_020)));
    assert_eq!(ytd.tax_withheld, yuan(1_680));
}

#[test]
fn an_after_tax_deduction_on_a_supplementary_sheet_lowers_its_net_pay_only() {
    // Salary 20,000: January 12,000 → 360. Supplementary overtime 1,000, after-tax 200:
    // 13,000 → 390 → 30 withheld; net 1,000 − 30 − 200 = 770.
    let mut ytd = YearToDate::ZERO;

    pay(fifteen_percent_policy(), month(1), EmployeeMonth::new(yuan(20_000), hf("0.05")), &mut ytd);
    let line = pay(
        fifteen_percent_policy(),
        month(1),
        EmployeeMonth { overtime: yuan(1_000), after_tax_deduction: yuan(200), ..extra() },
        &mut ytd,
    );

    assert_eq!((line.cumulative_taxable, line.tax, line.net_pay), (yuan(13_000), yuan(30), yuan(770)));
}

#[test]
fn an_annual_bonus_on_a_supplementary_sheet_is_taxed_apart_and_leaves_the_cumulative_figures_alone() {
    // Salary 20,000: January 12,000 → 360. Supplementary annual bonus 36,000: 36,000 ÷ 12 =
    // 3,000 → 3 % → 1,080. Cumulative taxable stays 12,000 → 360, so 0 more withheld.
    // Net 36,000 − 1,080 = 34,920.
    let mut ytd = YearToDate::ZERO;

    pay(fifteen_percent_policy(), month(1), EmployeeMonth::new(yuan(20_000), hf("0.05")), &mut ytd);
    let line = pay(fifteen_percent_policy(), month(1), EmployeeMonth { annual_bonus: yuan(36_000), ..extra() }, &mut ytd);

    assert_eq!((line.gross, line.cumulative_taxable, line.tax), (Money::ZERO, yuan(12_000), Money::ZERO));
    assert_eq!((line.annual_bonus_tax, line.net_pay), (yuan(1_080), yuan(34_920)));
}

#[test]
fn a_low_earners_supplementary_bonus_pays_no_contributions_although_a_zero_base_would_clamp_to_the_floor() {
    // Salary 6,000, base clamped to the floor 7,162: 15 % = 1,074.30. January regular
    // 6,000 − 5,000 − 1,074.30 < 0 → 0. Supplementary bonus 2,000 (a zero base would clamp to
    // the floor too, but a supplementary month has no contributions):
    //   8,000 − 5,000 − 1,074.30 = 1,925.70 → 57.771 → 57.77.
    let mut ytd = YearToDate::ZERO;

    let jan = pay(fifteen_percent_policy(), month(1), EmployeeMonth::new(yuan(6_000), hf("0.05")), &mut ytd);
    let bonus = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(2_000), ..extra() }, &mut ytd);

    assert_eq!((jan.contributions, jan.tax), (fen(107_430), Money::ZERO));
    assert_eq!(bonus.contributions, Money::ZERO);
    assert_eq!((bonus.cumulative_taxable, bonus.tax), (fen(192_570), fen(5_777)));
}

#[test]
fn paying_a_bonus_on_the_regular_sheet_or_splitting_it_with_a_supplementary_one_withholds_the_same() {
    // Salary 20,000 with a 30,000 bonus on the regular sheet: 50,000 − 5,000 − 3,000 = 42,000
    // → 1,680. Split 10,000 regular + 20,000 supplementary: 22,000 → 660, then 42,000 → 1,680,
    // 1,020 more: 1,680 in both.
    let mut whole = YearToDate::ZERO;
    let mut split = YearToDate::ZERO;
    let salary = EmployeeMonth::new(yuan(20_000), hf("0.05"));

    let at_once = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(30_000), ..salary }, &mut whole);
    let regular = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(10_000), ..salary }, &mut split);
    let rest = pay(fifteen_percent_policy(), month(1), EmployeeMonth { bonus: yuan(20_000), ..extra() }, &mut split);

    assert_eq!(at_once.tax, yuan(1_680));
    assert_eq!((regular.tax, rest.tax), (yuan(660), yuan(1_020)));
    assert_eq!(whole, split);
}

#[test]
fn a_supplementary_month_with_a_base_salary_leave_deduction_or_contribution_base_is_rejected_by_field() {
    let input = EmployeeMonth { base_salary: yuan(1), leave_deduction: yuan(1), si_base: Some(yuan(9_000)), ..extra() };

    let err = calculate(&fifteen_percent_policy(), month(1), &input, &YearToDate::ZERO).unwrap_err();

    assert_eq!(invalid_fields(err), ["base_salary", "leave_deduction", "si_base"]);
}
