//! The lifecycles of an order and of its refunds.
//!
//! Order: `pending` →pay→ `paying` →(the payment is confirmed)→ `paid` →refund→
//! `partially_refunded` | `refunded`; `pending` and `paying` →(expiry)→ `closed`. An offline
//! payment (bank transfer, cash) takes `pending` (or `paying`, once the platform's order is
//! closed) straight to `paid`. A caller's request for any other step is a 409.
//!
//! What the pay platform reports moves an order forward only, and a payment beats everything
//! unpaid: money the platform took is recorded even when the order was closed meanwhile (it
//! can then be refunded). Reports that would move an order backwards are ignored.
//!
//! Once paid, an order's status follows its succeeded refunds: none → `paid`, some →
//! `partially_refunded`, all of `paid_amount` → `refunded`.
//!
//! Refunds are the ledger's (the kernel's `RefundStatus`): `processing` → `succeeded` |
//! `failed` | `closed`.
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Money};
use serde::{Deserialize, Serialize};

/// Where an order is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OrderStatus {
    /// Created, not paid yet.
    Pending,
    /// A platform payment was started (the payer has what `wx.requestPayment` needs).
    Paying,
    /// Paid in full, nothing refunded.
    Paid,
    /// Paid, and part of it refunded.
    PartiallyRefunded,
    /// Paid, and all of it refunded.
    Refunded,
    /// Expired or closed unpaid; final unless the platform reports a payment after all.
    Closed,
}

/// What a caller asks of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderAction {
    /// Start (or resume) a platform payment.
    PayOnline,
    /// Record a payment made outside the platform.
    PayOffline,
    /// Refund (part of) what was paid.
    Refund,
}

impl OrderStatus {
    /// Whether the order has been paid (whatever was refunded since).
    pub fn is_paid(self) -> bool {
        matches!(self, OrderStatus::Paid | OrderStatus::PartiallyRefunded | OrderStatus::Refunded)
    }

    /// Whether the order waits for a payment: the statuses expiry closes.
    pub fn is_unpaid(self) -> bool {
        matches!(self, OrderStatus::Pending | OrderStatus::Paying)
    }

    /// The status after a caller's `action`, or `Conflict` saying why it is not allowed now.
    ///
    /// ```
    /// use atrium_orders::{OrderAction, OrderStatus};
    ///
    /// // An offline payment takes a pending order straight to paid; a refund keeps it paid
    /// // (the refund's settlement moves the status, not the request).
    /// let paid = OrderStatus::Pending.after(OrderAction::PayOffline)?;
    /// assert_eq!(paid, OrderStatus::Paid);
    /// assert_eq!(paid.after(OrderAction::Refund)?, OrderStatus::Paid);
    /// // Paying a paid order again is a 409.
    /// assert!(paid.after(OrderAction::PayOnline).is_err());
    /// # Ok::<(), atrium_kernel::Error>(())
    /// ```
    pub fn after(self, action: OrderAction) -> Result<OrderStatus, Error> {
        use OrderAction as A;
        use OrderStatus as S;
        match (self, action) {
            (S::Pending | S::Paying, A::PayOnline) => Ok(S::Paying),
            (S::Pending | S::Paying, A::PayOffline) => Ok(S::Paid),
            (S::Paid | S::PartiallyRefunded, A::Refund) => Ok(self),
            (S::Paid | S::PartiallyRefunded | S::Refunded, A::PayOnline | A::PayOffline) => {
                Err(Error::conflict(Reason::State, format!("the order is already {}", self.as_str())))
            }
            (S::Closed, A::PayOnline | A::PayOffline) => Err(Error::conflict(Reason::State, "the order is closed; create a new one")),
            (S::Refunded, A::Refund) => Err(Error::conflict(Reason::State, "the order is refunded in full")),
            (S::Pending | S::Paying | S::Closed, A::Refund) => {
                Err(Error::conflict(Reason::State, format!("only a paid order can be refunded; this one is {}", self.as_str())))
            }
        }
    }

