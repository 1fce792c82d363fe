//! The store's tests against real databases, one binary: each module is one port's adapter
//! (or the database layer), run on SQLite and on PostgreSQL. One binary builds and links the
//! shared code once, where a binary per file did it eleven times.
mod campaigns_repo;
mod db_writes;
mod docs_repo;
mod idempotency_repo;
mod identity_repo;
mod jobs_repo;
mod orders_repo;
mod org_repo;
mod package_db;
mod payments_repo;
mod payroll_repo;
mod pool;
mod releases_repo;
mod upgrade;
