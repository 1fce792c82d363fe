//! Employees of a tenant, with the payroll fields the payroll engine needs.
use async_trait::async_trait;
use atrium_kernel::payroll::{HousingFundRate, SpecialDeduction};
use atrium_kernel::{Actor, AuditRecord, Clock, Email, Error, Id, Label, Money, Name, Page, Party, Phone, Result, Text, Timestamp, patch};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::ids::{BankAccount, IdCardNo};
use crate::scope::ListQuery;

/// The permission that reveals id card and bank account numbers in full.
pub const READ_SENSITIVE: &str = atrium_kernel::permission::EMPLOYEE_READ_SENSITIVE.name;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum EmployeeStatus {
    Active,
    /// Has left; kept for payroll history, not included in new payroll sheets.
    Left,
}

/// An employee. `id_card_no` and `bank_account` are stored encrypted and shown masked unless
/// the caller holds [`READ_SENSITIVE`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Employee {
    pub id: Id,
    pub tenant_id: Id,
    pub employee_no: Option<String>,
    pub name: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub id_card_no: Option<IdCardNo>,
    pub bank_name: Option<String>,
    pub bank_account: Option<BankAccount>,
    pub department: Option<String>,
    pub position: Option<String>,
    pub hire_date: Option<NaiveDate>,
    pub status: EmployeeStatus,
    pub base_salary: Money,
    /// Social insurance base; defaults to the base salary.
    pub si_base: Option<Money>,
    pub housing_fund_rate: HousingFundRate,
    pub special_deductions: Vec<SpecialDeduction>,
    /// Messaging-platform openid for pay slips.
    pub openid: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

pub type EmployeeNo = Text<32>;
pub type OpenId = Text<128>;

/// `POST /employees` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewEmployee {
    /// Required for platform and partner callers; tenant callers get their own tenant.
    pub tenant_id: Option<Id>,
    pub name: Name,
    /// Monthly base salary in fen.
    pub base_salary: Money,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub employee_no: Option<EmployeeNo>,
    pub phone: Option<Phone>,
    pub email: Option<Email>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub id_card_no: Option<IdCardNo>,
    pub bank_name: Option<Label>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub bank_account: Option<BankAccount>,
    pub department: Option<Label>,
    pub position: Option<Label>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = Date))]
    pub hire_date: Option<NaiveDate>,
    pub status: Option<EmployeeStatus>,
    pub si_base: Option<Money>,
    pub housing_fund_rate: Option<HousingFundRate>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Object>>))]
    pub special_deductions: Option<Vec<SpecialDeduction>>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub openid: Option<OpenId>,
}

/// `PUT /employees/:id` body: absent fields stay, `null` clears an optional one. An employee
/// cannot move to another tenant.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EmployeePatch {
    pub name: Option<Name>,
    pub base_salary: Option<Money>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub employee_no: Option<Option<EmployeeNo>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub phone: Option<Option<Phone>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub email: Option<Option<Email>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub id_card_no: Option<Option<IdCardNo>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub bank_name: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub bank_account: Option<Option<BankAccount>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub department: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub position: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = Date))]
    pub hire_date: Option<Option<NaiveDate>>,
    pub status: Option<EmployeeStatus>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub si_base: Option<Option<Money>>,
    pub housing_fund_rate: Option<HousingFundRate>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Object>>))]
    pub special_deductions: Option<Vec<SpecialDeduction>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub openid: Option<Option<OpenId>>,
}

#[derive(Debug, Clone, Default)]
pub struct EmployeeQuery {
    pub list: ListQuery<EmployeeSort>,
    pub status: Option<EmployeeStatus>,
    pub tenant_id: Option<Id>,
    pub partner_id: Option<Id>,
    pub department: Option<String>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum EmployeeSort {
    Id,
    CreatedAt,
    Name,
    EmployeeNo,
    HireDate,
}

/// Storage of employees. Every read is filtered by `scope`; out-of-scope rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait EmployeeRepo: Send + Sync + 'static {
    async fn list_employees(&self, scope: Party, query: EmployeeQuery) -> Result<Page<Employee>>;
    async fn get_employee(&self, scope: Party, id: Id) -> Result<Option<Employee>>;
    /// The partner of a tenant in scope, `Err(NotFound)` if the tenant is not in scope.
    async fn tenant_partner(&self, scope: Party, tenant_id: Id) -> Result<Option<Id>>;
    /// MUST return `Conflict` for a duplicate employee number or id card number in the tenant.
    async fn insert_employee(&self, employee: Employee, audit: AuditRecord) -> Result<Employee>;
    async fn update_employee(&self, employee: Employee, audit: AuditRecord) -> Result<Employee>;
    /// MUST return `Conflict` while payroll records refer to the employee.
    async fn delete_employee(&self, id: Id, audit: AuditRecord) -> Result<()>;
}

