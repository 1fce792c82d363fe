//! Atrium's orders domain, framework-free: a tenant's orders, how they are paid (on the pay
//! platform through the tenant's mini-program, or offline) and refunded, and their expiry.
//!
//! Orders keep no book of money of their own. The money ledger (the payments domain, reached
//! through the [`OrderLedger`] port) owns every transaction and refund of an order: it charges
//! (starts or resumes the platform payment, [`OrderLedger::charge`]), records offline
//! payments, refunds — deciding what is left to refund, the refund window and the count
//! limit — and closes an open platform payment. An order keeps its own state (lifecycle,
//! items, expiry) and a *projection* of what the ledger holds of it: what was paid and how,
//! what was refunded (the sum of the succeeded refunds), whether the platform reported a
//! payment that does not match it (a discrepancy, never taken as paid). Its refunds are the
//! ledger's, read through the port ([`OrderLedger::refunds`]) and never stored by orders.
//!
//! [`OrderService::sync`] brings that projection up to what the ledger holds, with one
//! conditional write ([`OrderRepo::update_order`]) and an audit record: the service runs it
//! right after each of its own ledger calls, and the server runs it for every durable event
//! the ledger writes when an order's money changes. It is idempotent (a repeat changes
//! nothing) and never moves an order to an older view of the ledger.
//!
//! - `model`: [`Order`] with its [`OrderItem`]s, [`Payment`] and its
//!   [`OrderState`] (what a conditional write compares), the list query [`OrderQuery`];
//!   `api`: what clients send and receive ([`NewOrder`], [`PayOrder`], [`NewRefund`],
//!   [`OrderListParams`], [`OrderView`], …); `text`: the bounded strings of those requests.
//! - `lifecycle`: [`OrderStatus`] with its allowed steps; a refund's status is the kernel's
//!   [`RefundStatus`].
//! - Ports: [`OrderRepo`] (storage of orders and their items) and [`OrderLedger`] (the money
//!   ledger: [`Charge`], [`OfflineCharge`], [`RefundCharge`] in, [`OrderMoney`] and
//!   [`OrderRefund`] out). The ledger's port is the kernel's one contract between orders and
//!   the ledger ([`atrium_kernel::pay`]), which the payments ledger implements, so this crate
//!   depends on no other domain.
//! - `config`: [`OrderSettings`]; `service`: [`OrderService`], the use cases — create, read,
//!   list, pay and refund (through the ledger), [`OrderService::sync`] and the expiry job's
//!   [`OrderService::expire_due`]. A refund's number is derived from the request's
//!   `Idempotency-Key` ([`RequestKey`](atrium_kernel::RequestKey)), so a retried request asks
//!   the ledger for the same refund.
//!
//! Every order belongs to a tenant and every operation is scoped to the caller's
//! [`Party`](atrium_kernel::Party): an order out of scope answers exactly as a missing one.
//! The routes check the permissions (`order:read`, `order:create`, `order:pay`,
//! `order:refund`, in the kernel's catalogue), as for every domain.
//!
//! Features: `mock` for mockall doubles of the ports (`MockOrderRepo`, `MockOrderLedger`);
//! `openapi` for the schemas of the request and view types.

#![warn(missing_docs)]

mod api;
mod config;
pub mod events;
mod lifecycle;
mod model;
mod ports;
mod service;
mod text;

pub use api::*;
pub use atrium_kernel::{PayParams, RefundStatus};
pub use config::OrderSettings;
pub use lifecycle::{OrderAction, OrderStatus};
pub use model::*;
pub use ports::*;
pub use service::{EventOutcome, OrderService};
pub use text::{ByteText, Openid, RefundReason, Subject};
