//! Atrium's payroll domain.
//!
//! For now it owns the calculation engine ([`engine`]): the pure, framework-free function from
//! a tenant's payroll policy, one employee's month and their year-to-date figures to the
//! contributions, cumulative income tax and net pay of a sheet item — and the sheet
//! [`lifecycle`] (statuses, allowed transitions, four-eyes approval). Sheets, their storage
//! port and the pay-slip dispatch port build on these.

pub mod delivery;
pub mod engine;
pub mod lifecycle;
pub mod service;
pub mod sheets;

pub use delivery::{Channel, Payslip, PayslipNotifier, Recipient};

pub use engine::{
    CalculatedLine, Calculator, DeductionKind, EmployeeMonth, HousingFundRate, PayrollPolicy, Rate, SpecialDeduction, YearToDate,
};
pub use lifecycle::{SheetAction, SheetStatus, check_four_eyes};
pub use service::PayrollService;
pub use sheets::*;

#[cfg(test)]
mod service_tests;
