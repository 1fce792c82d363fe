//! The black-box HTTP tests, one binary: each module is one area of the interface, and every
//! test runs on SQLite and on PostgreSQL (`atrium_e2e::e2e!`). One binary links and builds the
//! shared code once, where a binary per file did it thirteen times.
//!
//! Tests that change process-wide state live in binaries of their own: `faults` (failpoints),
//! `log_language` and `secrets_in_log` (the captured log).
mod auth;
mod campaigns;
mod contract;
mod discrepancies;
mod docs;
mod earnings;
mod http_shell;
mod ledger;
mod operations;
mod orders;
mod org;
mod payments;
mod payroll;
mod preflight;
mod releases;
mod returns;
mod security;
mod security_org;
mod service_provider;
mod share_plans;
mod shares;
