//! The orders domain's ports: storage ([`OrderRepo`]) and the money ledger orders pay and
//! refund through ([`OrderLedger`]), in the orders' own words; the server implements the
//! latter over the payments ledger, so this crate depends on no other domain.
use crate::model::*;
use async_trait::async_trait;
use atrium_kernel::{AuditRecord, Id, Money, Page, Party, PayParams, PaymentMethod, Result, Timestamp};

/// Storage of orders and their items. An order's refunds are the ledger's: the store reads
/// them from the ledger's records of the order, and never writes them.
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
    /// `Conflict` when the tenant already has an order with this `order_no`, or the ledger
    /// already has a transaction numbered `order_no` (an order's number is its platform
    /// number).
    async fn insert_order(&self, order: Order, audit: AuditRecord) -> Result<Order>;

    /// The order, with its items and refunds, if it exists and is in `scope`.
    async fn get_order(&self, scope: Party, id: Id) -> Result<Option<Order>>;

    /// One page of the orders in `scope` that match `query`, each with its items and refunds;
    /// newest (highest id) first unless sorted otherwise.
    async fn list_orders(&self, scope: Party, query: OrderQuery) -> Result<Page<Order>>;

    /// Writes what the order knows of its money — `status`, `paid_amount`,
    /// `refunded_amount`, `openid`, `payment` and `discrepancy` (and `updated_at`) — only if
    /// the stored ones still equal `read` (a conditional update), so racing writers cannot
    /// both move an order, nor an older view of the ledger overwrite a newer one. Items and
    /// refunds are not written. Returns whether it wrote (the audit record is written with
    /// it); on `false` the caller reads again.
    async fn update_order(&self, order: Order, read: OrderState, audit: AuditRecord) -> Result<bool>;

    /// Up to `limit` orders still `pending` or `paying` whose `expires_at` is at or before
    /// `now` and that have no discrepancy, the longest expired first.
    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Order>>;
}

/// An order's platform payment to start, or to resume.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// The order to pay.
    pub order_id: Id,
    /// The order's number, which is the platform's `out_trade_no`: the same number again is
    /// the same platform order.
    pub out_trade_no: String,
    /// Shown to the payer: the order's subject.
    pub description: String,
    /// What the payer is asked to pay: the order's amount.
    pub amount: Money,
    /// The payer's openid in the tenant's mini-program.
    pub openid: String,
    /// The platform order cannot be paid after this (the order's own expiry).
    pub expires_at: Timestamp,
    /// The order's audit record of the request (who started the payment): written by the
    /// ledger together with the new transaction, not when an existing one is resumed.
    pub audit: AuditRecord,
}

/// A payment made outside the platform, to record.
#[derive(Debug, Clone, PartialEq)]
pub struct OfflineCharge {
    /// The order paid.
    pub order_id: Id,
    /// The order's number, kept with the ledger's transaction.
    pub order_no: String,
    /// What was paid for: the order's subject.
    pub description: String,
    /// What was paid: the order's amount.
    pub amount: Money,
    /// What identifies the payment (a bank reference, a receipt number).
    pub reference: String,
    /// The user who records it.
    pub recorded_by: Id,
    /// The order's audit record of the request, written with the payment.
    pub audit: AuditRecord,
}

/// A refund of an order's payment, to request.
#[derive(Debug, Clone, PartialEq)]
pub struct RefundCharge {
    /// The order whose payment to refund.
    pub order_id: Id,
    /// Fixed before the request (derived from the caller's `Idempotency-Key` when it sent
    /// one), so a retry asks for the same refund, never a second one.
    pub out_refund_no: String,
    /// How much to refund; the ledger refuses more than is left of what was paid.
    pub amount: Money,
    /// The reason, shown to the payer.
    pub reason: Option<String>,
    /// The user asking; `None` when the system does.
    pub requested_by: Option<Id>,
    /// The order's audit record of the request (who asked for the refund), written with the
    /// refund's reservation, not when an existing refund is asked about again.
    pub audit: AuditRecord,
}

/// Where the ledger's payment of an order stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentState {
    /// Started and not paid (yet).
    Unpaid,
    /// Paid in full.
    Paid {
        /// The platform's transaction id; `None` for an offline payment.
        transaction_id: Option<String>,
        /// When it was paid.
        paid_at: Timestamp,
    },
    /// Closed unpaid: it can no longer be paid.
    Closed,
    /// The platform reported a payment that does not match the order (another amount or
    /// currency): kept, never taken as paid, for a person to resolve.
    Discrepancy(String),
}

/// The ledger's payment of an order: its live transaction, or the last one when none is live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerPayment {
    /// On the pay platform (`wechat_jsapi`) or offline.
    pub method: PaymentMethod,
    /// The platform's number; `None` for an offline payment.
    pub out_trade_no: Option<String>,
    /// The amount of the payment.
    pub amount: Money,
    /// The payer's openid, for a platform payment.
    pub openid: Option<String>,
    /// Where the payment stands.
    pub state: PaymentState,
    /// An offline payment's reference (a bank reference, a receipt number).
    pub reference: Option<String>,
    /// The user who recorded an offline payment.
    pub paid_by: Option<Id>,
}

/// What the ledger holds of an order's money.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrderMoney {
    /// `None` before a payment was started.
    pub payment: Option<LedgerPayment>,
    /// The refunds of the order's payment, oldest first.
    pub refunds: Vec<Refund>,
}

/// The money ledger, acting on one tenant's merchant account per call. It owns every
/// movement of an order's money — what is refundable, the refund window and the count limit
/// are decided there — and tells orders of each change through a durable event (the server
/// runs [`crate::OrderService::sync`] for it). Errors are kernel errors: a rule of the
/// ledger's → `Conflict`, a platform refusal → `Blocked`/`Invalid` naming `pay_platform`,
/// unavailability → `Upstream`.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OrderLedger: Send + Sync + 'static {
    /// Starts (or resumes) the order's platform payment and returns what the payer needs.
    /// The same order again MUST answer for the same platform order, not a second one; an
    /// order paid offline, or being paid by another payer, is a `Conflict`.
    async fn charge(&self, tenant_id: Id, charge: Charge) -> Result<PayParams>;
    /// Records an offline payment. An open platform payment of the order is closed first
    /// (`Conflict` when it was paid meanwhile, or cannot be closed now); an order already paid
    /// is a `Conflict`. Exactly one of two racing payments of one order wins.
    async fn charge_offline(&self, tenant_id: Id, charge: OfflineCharge) -> Result<()>;
    /// Refunds (part of) the order's payment and returns the refund as it stands (usually
    /// `processing`; an offline payment's refund `succeeded` at once). The same
    /// `out_refund_no` again is the same refund (asked of the platform again while it may
    /// not have reached it). `Conflict` when the order's payment is not paid, the refund
    /// window has passed, the count limit is reached or more than what is left is asked.
    async fn refund(&self, tenant_id: Id, refund: RefundCharge) -> Result<Refund>;
    /// Closes the order's open platform payment, if any: `Ok` once nothing can pay it any
    /// more (or it was paid meanwhile — [`OrderLedger::money`] then says so); `Upstream` when
    /// the platform cannot be asked now.
    async fn close(&self, tenant_id: Id, order_id: Id) -> Result<()>;
    /// What the ledger holds of the order's money now.
    async fn money(&self, tenant_id: Id, order_id: Id) -> Result<OrderMoney>;
}
