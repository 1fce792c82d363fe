//! The orders domain's settings.

/// How orders behave. The server may tune it from configuration. What may be refunded, and
/// how often and for how long, is the ledger's to decide (its own settings), not the orders'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderSettings {
    /// How long an order can be paid when the caller sets no `expires_in`.
    pub default_expiry: chrono::Duration,
    /// The shortest `expires_in` a caller may set.
    pub min_expiry: chrono::Duration,
    /// The longest `expires_in` a caller may set.
    pub max_expiry: chrono::Duration,
    /// At most this many lines per order.
    pub max_items: usize,
    /// The largest quantity of one line.
    pub max_quantity: i64,
}

impl Default for OrderSettings {
    fn default() -> Self {
        OrderSettings {
            default_expiry: chrono::Duration::minutes(30),
            min_expiry: chrono::Duration::seconds(60),
            max_expiry: chrono::Duration::days(7),
            max_items: 100,
            max_quantity: 1_000_000,
        }
    }
}
