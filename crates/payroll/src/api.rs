//! What clients send and receive for payroll sheets: the create and update bodies, the list
//! parameters and the sheet and item views. Money is fen throughout.
use crate::engine::SheetKind;
use crate::lifecycle::SheetStatus;
use crate::model::*;
use crate::tax_year::{Settlement, TaxMonth, TaxYear, TaxYearTotals};
use atrium_kernel::{Error, Id, Label, ListQuery, Money, Period};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One item of a create or update request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ItemInput {
    /// The employee paid: an employee of the sheet's tenant.
    pub employee_id: Id,
    /// Fen: allowances, taxed with the salary.
    #[serde(default)]
    pub allowance: Money,
    /// Fen: overtime pay, taxed with the salary.
    #[serde(default)]
    pub overtime: Money,
    /// Fen: a monthly bonus, taxed with the salary.
    #[serde(default)]
    pub bonus: Money,
    /// Fen: unpaid leave, subtracted from gross (not on a supplementary sheet).
    #[serde(default)]
    pub leave_deduction: Money,
    /// Fen: pre-tax deductions besides contributions and special deductions (enterprise
    /// annuity, commercial health insurance).
    #[serde(default)]
    pub other_pre_tax_deduction: Money,
    /// Fen: deducted from pay after tax.
    #[serde(default)]
    pub after_tax_deduction: Money,
    /// Fen: the annual one-off bonus, taxed separately (once per tax year).
    #[serde(default)]
    pub annual_bonus: Money,
}

impl ItemInput {
    /// The item's amounts as the model's [`Adjustments`].
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
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "period": "2026-03", "title": "March 2026", "items": [{"employee_id": 1, "bonus": 50000, "leave_deduction": 20000}]})))]
pub struct NewSheet {
    /// The sheet's tenant. Platform and partner callers must name it (400 without, 404 if out
    /// of their scope); a tenant caller may leave it out for its own.
    #[cfg_attr(feature = "openapi", schema(required = true, value_type = Id, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The month paid, `YYYY-MM`.
    #[cfg_attr(feature = "openapi", schema(example = "2026-03"))]
    pub period: Period,
    /// `regular` (the default; one per tenant and period) or `supplementary`: arrears,
    /// corrections or an extra bonus for a period whose regular sheet is approved or sent
    /// (409 otherwise). A supplementary sheet lists its items, and they carry no
    /// `leave_deduction` (it pays no base salary and no contributions).
    #[serde(default)]
    pub kind: SheetKind,
    /// Up to 64 characters; "Payroll `YYYY-MM`" (or "Supplementary payroll `YYYY-MM`") when absent.
    pub title: Option<Label>,
    /// Per-employee adjustments; without items a regular sheet covers the tenant's active
    /// employees.
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    pub items: Option<Vec<ItemInput>>,
}

/// `PUT /payroll-sheets/:id`: a draft or calculated sheet's title and items (the items
/// replace the sheet's items). The sheet goes back to `draft`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"title": "March 2026 (corrected)", "items": [{"employee_id": 1, "overtime": 30000}]})))]
pub struct SheetPatch {
    /// A new title, up to 64 characters; absent keeps it.
    pub title: Option<Label>,
    /// The sheet's new items, replacing all of them; absent keeps them (without their figures).
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    pub items: Option<Vec<ItemInput>>,
}

/// `GET /payroll-sheets` parameters.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct SheetListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Sheets per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Matches the title.
    pub keyword: Option<String>,
    /// Only sheets in this status.
    pub status: Option<SheetStatus>,
    /// Only this tenant's sheets (platform and partner users).
    pub tenant_id: Option<i64>,
    /// Only sheets of this partner's tenants (platform users).
    pub partner_id: Option<i64>,
    /// Only sheets of this month, `YYYY-MM`.
    #[cfg_attr(feature = "openapi", param(value_type = Option<Period>))]
    pub period: Option<String>,
    /// Only `regular` or only `supplementary` sheets.
    pub kind: Option<SheetKind>,
    /// `id`, `created_at` or `period`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::SheetSort>))]
    pub sort: Option<String>,
}

/// The query the parameters ask for; a bad page, sort or period is `Invalid`, naming it.
impl TryFrom<SheetListParams> for SheetQuery {
    type Error = Error;

    fn try_from(p: SheetListParams) -> Result<SheetQuery, Error> {
        Ok(SheetQuery {
            list: ListQuery::parse(p.page, p.page_size, p.keyword, p.sort.as_deref())?,
            status: p.status,
            tenant_id: p.tenant_id,
            partner_id: p.partner_id,
            period: p.period.as_deref().map(|period| Period::parse_field("period", period)).transpose()?,
            kind: p.kind,
        })
    }
}

