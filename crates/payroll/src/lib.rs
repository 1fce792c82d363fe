//! Atrium's payroll domain, framework-free: a tenant's monthly payroll sheets with an item per
//! employee — a month's one regular sheet and any supplementary sheets paying extra for a
//! settled month — their calculation, their lifecycle, the dispatch of pay slips, and an
//! employee's tax year.
//!
//! - `model`: sheets, items, totals, deliveries and pay slips; `api`: what clients send and
//!   receive ([`NewSheet`], [`SheetPatch`], [`SheetListParams`], [`SheetView`]).
//! - [`engine`]: the pure function from a tenant's payroll policy, one employee's month and
//!   their year-to-date figures to contributions, cumulative income tax and net pay.
//! - `lifecycle`: sheet statuses, allowed transitions (409 otherwise) and four-eyes approval.
//! - Ports: [`PayrollRepo`] (storage), [`PayslipNotifier`] (the messaging platform),
//!   [`TextSender`] (SMS and e-mail), [`PayeeAccounts`] (bank accounts), [`SheetWriter`] and
//!   [`SheetReader`] (spreadsheet files).
//! - `delivery`: [`PayslipChannels`], the channel policy over those transports, and the slip
//!   as a text.
//! - `service`: [`PayrollService`], the use cases over the ports, scoped to the caller.
//! - `tax_year`: an employee's [`TaxYear`] from the approved and sent sheets, with the
//!   annual settlement estimate.
//! - [`files`]: sheets as spreadsheet files, as plain data — the export, the bank-transfer
//!   file and the import template as a [`files::Table`] of typed cells; an import as the
//!   [`files::ReadSheet`] of text cells it is checked from (amounts in yuan read exactly,
//!   errors by row and column). Ports [`SheetWriter`] and [`SheetReader`] do the bytes
//!   (the `atrium-tabular` adapter), [`PayeeAccounts`] gives employees' bank accounts.
//!
//! Features: `mock` for mockall doubles of the ports (`MockPayrollRepo`,
//! `MockPayslipNotifier`, `MockTextSender`, `MockPayeeAccounts`, `MockSheetWriter`,
//! `MockSheetReader`); `openapi` for the schemas of the request and view types.

#![warn(missing_docs)]

mod api;
mod delivery;
pub mod engine;
pub mod events;
pub mod files;
mod lifecycle;
mod model;
mod ports;
mod service;
mod tax_year;

pub use api::*;
pub use delivery::{PayslipChannels, payslip_text};
pub use engine::{
    CalculatedLine, Calculator, DeductionKind, EmployeeMonth, HousingFundRate, PayrollPolicy, Rate, SheetKind, SpecialDeduction, YearToDate,
};
pub use lifecycle::{SheetAction, SheetStatus, check_four_eyes};
pub use model::*;
pub use ports::*;
pub use service::{FilePorts, PayrollService};
pub use tax_year::{ANNUAL_BASIC_DEDUCTION, Settlement, TaxMonth, TaxMonthSheet, TaxYear, TaxYearTotals};
