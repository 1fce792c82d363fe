//! The lifecycles of a payment transaction and of a refund. Both only ever move forward: the
//! pay platform's notifications arrive late, twice and out of order, and a query may race a
//! notification, so a report that would move a record backwards is acknowledged and ignored.
//!
//! Transaction (`trade_state`, the pay platform's names):
//! `NOTPAY` → `USERPAYING` → `PAYERROR` → `CLOSED` | `REVOKED` → `SUCCESS` → `REFUND`.
//! Each report is applied only when it lies further along that line than the stored state.
//! A payment beats a close (the money was taken), `REFUND` is still paid (the platform reports
//! it after any refund), and nothing unpaid follows a payment.
//!
//! Refund: `processing` → `succeeded` | `failed` | `closed` (the kernel's `RefundStatus`); the
//! last three are final.
use serde::{Deserialize, Serialize};

/// A transaction's state as the pay platform names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "UPPERCASE")]
#[strum(serialize_all = "UPPERCASE")]
pub enum TradeState {
    /// Ordered, not paid yet.
    NotPay,
    /// The payer is entering a password or similar.
    UserPaying,
    /// The payment failed (bank refusal, …); the order may still be closed or paid.
    PayError,
    /// Closed by us or by expiry.
    Closed,
    /// Revoked (code payments only; kept for completeness).
    Revoked,
    /// Paid.
    Success,
    /// Paid, and at least one refund was made.
    Refund,
}

impl TradeState {
    /// Whether the payer's money was taken: `SUCCESS`, or `REFUND` after a refund.
    pub fn is_paid(self) -> bool {
        matches!(self, TradeState::Success | TradeState::Refund)
    }

    /// Whether nothing but a payment can follow (closed or revoked).
    pub fn is_closed(self) -> bool {
        matches!(self, TradeState::Closed | TradeState::Revoked)
    }

    /// How far along the lifecycle the state lies; equal ranks do not replace each other.
    fn rank(self) -> u8 {
        match self {
            TradeState::NotPay => 0,
            TradeState::UserPaying => 1,
            TradeState::PayError => 2,
            TradeState::Closed | TradeState::Revoked => 3,
            TradeState::Success => 4,
            TradeState::Refund => 5,
        }
    }

    /// The state once the platform has reported `reported`: `Some` when it moves the
    /// transaction forward, `None` when the report is stale or repeats the current state.
    pub fn advance(self, reported: TradeState) -> Option<TradeState> {
        (reported.rank() > self.rank()).then_some(reported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atrium_kernel::StrEnum;

    const ALL: [TradeState; 7] = [
        TradeState::NotPay,
        TradeState::UserPaying,
        TradeState::PayError,
        TradeState::Closed,
        TradeState::Revoked,
        TradeState::Success,
        TradeState::Refund,
    ];

    #[test]
    fn trade_states_use_the_platform_names_on_the_wire_and_at_rest() {
        let names: Vec<&str> = ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["NOTPAY", "USERPAYING", "PAYERROR", "CLOSED", "REVOKED", "SUCCESS", "REFUND"]);
        for s in ALL {
            assert_eq!(TradeState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).ok(), Some(serde_json::Value::from(s.as_str())));
        }
        assert_eq!(TradeState::parse("success"), None);
    }

    #[test]
    fn a_late_unpaid_report_after_a_payment_is_ignored() {
        for late in [TradeState::NotPay, TradeState::UserPaying, TradeState::PayError, TradeState::Closed, TradeState::Revoked] {
            assert_eq!(TradeState::Success.advance(late), None, "{late:?}");
            assert_eq!(TradeState::Refund.advance(late), None, "{late:?}");
        }
        assert_eq!(TradeState::Refund.advance(TradeState::Success), None);
        assert_eq!(TradeState::Success.advance(TradeState::Success), None);
    }

    #[test]
    fn a_payment_moves_any_unpaid_state_forward_and_a_refund_follows_it() {
        for from in [TradeState::NotPay, TradeState::UserPaying, TradeState::PayError, TradeState::Closed, TradeState::Revoked] {
            assert_eq!(from.advance(TradeState::Success), Some(TradeState::Success), "{from:?}");
            assert!(!from.is_paid());
        }
        assert_eq!(TradeState::Success.advance(TradeState::Refund), Some(TradeState::Refund));
        assert!(TradeState::Refund.is_paid() && TradeState::Success.is_paid());
    }

    #[test]
    fn unpaid_states_only_move_towards_closed() {
        assert_eq!(TradeState::NotPay.advance(TradeState::UserPaying), Some(TradeState::UserPaying));
        assert_eq!(TradeState::UserPaying.advance(TradeState::NotPay), None);
        assert_eq!(TradeState::NotPay.advance(TradeState::Closed), Some(TradeState::Closed));
        assert_eq!(TradeState::Closed.advance(TradeState::NotPay), None);
        assert_eq!(TradeState::Closed.advance(TradeState::Revoked), None);
        assert!(TradeState::Closed.is_closed() && TradeState::Revoked.is_closed() && !TradeState::PayError.is_closed());
    }
}
