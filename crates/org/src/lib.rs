//! Org: the parties and people of the platform — partners, tenants (enterprises), their
//! employees and the users who log in — plus custom roles and the audit trail.
//!
//! Every operation is scoped to the caller's [`Party`](atrium_kernel::Party), failing closed:
//! platform users see everything, partner users their partner and its tenants, tenant users
//! their own tenant. Records outside the scope behave exactly like missing ones.
//!
//! Ports: [`PartnerRepo`], [`TenantRepo`], [`EmployeeRepo`], [`UserRepo`], [`RoleRepo`],
//! [`AuditRepo`] (storage; every write takes the [`AuditRecord`](atrium_kernel::AuditRecord)
//! to store in the same transaction), [`PasswordHashing`] and [`AccessChanged`] (tell
//! identity that a user's access changed, so caches drop it at once).

mod audit;
mod employees;
mod ids;
mod partners;
mod ports;
mod roles;
mod scope;
mod tenants;
mod users;

pub use audit::*;
pub use employees::*;
pub use ids::{BankAccount, CreditCode, IdCardNo};
pub use partners::*;
pub use ports::*;
pub use roles::*;
pub use scope::ListQuery;
pub use tenants::*;
pub use users::*;

#[cfg(test)]
mod service_tests;
