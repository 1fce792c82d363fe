//! What the payroll domain stores and reasons about: sheets (one tenant's month) with an item
//! per employee, their totals and delivery outcomes, the employee and tenant as payroll sees
//! them, pay slips and the channels they go out on.
use crate::engine::{CalculatedLine, SheetKind, YearToDate};
use crate::lifecycle::SheetStatus;
use atrium_kernel::payroll::{HousingFundRate, PayrollPolicy, SpecialDeduction};
use atrium_kernel::{Error, Id, Money, Period, Result, Timestamp};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Per-employee adjustments of one month, entered on the sheet (fen, all ≥ 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Adjustments {
    pub allowance: Money,
    pub overtime: Money,
    /// A monthly bonus, taxed with the salary.
    pub bonus: Money,
    /// Unpaid leave, subtracted from gross.
    pub leave_deduction: Money,
    pub other_pre_tax_deduction: Money,
    pub after_tax_deduction: Money,
    /// The annual one-off bonus, taxed separately.
    pub annual_bonus: Money,
}

/// Whether an item's pay slip reached the employee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum DeliveryStatus {
    Delivered,
    Failed,
}

/// The channel a slip went out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Channel {
    Wechat,
    Sms,
    Email,
}

/// The outcome of the latest attempt to send an item's pay slip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub status: DeliveryStatus,
    pub channel: Option<Channel>,
    /// Why the last attempt failed.
    pub error: Option<String>,
    pub attempts: u32,
    pub at: Timestamp,
}

/// One employee's line on a sheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetItem {
    pub id: Id,
    pub employee_id: Id,
    /// The employee's name and number when the item was added.
    pub employee_name: String,
    pub employee_no: Option<String>,
    pub adjustments: Adjustments,
    /// The calculated figures; `None` until the sheet is calculated (and again after an edit).
    pub line: Option<CalculatedLine>,
    /// `None` until a send attempted this item.
    pub delivery: Option<Delivery>,
}

/// Sums over a sheet's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SheetTotals {
    pub employees: i64,
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub gross: Money,
    /// Employee social insurance and housing fund.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub contributions: Money,
    /// Income tax withheld, the annual bonus's separate tax included.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub tax: Money,
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub net_pay: Money,
    pub delivered: i64,
    pub failed: i64,
}

impl SheetTotals {
    /// Totals of `items`: the money figures count calculated items only. A total that would
    /// not fit is an error, never a wrong figure.
    pub fn of(items: &[SheetItem]) -> Result<SheetTotals> {
        let too_large = |_| Error::invalid("items", "the sheet's totals are too large to calculate; split the sheet");
        let mut t = SheetTotals { employees: items.len() as i64, ..SheetTotals::default() };
        for item in items {
            if let Some(l) = &item.line {
                t.gross = t.gross.checked_add(l.gross).map_err(too_large)?;
                t.contributions = t.contributions.checked_add(l.contributions).map_err(too_large)?;
                t.tax = Money::checked_sum([t.tax, l.tax, l.annual_bonus_tax]).map_err(too_large)?;
                t.net_pay = t.net_pay.checked_add(l.net_pay).map_err(too_large)?;
            }
            match item.delivery.as_ref().map(|d| d.status) {
                Some(DeliveryStatus::Delivered) => t.delivered += 1,
                Some(DeliveryStatus::Failed) => t.failed += 1,
                None => {}
            }
        }
        Ok(t)
    }
}

/// A tenant's payroll for one month: its regular sheet (one per period), or a supplementary
/// sheet paying something extra for a period whose regular sheet is approved or sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sheet {
    pub id: Id,
    pub tenant_id: Id,
    pub period: Period,
    pub kind: SheetKind,
    pub title: String,
    pub status: SheetStatus,
    pub totals: SheetTotals,
    pub created_by: Option<Id>,
    pub calculated_by: Option<Id>,
    pub calculated_at: Option<Timestamp>,
    pub approved_by: Option<Id>,
    pub approved_at: Option<Timestamp>,
    /// When pay slips first went out.
    pub sent_at: Option<Timestamp>,
    /// Set while a send is under way, so a concurrent send is refused rather than doubled.
    pub send_started_at: Option<Timestamp>,
    /// How many approved or sent sheets the year-to-date figures of the last calculation
    /// summed (see [`YearToDateSums::basis`]); `None` until calculated. Approval refuses the
    /// sheet when that number has changed since.
    pub ytd_basis: Option<i64>,
    /// Bumped by every write; a write expecting another version fails with `Conflict`.
    pub version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Sheet {
    /// A new regular `draft` sheet, not yet stored (id and version 0), created by `created_by`
    /// at `now`. (`Sheet { kind: SheetKind::Supplementary, ..Sheet::draft(…) }` for another kind.)
    pub fn draft(tenant_id: Id, period: Period, title: String, totals: SheetTotals, created_by: Option<Id>, now: Timestamp) -> Sheet {
        Sheet {
            id: 0,
            tenant_id,
            period,
            kind: SheetKind::Regular,
            title,
            status: SheetStatus::Draft,
            totals,
            created_by,
            calculated_by: None,
            calculated_at: None,
            approved_by: None,
            approved_at: None,
            sent_at: None,
            send_started_at: None,
            ytd_basis: None,
            version: 0,
            created_at: now,
            updated_at: now,
        }
    }
}

