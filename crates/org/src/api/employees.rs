//! `/employees` requests and the employee view. Id card and bank account numbers are masked
//! unless the caller holds [`READ_SENSITIVE`].
use atrium_kernel::payroll::{HousingFundRate, SpecialDeduction};
use atrium_kernel::{Actor, Email, Error, Id, Label, ListQuery, Money, Name, Phone, Text, patch};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{BankAccount, IdCardNo};
use crate::model::{Employee, EmployeeQuery, EmployeeStatus};

/// The permission that reveals id card and bank account numbers in full.
pub const READ_SENSITIVE: &str = atrium_kernel::permission::EMPLOYEE_READ_SENSITIVE.name;

/// An employee's number in its tenant (a payroll or badge number): up to 32 characters.
pub type EmployeeNo = Text<32>;
/// An employee's openid in the messaging platform, for pay slips: up to 128 characters.
pub type OpenId = Text<128>;

/// `POST /employees` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "name": "Han Meimei", "base_salary": 1500000, "employee_no": "E-0042", "department": "Finance", "position": "Accountant", "hire_date": "2025-03-01", "housing_fund_rate": "0.12", "special_deductions": [{"kind": "children_education", "monthly_amount": 200000, "from": "2026-01"}]})))]
pub struct NewEmployee {
    /// The employee's tenant. Platform and partner callers must name it (400 without, 404 if
    /// out of their scope); a tenant caller may leave it out for its own.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The employee's full name, up to 128 characters.
    pub name: Name,
    /// Monthly base salary in fen.
    pub base_salary: Money,
    /// The employee's number in the tenant, up to 32 characters.
    pub employee_no: Option<EmployeeNo>,
    /// A phone number, for pay slips by SMS.
    pub phone: Option<Phone>,
    /// An e-mail address, for pay slips by e-mail.
    pub email: Option<Email>,
    /// The resident identity card number (18 characters, its birth date and check character checked); stored encrypted.
    pub id_card_no: Option<IdCardNo>,
    /// The bank of the salary account.
    pub bank_name: Option<Label>,
    /// The salary account's number (8–32 digits); stored encrypted.
    pub bank_account: Option<BankAccount>,
    /// The department, up to 64 characters.
    pub department: Option<Label>,
    /// The job title, up to 64 characters.
    pub position: Option<Label>,
    /// When the employee was hired (`YYYY-MM-DD`); payroll counts the tax year's months from it.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = Date))]
    pub hire_date: Option<NaiveDate>,
    /// `active` (the default) or `left`.
    pub status: Option<EmployeeStatus>,
    /// Fen: the social-insurance and housing-fund base; the base salary when absent.
    pub si_base: Option<Money>,
    /// The housing-fund rate, `"0.05"` to `"0.12"`; `"0.12"` when absent.
    pub housing_fund_rate: Option<HousingFundRate>,
    /// Special additional deductions the employee declared.
    pub special_deductions: Option<Vec<SpecialDeduction>>,
    /// The employee's openid in the messaging platform, for pay slips.
    pub openid: Option<OpenId>,
}

/// `PUT /employees/:id` body: absent fields stay, `null` clears an optional one. An employee
/// cannot move to another tenant.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"base_salary": 1600000, "position": "Senior accountant", "phone": null})))]
pub struct EmployeePatch {
    /// A new name.
    pub name: Option<Name>,
    /// Fen: a new monthly base salary.
    pub base_salary: Option<Money>,
    /// A new employee number; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<EmployeeNo>))]
    pub employee_no: Option<Option<EmployeeNo>>,
    /// A new phone number; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Phone>))]
    pub phone: Option<Option<Phone>>,
    /// A new e-mail address; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Email>))]
    pub email: Option<Option<Email>>,
    /// A new identity card number; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<IdCardNo>))]
    pub id_card_no: Option<Option<IdCardNo>>,
    /// A new bank; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub bank_name: Option<Option<Label>>,
    /// A new salary account number; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<BankAccount>))]
    pub bank_account: Option<Option<BankAccount>>,
    /// A new department; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub department: Option<Option<Label>>,
    /// A new job title; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub position: Option<Option<Label>>,
    /// A new hire date; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = Date))]
    pub hire_date: Option<Option<NaiveDate>>,
    /// `active` or `left`.
    pub status: Option<EmployeeStatus>,
    /// Fen: a new social-insurance base; `null` makes it the base salary again.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Money>))]
    pub si_base: Option<Option<Money>>,
    /// A new housing-fund rate, `"0.05"` to `"0.12"`.
    pub housing_fund_rate: Option<HousingFundRate>,
    /// The employee's special additional deductions, replacing all of them.
    pub special_deductions: Option<Vec<SpecialDeduction>>,
    /// A new openid; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<OpenId>))]
    pub openid: Option<Option<OpenId>>,
}

