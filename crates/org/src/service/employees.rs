//! Employees of a tenant: added to the caller's tenant (or one in its scope), never moved to
//! another; amounts checked again on the way in.
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{Actor, AuditRecord, Clock, Effects, Error, Id, Label, Money, Name, Page, Result, Text};
use std::convert::identity;
use std::sync::Arc;

use super::{apply, audit_json};
use crate::api::{EmployeePatch, NewEmployee};
use crate::events;
use crate::model::{Employee, EmployeeQuery, EmployeeStatus};
use crate::ports::EmployeeRepo;

/// The employee use cases, scoped to the caller: an employee belongs to one tenant, and only
/// callers who see that tenant see it.
pub struct EmployeeService {
    repo: Arc<dyn EmployeeRepo>,
    clock: Arc<dyn Clock>,
}

/// Input amounts arrive bounded from JSON; checked again here for callers that build them.
fn input_amount(field: &str, m: Money) -> Result<Money> {
    m.check_input().map_err(|message| Error::invalid(field, message))
}

impl EmployeeService {
    /// A service over employee storage and a clock.
    pub fn new(repo: Arc<dyn EmployeeRepo>, clock: Arc<dyn Clock>) -> Self {
        EmployeeService { repo, clock }
    }

    /// One page of the employees in the caller's scope that match `query`.
    pub async fn list(&self, actor: &Actor, query: EmployeeQuery) -> Result<Page<Employee>> {
        self.repo.list_employees(actor.party, query).await
    }

    /// An employee in the caller's scope, its numbers in full (mask them for a view with
    /// [`EmployeeView::of`](crate::EmployeeView::of)); `NotFound` for any other.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Employee> {
        self.repo.get_employee(actor.party, id).await?.ok_or(Error::NotFound("employee"))
    }

    /// Creates an employee of the caller's tenant (or the one it names, in its scope). A duplicate
    /// employee number or id card number in the tenant is a `Conflict`.
    pub async fn create(&self, actor: &Actor, input: NewEmployee) -> Result<Employee> {
        let tenant_id = actor.party.tenant_for_new(input.tenant_id)?;
        let partner_id = self.repo.tenant_partner(actor.party, tenant_id).await.map_err(|e| match e {
            Error::NotFound(_) => Error::no_such("tenant_id", "no such tenant"),
            other => other,
        })?;
        let now = self.clock.now();
        let employee = Employee {
            id: 0,
            tenant_id,
            employee_no: input.employee_no.map(Text::into_string),
            name: input.name.into_string(),
            phone: input.phone.map(String::from),
            email: input.email.map(String::from),
            id_card_no: input.id_card_no,
            bank_name: input.bank_name.map(Label::into_string),
            bank_account: input.bank_account,
            department: input.department.map(Label::into_string),
            position: input.position.map(Label::into_string),
            hire_date: input.hire_date,
            status: input.status.unwrap_or(EmployeeStatus::Active),
            base_salary: input_amount("base_salary", input.base_salary)?,
            si_base: input.si_base.map(|m| input_amount("si_base", m)).transpose()?,
            housing_fund_rate: input.housing_fund_rate.unwrap_or(HousingFundRate::MAX),
            special_deductions: input.special_deductions.unwrap_or_default(),
            openid: input.openid.map(Text::into_string),
            created_at: now,
            updated_at: now,
        };
        let audit = AuditRecord::by(actor, now, "employee.create", "employee", None)
            .owned_by(partner_id, Some(tenant_id))
            .change(None, Some(&audit_json(&employee)));
        let effects = Effects::audited(audit).with_event(events::employee_created(&employee, now));
        self.repo.insert_employee(employee, effects).await
    }

    /// Changes an employee in the caller's scope; it stays with its tenant.
    pub async fn update(&self, actor: &Actor, id: Id, p: EmployeePatch) -> Result<Employee> {
        let before = self.get(actor, id).await?;
        let mut a = before.clone();
        apply(&mut a.name, p.name, Name::into_string);
        if let Some(v) = p.base_salary {
            a.base_salary = input_amount("base_salary", v)?;
        }
        apply(&mut a.employee_no, p.employee_no, |v| v.map(Text::into_string));
        apply(&mut a.phone, p.phone, |v| v.map(String::from));
        apply(&mut a.email, p.email, |v| v.map(String::from));
        apply(&mut a.id_card_no, p.id_card_no, identity);
        apply(&mut a.bank_name, p.bank_name, |v| v.map(Label::into_string));
        apply(&mut a.bank_account, p.bank_account, identity);
        apply(&mut a.department, p.department, |v| v.map(Label::into_string));
        apply(&mut a.position, p.position, |v| v.map(Label::into_string));
        apply(&mut a.hire_date, p.hire_date, identity);
        apply(&mut a.status, p.status, identity);
        if let Some(v) = p.si_base {
            a.si_base = v.map(|m| input_amount("si_base", m)).transpose()?;
        }
        apply(&mut a.housing_fund_rate, p.housing_fund_rate, identity);
        apply(&mut a.special_deductions, p.special_deductions, identity);
        apply(&mut a.openid, p.openid, |v| v.map(Text::into_string));
        a.updated_at = self.clock.now();
        let action = if a.status != before.status { "employee.status" } else { "employee.update" };
        // Serialised once: the audit entry keeps the changed fields, the event names them.
        let (old, new) = (audit_json(&before), audit_json(&a));
        let audit = AuditRecord::by(actor, a.updated_at, action, "employee", Some(id))
            .owned_by(None, Some(a.tenant_id))
            .change(Some(&old), Some(&new));
        let effects = Effects::audited(audit).with_events(events::employee_updated(&a, &old, &new, a.updated_at));
        self.repo.update_employee(a, effects).await
    }

    /// Deletes an employee in the caller's scope: a `Conflict` while payroll refers to it (set it
    /// `left` instead).
    pub async fn delete(&self, actor: &Actor, id: Id) -> Result<()> {
        let before = self.get(actor, id).await?;
        let now = self.clock.now();
        let audit = AuditRecord::by(actor, now, "employee.delete", "employee", Some(id))
            .owned_by(None, Some(before.tenant_id))
            .change(Some(&audit_json(&before)), None);
        self.repo.delete_employee(id, Effects::audited(audit).with_event(events::employee_deleted(&before, now))).await
    }
}
