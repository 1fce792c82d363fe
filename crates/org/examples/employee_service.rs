//! Employees through [`EmployeeService`], its storage doubled with the crate's `mock` feature:
//! a tenant's HR user records an employee, and the record is shown to two callers — one who
//! holds `employee:read_sensitive` and sees the id card and bank account numbers in full, one
//! who does not and sees them masked. A caller of another tenant finds nothing, exactly as
//! for a missing employee.
//!
//! Run it with `cargo run -p atrium-org --example employee_service`.
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{Actor, Email, Id, Label, Money, Name, Party, SystemClock};
use atrium_org::{BankAccount, Employee, EmployeeNo, EmployeeService, EmployeeView, IdCardNo, MockEmployeeRepo, NewEmployee};
use std::sync::{Arc, Mutex, PoisonError};

const TENANT: Id = 7;

/// Employee storage in memory, scoped as the store scopes it: a tenant sees its own.
fn employee_repo() -> MockEmployeeRepo {
    let rows: Arc<Mutex<Vec<Employee>>> = Arc::default();
    let mut repo = MockEmployeeRepo::new();
    repo.expect_tenant_partner().returning(|_scope, _tenant| Ok(None));
    let stored = rows.clone();
    repo.expect_insert_employee().returning(move |mut employee, effects| {
        let mut rows = stored.lock().unwrap_or_else(PoisonError::into_inner);
        employee.id = Id::try_from(rows.len()).unwrap_or(Id::MAX) + 1;
        let action = effects.audit.as_ref().map(|a| a.action.as_str());
        let events: Vec<&str> = effects.events.iter().map(|e| e.kind).collect();
        println!("  (storage) employee {} stored with the audit record {action:?} and the events {events:?}", employee.id);
        rows.push(employee.clone());
        Ok(employee)
    });
    repo.expect_get_employee().returning(move |scope, id| {
        let rows = rows.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(rows.iter().find(|e| e.id == id && scope.sees_tenant(e.tenant_id, None)).cloned())
    });
    repo
}

fn show(who: &str, view: &EmployeeView) {
    println!(
        "  {who:<30} {} ({}): id card {}, account {} at {}",
        view.name,
        view.employee_no.as_deref().unwrap_or("-"),
        view.id_card_no.as_deref().unwrap_or("-"),
        view.bank_account.as_deref().unwrap_or("-"),
        view.bank_name.as_deref().unwrap_or("-"),
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = EmployeeService::new(Arc::new(employee_repo()), Arc::new(SystemClock));
    let tenant = Party::Tenant { tenant_id: TENANT, partner_id: None };
    let hr = Actor::new(1, "session-1", tenant, ["employee:*"]);
    let clerk = Actor::new(2, "session-2", tenant, ["employee:read", "payroll:*"]);
    let stranger = Actor::new(3, "session-3", Party::Tenant { tenant_id: 8, partner_id: None }, ["employee:*"]);

    println!("HR records an employee");
    let input = NewEmployee {
        tenant_id: None,
        name: Name::parse("Han Meimei")?,
        base_salary: Money::from_yuan(12_000),
        employee_no: Some(EmployeeNo::parse("E-0042")?),
        phone: None,
        email: Some(Email::parse("han.meimei@example.com")?),
        id_card_no: Some(IdCardNo::parse("11010519491231002X")?),
        bank_name: Some(Label::parse("Bank of Example, Chaoyang branch")?),
        bank_account: Some(BankAccount::parse("6222 0212 3456 7890")?),
        department: Some(Label::parse("Finance")?),
        position: Some(Label::parse("Accountant")?),
        hire_date: chrono::NaiveDate::from_ymd_opt(2025, 3, 1),
        status: None,
        si_base: None,
        housing_fund_rate: Some(HousingFundRate::parse("0.12")?),
        special_deductions: None,
        openid: None,
    };
    let employee = service.create(&hr, input).await?;

    println!("the record as each caller sees it");
    show("HR (employee:*)", &EmployeeView::of(service.get(&hr, employee.id).await?, &hr));
    show("payroll clerk (employee:read)", &EmployeeView::of(service.get(&clerk, employee.id).await?, &clerk));
    match service.get(&stranger, employee.id).await {
        Err(e) => println!("  {:<30} {e} ({})", "another tenant's user", e.reason()),
        Ok(e) => println!("  {:<30} unexpectedly sees {}", "another tenant's user", e.name),
    }
    Ok(())
}
