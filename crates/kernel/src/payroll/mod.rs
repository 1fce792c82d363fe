//! The payroll vocabulary shared by org (employee and tenant records) and payroll (the
//! engine): rates as exact parts per million, housing-fund rates, special additional
//! deductions and a tenant's payroll policy.

mod deduction;
mod policy;
mod rate;

pub use deduction::{DeductionKind, SpecialDeduction};
pub use policy::PayrollPolicy;
pub use rate::{HousingFundRate, PPM, Rate};
