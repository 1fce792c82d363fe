//! Route handlers, one module per resource.
pub mod auth;
pub mod doc_admin;
pub mod docs;
pub mod health;
