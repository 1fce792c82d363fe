//! Atrium's mini-program domain, framework-free. Today it owns payments: a tenant's merchant
//! account on the pay platform (configuration, keys and certificates), its JSAPI
//! transactions and refunds, the platform's notifications and the daily reconciliation
//! against the trade bill. Upload, audit and release tasks will join it.
//!
//! - `model`: payment configuration ([`PaymentConfig`], with [`Secret`] fields the store
//!   encrypts at rest), transactions, refunds, and what the platform reports; `api`: what
//!   clients send and receive ([`UnifiedOrderRequest`], [`RefundRequest`],
//!   [`PaymentConfigView`], [`PayParams`], …).
//! - `lifecycle`: [`TradeState`] and [`RefundStatus`], which only ever move forward.
//! - Ports: [`PaymentRepo`] (storage; its refund reservation is the one place the "never more
//!   refunded than paid" rule is enforced under concurrency), [`PayPlatform`] (the pay
//!   platform: orders, queries, closes, refunds, trade bills, pay parameters, notification
//!   verification) and [`MerchantKeys`] (PEM and certificate inspection).
//! - `config`: [`PaymentSettings`]; `service`: [`PaymentService`], the use cases.
//!
//! Features: `mock` for mockall doubles of the ports (`MockPaymentRepo`, `MockPayPlatform`,
//! `MockMerchantKeys`); `openapi` for the schemas of the request and view types.

mod api;
mod config;
mod lifecycle;
mod model;
mod ports;
mod service;

pub use api::*;
pub use config::PaymentSettings;
pub use lifecycle::{RefundStatus, TradeState};
pub use model::*;
pub use ports::*;
pub use service::*;
