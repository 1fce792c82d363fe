//! The HTTP interfaces: `/api/v1` (Bearer JWT, envelope `{code, message, data}` with the
//! HTTP status as code) and `/api/docs/` (docs API tokens, success code 0).
//!
//! Owns the envelope, the mapping from domain errors to it, the extractors (JSON bodies
//! with field-named errors, the authenticated [`Actor`](atrium_kernel::Actor), per-route
//! permissions), request ids and logging, health, metrics, body timeouts, and the OpenAPI
//! document with its Swagger UI.
//! It depends on domain services only, never on storage or platform adapters.

mod access_log;
mod app;
mod docs_interface;
mod envelope;
mod error;
mod extract;
mod idempotency;
mod limits;
pub mod metrics;
mod openapi;
mod query;
mod reasons;
mod request_id;
pub mod routes;

pub use app::{AppState, HealthProbe, configure};
pub use docs_interface::{DocsError, DocsToken};
pub use envelope::{ApiResult, Envelope, ok};
pub use error::ApiError;
pub use extract::{Auth, Authorized, ClientIp, Json, Permission};
pub use metrics::{DbPoolStats, Metrics, MetricsAccess};
pub use openapi::{ApiDoc, document as openapi_document};
