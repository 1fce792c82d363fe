//! Atrium's payroll domain.
//!
//! For now it owns the calculation engine ([`engine`]): the pure, framework-free function from
//! a tenant's payroll policy, one employee's month and their year-to-date figures to the
//! contributions, cumulative income tax and net pay of a sheet item. Sheets, their lifecycle
//! and the pay-slip dispatch port build on it.

pub mod engine;

pub use engine::{
    CalculatedLine, Calculator, DeductionKind, EmployeeMonth, HousingFundRate, PayrollPolicy, Rate, SpecialDeduction, YearToDate,
};
