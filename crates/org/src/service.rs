//! Org's use cases, one service per resource, each scoped to the caller's party:
//! [`PartnerService`], [`TenantService`], [`EmployeeService`] and [`AuditService`].
use serde::Serialize;

mod audit;
mod employees;
mod partners;
mod tenants;

pub use audit::{AuditService, target_read_permission, visible_to};
pub use employees::EmployeeService;
pub use partners::PartnerService;
pub use tenants::TenantService;

/// A record as an audit entry's before or after state; the entry keeps the changed fields
/// only, with secrets redacted.
fn audit_json<T: Serialize>(record: &T) -> serde_json::Value {
    serde_json::to_value(record).unwrap_or_default()
}

/// One field of a patch: `field` becomes `value`, converted, where the patch carries one.
fn apply<T, U>(field: &mut U, value: Option<T>, convert: impl FnOnce(T) -> U) {
    if let Some(v) = value {
        *field = convert(v);
    }
}

#[cfg(test)]
mod tests;
