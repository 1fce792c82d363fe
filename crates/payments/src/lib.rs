//! Atrium's payments domain, framework-free: the one money ledger. It owns a tenant's
//! merchant account on the pay platform (configuration, keys and certificates), its JSAPI
//! transactions and refunds, the platform's notifications, the daily reconciliation against
//! the trade bill, and the jobs that settle what the platform has not told us yet.
//!
//! - `model`: payment configuration ([`PaymentConfig`], with [`Secret`] fields the store
//!   encrypts at rest), transactions ([`Transaction`]), refunds ([`Refund`]) and what the
//!   platform reports. `api`: what clients send and receive ([`UnifiedOrderRequest`],
//!   [`RefundRequest`], [`TransactionView`], …).
//! - `sharing`: profit sharing in service-provider mode: partners' share plans
//!   ([`SharePlan`], versioned) and the [`Rates`] a payment is shared at; `earnings`: the
//!   statements of what partners and the platform earned ([`Earnings`]); `discrepancies`:
//!   where our books and the platform's differ, and how a person resolves it
//!   ([`Discrepancy`], [`ResolveAction`]).
//! - `lifecycle`: [`TradeState`] and [`RefundStatus`]; each only moves forward.
//! - Ports: [`PaymentRepo`] (storage; its refund reservation is the one place the "never more
//!   refunded than paid" rule is enforced under concurrency), [`PayPlatform`] (the pay
//!   platform: orders, queries, closes, refunds, trade bills, pay parameters, notification
//!   verification) and [`MerchantKeys`] (PEM and certificate inspection).
//! - `config`: [`PaymentSettings`]; `service`: [`PaymentService`], the use cases and jobs. It
//!   is also the ledger orders pay through: it implements the kernel's
//!   [`OrderLedger`](atrium_kernel::pay::OrderLedger), the one contract between them.
//!
//! Features: `mock` for mockall doubles of the ports (`MockPaymentRepo`, `MockPayPlatform`,
//! `MockMerchantKeys`); `failpoints` for the failpoints of the fault tests; `openapi` for the schemas of the request and
//! view types.

#![warn(missing_docs)]

mod api;
mod config;
mod discrepancies;
mod earnings;
pub mod events;
mod lifecycle;
mod model;
mod ports;
mod service;
mod sharing;

pub use api::*;
pub use atrium_kernel::{ByteText, Openid, PayParams, PaymentMethod, RefundStatus, Secret};
pub use config::PaymentSettings;
pub use discrepancies::*;
pub use earnings::*;
pub use lifecycle::TradeState;
pub use model::*;
pub use ports::*;
pub use service::*;
pub use sharing::*;