/// A payroll sheet; `items` only in the detail and the responses of its actions.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SheetView {
    /// The sheet's id.
    pub id: i64,
    /// The tenant whose payroll it is.
    pub tenant_id: i64,
    /// `YYYY-MM`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "2026-03"))]
    pub period: Period,
    /// `regular` or `supplementary`.
    pub kind: SheetKind,
    /// The sheet's title.
    pub title: String,
    /// `draft`, `calculated`, `approved` or `sent`.
    pub status: SheetStatus,
    /// Sums over the items; money in fen.
    pub totals: SheetTotals,
    /// The user who created it.
    pub created_by: Option<i64>,
    /// The user who last calculated it.
    pub calculated_by: Option<i64>,
    /// When it was last calculated.
    pub calculated_at: Option<DateTime<Utc>>,
    /// The user who approved it.
    pub approved_by: Option<i64>,
    /// When it was approved.
    pub approved_at: Option<DateTime<Utc>>,
    /// When pay slips first went out.
    pub sent_at: Option<DateTime<Utc>>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// The items, one per employee (in the detail and action answers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<ItemView>>,
}

/// A sheet as listed: without its items.
impl From<Sheet> for SheetView {
    fn from(s: Sheet) -> Self {
        SheetView {
            id: s.id,
            tenant_id: s.tenant_id,
            period: s.period,
            kind: s.kind,
            title: s.title,
            status: s.status,
            totals: s.totals,
            created_by: s.created_by,
            calculated_by: s.calculated_by,
            calculated_at: s.calculated_at,
            approved_by: s.approved_by,
            approved_at: s.approved_at,
            sent_at: s.sent_at,
            created_at: s.created_at,
            updated_at: s.updated_at,
            items: None,
        }
    }
}

/// A sheet with its items.
impl From<SheetDetail> for SheetView {
    fn from(d: SheetDetail) -> Self {
        SheetView { items: Some(d.items.into_iter().map(ItemView::from).collect()), ..SheetView::from(d.sheet) }
    }
}

/// One employee's line: the adjustments, then (once calculated) the figures, then (once
/// sent) the delivery outcome. Money is fen.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ItemView {
    /// The item's id.
    pub id: i64,
    /// The employee paid.
    pub employee_id: i64,
    /// The employee's name when the item was added.
    pub employee_name: String,
    /// The employee's number in the tenant, if it has one.
    pub employee_no: Option<String>,
    /// Allowances, taxed with the salary.
    pub allowance: Money,
    /// Overtime pay.
    pub overtime: Money,
    /// A monthly bonus, taxed with the salary.
    pub bonus: Money,
    /// Unpaid leave, subtracted from gross.
    pub leave_deduction: Money,
    /// Other pre-tax deductions (annuity, commercial health insurance).
    pub other_pre_tax_deduction: Money,
    /// Deducted from pay after tax.
    pub after_tax_deduction: Money,
    /// The annual one-off bonus, taxed separately.
    pub annual_bonus: Money,
    /// Base + allowance + overtime + bonus − leave deduction; null until calculated.
    pub gross: Option<Money>,
    /// The social-insurance base after the policy's floor and cap.
    pub si_base: Option<Money>,
    /// The housing-fund base after the policy's floor and cap.
    pub hf_base: Option<Money>,
    /// The employee's pension insurance.
    pub pension: Option<Money>,
    /// The employee's medical insurance.
    pub medical: Option<Money>,
    /// The employee's unemployment insurance.
    pub unemployment: Option<Money>,
    /// The employee's housing fund.
    pub housing_fund: Option<Money>,
    /// Pension + medical + unemployment + housing fund.
    pub contributions: Option<Money>,
    /// Special additional deductions counted this month (a late declaration catches up here).
    pub special_deduction: Option<Money>,
    /// Months employed at the tenant this tax year, through this month.
    pub months_employed: Option<u32>,
    /// This tax year's taxable income through this month (cumulative method).
    pub cumulative_taxable: Option<Money>,
    /// Tax on `cumulative_taxable` by the annual withholding table.
    pub cumulative_tax: Option<Money>,
    /// Income tax withheld this month: cumulative tax less tax withheld earlier.
    pub tax: Option<Money>,
    /// The annual bonus's separate tax.
    pub annual_bonus_tax: Option<Money>,
    /// What the employee receives.
    pub net_pay: Option<Money>,
    /// `delivered` or `failed` once a send tried the item; null before.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "delivered"))]
    pub delivery_status: Option<DeliveryStatus>,
    /// `wechat`, `sms` or `email`: the channel that delivered the slip.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "wechat"))]
    pub delivery_channel: Option<Channel>,
    /// Why the last attempt failed.
    pub delivery_error: Option<String>,
    /// How many sends tried the item.
    pub delivery_attempts: u32,
    /// When the last attempt ended.
    pub delivered_at: Option<DateTime<Utc>>,
}

