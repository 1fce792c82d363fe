//! Employees of a tenant, with the payroll fields the payroll engine needs.
use atrium_kernel::payroll::{HousingFundRate, SpecialDeduction};
use atrium_kernel::{Id, ListQuery, Money, Timestamp};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::ids::{BankAccount, IdCardNo};

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
/// the caller holds [`READ_SENSITIVE`](crate::READ_SENSITIVE) (see
/// [`EmployeeView`](crate::EmployeeView)).
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
