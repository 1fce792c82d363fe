//! Employees against mocked ports.
use super::{actor, clock};
use crate::api::NewEmployee;
use crate::ports::MockEmployeeRepo;
use crate::service::EmployeeService;
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{Error, Money, Name, Party};
use std::sync::Arc;

#[tokio::test]
async fn a_tenant_user_adds_employees_only_to_its_own_tenant() {
    let mut repo = MockEmployeeRepo::new();
    repo.expect_insert_employee().never();
    let svc = EmployeeService::new(Arc::new(repo), clock());
    let input = NewEmployee {
        tenant_id: Some(4),
        name: Name::parse("E").unwrap(),
        base_salary: Money::from_fen(1),
        employee_no: None,
        phone: None,
        email: None,
        id_card_no: None,
        bank_name: None,
        bank_account: None,
        department: None,
        position: None,
        hire_date: None,
        status: None,
        si_base: None,
        housing_fund_rate: Some(HousingFundRate::MIN),
        special_deductions: None,
        openid: None,
    };

    let err = svc.create(&actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["employee:*"]), input).await.unwrap_err();

    assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "tenant_id"));
}
