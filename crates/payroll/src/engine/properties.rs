//! Properties that hold for every input, checked on random ones.

use super::*;
use atrium_kernel::{Error, Money, Period};
use chrono::{Datelike, NaiveDate};
use proptest::prelude::*;

const YEAR: i32 = 2025;

fn money(range: std::ops::RangeInclusive<i64>) -> impl Strategy<Value = Money> {
    range.prop_map(Money::from_fen)
}

fn policy() -> impl Strategy<Value = PayrollPolicy> {
    let rate = || (0_u32..=200_000).prop_map(|ppm| Rate::from_ppm(ppm).unwrap());
    (0_i64..=2_000_000, 0_i64..=10_000_000, 0_i64..=2_000_000, 0_i64..=10_000_000, 0_i64..=1_000, rate(), rate(), rate()).prop_map(
        |(si_floor, si_span, hf_floor, hf_span, fixed, pension, medical, unemployment)| PayrollPolicy {
            si_base_floor: Money::from_fen(si_floor),
            si_base_cap: Money::from_fen(si_floor + si_span),
            hf_base_floor: Money::from_fen(hf_floor),
            hf_base_cap: Money::from_fen(hf_floor + hf_span),
            medical_fixed: Money::from_fen(fixed),
            pension_rate: pension,
            medical_rate: medical,
            unemployment_rate: unemployment,
            four_eyes: true,
        },
    )
}

fn deduction() -> impl Strategy<Value = SpecialDeduction> {
    let kinds = prop::sample::select(vec![
        DeductionKind::ChildrenEducation,
        DeductionKind::InfantCare,
        DeductionKind::ElderlySupport,
        DeductionKind::ContinuingEducation,
        DeductionKind::HousingLoan,
        DeductionKind::HousingRent,
    ]);
    (kinds, 0_i64..=400_000, 2024_i32..=2025, 1_u32..=12, prop::option::of(0_u32..=18)).prop_map(|(kind, amount, year, month, length)| {
        let from = Period::new(year, month).unwrap();
        let to = length.map(|n| (0..n).fold(from, |p, _| p.next()));
        SpecialDeduction::new(kind, Money::from_fen(amount), from, to).unwrap()
    })
}

/// One employee-month with owned deductions; `input()` borrows them as the engine wants.
#[derive(Debug, Clone)]
struct Case {
    base_salary: Money,
    allowance: Money,
    overtime: Money,
    bonus: Money,
    leave_percent: i64,
    tax_free_percent: i64,
    other_pre_tax_deduction: Money,
    after_tax_deduction: Money,
    annual_bonus: Money,
    si_base: Option<Money>,
    housing_fund_rate: HousingFundRate,
    deductions: Vec<SpecialDeduction>,
}

impl Case {
    fn input(&self, hire_date: Option<NaiveDate>) -> EmployeeMonth<'_> {
        let earnings = Money::checked_sum([self.base_salary, self.allowance, self.overtime, self.bonus]).unwrap();
        let leave = Money::from_fen(earnings.fen() * self.leave_percent / 100);
        let gross = earnings.checked_sub(leave).unwrap();
        EmployeeMonth {
            allowance: self.allowance,
            overtime: self.overtime,
            bonus: self.bonus,
            leave_deduction: leave,
            other_pre_tax_deduction: self.other_pre_tax_deduction,
            after_tax_deduction: self.after_tax_deduction,
            annual_bonus: self.annual_bonus,
            tax_free_income: Money::from_fen(gross.fen() * self.tax_free_percent / 100),
            si_base: self.si_base,
            hire_date,
            special_deductions: &self.deductions,
            ..EmployeeMonth::new(self.base_salary, self.housing_fund_rate)
        }
    }
}

