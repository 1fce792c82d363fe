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
//! - [`PayrollStore`] (`PayrollRepo`) and [`DocsStore`] (`DocsRepo`);
//! - [`PaymentStore`] (`payments`): the ledger's `PaymentRepo`, with the merchant key and
//!   APIv3 key encrypted at rest;
//! - [`ReleaseStore`] (`releases/`, one file per port): `AuthorizationRepo` (authorisations
//!   with their refresh tokens and the verify ticket encrypted) and `ReleaseTaskRepo` (upload,
//!   audit and release tasks); [`PackageDir`]: `PackageStore`, kept code packages as files in
//!   one directory, named by their hash; [`PackageDb`]: `PackageStore` with the packages'
//!   content in the database, for instances without a shared disk;
//! - [`CampaignStore`] (`releases/campaigns`): `CampaignRepo`, release campaigns and their
//!   tenants;
//! - [`OrdersStore`] (`orders/`, one file per port): `OrderRepo`, orders with their items (their
//!   refunds are the ledger's);
//! - the kernel's shared ports: [`DbIdempotencyStore`] (`IdempotencyStore`, the records of
//!   `Idempotency-Key` requests) and [`DbJobStore`] (`JobStore`, the durable job queue).
//!
//! Every repository call runs off the async workers: reads on the blocking pool, writes
//! through [`Db::write`] (on SQLite, one at a time on the process's one writer thread); every
//! domain operation that must be atomic is one transaction here.

mod audit_log;
pub mod crypto;
mod db;
mod discrepancies;
mod docs;
mod earnings;
mod error;
mod idempotency;
mod identity;
mod ids_in;
mod jobs;
mod orders;
mod org;
mod outbox;
mod payments;
mod payroll;
mod rate;
mod releases;
pub mod schema;
pub mod seed;
mod share_plans;
mod shares;
mod standing;
mod static_sql;
pub mod testing;
mod time;

pub use crypto::FieldCipher;
pub use db::{Backend, Db, DbConn, DbManager, MultiBackend, PoolConn, PoolStats, redact_url, sqlite_path};
pub use docs::DocsStore;
pub use error::{cannot_serve_now, db_error};
pub use idempotency::DbIdempotencyStore;
pub use identity::IdentityStore;
pub use jobs::DbJobStore;
pub use orders::OrdersStore;
pub use org::OrgStore;
pub use payments::PaymentStore;
pub use payroll::PayrollStore;
pub use releases::{CampaignStore, PackageDb, PackageDir, ReleaseStore};
