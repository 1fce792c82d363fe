//! Atrium's mini-program domain, framework-free. It owns payments — a tenant's merchant
//! account on the pay platform (configuration, keys and certificates), its JSAPI
//! transactions and refunds, the platform's notifications and the daily reconciliation
//! against the trade bill — and code releases through our third-party platform: a tenant's
//! authorisation of its mini-program, code uploads (a template of the library, or a package
//! zip), audits and releases (full, gray, rollback), and the events the platform pushes.
//!
//! - `model`: payment configuration ([`PaymentConfig`], with [`Secret`] fields the store
//!   encrypts at rest), transactions, refunds; authorisations ([`Authorization`]), upload,
//!   audit and release tasks ([`UploadTask`], [`AuditTask`], [`ReleaseTask`]) and what the
//!   platforms report. `api`: what clients send and receive ([`UnifiedOrderRequest`],
//!   [`TemplateUpload`], [`PublishRequest`], [`AuditTaskView`], …).
//! - `lifecycle`: [`TradeState`], [`RefundStatus`], [`UploadStatus`], [`AuditStatus`]; each
//!   only moves forward. [`check_release`] holds the release rules (only a passed audit, gray
//!   percentages 1–100 that only rise, nothing after a full release).
//! - [`package`]: what a code package is (a zip of a project with `project.config.json` and
//!   `app.json`, no entry outside it, no zip bomb), checked and unpacked as a stream from disk.
//! - Ports: [`PaymentRepo`] (storage; its refund reservation is the one place the "never more
//!   refunded than paid" rule is enforced under concurrency), [`PayPlatform`] (the pay
//!   platform: orders, queries, closes, refunds, trade bills, pay parameters, notification
//!   verification) and [`MerchantKeys`] (PEM and certificate inspection); [`ReleaseRepo`]
//!   (release storage), [`MiniProgramPlatform`] (the third-party platform: authorisation,
//!   templates, code management, pushed events), [`CodeUploader`] (uploads a package) and
//!   [`PackageInspector`] (runs [`package::inspect`] off the async workers).
//! - `config`: [`PaymentSettings`], [`ReleaseSettings`]; `service`: [`PaymentService`] and
//!   [`ReleaseService`], the use cases.
//!
//! Features: `mock` for mockall doubles of the ports (`MockPaymentRepo`, `MockPayPlatform`,
//! `MockMerchantKeys`, `MockReleaseRepo`, `MockMiniProgramPlatform`, `MockCodeUploader`,
//! `MockPackageInspector`); `openapi` for the schemas of the request and view types.

mod api;
mod config;
mod lifecycle;
mod model;
pub mod package;
mod ports;
mod service;

pub use api::*;
pub use config::{PaymentSettings, ReleaseSettings};
pub use lifecycle::{AuditStatus, AuthorizationStatus, RefundStatus, ReleaseKind, ReleaseStatus, TradeState, UploadStatus, check_release};
pub use model::*;
pub use package::{PackageError, PackageInfo, PackageLimits};
pub use ports::*;
pub use service::*;
