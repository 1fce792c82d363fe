//! Payroll sheets: one tenant's month, an item per employee, and the storage port.
use crate::delivery::Channel;
use crate::engine::CalculatedLine;
use crate::lifecycle::SheetStatus;
use async_trait::async_trait;
use atrium_kernel::payroll::{HousingFundRate, PayrollPolicy, SpecialDeduction};
use atrium_kernel::{AuditRecord, Error, Id, Label, Money, Page, Party, Period, Result, Timestamp};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub use crate::engine::YearToDate;

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

/// A tenant's payroll for one month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sheet {
    pub id: Id,
    pub tenant_id: Id,
    pub period: Period,
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
    /// Bumped by every write; a write expecting another version fails with `Conflict`.
    pub version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A sheet with its items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetDetail {
    pub sheet: Sheet,
    pub items: Vec<SheetItem>,
}

/// One item of a create or update request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ItemInput {
    pub employee_id: Id,
    #[serde(default)]
    pub allowance: Money,
    #[serde(default)]
    pub overtime: Money,
    #[serde(default)]
    pub bonus: Money,
    #[serde(default)]
    pub leave_deduction: Money,
    #[serde(default)]
    pub other_pre_tax_deduction: Money,
    #[serde(default)]
    pub after_tax_deduction: Money,
    #[serde(default)]
    pub annual_bonus: Money,
}

impl ItemInput {
    pub fn adjustments(&self) -> Adjustments {
        Adjustments {
            allowance: self.allowance,
            overtime: self.overtime,
            bonus: self.bonus,
            leave_deduction: self.leave_deduction,
            other_pre_tax_deduction: self.other_pre_tax_deduction,
            after_tax_deduction: self.after_tax_deduction,
            annual_bonus: self.annual_bonus,
        }
    }
}

/// `POST /payroll-sheets`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewSheet {
    /// Required for platform and partner callers; a tenant user's own tenant otherwise.
    pub tenant_id: Option<Id>,
    /// `YYYY-MM`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "2026-03"))]
    pub period: Period,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub title: Option<Label>,
    /// Per-employee adjustments; without items the sheet covers the tenant's active employees.
    pub items: Option<Vec<ItemInput>>,
}

/// `PUT /payroll-sheets/:id`: a draft or calculated sheet's title and items (the items
/// replace the sheet's items). The sheet goes back to `draft`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SheetPatch {
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub title: Option<Label>,
    pub items: Option<Vec<ItemInput>>,
}

/// List filters.
#[derive(Debug, Clone, Default)]
pub struct SheetQuery {
    pub list: atrium_kernel::ListQuery<SheetSort>,
    pub status: Option<SheetStatus>,
    pub tenant_id: Option<Id>,
    pub partner_id: Option<Id>,
    pub period: Option<Period>,
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

/// Storage of sheets. Every read takes the caller's scope and finds nothing outside it;
/// writes carry the audit record to store in the same transaction, and the sheet's
/// `version` as read — a write against another version fails with `Conflict`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayrollRepo: Send + Sync + 'static {
    async fn list_sheets(&self, scope: Party, query: SheetQuery) -> Result<Page<Sheet>>;
    async fn get_sheet(&self, scope: Party, id: Id) -> Result<Option<Sheet>>;
    /// The sheet's items, by item id.
    async fn sheet_items(&self, sheet_id: Id) -> Result<Vec<SheetItem>>;

    /// The tenant if it is in `scope`.
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<PayrollTenant>>;
    /// The tenant's employees: those with `ids` (any status; unknown ids are left out), or
    /// all active ones when `ids` is `None`.
    async fn employees(&self, tenant_id: Id, ids: Option<Vec<Id>>) -> Result<Vec<PayrollEmployee>>;
    /// Per employee, the sums of their items on the tenant's approved or sent sheets of
    /// `period`'s year before `period`.
    async fn year_to_date(&self, tenant_id: Id, period: Period) -> Result<HashMap<Id, YearToDate>>;

    /// Stores a new sheet with its items; `Conflict` when the tenant already has a sheet for
    /// the period.
    async fn insert_sheet(&self, sheet: Sheet, items: Vec<SheetItem>, audit: AuditRecord) -> Result<Sheet>;
    /// Writes the sheet's fields (status, totals, actors, times) and does `items` to its
    /// items; `sheet.version` is the version read.
    async fn update_sheet(&self, sheet: Sheet, items: ItemsWrite, audit: AuditRecord) -> Result<Sheet>;
    /// Writes the sheet's fields and each item's calculated line.
    async fn save_calculation(&self, sheet: Sheet, lines: Vec<(Id, CalculatedLine)>, audit: AuditRecord) -> Result<Sheet>;
    /// Writes the sheet's fields and each item's delivery outcome.
    async fn save_deliveries(&self, sheet: Sheet, deliveries: Vec<(Id, Delivery)>, audit: AuditRecord) -> Result<Sheet>;
}