/// `GET /employees` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct EmployeeListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Employees per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Matches name, phone or employee number.
    pub keyword: Option<String>,
    /// Only employees in this status.
    pub status: Option<EmployeeStatus>,
    /// Only this tenant's employees (platform and partner users).
    pub tenant_id: Option<i64>,
    /// Only employees of this partner's tenants (platform users).
    pub partner_id: Option<i64>,
    /// Only employees of this department (exact match).
    pub department: Option<String>,
    /// `id`, `created_at`, `name`, `employee_no` or `hire_date`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::EmployeeSort>))]
    pub sort: Option<String>,
}

/// Validates the parameters; a 400 naming the offending one otherwise.
impl TryFrom<EmployeeListParams> for EmployeeQuery {
    type Error = Error;
    fn try_from(p: EmployeeListParams) -> Result<Self, Error> {
        Ok(EmployeeQuery {
            list: ListQuery::parse(p.page, p.page_size, p.keyword, p.sort.as_deref())?,
            status: p.status,
            tenant_id: p.tenant_id,
            partner_id: p.partner_id,
            department: p.department,
        })
    }
}

/// An employee as shown to a caller.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EmployeeView {
    /// The employee's id.
    pub id: i64,
    /// The employer.
    pub tenant_id: i64,
    /// The employee's number in the tenant.
    pub employee_no: Option<String>,
    /// The employee's full name.
    pub name: String,
    /// The employee's phone number.
    pub phone: Option<String>,
    /// The employee's e-mail address.
    pub email: Option<String>,
    /// Masked (`110105********002X`) unless you hold `employee:read_sensitive`.
    pub id_card_no: Option<String>,
    /// The bank of the salary account.
    pub bank_name: Option<String>,
    /// Masked (`************7890`) unless you hold `employee:read_sensitive`.
    pub bank_account: Option<String>,
    /// The department.
    pub department: Option<String>,
    /// The job title.
    pub position: Option<String>,
    /// When the employee was hired.
    pub hire_date: Option<NaiveDate>,
    /// `active` or `left`.
    pub status: EmployeeStatus,
    /// Fen.
    pub base_salary: Money,
    /// Fen; the base salary when null.
    pub si_base: Option<Money>,
    /// The housing-fund rate, e.g. `"0.12"`.
    pub housing_fund_rate: HousingFundRate,
    /// Special additional deductions the employee declared.
    pub special_deductions: Vec<SpecialDeduction>,
    /// The employee's openid in the messaging platform.
    pub openid: Option<String>,
    /// When the record was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl EmployeeView {
    /// `e` as `actor` may see it: its id card and bank account numbers in full only for
    /// holders of [`READ_SENSITIVE`].
    pub fn of(e: Employee, actor: &Actor) -> Self {
        let reveal = actor.permissions.allows(READ_SENSITIVE);
        EmployeeView {
            id: e.id,
            tenant_id: e.tenant_id,
            employee_no: e.employee_no,
            name: e.name,
            phone: e.phone,
            email: e.email,
            id_card_no: e.id_card_no.map(|v| if reveal { v.as_str().to_owned() } else { v.masked() }),
            bank_name: e.bank_name,
            bank_account: e.bank_account.map(|v| if reveal { v.as_str().to_owned() } else { v.masked() }),
            department: e.department,
            position: e.position,
            hire_date: e.hire_date,
            status: e.status,
            base_salary: e.base_salary,
            si_base: e.si_base,
            housing_fund_rate: e.housing_fund_rate,
            special_deductions: e.special_deductions,
            openid: e.openid,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}
