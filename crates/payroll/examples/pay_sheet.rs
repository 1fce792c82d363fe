//! The payroll engine on its own: a small team's pay from January to March 2025 under the
//! default (Beijing) policy, each month calculated with the employee's year to date, as the
//! service does with approved sheets. No storage, no service, no async: the engine is a pure
//! function a service can call wherever it keeps its employees.
//!
//! Prints March's pay sheet (gross, contributions, tax withheld, net pay) and how each
//! employee's monthly tax moves under the cumulative withholding method.
//!
//! Run it with `cargo run -p atrium-payroll --example pay_sheet`.
use atrium_kernel::{Money, Period};
use atrium_payroll::engine::{
    CalculatedLine, Calculator, DeductionKind, EmployeeMonth, HousingFundRate, PayrollPolicy, SpecialDeduction, YearToDate,
};
use chrono::{Datelike, NaiveDate};

/// One employee as a service keeps them: what the engine needs, month after month.
struct Employee {
    name: &'static str,
    base_salary: Money,
    housing_fund_rate: HousingFundRate,
    hire_date: Option<NaiveDate>,
    deductions: Vec<SpecialDeduction>,
    /// A bonus paid with one month's salary: (month, amount).
    bonus: Option<(u32, Money)>,
}

fn team() -> Result<Vec<Employee>, Box<dyn std::error::Error>> {
    let jan = Period::new(2025, 1)?;
    Ok(vec![
        Employee {
            name: "Han Meimei",
            base_salary: Money::from_yuan(12_000),
            housing_fund_rate: HousingFundRate::parse("0.12")?,
            hire_date: None,
            deductions: vec![SpecialDeduction::new(DeductionKind::ChildrenEducation, Money::from_yuan(2_000), jan, None)?],
            bonus: None,
        },
        Employee {
            name: "Li Lei",
            base_salary: Money::from_yuan(30_000),
            housing_fund_rate: HousingFundRate::parse("0.12")?,
            hire_date: None,
            deductions: vec![SpecialDeduction::new(DeductionKind::HousingLoan, Money::from_yuan(1_000), jan, None)?],
            // A bonus in February pushes his cumulative taxable income into the next band.
            bonus: Some((2, Money::from_yuan(20_000))),
        },
        Employee {
            name: "Wang Fang",
            // Below the social-insurance floor: contributions are paid on the floor.
            base_salary: Money::from_yuan(6_000),
            housing_fund_rate: HousingFundRate::parse("0.05")?,
            // Hired in February: the cumulative method counts her months from then.
            hire_date: NaiveDate::from_ymd_opt(2025, 2, 10),
            deductions: Vec::new(),
            bonus: None,
        },
    ])
}

/// The engine's input for `employee` in `month`.
fn month_of(employee: &Employee, month: u32) -> EmployeeMonth<'_> {
    let bonus = employee.bonus.filter(|(m, _)| *m == month).map_or(Money::ZERO, |(_, amount)| amount);
    EmployeeMonth {
        bonus,
        hire_date: employee.hire_date,
        special_deductions: &employee.deductions,
        ..EmployeeMonth::new(employee.base_salary, employee.housing_fund_rate)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let team = team()?;
    let policy = PayrollPolicy::default();
    let months = 1..=3u32;

    // Each employee's year to date, folded month after month; and each month's lines.
    let mut ytd = vec![YearToDate::ZERO; team.len()];
    let mut sheets: Vec<(Period, Vec<Option<CalculatedLine>>)> = Vec::new();
    for month in months.clone() {
        let period = Period::new(2025, month)?;
        // One calculator per sheet: the policy is checked once.
        let calculator = Calculator::new(policy, period)?;
        let mut lines = Vec::with_capacity(team.len());
        for (employee, ytd) in team.iter().zip(ytd.iter_mut()) {
            // Not employed yet: no line on this month's sheet.
            if employee.hire_date.is_some_and(|hired| (hired.year(), hired.month()) > (period.year(), period.month())) {
                lines.push(None);
                continue;
            }
            let line = calculator.calculate(&month_of(employee, month), ytd)?;
            ytd.add(&line)?;
            lines.push(Some(line));
        }
        sheets.push((period, lines));
    }

    let Some((period, march)) = sheets.last() else { return Ok(()) };
    println!("Pay sheet {period} (yuan)");
    println!("{:<12} {:>10} {:>14} {:>10} {:>10} {:>10}", "employee", "gross", "contributions", "special", "tax", "net pay");
    let mut totals = [Money::ZERO; 4];
    for (employee, line) in team.iter().zip(march) {
        let Some(line) = line else { continue };
        println!(
            "{:<12} {:>10} {:>14} {:>10} {:>10} {:>10}",
            employee.name,
            line.gross.to_string(),
            line.contributions.to_string(),
            line.special_deduction.to_string(),
            line.tax.to_string(),
            line.net_pay.to_string()
        );
        for (total, figure) in totals.iter_mut().zip([line.gross, line.contributions, line.tax, line.net_pay]) {
            *total = total.checked_add(figure)?;
        }
    }
    let [gross, contributions, tax, net] = totals;
    println!(
        "{:<12} {:>10} {:>14} {:>10} {:>10} {:>10}",
        "total",
        gross.to_string(),
        contributions.to_string(),
        "",
        tax.to_string(),
        net.to_string()
    );

    println!();
    println!("Tax withheld by month (cumulative method, yuan)");
    for (i, employee) in team.iter().enumerate() {
        let taxes: Vec<String> = sheets
            .iter()
            .map(|(period, lines)| match &lines[i] {
                Some(line) => format!("{period}: {:>8}", line.tax.to_string()),
                None => format!("{period}: {:>8}", "—"),
            })
            .collect();
        println!("{:<12} {}", employee.name, taxes.join("   "));
    }
    Ok(())
}
