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
    /// Allowances paid with the salary, taxed with it.
    pub allowance: Money,
    /// Overtime pay, taxed with the salary.
    pub overtime: Money,
    /// A monthly bonus, taxed with the salary.
    pub bonus: Money,
    /// Unpaid leave, subtracted from gross.
    pub leave_deduction: Money,
    /// Pre-tax deductions other than contributions and special deductions (enterprise
    /// annuity, commercial health insurance): they reduce taxable income, not gross.
    pub other_pre_tax_deduction: Money,
    /// Deducted from pay after tax.
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
    /// A channel accepted the slip.
    Delivered,
    /// Every channel tried refused it or was unavailable.
    Failed,
}

/// The channel a slip went out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Channel {
    /// A subscribe message in the messaging platform.
    Wechat,
    /// A text message.
    Sms,
    /// An e-mail.
    Email,
}

/// The outcome of the latest attempt to send an item's pay slip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Whether the slip went out.
    pub status: DeliveryStatus,
    /// The channel that delivered it; `None` when none did.
    pub channel: Option<Channel>,
    /// Why the last attempt failed.
    pub error: Option<String>,
    /// How many sends tried this item so far.
    pub attempts: u32,
    /// When the latest attempt ended.
    pub at: Timestamp,
}

/// One employee's line on a sheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetItem {
    /// The item's id.
    pub id: Id,
    /// The employee paid.
    pub employee_id: Id,
    /// The employee's name and number when the item was added.
    pub employee_name: String,
    /// The employee's number in the tenant, if it has one.
    pub employee_no: Option<String>,
    /// The month's adjustments entered on the sheet.
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
    /// How many items the sheet has.
    pub employees: i64,
    /// Gross pay of the calculated items.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub gross: Money,
    /// Employee social insurance and housing fund.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub contributions: Money,
    /// Income tax withheld, the annual bonus's separate tax included.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub tax: Money,
    /// Net pay of the calculated items: what the employees receive.
    #[serde(deserialize_with = "Money::deserialize_computed")]
    pub net_pay: Money,
    /// How many slips were delivered.
    pub delivered: i64,
    /// How many slips could not be delivered.
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
    /// The sheet's id.
    pub id: Id,
    /// The tenant whose payroll it is.
    pub tenant_id: Id,
    /// The month it pays.
    pub period: Period,
    /// Regular (one per period) or supplementary.
    pub kind: SheetKind,
    /// A title for people, e.g. "Payroll 2025-01".
    pub title: String,
    /// Where the sheet is in its lifecycle.
    pub status: SheetStatus,
    /// Sums over its items.
    pub totals: SheetTotals,
    /// The user who created it.
    pub created_by: Option<Id>,
    /// The user who last calculated it (four-eyes approval compares with the approver).
    pub calculated_by: Option<Id>,
    /// When it was last calculated.
    pub calculated_at: Option<Timestamp>,
    /// The user who approved it.
    pub approved_by: Option<Id>,
    /// When it was approved.
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
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
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
    /// The sheet.
    pub sheet: Sheet,
    /// Its items, one per employee.
    pub items: Vec<SheetItem>,
}

/// List filters.
#[derive(Debug, Clone, Default)]
pub struct SheetQuery {
    /// Paging, sort and keyword (a case-insensitive substring of the title).
    pub list: atrium_kernel::ListQuery<SheetSort>,
    /// Only sheets in this status.
    pub status: Option<SheetStatus>,
    /// Only this tenant's sheets.
    pub tenant_id: Option<Id>,
    /// Only sheets of this partner's tenants.
    pub partner_id: Option<Id>,
    /// Only sheets of this month.
    pub period: Option<Period>,
    /// Only regular or only supplementary sheets.
    pub kind: Option<SheetKind>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum SheetSort {
    /// By id, which is creation order.
    Id,
    /// By creation time.
    CreatedAt,
    /// By the month paid.
    Period,
}

/// What the payroll domain needs of an employee: pay data and where to send the slip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayrollEmployee {
    /// The employee's id.
    pub id: Id,
    /// The employer.
    pub tenant_id: Id,
    /// The employee's name.
    pub name: String,
    /// The employee's number in the tenant, if it has one.
    pub employee_no: Option<String>,
    /// Whether the employee is still employed (only active employees go on a new sheet).
    pub active: bool,
    /// The monthly base salary.
    pub base_salary: Money,
    /// The social-insurance and housing-fund base before clamping; `None` means the base salary.
    pub si_base: Option<Money>,
    /// The employee's housing-fund rate, 5–12 %.
    pub housing_fund_rate: HousingFundRate,
    /// When the employee was hired, if known (the tax year counts months from it).
    pub hire_date: Option<NaiveDate>,
    /// Every special additional deduction the employee declared.
    pub special_deductions: Vec<SpecialDeduction>,
    /// The employee's openid in the messaging platform, for slips.
    pub openid: Option<String>,
    /// The employee's phone, for slips by SMS.
    pub phone: Option<String>,
    /// The employee's e-mail address, for slips by e-mail.
    pub email: Option<String>,
}

/// The tenant a sheet belongs to, as payroll sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayrollTenant {
    /// The tenant's id.
    pub id: Id,
    /// The tenant's partner, if it has one.
    pub partner_id: Option<Id>,
    /// The tenant's payroll policy: bases, rates and four-eyes approval.
    pub policy: PayrollPolicy,
}

/// The year-to-date figures a sheet is calculated with, per employee, from the tenant's
/// approved or sent sheets of every kind in the same tax year: for a regular sheet of period
/// P, those of the periods before P; for a supplementary sheet of P, also those of P itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct YearToDateSums {
    /// Each employee's sums; an employee without earlier sheets is absent (all zero).
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
    /// The sheet the item is on.
    pub sheet_id: Id,
    /// Whether that sheet is regular or supplementary.
    pub kind: SheetKind,
    /// The month that sheet pays.
    pub period: Period,
    /// When that sheet was approved.
    pub approved_at: Option<Timestamp>,
    /// The item's calculated figures.
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
    /// The sheet paying.
    pub sheet_id: Id,
    /// The employer.
    pub tenant_id: Id,
    /// The month paid.
    pub period: Period,
    /// The employee paid.
    pub employee_id: Id,
    /// The employee's name.
    pub employee_name: String,
    /// Gross pay.
    pub gross: Money,
    /// Pension, medical, unemployment and housing fund together.
    pub contributions: Money,
    /// Income tax withheld this month, the separately taxed annual bonus's tax included.
    pub tax: Money,
    /// What the employee receives.
    pub net_pay: Money,
}

/// Where a slip can go, from the employee record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recipient {
    /// The employee's openid in the messaging platform.
    pub openid: Option<String>,
    /// The employee's phone.
    pub phone: Option<String>,
    /// The employee's e-mail address.
    pub email: Option<String>,
}

/// Where an employee's pay goes: their bank account, as the batch-transfer file needs it.
/// The account number is in full (stored encrypted; only callers holding
/// `employee:read_sensitive` get a file with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayeeAccount {
    /// The account holder's name: the employee's name.
    pub name: String,
    /// The bank, if recorded.
    pub bank_name: Option<String>,
    /// The account number, in full.
    pub account_no: String,
}
