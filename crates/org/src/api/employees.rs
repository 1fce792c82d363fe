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

pub type EmployeeNo = Text<32>;
pub type OpenId = Text<128>;

/// `POST /employees` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "name": "Han Meimei", "base_salary": 1500000, "employee_no": "E-0042", "department": "Finance", "position": "Accountant", "hire_date": "2025-03-01", "housing_fund_rate": "0.12", "special_deductions": [{"kind": "children_education", "monthly_amount": 200000, "from": "2026-01"}]})))]
pub struct NewEmployee {
    /// The employee's tenant. Platform and partner callers must name it (400 without, 404 if
    /// out of their scope); a tenant caller may leave it out for its own.
    #[cfg_attr(feature = "openapi", schema(required = true, value_type = Id, minimum = 1))]
    pub tenant_id: Option<Id>,
    pub name: Name,
    /// Monthly base salary in fen.
    pub base_salary: Money,
    pub employee_no: Option<EmployeeNo>,
    pub phone: Option<Phone>,
    pub email: Option<Email>,
    pub id_card_no: Option<IdCardNo>,
    pub bank_name: Option<Label>,
    pub bank_account: Option<BankAccount>,
    pub department: Option<Label>,
    pub position: Option<Label>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = Date))]
    pub hire_date: Option<NaiveDate>,
    pub status: Option<EmployeeStatus>,
    pub si_base: Option<Money>,
    pub housing_fund_rate: Option<HousingFundRate>,
    pub special_deductions: Option<Vec<SpecialDeduction>>,
    pub openid: Option<OpenId>,
}

/// `PUT /employees/:id` body: absent fields stay, `null` clears an optional one. An employee
/// cannot move to another tenant.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"base_salary": 1600000, "position": "Senior accountant", "phone": null})))]
pub struct EmployeePatch {
    pub name: Option<Name>,
    pub base_salary: Option<Money>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<EmployeeNo>))]
    pub employee_no: Option<Option<EmployeeNo>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Phone>))]
    pub phone: Option<Option<Phone>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Email>))]
    pub email: Option<Option<Email>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<IdCardNo>))]
    pub id_card_no: Option<Option<IdCardNo>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub bank_name: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<BankAccount>))]
    pub bank_account: Option<Option<BankAccount>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub department: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub position: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = Date))]
    pub hire_date: Option<Option<NaiveDate>>,
    pub status: Option<EmployeeStatus>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Money>))]
    pub si_base: Option<Option<Money>>,
    pub housing_fund_rate: Option<HousingFundRate>,
    pub special_deductions: Option<Vec<SpecialDeduction>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<OpenId>))]
    pub openid: Option<Option<OpenId>>,
}

/// `GET /employees` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct EmployeeListParams {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
    /// Matches name, phone or employee number.
    pub keyword: Option<String>,
    pub status: Option<EmployeeStatus>,
    pub tenant_id: Option<i64>,
    pub partner_id: Option<i64>,
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
    pub id: i64,
    pub tenant_id: i64,
    pub employee_no: Option<String>,
    pub name: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    /// Masked (`110105********002X`) unless you hold `employee:read_sensitive`.
    pub id_card_no: Option<String>,
    pub bank_name: Option<String>,
    /// Masked (`************7890`) unless you hold `employee:read_sensitive`.
    pub bank_account: Option<String>,
    pub department: Option<String>,
    pub position: Option<String>,
    pub hire_date: Option<NaiveDate>,
    pub status: EmployeeStatus,
    /// Fen.
    pub base_salary: Money,
    /// Fen; the base salary when null.
    pub si_base: Option<Money>,
    pub housing_fund_rate: HousingFundRate,
    pub special_deductions: Vec<SpecialDeduction>,
    pub openid: Option<String>,
    pub created_at: DateTime<Utc>,
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
