//! The events an order publishes for our users' systems, each written with the change it
//! reports ([`Effects`](atrium_kernel::Effects)): a shop's back office hears that an order was
//! paid, refunded or closed instead of asking. Each is about the order (`data.id`) and carries
//! what a receiver needs to act without a read: the amounts in fen and the order's status.
use crate::{Order, OrderStatus};
use atrium_kernel::{Event, RefundStatus, Timestamp};
use serde_json::json;

/// The order was paid in full, online or offline (`data.method`).
pub const ORDER_PAID: &str = "order.paid";
/// One refund of the order succeeded (each its own event, online or offline).
pub const ORDER_REFUNDED: &str = "order.refunded";
/// The order was closed unpaid (expired, or its payment closed).
pub const ORDER_CLOSED: &str = "order.closed";

/// The events of `after`, the order as a write leaves it, against `before`, as it was read:
/// `order.paid` when it became paid, `order.refunded` for each refund that succeeded since,
/// `order.closed` when it became closed. None when nothing of that changed.
pub fn of_change(before: &Order, after: &Order, at: Timestamp) -> Vec<Event> {
    let mut events = Vec::new();
    let event = |kind, data| Event::new(kind, at, Some(after.tenant_id), Some(after.id), data).owned_by_partner(after.partner_id);
    if after.status.is_paid() && !before.status.is_paid() {
        let payment = after.payment.as_ref();
        events.push(event(
            ORDER_PAID,
            json!({
                "order_no": after.order_no,
                "status": after.status,
                "amount": after.amount,
                "paid_amount": after.paid_amount,
                "method": payment.map(|p| p.method),
                "out_trade_no": payment.and_then(|p| p.out_trade_no.clone()),
                "transaction_id": payment.and_then(|p| p.transaction_id.clone()),
                "paid_at": payment.and_then(|p| p.paid_at),
            }),
        ));
    }
    let succeeded_before = |no: &str| before.refunds.iter().any(|r| r.out_refund_no == no && r.status == RefundStatus::Succeeded);
    for refund in after.refunds.iter().filter(|r| r.status == RefundStatus::Succeeded && !succeeded_before(&r.out_refund_no)) {
        events.push(event(
            ORDER_REFUNDED,
            json!({
                "order_no": after.order_no,
                "status": after.status,
                "out_refund_no": refund.out_refund_no,
                "amount": refund.amount,
                "refunded_amount": after.refunded_amount,
                "paid_amount": after.paid_amount,
                "reason": refund.reason,
                "settled_at": refund.settled_at,
            }),
        ));
    }
    if after.status == OrderStatus::Closed && before.status != OrderStatus::Closed {
        events.push(event(ORDER_CLOSED, json!({ "order_no": after.order_no, "status": after.status, "amount": after.amount })));
    }
    events
}
