//! Employees of a tenant, with the payroll fields the payroll engine needs.
use atrium_kernel::payroll::{HousingFundRate, SpecialDeduction};
use atrium_kernel::{Id, ListQuery, Money, Timestamp};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::ids::{BankAccount, IdCardNo};

/// Whether an employee still works for its tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum EmployeeStatus {
    /// Employed; included in new payroll sheets.
    Active,
    /// Has left; kept for payroll history, not included in new payroll sheets.
    Left,
}

/// An employee. `id_card_no` and `bank_account` are stored encrypted and shown masked unless
/// the caller holds [`READ_SENSITIVE`](crate::READ_SENSITIVE) (see
/// [`EmployeeView`](crate::EmployeeView)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Employee {
    /// The employee's id.
    pub id: Id,
    /// The employer.
    pub tenant_id: Id,
    /// The employee's number in the tenant.
    pub employee_no: Option<String>,
    /// The employee's full name.
    pub name: String,
    /// The employee's phone number (E.164).
    pub phone: Option<String>,
    /// The employee's e-mail address.
    pub email: Option<String>,
    /// The resident identity card number; encrypted at rest.
    pub id_card_no: Option<IdCardNo>,
    /// The bank of the salary account.
    pub bank_name: Option<String>,
    /// The salary account's number; encrypted at rest.
    pub bank_account: Option<BankAccount>,
    /// The department.
    pub department: Option<String>,
    /// The job title.
    pub position: Option<String>,
    /// When the employee was hired.
    pub hire_date: Option<NaiveDate>,
    /// Whether the employee still works for the tenant.
    pub status: EmployeeStatus,
    /// The monthly base salary.
    pub base_salary: Money,
    /// Social insurance base; defaults to the base salary.
    pub si_base: Option<Money>,
    /// The housing-fund rate, 5–12 %.
    pub housing_fund_rate: HousingFundRate,
    /// Special additional deductions the employee declared.
    pub special_deductions: Vec<SpecialDeduction>,
    /// Messaging-platform openid for pay slips.
    pub openid: Option<String>,
    /// When the record was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// A list of employees, as handed to the repository. Every filter narrows the caller's scope.
#[derive(Debug, Clone, Default)]
pub struct EmployeeQuery {
    /// Paging, sort and keyword (name, phone or employee number).
    pub list: ListQuery<EmployeeSort>,
    /// Only employees in this status.
    pub status: Option<EmployeeStatus>,
    /// Only this tenant's employees.
    pub tenant_id: Option<Id>,
    /// Only employees of this partner's tenants.
    pub partner_id: Option<Id>,
    /// Only employees of this department.
    pub department: Option<String>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum EmployeeSort {
    /// By id, which is creation order (the default, newest first).
    Id,
    /// By creation time.
    CreatedAt,
    /// By name.
    Name,
    /// By employee number.
    EmployeeNo,
    /// By hire date.
    HireDate,
}
