//! Orders: what a tenant sells, how it was paid, and what was refunded.
use crate::lifecycle::{OrderStatus, RefundStatus};
use atrium_kernel::{Id, ListQuery, Money, Timestamp};
use serde::{Deserialize, Serialize};

/// What the scope check and the audit trail need of an order's tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderTenant {
    pub id: Id,
    pub partner_id: Option<Id>,
}

/// How an order was (or is being) paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum PaymentMethod {
    /// The pay platform's JSAPI payment, in the tenant's mini-program.
    WechatJsapi,
    /// Outside the platform (bank transfer, cash), recorded by a user.
    Offline,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderItem {
    pub name: String,
    pub quantity: i64,
    pub unit_price: Money,
}

/// How an order was paid, once a payment was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    pub method: PaymentMethod,
    /// The platform's order number (the order's `order_no`); none for an offline payment.
    pub out_trade_no: Option<String>,
    /// The platform's transaction id, once paid.
    pub transaction_id: Option<String>,
    pub paid_at: Option<Timestamp>,
    /// What identifies an offline payment (a bank reference, a receipt number).
    pub reference: Option<String>,
    /// The user who recorded an offline payment.
    pub paid_by: Option<Id>,
}

/// A refund of (part of) a paid order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refund {
    /// 0 until stored.
    pub id: Id,
    pub order_id: Id,
    pub tenant_id: Id,
    /// Our number for the platform: one number, one refund. Unique per tenant.
    pub out_refund_no: String,
    pub amount: Money,
    pub status: RefundStatus,
    pub reason: Option<String>,
    /// When the refund reached a final status.
    pub settled_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// An order with its items, payment and refunds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// 0 until stored.
    pub id: Id,
    /// Unique per tenant, 6–32 of `[0-9A-Za-z_-]`: also the platform's `out_trade_no`.
    pub order_no: String,
    pub tenant_id: Id,
    /// The tenant's partner, as stored with the tenant.
    pub partner_id: Option<Id>,
    pub subject: String,
    /// What the payer is asked to pay.
    pub amount: Money,
    /// What was paid: the amount once paid, zero before.
    pub paid_amount: Money,
    /// The sum of the succeeded refunds.
    pub refunded_amount: Money,
    pub status: OrderStatus,
    pub items: Vec<OrderItem>,
    /// The payer's openid in the tenant's mini-program, when known.
    pub openid: Option<String>,
    pub payment: Option<Payment>,
    /// Oldest first.
    pub refunds: Vec<Refund>,
    /// After this an unpaid order is closed.
    pub expires_at: Timestamp,
    pub created_by: Option<Id>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Order {
    /// The number the pay platform knows the order by.
    pub fn out_trade_no(&self) -> &str {
        self.payment.as_ref().and_then(|p| p.out_trade_no.as_deref()).unwrap_or(&self.order_no)
    }

    /// What processing and succeeded refunds leave to refund.
    pub fn refundable(&self) -> Money {
        let held = self.refunds.iter().filter(|r| r.status.holds_amount()).map(|r| r.amount);
        match Money::checked_sum(held) {
            Ok(held) => self.paid_amount.checked_sub(held).unwrap_or(Money::ZERO).max(Money::ZERO),
            Err(_) => Money::ZERO,
        }
    }

    /// The order once the platform reported it paid (`transaction_id` at `paid_at`): the whole
    /// amount paid, the payment's facts filled in. `None` when it was already paid.
    pub fn paid_online(&self, transaction_id: String, paid_at: Timestamp, now: Timestamp) -> Option<Order> {
        let status = self.status.on_payment()?;
        let payment = Payment {
            method: PaymentMethod::WechatJsapi,
            out_trade_no: Some(self.out_trade_no().to_owned()),
            transaction_id: Some(transaction_id),
            paid_at: Some(paid_at),
            reference: None,
            paid_by: None,
        };
        Some(Order { status, paid_amount: self.amount, payment: Some(payment), updated_at: now, ..self.clone() })
    }

    /// The order once its platform payment closed unpaid (or it expired). `None` when it is
    /// not waiting for a payment.
    pub fn closed(&self, now: Timestamp) -> Option<Order> {
        let status = self.status.on_close()?;
        Some(Order { status, updated_at: now, ..self.clone() })
    }
}

/// What [`crate::OrderRepo::reserve_refund`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundReservation {
    /// The refund was stored with the status it was given; the order is as stored after it
    /// (a succeeded refund already counts in its `refunded_amount` and status).
    Reserved { order: Box<Order>, refund: Refund },
    /// A refund with this `out_refund_no` already exists for the tenant: here it is, unchanged.
    Existing(Refund),
    /// Processing and succeeded refunds plus this one would exceed what was paid;
    /// `refundable` is what is left.
    ExceedsPaid { refundable: Money },
    /// The order already has the maximum number of refunds (of any status).
    TooManyRefunds,
}

/// A list of orders, as handed to the repository. Every filter narrows the caller's scope.
#[derive(Debug, Clone, Default)]
pub struct OrderQuery {
    /// Paging, sort and `keyword` (a case-insensitive substring of `order_no` or `subject`).
    pub list: ListQuery<OrderSort>,
    pub status: Option<OrderStatus>,
    pub tenant_id: Option<Id>,
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
    Id,
    CreatedAt,
    Amount,
    ExpiresAt,
}
