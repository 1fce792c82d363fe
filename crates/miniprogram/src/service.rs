//! The code-release use cases, in two services over the ports: [`AuthorizationService`] (a
//! tenant's authorisation of its mini-program, the tenants a caller acts on, the platform's
//! authorisation events, and what a call for a tenant's mini-program needs) and
//! [`PipelineService`] (uploads, audits, releases and rollbacks, acting through the first),
//! with the pipeline's jobs.
mod authorization;
mod pipeline;
mod platform;
mod release_jobs;

pub use authorization::AuthorizationService;
pub use pipeline::{AUDIT_POLL_JOB, PipelinePorts, PipelineService, UPLOAD_JOB};
pub use platform::release_platform_error;
pub use release_jobs::{AUDIT_POLL_MAX, UPLOAD_BACKOFF};

#[cfg(test)]
mod tests;