fn case() -> impl Strategy<Value = Case> {
    let amounts = (
        money(0..=20_000_000),
        money(0..=2_000_000),
        money(0..=2_000_000),
        money(0..=5_000_000),
        prop_oneof![Just(0_i64), 0_i64..=100],
        prop_oneof![Just(0_i64), 0_i64..=100],
    );
    let others = (
        money(0..=500_000),
        money(0..=500_000),
        prop_oneof![Just(Money::ZERO), money(0..=100_000_000)],
        prop::option::of(money(0..=10_000_000)),
        (50_000_u32..=120_000).prop_map(|ppm| HousingFundRate::new(Rate::from_ppm(ppm).unwrap()).unwrap()),
        prop::collection::vec(deduction(), 0..4),
    );
    (amounts, others).prop_map(
        |(
            (base_salary, allowance, overtime, bonus, leave_percent, tax_free_percent),
            (other_pre_tax_deduction, after_tax_deduction, annual_bonus, si_base, housing_fund_rate, deductions),
        )| Case {
            base_salary,
            allowance,
            overtime,
            bonus,
            leave_percent,
            tax_free_percent,
            other_pre_tax_deduction,
            after_tax_deduction,
            annual_bonus,
            si_base,
            housing_fund_rate,
            deductions,
        },
    )
}

fn year_to_date() -> impl Strategy<Value = YearToDate> {
    (
        money(0..=200_000_000),
        money(0..=10_000_000),
        money(0..=30_000_000),
        money(0..=5_000_000),
        money(0..=5_000_000),
        money(0..=50_000_000),
    )
        .prop_map(|(gross, tax_free_income, contributions, special_deductions, other_deductions, tax_withheld)| YearToDate {
            gross,
            tax_free_income,
            contributions,
            special_deductions,
            other_deductions,
            tax_withheld,
        })
}

fn hire_date() -> impl Strategy<Value = Option<NaiveDate>> {
    prop::option::of((2020_i32..=2025, 1_u32..=12, 1_u32..=28).prop_map(|(y, m, d)| NaiveDate::from_ymd_opt(y, m, d).unwrap()))
}

/// `amount × ppm / 10⁶` rounded half up, computed independently of the engine.
fn expected(amount: Money, rate: Rate) -> Money {
    let n = i128::from(amount.fen()) * i128::from(rate.ppm());
    Money::from_fen(i64::try_from((n + 500_000) / 1_000_000).unwrap())
}

