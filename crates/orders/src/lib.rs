//! Atrium's orders domain, framework-free: a tenant's orders, how they are paid (on the pay
//! platform through the tenant's mini-program, or offline) and refunded, and their expiry.
//!
//! - `model`: [`Order`] with its [`OrderItem`]s, [`Payment`] and [`Refund`]s, the list query
//!   [`OrderQuery`] and the refund reservation's outcomes; `api`: what clients send and
//!   receive ([`NewOrder`], [`PayOrder`], [`NewRefund`], [`OrderListParams`], [`OrderView`],
//!   …); `text`: the bounded strings of those requests.
//! - `lifecycle`: [`OrderStatus`] and [`RefundStatus`] with their allowed steps.
//! - Ports: [`OrderRepo`] (storage; its refund reservation is the one place the "never more
//!   refunded than paid" rule is enforced under concurrency) and [`OrderPayments`] (the
//!   payments orders ask for; the server implements it over the mini-program payments
//!   service, so this crate depends on no other domain).
//! - `config`: [`OrderSettings`]; `service`: [`OrderService`], the use cases, including what
//!   the server calls when the payments side learns something
//!   ([`OrderService::payment_changed`], [`OrderService::refund_changed`]) and the expiry
//!   job's [`OrderService::expire_due`].
//!
//! Every order belongs to a tenant and every operation is scoped to the caller's
//! [`Party`](atrium_kernel::Party): an order out of scope answers exactly as a missing one.
//! The routes check the permissions (`order:read`, `order:create`, `order:pay`,
//! `order:refund`, in the kernel's catalogue), as for every domain.
//!
//! Features: `mock` for mockall doubles of the ports (`MockOrderRepo`, `MockOrderPayments`);
//! `openapi` for the schemas of the request and view types.

mod api;
mod config;
mod lifecycle;
mod model;
mod ports;
mod service;
mod text;

pub use api::*;
pub use config::OrderSettings;
pub use lifecycle::{OrderAction, OrderStatus, RefundStatus};
pub use model::*;
pub use ports::*;
pub use service::{EventOutcome, OrderService};
pub use text::{ByteText, Openid, RefundReason, Subject};
