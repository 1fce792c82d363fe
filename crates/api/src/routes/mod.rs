//! Route handlers, one module per resource.
pub mod auth;
pub mod health;
