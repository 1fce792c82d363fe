//! The orders domain's ports: storage ([`OrderRepo`]) and the money ledger orders pay and
//! refund through ([`OrderLedger`]). The ledger's port is the kernel's contract
//! ([`atrium_kernel::pay`]), which the payments ledger implements, so this crate depends on
//! no other domain; it is re-exported here with what crosses it.
use crate::model::*;
use async_trait::async_trait;
use atrium_kernel::{Effects, Id, Page, Party, Result, Timestamp};

#[cfg(any(test, feature = "mock"))]
pub use atrium_kernel::pay::MockOrderLedger;
pub use atrium_kernel::pay::{
    Charge, LedgerPayment, OfflineCharge, OrderLedger, OrderMoney, OrderRefund, OrderShare, PaymentState, RefundCharge, ShareView,
};

/// Storage of orders and their items. An order's money is the ledger's: what the order knows
/// of it (its payment and its refunds) is a projection, synced through the [`OrderLedger`]
/// and written here by [`OrderRepo::update_order`].
///
/// Every write is one method here, run as one database transaction together with the
/// [`Effects`] it is given (its audit record and events, written only when the write happens). Reads that take a
/// `scope` see a partner's tenants' orders, a tenant's own, or (platform) all; an order out of
/// scope is absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OrderRepo: Send + Sync + 'static {
    /// The tenant if it is in `scope`; `None` otherwise.
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<OrderTenant>>;

    /// Stores a new order with its items (ids and `partner_id` as given are ignored) and its
    /// effects ([`Effects::created`] with the new id), and returns it as stored. MUST return
    /// `Conflict` when the tenant already has an order with this `order_no`, or the ledger
    /// already has a transaction numbered `order_no` (an order's number is its platform
    /// number).
    async fn insert_order(&self, order: Order, effects: Effects) -> Result<Order>;

    /// The order, with its items and refunds, if it exists and is in `scope`.
    async fn get_order(&self, scope: Party, id: Id) -> Result<Option<Order>>;

    /// One page of the orders in `scope` that match `query`, each with its items and
    /// refunds; newest (highest id) first unless sorted otherwise.
    async fn list_orders(&self, scope: Party, query: OrderQuery) -> Result<Page<Order>>;

    /// Writes what the order knows of its money — `status`, `paid_amount`,
    /// `refunded_amount`, `openid`, `payment` and `discrepancy` (and `updated_at`) — only if
    /// the stored ones still equal `read` (a conditional update), so racing writers cannot
    /// both move an order, nor an older view of the ledger overwrite a newer one. With it, its
    /// `refunds`: each one not stored yet is added, and a stored one changes only while it is
    /// stored processing or in the status it has now (a final status is never taken back or
    /// replaced); none is removed. Items are not written. Returns whether it wrote (`effects`
    /// are written with it); on `false` the caller reads again.
    async fn update_order(&self, order: Order, read: OrderState, effects: Effects) -> Result<bool>;

    /// Up to `limit` orders still `pending` or `paying` whose `expires_at` is at or before
    /// `now` and that have no discrepancy, the longest expired first.
    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Order>>;
}
