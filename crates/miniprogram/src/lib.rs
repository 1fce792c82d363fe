//! Atrium's mini-program domain, framework-free: code releases through our third-party
//! platform — a tenant's authorisation of its mini-program, code uploads (a template of the
//! library, or a package zip), audits and releases (full, gray, rollback), and the events the
//! platform pushes. (Payments in the tenant's mini-program are the `atrium-payments` ledger's.)
//!
//! - `model`: authorisations ([`Authorization`]), upload, audit and release tasks
//!   ([`UploadTask`], [`AuditTask`], [`ReleaseTask`]) and what the platform reports. `api`:
//!   what clients send and receive ([`TemplateUpload`], [`PublishRequest`],
//!   [`AuditTaskView`], …).
//! - `lifecycle`: [`UploadStatus`], [`AuditStatus`], [`AuthorizationStatus`]; each only moves
//!   forward. [`check_release`] holds the release rules (only a passed audit, gray
//!   percentages 1–100 that only rise, nothing after a full release).
//! - [`package`]: what a code package is (a zip of a project with `project.config.json` and
//!   `app.json`, no entry outside it, no zip bomb), checked and unpacked as a stream from disk.
//! - Ports: [`AuthorizationRepo`] (authorisations, authorisation attempts, the verify ticket,
//!   the events already processed, the tenants in a caller's scope), [`ReleaseTaskRepo`]
//!   (upload, audit and release tasks), [`PackageStore`] (kept code packages by content hash;
//!   the store keeps them in a shared directory, and another adapter may keep them elsewhere),
//!   [`MiniProgramPlatform`] (the third-party platform: authorisation, templates, code
//!   management, pushed events), [`CodeUploader`] (uploads a package) and
//!   [`PackageInspector`] (runs [`package::inspect`] off the async workers).
//! - `config`: [`ReleaseSettings`]. `service`: [`AuthorizationService`] (a tenant's
//!   authorisation, its link and callback, the authorisation events and verify tickets,
//!   revocation, and what a call for the tenant's mini-program needs) and [`PipelineService`]
//!   (uploads, audits, releases, rollbacks, versions, the experience QR code, the audit
//!   results pushed, and the upload and audit-poll jobs), which acts on a tenant's
//!   mini-program through the first.
//!
//! Features: `mock` for mockall doubles of the ports (`MockAuthorizationRepo`,
//! `MockReleaseTaskRepo`, `MockPackageStore`, `MockMiniProgramPlatform`, `MockCodeUploader`,
//! `MockPackageInspector`); `openapi` for the schemas of the request and view types.

#![warn(missing_docs)]

mod api;
pub mod budget;
pub mod campaign;
mod config;
pub mod events;
mod lifecycle;
mod model;
pub mod package;
mod ports;
#[cfg(feature = "openapi")]
mod schemas;
mod service;

pub use api::*;
pub use atrium_kernel::{ByteText, Secret};
pub use budget::{AuditBudgets, Share, Spend, Spent, Window};
pub use campaign::{Campaign, CampaignStatus, CampaignTenant, CampaignTenantStatus, PauseReason, Wave, WaveRelease, WaveStatus};
pub use config::{RecordRetention, ReleaseSettings};
pub use lifecycle::{AuditStatus, AuthorizationStatus, ReleaseKind, ReleaseStatus, UploadStatus, check_release};
pub use model::*;
pub use package::{PackageError, PackageInfo, PackageLimits};
pub use ports::*;
pub use service::*;