    /// The status once the platform reports the order paid: `Some(Paid)` from any unpaid or
    /// closed status, `None` for an order already paid (a repeated or late report).
    pub fn on_payment(self) -> Option<OrderStatus> {
        (!self.is_paid()).then_some(OrderStatus::Paid)
    }

    /// The status once the platform reports the order's payment closed: `Some(Closed)` for an
    /// order still waiting for its payment, `None` otherwise.
    pub fn on_close(self) -> Option<OrderStatus> {
        self.is_unpaid().then_some(OrderStatus::Closed)
    }

    /// The status of a paid order whose succeeded refunds add up to `refunded`; an order that
    /// was not paid keeps its status.
    pub fn with_refunded(self, paid: Money, refunded: Money) -> OrderStatus {
        if !self.is_paid() {
            self
        } else if refunded <= Money::ZERO {
            OrderStatus::Paid
        } else if refunded >= paid {
            OrderStatus::Refunded
        } else {
            OrderStatus::PartiallyRefunded
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OrderAction::*;
    use super::OrderStatus::*;
    use super::*;
    use strum::VariantArray;

    #[test]
    fn the_happy_path_runs_pending_paying_paid() {
        let s = Pending.after(PayOnline).unwrap();
        assert_eq!(s, Paying);
        assert_eq!(s.on_payment(), Some(Paid));
        assert_eq!(Paid.after(Refund).unwrap(), Paid, "the refund's settlement moves the status, not the request");
    }

    #[test]
    fn paying_again_while_paying_is_allowed_and_offline_payment_skips_paying() {
        assert_eq!(Paying.after(PayOnline).unwrap(), Paying);
        assert_eq!(Pending.after(PayOffline).unwrap(), Paid);
        assert_eq!(Paying.after(PayOffline).unwrap(), Paid);
    }

    #[test]
    fn every_other_step_a_caller_asks_for_is_a_conflict() {
        let allowed = [
            (Pending, PayOnline),
            (Paying, PayOnline),
            (Pending, PayOffline),
            (Paying, PayOffline),
            (Paid, Refund),
            (PartiallyRefunded, Refund),
        ];
        for &s in OrderStatus::VARIANTS {
            for a in [PayOnline, PayOffline, Refund] {
                let r = s.after(a);
                if allowed.contains(&(s, a)) {
                    assert!(r.is_ok(), "{s:?} {a:?}");
                } else {
                    assert!(matches!(r, Err(Error::Conflict(..))), "{s:?} {a:?}: {r:?}");
                }
            }
        }
    }

    #[test]
    fn a_payment_beats_everything_unpaid_and_is_recorded_once() {
        for s in [Pending, Paying, Closed] {
            assert_eq!(s.on_payment(), Some(Paid), "{s:?}");
        }
        for s in [Paid, PartiallyRefunded, Refunded] {
            assert_eq!(s.on_payment(), None, "{s:?}");
        }
    }

    #[test]
    fn only_an_unpaid_order_closes() {
        assert_eq!(Pending.on_close(), Some(Closed));
        assert_eq!(Paying.on_close(), Some(Closed));
        for s in [Paid, PartiallyRefunded, Refunded, Closed] {
            assert_eq!(s.on_close(), None, "{s:?}");
        }
    }

    #[test]
    fn a_paid_orders_status_follows_its_succeeded_refunds() {
        let paid = Money::from_fen(100);
        assert_eq!(Paid.with_refunded(paid, Money::ZERO), Paid);
        assert_eq!(Paid.with_refunded(paid, Money::from_fen(1)), PartiallyRefunded);
        assert_eq!(PartiallyRefunded.with_refunded(paid, Money::from_fen(100)), Refunded);
        assert_eq!(Refunded.with_refunded(paid, Money::from_fen(99)), PartiallyRefunded);
        assert_eq!(Pending.with_refunded(paid, Money::from_fen(5)), Pending);
    }

    #[test]
    fn statuses_use_their_snake_case_names_on_the_wire_and_at_rest() {
        for &s in OrderStatus::VARIANTS {
            assert_eq!(OrderStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).ok(), Some(serde_json::Value::from(s.as_str())));
        }
        assert_eq!(PartiallyRefunded.as_str(), "partially_refunded");
    }
}