impl From<SheetItem> for ItemView {
    fn from(i: SheetItem) -> Self {
        let l = i.line;
        let a = i.adjustments;
        let d = i.delivery;
        ItemView {
            id: i.id,
            employee_id: i.employee_id,
            employee_name: i.employee_name,
            employee_no: i.employee_no,
            allowance: a.allowance,
            overtime: a.overtime,
            bonus: a.bonus,
            leave_deduction: a.leave_deduction,
            other_pre_tax_deduction: a.other_pre_tax_deduction,
            after_tax_deduction: a.after_tax_deduction,
            annual_bonus: a.annual_bonus,
            gross: l.map(|l| l.gross),
            si_base: l.map(|l| l.si_base),
            hf_base: l.map(|l| l.hf_base),
            pension: l.map(|l| l.pension),
            medical: l.map(|l| l.medical),
            unemployment: l.map(|l| l.unemployment),
            housing_fund: l.map(|l| l.housing_fund),
            contributions: l.map(|l| l.contributions),
            special_deduction: l.map(|l| l.special_deduction),
            months_employed: l.map(|l| l.months_employed),
            cumulative_taxable: l.map(|l| l.cumulative_taxable),
            cumulative_tax: l.map(|l| l.cumulative_tax),
            tax: l.map(|l| l.tax),
            annual_bonus_tax: l.map(|l| l.annual_bonus_tax),
            net_pay: l.map(|l| l.net_pay),
            delivery_status: d.as_ref().map(|d| d.status),
            delivery_channel: d.as_ref().and_then(|d| d.channel),
            delivery_attempts: d.as_ref().map_or(0, |d| d.attempts),
            delivered_at: d.as_ref().map(|d| d.at),
            delivery_error: d.and_then(|d| d.error),
        }
    }
}

/// `GET /employees/{id}/tax-year` parameters.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TaxYearParams {
    /// The tax year (a calendar year), 2000 to 2100.
    #[cfg_attr(feature = "openapi", param(required = true, value_type = i32, minimum = 2000, maximum = 2100, example = 2026))]
    pub year: Option<String>,
}

impl TaxYearParams {
    /// The year asked for; missing, not a number or outside 2000–2100 is `Invalid` naming `year`.
    pub fn year(&self) -> Result<i32, Error> {
        let raw = self.year.as_deref().map(str::trim).ok_or_else(|| Error::invalid("year", "is required"))?;
        let year: i32 = raw.parse().map_err(|_| Error::invalid("year", "must be a year, e.g. 2026"))?;
        Period::new(year, 1).map_err(|message| Error::invalid("year", message))?;
        Ok(year)
    }
}

/// An employee's tax year at their tenant, from the approved and sent sheets of every kind:
/// month by month, the year's sums, and the annual settlement estimate. Money is fen.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaxYearView {
    /// The employee.
    pub employee_id: i64,
    /// The employer.
    pub tenant_id: i64,
    /// The employee's name.
    pub employee_name: String,
    /// The employee's number in the tenant, if it has one.
    pub employee_no: Option<String>,
    /// The tax year.
    pub year: i32,
    /// Months with at least one approved or sent sheet paying the employee, in order.
    pub months: Vec<TaxMonth>,
    /// The year's sums over `months`.
    pub totals: TaxYearTotals,
    /// Tax on the year's comprehensive income by the annual table less the tax withheld:
    /// what the employee's annual settlement would leave to pay or to refund, as far as this
    /// tenant's sheets show (an estimate).
    pub settlement: Settlement,
}

impl From<TaxYear> for TaxYearView {
    fn from(y: TaxYear) -> Self {
        TaxYearView {
            employee_id: y.employee_id,
            tenant_id: y.tenant_id,
            employee_name: y.employee_name,
            employee_no: y.employee_no,
            year: y.year,
            months: y.months,
            totals: y.totals,
            settlement: y.settlement,
        }
    }
}

/// `GET /payroll-sheets/{id}/export` parameters.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// `xlsx` (the default) or `csv` (UTF-8 with a byte order mark, as Excel wants it).
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, pattern = "^(xlsx|csv)$", example = "xlsx"))]
    pub format: Option<String>,
}

/// `GET /payroll-sheets/{id}/bank-file` parameters.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct BankFileParams {
    /// `csv`, the only format (and the default).
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, pattern = "^csv$", example = "csv"))]
    pub format: Option<String>,
    /// `utf-8` (the default) or `gbk`, which many banks' portals still require.
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, pattern = "^(utf-8|gbk)$", example = "gbk"))]
    pub encoding: Option<String>,
}

/// `GET /payroll-sheets/import-template` parameters.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TemplateParams {
    /// `xlsx` (the default) or `csv`.
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, pattern = "^(xlsx|csv)$", example = "xlsx"))]
    pub format: Option<String>,
}

/// The part of `POST /payroll-sheets/{id}/items/import` (`multipart/form-data`), as the
/// document shows it.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ItemImportForm {
    /// An xlsx workbook (its first worksheet) or a csv file (UTF-8, or GBK as Chinese Excel
    /// saves it), told apart by content: a header row naming `employee_no` and any of
    /// `employee_name`, `allowance`, `overtime`, `bonus`, `leave_deduction`,
    /// `other_pre_tax_deduction`, `after_tax_deduction`, `annual_bonus`, then a row per
    /// employee with amounts in yuan (at most two decimals). At most 16 MiB (413 above).
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// A spreadsheet file, not an envelope.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
pub struct SpreadsheetFile(Vec<u8>);
