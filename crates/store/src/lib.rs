//! Storage adapter: Diesel over SQLite (the embedded default) and PostgreSQL (production),
//! through one `MultiConnection` and one r2d2 pool chosen by `DATABASE_URL`.
//!
//! Owns the schema and its migrations (embedded, per backend) and implements the
//! repository ports of the domain crates:
//!
//! - [`IdentityStore`] (`identity/`, one file per port): `LoginRepo`, `RateBucketRepo`,
//!   `SessionRepo`, `CodeRepo`, `AccountRepo` and `ChatTicketRepo` (together the umbrella
//!   `IdentityRepo` the identity service holds), `UserRepo` and `RoleRepo`;
//! - [`OrgStore`] (`org/`, one file per port): partners, tenants, employees and the audit
//!   trail;
//! - [`PayrollStore`] (`PayrollRepo`) and [`DocsStore`] (`DocsRepo`).
//!
//! Every repository call runs on the blocking pool; every domain operation that must be
//! atomic is one transaction here.

mod audit_log;
pub mod crypto;
mod db;
mod docs;
mod error;
mod identity;
mod org;
mod payroll;
mod rate;
pub mod schema;
pub mod seed;
mod standing;
pub mod testing;
mod time;

pub use crypto::FieldCipher;
pub use db::{Backend, Db, DbConn, MultiBackend, redact_url, write_tx};
pub use docs::DocsStore;
pub use error::db_error;
pub use identity::IdentityStore;
pub use org::OrgStore;
pub use payroll::PayrollStore;
