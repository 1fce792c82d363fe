//! Orders: what a tenant sells, how it was paid, and what was refunded.
use crate::lifecycle::OrderStatus;
use atrium_kernel::pay::OrderRefund;
use atrium_kernel::{Id, ListQuery, Money, Timestamp};

pub use atrium_kernel::PaymentMethod;

/// What the scope check and the audit trail need of an order's tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderTenant {
    /// The tenant's id.
    pub id: Id,
    /// The tenant's partner, if it has one.
    pub partner_id: Option<Id>,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderItem {
    /// What is sold, as the payer sees it.
    pub name: String,
    /// How many, at least 1.
    pub quantity: i64,
    /// The price of one.
    pub unit_price: Money,
}

/// How an order was paid, once a payment was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    /// On the pay platform (`wechat_jsapi`) or offline.
    pub method: PaymentMethod,
    /// The platform's order number (the order's `order_no`); none for an offline payment.
    pub out_trade_no: Option<String>,
    /// The platform's transaction id, once paid.
    pub transaction_id: Option<String>,
    /// When the payment was confirmed; `None` while it is started and not paid.
    pub paid_at: Option<Timestamp>,
    /// What identifies an offline payment (a bank reference, a receipt number).
    pub reference: Option<String>,
    /// The user who recorded an offline payment.
    pub paid_by: Option<Id>,
    /// Placed for a sub-merchant, so shared: only then does reading the order ask the ledger
    /// for its shares.
    pub sub_merchant: bool,
}

/// An order with its items and what it knows of its money: its payment and its refunds, as
/// it last synced them from the ledger (which holds the money itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// 0 until stored.
    pub id: Id,
    /// Unique per tenant, 6–32 of `[0-9A-Za-z_-]`: also the platform's `out_trade_no`.
    pub order_no: String,
    /// The tenant selling.
    pub tenant_id: Id,
    /// The tenant's partner, as stored with the tenant.
    pub partner_id: Option<Id>,
    /// What the order is for, shown to the payer.
    pub subject: String,
    /// What the payer is asked to pay.
    pub amount: Money,
    /// What was paid: the amount once paid, zero before.
    pub paid_amount: Money,
    /// The sum of the succeeded refunds.
    pub refunded_amount: Money,
    /// Where the order is in its lifecycle.
    pub status: OrderStatus,
    /// Its lines, in the order given.
    pub items: Vec<OrderItem>,
    /// The payer's openid in the tenant's mini-program, when known.
    pub openid: Option<String>,
    /// How it is paid; `None` before a payment was started.
    pub payment: Option<Payment>,
    /// What the platform reported that does not match the order (another amount or
    /// currency): the order is not paid until a person resolves it.
    pub discrepancy: Option<String>,
    /// The ledger's refunds of it as last synced, oldest first. A refund's status only moves
    /// from processing to a final one: an older view of the ledger never takes one back.
    pub refunds: Vec<OrderRefund>,
    /// After this an unpaid order is closed.
    pub expires_at: Timestamp,
    /// The user who created it; `None` when the system did.
    pub created_by: Option<Id>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Order {
    /// The number the pay platform knows the order by.
    pub fn out_trade_no(&self) -> &str {
        self.payment.as_ref().and_then(|p| p.out_trade_no.as_deref()).unwrap_or(&self.order_no)
    }

    /// What the order knows of its money, for a conditional write.
    pub fn state(&self) -> OrderState {
        OrderState {
            status: self.status,
            paid_amount: self.paid_amount,
            refunded_amount: self.refunded_amount,
            discrepancy: self.discrepancy.is_some(),
        }
    }
}

/// What an order knows of its money, as read before a write: a write applies only when the
/// stored order still says the same (see [`crate::OrderRepo::update_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderState {
    /// The status read.
    pub status: OrderStatus,
    /// The paid amount read.
    pub paid_amount: Money,
    /// The refunded amount read.
    pub refunded_amount: Money,
    /// Whether a discrepancy was recorded.
    pub discrepancy: bool,
}

/// A list of orders, as handed to the repository. Every filter narrows the caller's scope.
#[derive(Debug, Clone, Default)]
pub struct OrderQuery {
    /// Paging, sort and `keyword` (a case-insensitive substring of `order_no` or `subject`).
    pub list: ListQuery<OrderSort>,
    /// Only orders in this status.
    pub status: Option<OrderStatus>,
    /// Only this tenant's orders.
    pub tenant_id: Option<Id>,
    /// Only orders of this partner's tenants.
    pub partner_id: Option<Id>,
    /// Created at or after.
    pub created_from: Option<Timestamp>,
    /// Created before.
    pub created_to: Option<Timestamp>,
}

/// What a list of orders may be sorted by (`sort=amount`, `sort=-created_at`); default `-id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum OrderSort {
    /// By id, which is creation order (the default, newest first).
    Id,
    /// By creation time.
    CreatedAt,
    /// By the amount to pay.
    Amount,
    /// By when an unpaid order expires.
    ExpiresAt,
}
