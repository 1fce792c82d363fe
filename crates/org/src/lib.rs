//! Org: the parties and people of the platform — partners, tenants (enterprises) and their
//! employees — and the audit trail. Users, roles and permissions belong to identity.
//!
//! Every operation is scoped to the caller's [`Party`](atrium_kernel::Party), failing closed:
//! platform users see everything, partner users their partner and its tenants, tenant users
//! their own tenant. Records outside the scope behave exactly like missing ones.
//!
//! Ports: [`PartnerRepo`], [`TenantRepo`], [`EmployeeRepo`], [`AuditRepo`] (storage; every
//! write takes the [`AuditRecord`](atrium_kernel::AuditRecord) to store in the same
//! transaction) and [`AccessChanged`] (tells identity that a party change changed its users'
//! access, so session caches drop them at once).
//!
//! Features: `openapi` derives the OpenAPI schemas and parameters of the wire types; `mock`
//! provides the ports' `MockXxx` types for other crates' tests.

#![warn(missing_docs)]

pub mod api;
pub mod events;
mod ids;
mod model;
mod ports;
mod service;

pub use api::*;
pub use ids::{BankAccount, CreditCode, IdCardNo};
pub use model::*;
pub use ports::*;
pub use service::*;