/// `input` paying `x` more as allowance (0), overtime (1) or bonus (2).
fn paying(input: EmployeeMonth<'_>, x: Money, how: usize) -> EmployeeMonth<'_> {
    match how {
        0 => EmployeeMonth { allowance: input.allowance.checked_add(x).unwrap(), ..input },
        1 => EmployeeMonth { overtime: input.overtime.checked_add(x).unwrap(), ..input },
        _ => EmployeeMonth { bonus: input.bonus.checked_add(x).unwrap(), ..input },
    }
}

proptest! {
    #[test]
    fn net_pay_is_gross_less_contributions_tax_and_after_tax_deductions_plus_the_taxed_bonus(
        policy in policy(), case in case(), ytd in year_to_date(), month in 1_u32..=12,
    ) {
        let period = Period::new(YEAR, month).unwrap();

        let line = calculate(&policy, period, &case.input(None), &ytd).unwrap();

        let expected_net = line.gross.fen() - line.contributions.fen() - line.tax.fen() - line.after_tax_deduction.fen()
            + line.annual_bonus.fen() - line.annual_bonus_tax.fen();
        prop_assert_eq!(line.net_pay.fen(), expected_net);
        prop_assert_eq!(Ok(line.contributions), Money::checked_sum([line.pension, line.medical, line.unemployment, line.housing_fund]));
    }

    #[test]
    fn tax_and_annual_bonus_tax_are_never_negative(
        policy in policy(), case in case(), ytd in year_to_date(), month in 1_u32..=12,
    ) {
        let period = Period::new(YEAR, month).unwrap();

        let line = calculate(&policy, period, &case.input(None), &ytd).unwrap();

        prop_assert!(!line.tax.is_negative());
        prop_assert!(!line.annual_bonus_tax.is_negative());
        prop_assert!(!line.cumulative_taxable.is_negative());
        prop_assert!(!line.cumulative_tax.is_negative());
        prop_assert!(line.annual_bonus_tax <= line.annual_bonus);
    }

    #[test]
    fn cumulative_tax_withheld_never_decreases_over_a_year_of_random_months(
        policy in policy(), months in prop::collection::vec(case(), 12), hired in hire_date(),
    ) {
        let first_month = hired.filter(|d| d.year() == YEAR).map_or(1, |d| d.month());
        let mut ytd = YearToDate::ZERO;
        for (month, case) in (1_u32..=12).zip(&months).skip_while(|(m, _)| *m < first_month) {
            let period = Period::new(YEAR, month).unwrap();
            let before = ytd.tax_withheld;

            let line = calculate(&policy, period, &case.input(hired), &ytd).unwrap();
            ytd.add(&line).unwrap();

            prop_assert!(ytd.tax_withheld >= before);
            // What has been withheld is the highest cumulative tax seen so far.
            prop_assert_eq!(ytd.tax_withheld, before.max(line.cumulative_tax));
        }
    }

    #[test]
    fn contributions_stay_within_the_floor_and_cap_times_the_rates(
        policy in policy(), case in case(), month in 1_u32..=12,
    ) {
        let period = Period::new(YEAR, month).unwrap();
        let hf_rate = case.housing_fund_rate.rate();

        let line = calculate(&policy, period, &case.input(None), &YearToDate::ZERO).unwrap();

        prop_assert!(policy.si_base_floor <= line.si_base && line.si_base <= policy.si_base_cap);
        prop_assert!(policy.hf_base_floor <= line.hf_base && line.hf_base <= policy.hf_base_cap);
        let (floor, cap) = (policy.si_base_floor, policy.si_base_cap);
        prop_assert!(expected(floor, policy.pension_rate) <= line.pension && line.pension <= expected(cap, policy.pension_rate));
        let fixed = policy.medical_fixed.fen();
        prop_assert!(expected(floor, policy.medical_rate).fen() + fixed <= line.medical.fen()
            && line.medical.fen() <= expected(cap, policy.medical_rate).fen() + fixed);
        prop_assert!(expected(floor, policy.unemployment_rate) <= line.unemployment
            && line.unemployment <= expected(cap, policy.unemployment_rate));
        prop_assert!(expected(policy.hf_base_floor, hf_rate) <= line.housing_fund
            && line.housing_fund <= expected(policy.hf_base_cap, hf_rate));
        prop_assert_eq!(line.pension, expected(line.si_base, policy.pension_rate));
        prop_assert_eq!(line.housing_fund, expected(line.hf_base, hf_rate));
    }

    #[test]
    fn more_cumulative_taxable_income_never_means_less_cumulative_tax(
        taxable in 0_i64..=2_000_000_000, more in 0_i64..=10_000_000,
    ) {
        let lower = cumulative_tax(Money::from_fen(taxable));

        let higher = cumulative_tax(Money::from_fen(taxable + more));

        prop_assert!(lower <= higher);
    }

    #[test]
    fn a_larger_annual_bonus_never_carries_less_tax(bonus in 0_i64..=200_000_000, more in 0_i64..=10_000_000) {
        let lower = annual_bonus_tax(Money::from_fen(bonus));

        let higher = annual_bonus_tax(Money::from_fen(bonus + more));

        prop_assert!(lower <= higher);
    }

    #[test]
    fn any_amounts_give_exact_figures_or_a_field_error_never_a_saturated_figure(
        policy in policy(),
        amounts in prop::collection::vec(prop_oneof![0_i64..=Money::MAX_INPUT.fen(), any::<i64>(), Just(i64::MAX)], 8),
        ytd_gross in prop_oneof![0_i64..=1_000_000_000_000_000, any::<i64>()],
        month in 1_u32..=12,
    ) {
        let [base_salary, allowance, overtime, bonus, leave, other, after_tax, annual_bonus] =
            [0, 1, 2, 3, 4, 5, 6, 7].map(|i| Money::from_fen(amounts[i]));
        let input = EmployeeMonth {
            allowance, overtime, bonus, leave_deduction: leave, other_pre_tax_deduction: other,
            after_tax_deduction: after_tax, annual_bonus,
            ..EmployeeMonth::new(base_salary, HousingFundRate::MAX)
        };
        let ytd = YearToDate { gross: Money::from_fen(ytd_gross), ..YearToDate::ZERO };

        match calculate(&policy, Period::new(YEAR, month).unwrap(), &input, &ytd) {
            Ok(line) => {
                // Recomputed in i128, where nothing can overflow: every figure is exact.
                let w = |m: Money| i128::from(m.fen());
                prop_assert!(amounts.iter().all(|a| (0..=Money::MAX_INPUT.fen()).contains(a)));
                let gross = w(base_salary) + w(allowance) + w(overtime) + w(bonus) - w(leave);
                prop_assert_eq!(w(line.gross), gross);
                let taxable = (i128::from(ytd_gross) + gross - i128::from(line.months_employed) * 500_000
                    - w(line.contributions) - w(other)).max(0);
                prop_assert_eq!(w(line.cumulative_taxable), taxable);
                prop_assert_eq!(w(line.net_pay),
                    gross - w(line.contributions) - w(line.tax) - w(after_tax) + w(annual_bonus) - w(line.annual_bonus_tax));
            }
            Err(Error::Invalid(fields)) => prop_assert!(!fields.is_empty()),
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }

    #[test]
    fn every_rate_survives_a_round_trip_through_its_decimal_string(ppm in 0_u32..1_000_000) {
        let rate = Rate::from_ppm(ppm).unwrap();

        let parsed = Rate::parse(&rate.to_string()).unwrap();

        prop_assert_eq!(parsed, rate);
    }

    #[test]
    fn paying_x_on_the_regular_sheet_or_splitting_it_with_a_supplementary_one_withholds_the_same_year_to_date_tax(
        policy in policy(), months in prop::collection::vec(case(), 12), hired in hire_date(),
        paid_in in 1_u32..=12, extra in money(0..=50_000_000), split_percent in 0_i64..=100,
        extra_as in 0_usize..3,
    ) {
        let first_month = hired.filter(|d| d.year() == YEAR).map_or(1, |d| d.month());
        prop_assume!(paid_in >= first_month);
        // X paid as allowance, overtime or bonus: on the regular sheet, or part there and the
        // rest on a supplementary sheet of the same month.
        let on_regular = Money::from_fen(extra.fen() * split_percent / 100);
        let on_supplementary = extra.checked_sub(on_regular).unwrap();
        let with = |input, x| paying(input, x, extra_as);
        let (mut whole, mut split) = (YearToDate::ZERO, YearToDate::ZERO);
        for (month, case) in (first_month..=12).zip(months.iter().skip(first_month as usize - 1)) {
            let calculator = Calculator::new(policy, Period::new(YEAR, month).unwrap()).unwrap();
            let regular = case.input(hired);
            if month == paid_in {
                whole.add(&calculator.calculate(&with(regular, extra), &whole).unwrap()).unwrap();
                split.add(&calculator.calculate(&with(regular, on_regular), &split).unwrap()).unwrap();
                let supplementary = EmployeeMonth { hire_date: hired, special_deductions: &case.deductions, ..EmployeeMonth::supplementary() };
                let line = calculator.calculate(&with(supplementary, on_supplementary), &split).unwrap();
                prop_assert_eq!(line.contributions, Money::ZERO);
                split.add(&line).unwrap();
            } else {
                whole.add(&calculator.calculate(&regular, &whole).unwrap()).unwrap();
                split.add(&calculator.calculate(&regular, &split).unwrap()).unwrap();
            }
            // After every month, the same year to date: the same gross, deductions and tax.
            prop_assert_eq!(whole, split, "month {}", month);
        }
    }

    #[test]
    fn an_empty_supplementary_sheet_withholds_nothing_and_changes_no_cumulative_figure(
        policy in policy(), case in case(), ytd in year_to_date(), month in 1_u32..=12,
    ) {
        let calculator = Calculator::new(policy, Period::new(YEAR, month).unwrap()).unwrap();
        let regular = calculator.calculate(&case.input(None), &ytd).unwrap();
        let after_regular = ytd.with(&regular).unwrap();
        let empty = EmployeeMonth { special_deductions: &case.deductions, ..EmployeeMonth::supplementary() };

        let line = calculator.calculate(&empty, &after_regular).unwrap();

        prop_assert_eq!((line.gross, line.contributions, line.special_deduction), (Money::ZERO, Money::ZERO, Money::ZERO));
        prop_assert_eq!(line.cumulative_taxable, regular.cumulative_taxable);
        prop_assert_eq!(line.tax, Money::ZERO);
        prop_assert_eq!(line.net_pay, Money::ZERO);
    }
}
