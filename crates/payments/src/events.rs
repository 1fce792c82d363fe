//! The events the ledger publishes for our users' systems (written with the change they
//! report, through [`Effects`](crate::Effects)). The orders domain reports an order's
//! payment and refunds (`order.paid`, `order.refunded`); the ledger, what only it knows.

/// A payment, or one of its shares or returns, holds a discrepancy with the pay platform's
/// record for a person to resolve: the money taken twice, another amount. About the payment.
pub const PAYMENT_DISCREPANCY: &str = "payment.discrepancy";
