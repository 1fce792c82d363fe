//! Throughput of the calculation engine in employee-months per second: 10,000 varied
//! employees, each calculated January to December with their year-to-date folded in.

use atrium_kernel::{Money, Period};
use atrium_payroll::engine::{
    Calculator, DeductionKind, EmployeeMonth, HousingFundRate, PayrollPolicy, Rate, SpecialDeduction, YearToDate,
};
use chrono::NaiveDate;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const EMPLOYEES: usize = 10_000;
const YEAR: i32 = 2025;

/// A small deterministic generator (xorshift64*), so every run measures the same work.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> i64 {
        i64::try_from(self.next() % n).unwrap_or(0)
    }
}

struct Employee {
    base_salary: Money,
    si_base: Option<Money>,
    housing_fund_rate: HousingFundRate,
    hire_date: Option<NaiveDate>,
    deductions: Vec<SpecialDeduction>,
    /// Per month: allowance, overtime, bonus, leave, annual bonus.
    months: Vec<[Money; 5]>,
}

fn employees() -> Vec<Employee> {
    let mut dice = Dice(0x9E37_79B9_7F4A_7C15);
    let kinds =
        [DeductionKind::ChildrenEducation, DeductionKind::ElderlySupport, DeductionKind::HousingRent, DeductionKind::ContinuingEducation];
    (0..EMPLOYEES)
        .map(|_| {
            let base = 300_000 + dice.below(6_000_000);
            let deductions = (0..dice.below(4))
                .map(|i| {
                    let kind = kinds[usize::try_from(i).unwrap_or(0)];
                    let from = Period::new(YEAR - i32::from(dice.below(2) == 0), 1 + u32::try_from(dice.below(12)).unwrap_or(0))
                        .expect("a valid month");
                    SpecialDeduction::new(kind, Money::from_fen(40_000 + dice.below(260_000)), from, None).expect("a valid deduction")
                })
                .collect();
            let months = (0..12)
                .map(|_| {
                    let extra = |dice: &mut Dice, n| Money::from_fen(if dice.below(3) == 0 { dice.below(n) } else { 0 });
                    [
                        extra(&mut dice, 200_000),
                        extra(&mut dice, 300_000),
                        extra(&mut dice, 1_000_000),
                        extra(&mut dice, 100_000),
                        if dice.below(40) == 0 { Money::from_fen(dice.below(20_000_000)) } else { Money::ZERO },
                    ]
                })
                .collect();
            Employee {
                base_salary: Money::from_fen(base),
                si_base: (dice.below(4) == 0).then(|| Money::from_fen(base / 2 + dice.below(4_000_000))),
                housing_fund_rate: HousingFundRate::new(
                    Rate::from_ppm(50_000 + 10_000 * u32::try_from(dice.below(8)).unwrap_or(0)).expect("a valid rate"),
                )
                .expect("a valid housing fund rate"),
                hire_date: (dice.below(5) == 0)
                    .then(|| NaiveDate::from_ymd_opt(YEAR - i32::from(dice.below(2) == 0), 1, 1).expect("a valid date")),
                deductions,
                months,
            }
        })
        .collect()
}

fn calculate_year(calculators: &[Calculator], staff: &[Employee]) -> i64 {
    let mut total = 0_i64;
    for employee in staff {
        let mut ytd = YearToDate::ZERO;
        for (calculator, [allowance, overtime, bonus, leave_deduction, annual_bonus]) in calculators.iter().zip(&employee.months) {
            let input = EmployeeMonth {
                allowance: *allowance,
                overtime: *overtime,
                bonus: *bonus,
                leave_deduction: *leave_deduction,
                annual_bonus: *annual_bonus,
                si_base: employee.si_base,
                hire_date: employee.hire_date,
                special_deductions: &employee.deductions,
                ..EmployeeMonth::new(employee.base_salary, employee.housing_fund_rate)
            };
            let line = calculator.calculate(black_box(&input), &ytd).expect("valid input");
            ytd.add(&line).expect("a year of salaries fits");
            total = total.wrapping_add(line.net_pay.fen());
        }
    }
    total
}

fn engine(c: &mut Criterion) {
    let staff = employees();
    let calculators: Vec<Calculator> = (1..=12)
        .map(|m| Calculator::new(PayrollPolicy::default(), Period::new(YEAR, m).expect("a valid month")).expect("a valid policy"))
        .collect();
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(u64::try_from(EMPLOYEES * 12).unwrap_or(u64::MAX)));
    group.bench_function("10k employees x 12 months", |b| {
        b.iter(|| calculate_year(black_box(&calculators), black_box(&staff)));
    });
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
