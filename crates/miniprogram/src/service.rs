//! The code-release use cases, in two services over the ports: [`AuthorizationService`] (a
//! tenant's authorisation of its mini-program, the tenants a caller acts on, the platform's
//! authorisation events, and what a call for a tenant's mini-program needs) and
//! [`PipelineService`] (uploads, audits, releases and rollbacks, acting through the first),
//! with the pipeline's jobs, and [`PreflightService`] (domains, privacy settings, the audit
//! quota and the pre-flight check).
mod authorization;
mod campaigns;
mod pipeline;
mod platform;
mod preflight;
mod release_jobs;

pub use authorization::AuthorizationService;
pub use campaigns::{CAMPAIGN_JOB, CampaignService, CampaignSettings};
pub use pipeline::{AUDIT_POLL_JOB, PipelinePorts, PipelineService, UPLOAD_JOB};
pub use platform::release_platform_error;
pub use preflight::{
    CODE_MANAGEMENT, MAX_DOMAIN_CHARS, MAX_DOMAINS, MAX_PRIVACY_CONTACT, MAX_PRIVACY_TEXT, PreflightService, QUOTA_CACHE, check_domains,
    check_privacy,
};
pub use release_jobs::{AUDIT_POLL_MAX, UPLOAD_BACKOFF};

#[cfg(test)]
mod tests;
