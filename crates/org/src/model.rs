//! What org stores and reasons about: partners, tenants, employees and audit entries, their
//! statuses and sort keys, and the list queries handed to the repositories.
mod audit;
mod employees;
mod partners;
mod tenants;

pub use audit::{AuditEntry, AuditQuery};
pub use employees::{Employee, EmployeeQuery, EmployeeSort, EmployeeStatus};
pub use partners::{Partner, PartnerQuery, PartnerSort, PartnerStatus};
pub use tenants::{Tenant, TenantQuery, TenantSort, TenantStatus};
