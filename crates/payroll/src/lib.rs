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
//! - Ports: [`PayrollRepo`] (storage), [`PayslipNotifier`] (the messaging platform) and
//!   [`TextSender`] (SMS and e-mail).
//! - `delivery`: [`PayslipChannels`], the channel policy over those transports, and the slip
//!   as a text.
//! - `service`: [`PayrollService`], the use cases over the ports, scoped to the caller.
//! - `tax_year`: an employee's [`TaxYear`] from the approved and sent sheets, with the
//!   annual settlement estimate.
//!
//! Features: `mock` for mockall doubles of the ports (`MockPayrollRepo`,
//! `MockPayslipNotifier`, `MockTextSender`); `openapi` for the schemas of the request and
//! view types.

mod api;
mod delivery;
pub mod engine;
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
pub use service::PayrollService;
pub use tax_year::{ANNUAL_BASIC_DEDUCTION, Settlement, TaxMonth, TaxMonthSheet, TaxYear, TaxYearTotals};
