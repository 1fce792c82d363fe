//! Atrium's payroll domain, framework-free.
//!
//! - [`engine`]: the pure function from a tenant's payroll policy, one employee's month and
//!   their year-to-date figures to contributions, cumulative income tax and net pay.
//! - [`lifecycle`]: sheet statuses, allowed transitions (409 otherwise) and four-eyes approval.
//! - [`sheets`]: sheets and items, and the [`PayrollRepo`] storage port.
//! - [`delivery`]: pay slips and the [`PayslipNotifier`] port.
//! - [`service`]: [`PayrollService`], the use cases over those ports, scoped to the caller.
//!
//! Enable the `mock` feature for mockall doubles of both ports (`MockPayrollRepo`,
//! `MockPayslipNotifier`).

pub mod delivery;
pub mod engine;
pub mod lifecycle;
pub mod service;
pub mod sheets;

pub use delivery::{Channel, Payslip, PayslipChannels, PayslipNotifier, Recipient, TextSender, payslip_text};

pub use engine::{
    CalculatedLine, Calculator, DeductionKind, EmployeeMonth, HousingFundRate, PayrollPolicy, Rate, SpecialDeduction, YearToDate,
};
pub use lifecycle::{SheetAction, SheetStatus, check_four_eyes};
pub use service::PayrollService;
pub use sheets::*;

#[cfg(test)]
mod service_tests;