pub struct EmployeeService {
    repo: Arc<dyn EmployeeRepo>,
    clock: Arc<dyn Clock>,
}

fn audit_json(e: &Employee) -> serde_json::Value {
    serde_json::to_value(e).unwrap_or_default()
}

/// Input amounts arrive bounded from JSON; checked again here for callers that build them.
fn input_amount(field: &str, m: Money) -> Result<Money> {
    m.check_input().map_err(|message| Error::invalid(field, message))
}

impl EmployeeService {
    pub fn new(repo: Arc<dyn EmployeeRepo>, clock: Arc<dyn Clock>) -> Self {
        EmployeeService { repo, clock }
    }

    pub async fn list(&self, actor: &Actor, query: EmployeeQuery) -> Result<Page<Employee>> {
        self.repo.list_employees(actor.party, query).await
    }

    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Employee> {
        self.repo.get_employee(actor.party, id).await?.ok_or(Error::NotFound("employee"))
    }

    pub async fn create(&self, actor: &Actor, input: NewEmployee) -> Result<Employee> {
        let tenant_id = actor.party.tenant_for_new(input.tenant_id)?;
        let partner_id = self.repo.tenant_partner(actor.party, tenant_id).await.map_err(|e| match e {
            Error::NotFound(_) => Error::invalid("tenant_id", "no such tenant"),
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
        self.repo.insert_employee(employee, audit).await
    }

    pub async fn update(&self, actor: &Actor, id: Id, p: EmployeePatch) -> Result<Employee> {
        let before = self.get(actor, id).await?;
        let mut a = before.clone();
        if let Some(v) = p.name {
            a.name = v.into_string();
        }
        if let Some(v) = p.base_salary {
            a.base_salary = input_amount("base_salary", v)?;
        }
        if let Some(v) = p.employee_no {
            a.employee_no = v.map(Text::into_string);
        }
        if let Some(v) = p.phone {
            a.phone = v.map(String::from);
        }
        if let Some(v) = p.email {
            a.email = v.map(String::from);
        }
        if let Some(v) = p.id_card_no {
            a.id_card_no = v;
        }
        if let Some(v) = p.bank_name {
            a.bank_name = v.map(Label::into_string);
        }
        if let Some(v) = p.bank_account {
            a.bank_account = v;
        }
        if let Some(v) = p.department {
            a.department = v.map(Label::into_string);
        }
        if let Some(v) = p.position {
            a.position = v.map(Label::into_string);
        }
        if let Some(v) = p.hire_date {
            a.hire_date = v;
        }
        if let Some(v) = p.status {
            a.status = v;
        }
        if let Some(v) = p.si_base {
            a.si_base = v.map(|m| input_amount("si_base", m)).transpose()?;
        }
        if let Some(v) = p.housing_fund_rate {
            a.housing_fund_rate = v;
        }
        if let Some(v) = p.special_deductions {
            a.special_deductions = v;
        }
        if let Some(v) = p.openid {
            a.openid = v.map(Text::into_string);
        }
        a.updated_at = self.clock.now();
        let action = if a.status != before.status { "employee.status" } else { "employee.update" };
        let audit = AuditRecord::by(actor, a.updated_at, action, "employee", Some(id))
            .owned_by(None, Some(a.tenant_id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&a)));
        self.repo.update_employee(a, audit).await
    }

    pub async fn delete(&self, actor: &Actor, id: Id) -> Result<()> {
        let before = self.get(actor, id).await?;
        let audit = AuditRecord::by(actor, self.clock.now(), "employee.delete", "employee", Some(id))
            .owned_by(None, Some(before.tenant_id))
            .change(Some(&audit_json(&before)), None);
        self.repo.delete_employee(id, audit).await
    }
}
