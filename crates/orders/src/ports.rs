//! The orders domain's ports: storage ([`OrderRepo`]) and the payments it asks for
//! ([`OrderPayments`]), in the orders' own words; the server implements the latter over the
//! mini-program payments service.
use crate::api::PayParams;
use crate::lifecycle::{OrderStatus, RefundStatus};
use crate::model::*;
use async_trait::async_trait;
use atrium_kernel::{AuditRecord, Id, Money, Page, Party, Result, Timestamp};

/// Storage of orders, their items and refunds.
///
/// Every write is one method here, run as one database transaction together with the
/// [`AuditRecord`] it is given (written only when the write happens). Reads that take a
/// `scope` see a partner's tenants' orders, a tenant's own, or (platform) all; an order out of
/// scope is absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OrderRepo: Send + Sync + 'static {
    /// The tenant if it is in `scope`; `None` otherwise.
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<OrderTenant>>;

    /// Stores a new order with its items (ids and `partner_id` as given are ignored) and its
    /// audit record (`target_id` set to the new id), and returns it as stored. MUST return
    /// `Conflict` when the tenant already has an order with this `order_no`.
    async fn insert_order(&self, order: Order, audit: AuditRecord) -> Result<Order>;

    async fn get_order(&self, scope: Party, id: Id) -> Result<Option<Order>>;

    /// One page of the orders in `scope` that match `query`, each with its items and refunds;
    /// newest (highest id) first unless sorted otherwise.
    async fn list_orders(&self, scope: Party, query: OrderQuery) -> Result<Page<Order>>;

    /// Writes `order`'s status, paid amount, openid and payment (and `updated_at`) only if the
    /// stored status still equals `read_status` — a conditional update (`… WHERE status =
    /// read_status`), so racing writers cannot both move an order. Items, refunds and the
    /// refunded amount are not written. Returns whether it wrote (the audit record is written
    /// with it); on `false` the caller reads again.
    async fn update_order(&self, order: Order, read_status: OrderStatus, audit: AuditRecord) -> Result<bool>;

    /// The tenant's order whose platform order number is `out_trade_no`.
    async fn order_by_out_trade_no(&self, tenant_id: Id, out_trade_no: String) -> Result<Option<Order>>;

    /// The tenant's refund numbered `out_refund_no`.
    async fn refund_by_out_refund_no(&self, tenant_id: Id, out_refund_no: String) -> Result<Option<Refund>>;

    /// Reserves a refund of the order `refund.order_id`, atomically, in one write transaction
    /// that serialises with every other write of that order (a row lock: `SELECT … FOR
    /// UPDATE` on PostgreSQL; SQLite's `BEGIN IMMEDIATE` holds the one write lock):
    /// 1. a refund numbered `refund.out_refund_no` exists for the tenant → `Existing(it)`,
    ///    nothing written;
    /// 2. no such order of `refund.tenant_id` → `NotFound`; the order is not paid, or is
    ///    refunded in full (status) → `Conflict`;
    /// 3. the order already has `max_refunds` refunds (any status) → `TooManyRefunds`;
    /// 4. the amounts of its `processing` and `succeeded` refunds plus `refund.amount` exceed
    ///    the stored `paid_amount` → `ExceedsPaid { refundable: paid_amount − those }`;
    /// 5. otherwise stores `refund` with the status it carries (`processing`, or `succeeded`
    ///    for a refund settled at once), updates the order's `refunded_amount` (the sum of its
    ///    succeeded refunds), status ([`OrderStatus::with_refunded`]) and `updated_at` (the
    ///    refund's), writes `audit` → `Reserved { order, refund }` as stored.
    ///
    /// So concurrent refunds of one order can never together exceed what was paid.
    async fn reserve_refund(&self, refund: Refund, max_refunds: u32, audit: AuditRecord) -> Result<RefundReservation>;

    /// Writes `refund`'s status, `settled_at` and `updated_at` only if the stored status still
    /// equals `read_status`; when it wrote, updates its order's `refunded_amount`, status
    /// ([`OrderStatus::with_refunded`]) and `updated_at` in the same transaction, and writes
    /// `audit`. Returns whether it wrote. A refund leaving `processing` for `failed` or
    /// `closed` gives its amount back to what [`OrderRepo::reserve_refund`] allows.
    async fn update_refund(&self, refund: Refund, read_status: RefundStatus, audit: AuditRecord) -> Result<bool>;

    /// Up to `limit` orders still `pending` or `paying` whose `expires_at` is at or before
    /// `now`, the longest expired first.
    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Order>>;
}

/// A platform payment to prepare for an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepayRequest {
    /// The order's number: the same number again is the same platform order.
    pub out_trade_no: String,
    /// Shown to the payer: the order's subject.
    pub description: String,
    pub amount: Money,
    pub openid: String,
    /// The platform order cannot be paid after this (the order's own expiry).
    pub expires_at: Timestamp,
}

/// A prepared platform payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepay {
    pub prepay_id: String,
    pub pay_params: PayParams,
}

/// What the pay platform knows of an order's payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentState {
    Paid {
        transaction_id: String,
        paid_at: Timestamp,
    },
    /// Not paid (yet): ordered, or the payer is paying.
    Unpaid,
    /// Closed unpaid; it can no longer be paid.
    Closed,
    /// The payment attempt failed; the platform order may still be paid or closed.
    Failed,
}

/// A refund to request from the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundOrder {
    pub out_trade_no: String,
    pub out_refund_no: String,
    pub amount: Money,
    /// The order's paid amount.
    pub total: Money,
    pub reason: Option<String>,
}

/// What the pay platform knows of a refund.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundState {
    Processing,
    Succeeded { at: Timestamp },
    Failed,
    Closed,
}

impl RefundState {
    /// The refund status this state reports.
    pub fn status(&self) -> RefundStatus {
        match self {
            RefundState::Processing => RefundStatus::Processing,
            RefundState::Succeeded { .. } => RefundStatus::Succeeded,
            RefundState::Failed => RefundStatus::Failed,
            RefundState::Closed => RefundStatus::Closed,
        }
    }
}

/// The payments orders ask for, acting on one tenant's merchant account per call. Errors are
/// kernel errors: the implementation maps the platform's (a refusal because of the payment's
/// state → `Conflict`, other refusals → `Invalid`, unavailability → `Upstream`).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OrderPayments: Send + Sync + 'static {
    /// Places (or finds again) the platform order `out_trade_no` and returns what the payer
    /// needs. The same `out_trade_no` again MUST answer the same prepay, not a second order.
    async fn prepay(&self, tenant_id: Id, request: PrepayRequest) -> Result<Prepay>;
    /// The payment as the platform knows it now.
    async fn query(&self, tenant_id: Id, out_trade_no: String) -> Result<PaymentState>;
    /// Closes the platform order. MUST answer `Paid` (not an error) when it was paid
    /// meanwhile, and `Closed` when it is (or already was) closed or never reached the
    /// platform.
    async fn close(&self, tenant_id: Id, out_trade_no: String) -> Result<PaymentState>;
    /// Requests a refund; an accepted refund is usually still `Processing`.
    async fn refund(&self, tenant_id: Id, refund: RefundOrder) -> Result<RefundState>;
    /// The refund as the platform knows it now.
    async fn query_refund(&self, tenant_id: Id, out_refund_no: String) -> Result<RefundState>;
}