/// A sheet with its items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetDetail {
    pub sheet: Sheet,
    pub items: Vec<SheetItem>,
}

/// List filters.
#[derive(Debug, Clone, Default)]
pub struct SheetQuery {
    pub list: atrium_kernel::ListQuery<SheetSort>,
    pub status: Option<SheetStatus>,
    pub tenant_id: Option<Id>,
    pub partner_id: Option<Id>,
    pub period: Option<Period>,
    pub kind: Option<SheetKind>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum SheetSort {
    Id,
    CreatedAt,
    Period,
}

/// What the payroll domain needs of an employee: pay data and where to send the slip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayrollEmployee {
    pub id: Id,
    pub tenant_id: Id,
    pub name: String,
    pub employee_no: Option<String>,
    pub active: bool,
    pub base_salary: Money,
    pub si_base: Option<Money>,
    pub housing_fund_rate: HousingFundRate,
    pub hire_date: Option<NaiveDate>,
    pub special_deductions: Vec<SpecialDeduction>,
    pub openid: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
}

/// The tenant a sheet belongs to, as payroll sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayrollTenant {
    pub id: Id,
    pub partner_id: Option<Id>,
    pub policy: PayrollPolicy,
}

/// The year-to-date figures a sheet is calculated with, per employee, from the tenant's
/// approved or sent sheets of every kind in the same tax year: for a regular sheet of period
/// P, those of the periods before P; for a supplementary sheet of P, also those of P itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct YearToDateSums {
    pub by_employee: HashMap<Id, YearToDate>,
    /// How many sheets were summed. Approved and sent sheets never change and are never
    /// removed, so the same number later means the same figures; another number means another
    /// sheet was approved meanwhile and the calculation is stale.
    pub basis: i64,
}

/// The outcome of an approval: checked and written in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Approved: the sheet as written.
    Approved(Box<Sheet>),
    /// Another sheet of the tax year was approved after this one's calculation, so its
    /// year-to-date figures (`ytd_basis`) are no longer the current ones: nothing written.
    StaleYearToDate,
    /// These employees of the sheet already have an annual bonus taxed separately this tax
    /// year on another approved or sent sheet: `(employee id, that sheet's id)`. Nothing written.
    AnnualBonusTaken(Vec<(Id, Id)>),
}

/// One of an employee's calculated items on an approved or sent sheet, for the tax-year view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxYearLine {
    pub sheet_id: Id,
    pub kind: SheetKind,
    pub period: Period,
    pub approved_at: Option<Timestamp>,
    pub line: CalculatedLine,
}

/// What a sheet update does to the sheet's items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemsWrite {
    /// Leave them as they are (approve, send).
    Keep,
    /// Keep their adjustments, drop their calculated figures (an edit without new items).
    ClearFigures,
    /// Replace them all (an edit with items).
    Replace(Vec<SheetItem>),
}

/// What an employee's pay slip says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payslip {
    pub sheet_id: Id,
    pub tenant_id: Id,
    pub period: Period,
    pub employee_id: Id,
    pub employee_name: String,
    pub gross: Money,
    /// Pension, medical, unemployment and housing fund together.
    pub contributions: Money,
    /// Income tax withheld this month, the separately taxed annual bonus's tax included.
    pub tax: Money,
    pub net_pay: Money,
}

/// Where a slip can go, from the employee record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recipient {
    pub openid: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
}

/// Where an employee's pay goes: their bank account, as the batch-transfer file needs it.
/// The account number is in full (stored encrypted; only callers holding
/// `employee:read_sensitive` get a file with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayeeAccount {
    /// The account holder's name: the employee's name.
    pub name: String,
    pub bank_name: Option<String>,
    pub account_no: String,
}
