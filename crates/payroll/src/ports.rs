//! The payroll domain's ports: sheet storage, the two transports a pay slip can go out on (the
//! messaging platform, and SMS or e-mail), employees' bank accounts, and the spreadsheet
//! files' encoder and decoder.
use crate::engine::{CalculatedLine, SheetKind};
use crate::files::{OutputFormat, ReadError, ReadLimits, ReadSheet, Table, WriteError};
use crate::lifecycle::SheetStatus;
use crate::model::*;
use async_trait::async_trait;
use atrium_kernel::{AuditRecord, ContactTarget, Effects, Id, Page, Party, Period, Result};
use std::collections::HashMap;

/// Storage of sheets. Every read takes the caller's scope and finds nothing outside it;
/// writes carry the audit record to store in the same transaction, and the sheet's
/// `version` as read — a write against another version fails with `Conflict`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayrollRepo: Send + Sync + 'static {
    /// One page of the sheets in `scope` that match `query`, without their items.
    async fn list_sheets(&self, scope: Party, query: SheetQuery) -> Result<Page<Sheet>>;
    /// The sheet, if it exists and is in `scope`.
    async fn get_sheet(&self, scope: Party, id: Id) -> Result<Option<Sheet>>;
    /// The sheet's items, by item id.
    async fn sheet_items(&self, sheet_id: Id) -> Result<Vec<SheetItem>>;

    /// The tenant if it is in `scope`.
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<PayrollTenant>>;
    /// The tenant's employees: those with `ids` (any status; unknown ids are left out), or
    /// all active ones when `ids` is `None`.
    async fn employees(&self, tenant_id: Id, ids: Option<Vec<Id>>) -> Result<Vec<PayrollEmployee>>;
    /// The tenant's regular sheet of `period`, if it has one.
    async fn regular_sheet(&self, tenant_id: Id, period: Period) -> Result<Option<Sheet>>;
    /// Per employee, the sums of their items on the tenant's approved or sent sheets of every
    /// kind in `period`'s year that a sheet of `kind` and `period` counts (see
    /// [`YearToDateSums`]), with how many sheets were summed, read together.
    async fn year_to_date(&self, tenant_id: Id, period: Period, kind: SheetKind) -> Result<YearToDateSums>;
    /// Of `employee_ids`, those with an annual bonus (taxed separately) on a sheet of the
    /// tenant in `year` other than `except_sheet` whose status is one of `statuses`: employee
    /// id → that sheet's id.
    async fn separate_bonuses(
        &self,
        tenant_id: Id,
        year: i32,
        except_sheet: Id,
        statuses: Vec<SheetStatus>,
        employee_ids: Vec<Id>,
    ) -> Result<HashMap<Id, Id>>;
    /// The employee if they are in `scope`.
    async fn employee(&self, scope: Party, id: Id) -> Result<Option<PayrollEmployee>>;
    /// How many employees the tenant has, of any status.
    async fn employee_count(&self, tenant_id: Id) -> Result<i64>;
    /// The tenant's employees (any status) whose employee numbers are among `numbers`;
    /// unknown numbers are left out.
    async fn employees_by_no(&self, tenant_id: Id, numbers: Vec<String>) -> Result<Vec<PayrollEmployee>>;
    /// Stores an audit record of something that changed nothing (a download).
    async fn record_audit(&self, audit: AuditRecord) -> Result<()>;
    /// The employee's calculated items on the tenant's approved or sent sheets of `year`.
    async fn tax_year(&self, tenant_id: Id, employee_id: Id, year: i32) -> Result<Vec<TaxYearLine>>;

    /// Stores a new sheet with its items; `Conflict` when it is a regular sheet and the
    /// tenant already has a regular sheet for the period.
    async fn insert_sheet(&self, sheet: Sheet, items: Vec<SheetItem>, effects: Effects) -> Result<Sheet>;
    /// Writes the sheet's fields (status, totals, actors, times) and does `items` to its
    /// items; `sheet.version` is the version read.
    async fn update_sheet(&self, sheet: Sheet, items: ItemsWrite, effects: Effects) -> Result<Sheet>;
    /// Approves: in one transaction that serialises the approvals of the tenant's tax year,
    /// checks that the sheet's year-to-date figures are still current (the basis counted now
    /// equals `sheet.ytd_basis`) and that no employee with an annual bonus on it has one on
    /// another approved or sent sheet of the year, then writes the sheet's fields (as
    /// `update_sheet` with the items kept), keeps the bank account each employee it pays (net
    /// pay above 0) has now — the bank file pays those ([`PayeeAccounts::approved_accounts`]) —
    /// and writes `effects`. A failed check writes nothing.
    async fn approve_sheet(&self, sheet: Sheet, effects: Effects) -> Result<Approval>;
    /// Writes the sheet's fields and each item's calculated line.
    async fn save_calculation(&self, sheet: Sheet, lines: Vec<(Id, CalculatedLine)>, effects: Effects) -> Result<Sheet>;
    /// Writes the sheet's fields and each item's delivery outcome.
    async fn save_deliveries(&self, sheet: Sheet, deliveries: Vec<(Id, Delivery)>, effects: Effects) -> Result<Sheet>;
}

/// Sends pay slips.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayslipNotifier: Send + Sync + 'static {
    /// Delivers `slip` to `to` and returns the channel used. An error says why it could not be
    /// delivered (no channel for this recipient, the platform refused, the network failed); the
    /// message is kept on the item, so it must not carry secrets.
    async fn send(&self, slip: &Payslip, to: &Recipient) -> Result<Channel>;
}

/// Sends a short text by SMS or e-mail, whichever `to` is.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TextSender: Send + Sync + 'static {
    /// `topic` names what the text is about (`payslip`), for the provider's records.
    async fn send_text(&self, to: &ContactTarget, topic: &str, text: &str) -> Result<()>;
}

/// Employees' bank accounts, decrypted, for the batch-transfer file.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayeeAccounts: Send + Sync + 'static {
    /// The bank accounts of the tenant's employees among `employee_ids`: employee id → account.
    /// Employees without an account number are left out.
    async fn bank_accounts(&self, tenant_id: Id, employee_ids: Vec<Id>) -> Result<HashMap<Id, PayeeAccount>>;
    /// The accounts kept when the tenant's sheet `sheet_id` was approved ([`PayrollRepo::approve_sheet`]
    /// keeps them): employee id → account, the employees it pays that had none left out. `None`
    /// for a sheet approved before accounts were kept with the approval.
    async fn approved_accounts(&self, tenant_id: Id, sheet_id: Id) -> Result<Option<HashMap<Id, PayeeAccount>>>;
}

/// Encodes a table as a spreadsheet file. Encoding 10,000 rows is CPU work: an implementation
/// must not do it on the caller's async thread.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SheetWriter: Send + Sync + 'static {
    /// The file of `table` in `format`.
    async fn write(&self, table: Table, format: OutputFormat) -> std::result::Result<Vec<u8>, WriteError>;
}

/// Decodes an uploaded file — an xlsx workbook or csv text (UTF-8, or GBK as Chinese Excel
/// saves it), told apart by their content, not by a name — into rows of text cells, stopping
/// at `limits`. Decoding is CPU work: an implementation must not do it on the caller's async
/// thread.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SheetReader: Send + Sync + 'static {
    /// The rows of the file in `bytes`, up to `limits`.
    async fn read(&self, bytes: Vec<u8>, limits: ReadLimits) -> std::result::Result<ReadSheet, ReadError>;
}
