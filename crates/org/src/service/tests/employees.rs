//! Employees against mocked ports.
use super::{actor, clock, now};
use crate::api::{EmployeePatch, NewEmployee};
use crate::model::{Employee, EmployeeStatus};
use crate::ports::MockEmployeeRepo;
use crate::service::EmployeeService;
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{Error, Id, Money, Name, Party, Phone};
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

    assert!(matches!(err, Error::NoSuch(ref e) if e.field == "tenant_id"), "{err:?}");
}

fn employee(id: Id) -> Employee {
    Employee {
        id,
        tenant_id: 3,
        employee_no: Some("E1".into()),
        name: "E".into(),
        phone: None,
        email: Some("e@example.com".into()),
        id_card_no: None,
        bank_name: None,
        bank_account: None,
        department: Some("Ops".into()),
        position: None,
        hire_date: None,
        status: EmployeeStatus::Active,
        base_salary: Money::from_fen(500_000),
        si_base: None,
        housing_fund_rate: HousingFundRate::MIN,
        special_deductions: Vec::new(),
        openid: None,
        created_at: now(),
        updated_at: now(),
    }
}

#[tokio::test]
async fn an_employee_patch_sets_what_it_carries_clears_what_is_null_and_keeps_the_rest() {
    let mut repo = MockEmployeeRepo::new();
    repo.expect_get_employee().returning(|_, id| Ok(Some(employee(id))));
    repo.expect_update_employee()
        .withf(|_, effects| {
            let changed = effects.events.first().map(|e| (e.kind, e.data["changed"].clone()));
            effects.audit.as_ref().is_some_and(|audit| audit.action == "employee.status")
                && changed == Some((crate::events::EMPLOYEE_UPDATED, serde_json::json!(["base_salary", "department", "phone", "status"])))
                && effects.events[0].data.get("phone").is_none()
        })
        .times(1)
        .returning(|e, _| Ok(e));
    let svc = EmployeeService::new(Arc::new(repo), clock());
    let patch = EmployeePatch {
        phone: Some(Some(Phone::parse("13900139000").unwrap())),
        department: Some(None),
        base_salary: Some(Money::from_fen(600_000)),
        status: Some(EmployeeStatus::Left),
        ..Default::default()
    };

    let e = svc.update(&actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["employee:*"]), 5, patch).await.unwrap();

    assert_eq!((e.phone.as_deref(), e.department.as_deref()), (Some("+8613900139000"), None));
    assert_eq!((e.base_salary, e.status), (Money::from_fen(600_000), EmployeeStatus::Left));
    assert_eq!((e.name.as_str(), e.employee_no.as_deref(), e.email.as_deref()), ("E", Some("E1"), Some("e@example.com")));
}
