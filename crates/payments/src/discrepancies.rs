//! Discrepancies between our books and the pay platform's, and how a person resolves one.
//!
//! A discrepancy is recorded where it is found — a payment the platform reports at another
//! amount or currency, a closed payment the platform reports paid while its order was paid
//! another way, a share or a return the platform holds differently — with the write that
//! marks the transaction or share ([`Effects::discrepancy`](crate::Effects)). The mark blocks
//! what would build on it (the payment is not taken as paid, nothing of it is refunded, the
//! share is not retried) until a person resolves it with one of two actions:
//!
//! - [`ResolveAction::RefundExcess`]: give the payer back what the platform took beyond our
//!   record. A payment reported above its amount is taken at the platform's amount and the
//!   difference refunded; a payment taken twice is refunded whole. Not for a share: its
//!   difference lies with its receiver, not with the payer.
//! - [`ResolveAction::Accept`]: our books take the platform's record. A payment becomes paid
//!   at the amount the platform reports (in CNY only); a share or a return takes the status
//!   and amount the platform holds ([`adopt_share`], [`adopt_return`]); a payment taken twice
//!   keeps its closed state (the person settled it outside Atrium).
//!
//! Either is asked of the platform afresh when resolving, never from the stored text.
use crate::events;
use crate::model::{PlatformTransaction, Refund, Transaction};
use crate::sharing::{PlatformReturn, PlatformShareOrder, ReceiverResult, ReturnResult, ReturnStatus, Share, ShareReturn, ShareStatus};
use atrium_kernel::{Event, Id, Money, PageRequest, Timestamp};
use serde::{Deserialize, Serialize};

/// What kind of difference a discrepancy is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum DiscrepancyKind {
    /// The platform reported a payment of another amount or currency: not taken as paid.
    Amount,
    /// The platform reported a closed payment paid, while its order was paid another way:
    /// the money was taken twice.
    PaidTwice,
    /// The platform's record of a share request differs from the share.
    Share,
    /// The platform's record of a return from a share differs from ours.
    Return,
}

/// Whether a discrepancy still waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum DiscrepancyStatus {
    /// Recorded; the payment or share is held until it is resolved.
    Open,
    /// Resolved by a person (`action`, `note`, `resolved_by`, `resolved_at`).
    Resolved,
}

/// How a person resolves a discrepancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ResolveAction {
    /// Refund the payer what the platform took beyond our record.
    RefundExcess,
    /// Take the platform's record into our books.
    Accept,
}

/// A discrepancy as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discrepancy {
    /// 0 until stored.
    pub id: Id,
    /// The tenant whose payment it is.
    pub tenant_id: Id,
    /// What differs.
    pub kind: DiscrepancyKind,
    /// Our id of the transaction.
    pub payment_id: Id,
    /// Our number of the transaction.
    pub out_trade_no: String,
    /// The share it concerns (kinds `share` and `return`).
    pub share_id: Option<Id>,
    /// The return it concerns (kind `return`).
    pub return_id: Option<Id>,
    /// What each side holds, as found.
    pub description: String,
    /// Open or resolved.
    pub status: DiscrepancyStatus,
    /// How it was resolved.
    pub action: Option<ResolveAction>,
    /// Why, in the words of whoever resolved it.
    pub note: Option<String>,
    /// The user who resolved it.
    pub resolved_by: Option<Id>,
    /// The refund that gave back the excess (`refund_excess` of a payment).
    pub out_refund_no: Option<String>,
    /// When it was found.
    pub created_at: Timestamp,
    /// When it was resolved.
    pub resolved_at: Option<Timestamp>,
}

/// A discrepancy found, written with the write that marks its transaction or share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDiscrepancy {
    /// The tenant whose payment it is.
    pub tenant_id: Id,
    /// What differs.
    pub kind: DiscrepancyKind,
    /// Our id of the transaction.
    pub payment_id: Id,
    /// Our number of the transaction.
    pub out_trade_no: String,
    /// The share it concerns.
    pub share_id: Option<Id>,
    /// The return it concerns.
    pub return_id: Option<Id>,
    /// What each side holds.
    pub description: String,
    /// When it was found.
    pub at: Timestamp,
}

impl NewDiscrepancy {
    /// The discrepancy of `tx`, marked with `why`: a closed payment reported paid is money
    /// taken twice, any other an amount or currency that does not match.
    pub fn of_payment(tx: &Transaction, why: &str) -> NewDiscrepancy {
        NewDiscrepancy {
            tenant_id: tx.tenant_id,
            kind: if tx.trade_state.is_closed() { DiscrepancyKind::PaidTwice } else { DiscrepancyKind::Amount },
            payment_id: tx.id,
            out_trade_no: tx.out_trade_no.clone(),
            share_id: None,
            return_id: None,
            description: why.to_owned(),
            at: tx.updated_at,
        }
    }

    /// `payment.discrepancy`: the event of this discrepancy, found on a payment (of order
    /// `order_id`, if any) or on one of its shares or returns. About the payment.
    pub fn event(&self, order_id: Option<Id>) -> Event {
        let data = serde_json::json!({
            "kind": self.kind,
            "out_trade_no": self.out_trade_no,
            "order_id": order_id,
            "share_id": self.share_id,
            "return_id": self.return_id,
            "description": self.description,
        });
        Event::new(events::PAYMENT_DISCREPANCY, self.at, Some(self.tenant_id), Some(self.payment_id), data)
    }

    /// The discrepancy of `share` (or of its return `ret`), found at `at`.
    pub fn of_share(share: &Share, ret: Option<&ShareReturn>, why: &str, at: Timestamp) -> NewDiscrepancy {
        NewDiscrepancy {
            tenant_id: share.tenant_id,
            kind: if ret.is_some() { DiscrepancyKind::Return } else { DiscrepancyKind::Share },
            payment_id: share.payment_id,
            out_trade_no: share.out_trade_no.clone(),
            share_id: Some(share.id),
            return_id: ret.map(|r| r.id),
            description: why.to_owned(),
            at,
        }
    }
}

/// What `GET /miniprogram/payment/discrepancies` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiscrepancyQuery {
    /// The page.
    pub page: PageRequest,
    /// Only this tenant's.
    pub tenant_id: Option<Id>,
    /// Only open or only resolved ones.
    pub status: Option<DiscrepancyStatus>,
    /// Only of this kind.
    pub kind: Option<DiscrepancyKind>,
    /// Only of this transaction.
    pub out_trade_no: Option<String>,
}

/// One resolution, written by [`PaymentRepo::resolve_discrepancy`](crate::PaymentRepo) in one
/// database transaction: the discrepancy resolved, and what the action changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// The discrepancy as resolved (status, action, note, by, at, refund number).
    pub discrepancy: Discrepancy,
    /// The transaction as the action leaves it (its mark cleared), with the trade state it
    /// was read in.
    pub payment: Option<(Transaction, crate::TradeState)>,
    /// The refund of the excess, stored `processing`.
    pub refund: Option<Refund>,
    /// The share as read and as the action leaves it (its mark cleared).
    pub share: Option<(Share, Share)>,
    /// The return as the action leaves it, with the status it was read in.
    pub ret: Option<(ShareReturn, ReturnStatus)>,
    /// Jobs and the audit record written with it.
    pub effects: crate::Effects,
}

/// Why a payment discrepancy cannot be resolved as asked, from what the platform reports of
/// the payment now.
///
/// A payment's discrepancy is resolved only while the platform holds it paid, in CNY; a
/// payment reported above its amount may have the excess refunded, any other cannot.
pub fn payment_refusal(tx: &Transaction, kind: DiscrepancyKind, action: ResolveAction, report: &PlatformTransaction) -> Option<String> {
    let state: &str = report.trade_state.into();
    if !report.trade_state.is_paid() {
        return Some(format!(
            "the pay platform reports {} as {state}, not paid: compare with the merchant platform before resolving",
            tx.out_trade_no
        ));
    }
    let Some(total) = report.amount else {
        return Some(format!("the pay platform does not say how much was paid for {}; try again later", tx.out_trade_no));
    };
    if let Some(currency) = report.currency.as_deref().filter(|c| *c != crate::CURRENCY) {
        return Some(format!(
            "the pay platform reports {} paid in {currency}: the books are kept in {}; refund it on the merchant platform",
            tx.out_trade_no,
            crate::CURRENCY
        ));
    }
    match (kind, action) {
        (DiscrepancyKind::Amount, ResolveAction::RefundExcess) if total <= tx.amount => Some(format!(
            "nothing was paid in excess: the pay platform reports {} fen paid for {} fen; accept it instead",
            total.fen(),
            tx.amount.fen()
        )),
        _ => None,
    }
}

/// `tx` as paid at the amount the platform reports in `report` (which
/// [`payment_refusal`] let through), its mark cleared.
pub fn paid_as_reported(tx: &Transaction, report: &PlatformTransaction, now: Timestamp) -> Transaction {
    let mut paid = Transaction { amount: report.amount.unwrap_or(tx.amount), discrepancy: None, updated_at: now, ..tx.clone() };
    if let Some(next) = paid.trade_state.advance(report.trade_state) {
        paid.trade_state = next;
    }
    paid.transaction_id = paid.transaction_id.or_else(|| report.transaction_id.clone());
    paid.payer_total = paid.payer_total.or(report.payer_total);
    paid.success_time = paid.success_time.or(report.success_time).or(Some(now));
    paid
}

/// What of `paid` (as the platform reports it) goes back to the payer by `refund_excess`:
/// all of a payment taken twice, else what lies beyond `asked`.
pub fn excess(kind: DiscrepancyKind, asked: Money, paid: Money) -> Money {
    match kind {
        DiscrepancyKind::PaidTwice => paid,
        _ => paid.checked_sub(asked).unwrap_or(Money::ZERO).max(Money::ZERO),
    }
}

/// `share` taking the platform's record of the request it was last sent in (`order`; `None`:
/// the platform does not know it) at `now`, its mark cleared:
/// - paid: `succeeded` at what the platform paid (what was kept back for refunds stays kept
///   back), or `returned` when returns took all of that;
/// - closed: `closed` with the platform's reason, to be retried;
/// - still pending there: `processing`, for the sharing job to settle;
/// - unknown to the platform, or no line for the receiver: `closed`, to be retried.
pub fn adopt_share(share: &Share, order: Option<&PlatformShareOrder>, now: Timestamp) -> Share {
    let mut adopted = Share { discrepancy: None, updated_at: now, ..share.clone() };
    let Some(line) = order.and_then(|o| o.line_of(&share.receiver)) else {
        adopted.status = ShareStatus::Closed;
        adopted.fail_reason = Some(format!("the pay platform has no record of this share in {}", share.out_order_no));
        adopted.settled_at = None;
        return adopted;
    };
    match line.result {
        ReceiverResult::Success => {
            adopted.amount = line.amount.checked_add(share.withheld).unwrap_or(line.amount);
            adopted.fail_reason = None;
            adopted.settled_at = share.settled_at.or(line.finish_time).or(Some(now));
            adopted.status = if adopted.returned >= adopted.to_pay() { ShareStatus::Returned } else { ShareStatus::Succeeded };
        }
        ReceiverResult::Closed => {
            adopted.status = ShareStatus::Closed;
            adopted.fail_reason = line.fail_reason.clone().or_else(|| Some("closed by the pay platform".into()));
            adopted.settled_at = None;
        }
        ReceiverResult::Pending => {
            adopted.status = ShareStatus::Processing;
            adopted.settled_at = None;
        }
    }
    adopted
}

/// `ret` taking the platform's record of it (`answer`; `None`: the platform does not know it)
/// at `now`, and `share` as that leaves it (its `returned` moved by the difference, its mark
/// cleared). `Err` says why it cannot be taken now: the platform is still carrying it out, or
/// reports more than the part the return was for.
pub fn adopt_return(
    share: &Share,
    ret: &ShareReturn,
    answer: Option<&PlatformReturn>,
    now: Timestamp,
) -> Result<(Share, ShareReturn), String> {
    let back_before = if ret.status == ReturnStatus::Succeeded { ret.amount } else { Money::ZERO };
    let mut adopted = ShareReturn { updated_at: now, ..ret.clone() };
    match answer {
        Some(a) if a.result == ReturnResult::Processing => {
            return Err(format!("the pay platform is still carrying out return {}; resolve it once it finished", ret.out_return_no));
        }
        Some(a) if a.result == ReturnResult::Success => {
            let amount = a.amount.unwrap_or(ret.amount);
            if amount > ret.part {
                return Err(format!(
                    "the pay platform reports {} fen returned by {}, more than the {} fen it was for: settle it on the merchant platform",
                    amount.fen(),
                    ret.out_return_no,
                    ret.part.fen()
                ));
            }
            adopted.amount = amount;
            adopted.status = ReturnStatus::Succeeded;
            adopted.fail_reason = None;
            adopted.return_id = a.return_id.clone().or(adopted.return_id);
            adopted.settled_at = ret.settled_at.or(a.finish_time).or(Some(now));
        }
        Some(a) => {
            adopted.status = ReturnStatus::Failed;
            adopted.fail_reason = a.fail_reason.clone().or_else(|| Some("failed on the pay platform".into()));
            adopted.settled_at = ret.settled_at.or(Some(now));
        }
        None => {
            adopted.status = ReturnStatus::Failed;
            adopted.fail_reason = Some(format!("the pay platform has no record of return {}", ret.out_return_no));
            adopted.settled_at = ret.settled_at.or(Some(now));
        }
    }
    let back_after = if adopted.status == ReturnStatus::Succeeded { adopted.amount } else { Money::ZERO };
    let returned =
        share.returned.checked_sub(back_before).and_then(|r| r.checked_add(back_after)).unwrap_or(share.returned).max(Money::ZERO);
    let mut moved = Share { returned, discrepancy: None, updated_at: now, ..share.clone() };
    if matches!(share.status, ShareStatus::Succeeded | ShareStatus::Returned) {
        moved.status = if returned >= moved.to_pay() { ShareStatus::Returned } else { ShareStatus::Succeeded };
    }
    Ok((moved, adopted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::TradeState;
    use crate::sharing::{PlatformShareLine, Receiver, ReceiverType, ShareOrderState, ShareRole};
    use chrono::TimeZone;

    fn now() -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).single().expect("valid")
    }

    fn tx(fen: i64) -> Transaction {
        let mut tx = Transaction::unpaid(7, "T0001".into(), "Tea".into(), Money::from_fen(fen), "o-payer".into(), now(), now());
        tx.id = 3;
        tx.discrepancy = Some("reported otherwise".into());
        tx
    }

    fn report(fen: i64, currency: &str, state: TradeState) -> PlatformTransaction {
        PlatformTransaction {
            out_trade_no: "T0001".into(),
            trade_state: state,
            transaction_id: Some("4200".into()),
            amount: Some(Money::from_fen(fen)),
            currency: Some(currency.into()),
            payer_total: Some(Money::from_fen(fen)),
            success_time: Some(now()),
            sub_mchid: None,
        }
    }

    #[test]
    fn an_excess_is_refunded_only_of_a_payment_reported_above_its_amount_in_cny() {
        let (amount, paid_twice) = (DiscrepancyKind::Amount, DiscrepancyKind::PaidTwice);
        let (refund, accept) = (ResolveAction::RefundExcess, ResolveAction::Accept);
        assert_eq!(payment_refusal(&tx(1_000), amount, refund, &report(1_200, "CNY", TradeState::Success)), None);
        assert!(
            payment_refusal(&tx(1_000), amount, refund, &report(1_000, "CNY", TradeState::Success)).is_some_and(|w| w.contains("nothing"))
        );
        assert!(payment_refusal(&tx(1_000), amount, refund, &report(900, "CNY", TradeState::Success)).is_some());
        assert_eq!(payment_refusal(&tx(1_000), amount, accept, &report(900, "CNY", TradeState::Success)), None);
        assert!(payment_refusal(&tx(1_000), amount, accept, &report(1_000, "USD", TradeState::Success)).is_some_and(|w| w.contains("USD")));
        assert!(
            payment_refusal(&tx(1_000), amount, accept, &report(1_000, "CNY", TradeState::NotPay)).is_some_and(|w| w.contains("NOTPAY"))
        );
        assert_eq!(payment_refusal(&tx(1_000), paid_twice, refund, &report(1_000, "CNY", TradeState::Success)), None);
        assert_eq!(excess(amount, Money::from_fen(1_000), Money::from_fen(1_200)), Money::from_fen(200));
        assert_eq!(excess(amount, Money::from_fen(1_000), Money::from_fen(900)), Money::ZERO);
        assert_eq!(excess(paid_twice, Money::from_fen(1_000), Money::from_fen(1_000)), Money::from_fen(1_000));
    }

    #[test]
    fn an_accepted_payment_is_paid_at_what_the_platform_reports_and_holds_no_discrepancy() {
        let paid = paid_as_reported(&tx(1_000), &report(900, "CNY", TradeState::Success), now());
        assert_eq!((paid.amount, paid.trade_state, paid.discrepancy.as_deref()), (Money::from_fen(900), TradeState::Success, None));
        assert!(paid.is_paid());
        assert_eq!((paid.transaction_id.as_deref(), paid.success_time), (Some("4200"), Some(now())));
    }

    fn share(status: ShareStatus, fen: i64, returned: i64, withheld: i64) -> Share {
        Share {
            id: 5,
            tenant_id: 7,
            payment_id: 3,
            out_trade_no: "T0001".into(),
            partner_id: Some(2),
            role: ShareRole::Partner,
            receiver: Receiver { kind: ReceiverType::MerchantId, account: "1900000109".into(), name: None },
            amount: Money::from_fen(fen),
            returned: Money::from_fen(returned),
            withheld: Money::from_fen(withheld),
            status,
            fail_reason: None,
            out_order_no: "PS3".into(),
            retries: 0,
            plan_version: Some(1),
            created_at: now(),
            settled_at: Some(now()),
            updated_at: now(),
            discrepancy: Some("differs".into()),
        }
    }

    fn order(result: ReceiverResult, fen: i64) -> PlatformShareOrder {
        PlatformShareOrder {
            out_order_no: "PS3".into(),
            order_id: Some("3008".into()),
            state: ShareOrderState::Finished,
            lines: vec![PlatformShareLine {
                kind: ReceiverType::MerchantId,
                account: "1900000109".into(),
                amount: Money::from_fen(fen),
                result,
                fail_reason: (result == ReceiverResult::Closed).then(|| "ACCOUNT_ABNORMAL".into()),
                finish_time: Some(now()),
            }],
        }
    }

    #[test]
    fn a_share_takes_the_platforms_record_of_its_request() {
        let paid = adopt_share(&share(ShareStatus::Succeeded, 250, 0, 0), Some(&order(ReceiverResult::Success, 200)), now());
        assert_eq!((paid.amount, paid.status, paid.discrepancy.as_deref()), (Money::from_fen(200), ShareStatus::Succeeded, None));
        // What was kept back for refunds stays kept back: the platform paid the rest.
        let kept = adopt_share(&share(ShareStatus::Succeeded, 250, 0, 50), Some(&order(ReceiverResult::Success, 150)), now());
        assert_eq!((kept.amount, kept.to_pay()), (Money::from_fen(200), Money::from_fen(150)));
        // Returns took all the platform paid: nothing is held.
        let gone = adopt_share(&share(ShareStatus::Succeeded, 250, 100, 0), Some(&order(ReceiverResult::Success, 100)), now());
        assert_eq!(gone.status, ShareStatus::Returned);
        let closed = adopt_share(&share(ShareStatus::Succeeded, 250, 0, 0), Some(&order(ReceiverResult::Closed, 250)), now());
        assert_eq!(
            (closed.status, closed.fail_reason.as_deref(), closed.settled_at),
            (ShareStatus::Closed, Some("ACCOUNT_ABNORMAL"), None)
        );
        let pending = adopt_share(&share(ShareStatus::Closed, 250, 0, 0), Some(&order(ReceiverResult::Pending, 250)), now());
        assert_eq!(pending.status, ShareStatus::Processing);
        let unknown = adopt_share(&share(ShareStatus::Succeeded, 250, 0, 0), None, now());
        assert_eq!(unknown.status, ShareStatus::Closed, "to be retried");
        assert!(unknown.fail_reason.is_some_and(|w| w.contains("no record")));
    }

    fn ret(status: ReturnStatus, fen: i64) -> ShareReturn {
        ShareReturn {
            id: 9,
            tenant_id: 7,
            payment_id: 3,
            share_id: 5,
            out_refund_no: "R1".into(),
            part: Money::from_fen(100),
            amount: Money::from_fen(fen),
            status,
            out_return_no: "PR5-1".into(),
            return_id: None,
            fail_reason: None,
            created_at: now(),
            settled_at: Some(now()),
            updated_at: now(),
        }
    }

    fn answer(result: ReturnResult, fen: i64) -> PlatformReturn {
        PlatformReturn {
            out_return_no: "PR5-1".into(),
            return_id: Some("3009".into()),
            result,
            fail_reason: (result == ReturnResult::Failed).then(|| "BALANCE_NOT_ENOUGH".into()),
            amount: Some(Money::from_fen(fen)),
            finish_time: Some(now()),
        }
    }

    #[test]
    fn a_return_takes_the_platforms_record_and_moves_what_its_share_got_back() {
        // Ours failed, the platform's took 100 back: the share holds 100 less.
        let (s, r) = adopt_return(
            &share(ShareStatus::Succeeded, 250, 0, 0),
            &ret(ReturnStatus::Failed, 100),
            Some(&answer(ReturnResult::Success, 100)),
            now(),
        )
        .unwrap();
        assert_eq!(
            (s.returned, s.status, r.status, s.discrepancy.as_deref()),
            (Money::from_fen(100), ShareStatus::Succeeded, ReturnStatus::Succeeded, None)
        );
        // Ours succeeded, the platform has none: the receiver kept it.
        let (s, r) = adopt_return(&share(ShareStatus::Returned, 100, 100, 0), &ret(ReturnStatus::Succeeded, 100), None, now()).unwrap();
        assert_eq!((s.returned, s.status, r.status), (Money::ZERO, ShareStatus::Succeeded, ReturnStatus::Failed));
        assert!(r.fail_reason.is_some_and(|w| w.contains("no record")));
        // Another amount: the platform's.
        let (s, r) = adopt_return(
            &share(ShareStatus::Succeeded, 250, 100, 0),
            &ret(ReturnStatus::Succeeded, 100),
            Some(&answer(ReturnResult::Success, 60)),
            now(),
        )
        .unwrap();
        assert_eq!((s.returned, r.amount), (Money::from_fen(60), Money::from_fen(60)));
        // Still being carried out, or more than the part: not now.
        assert!(
            adopt_return(
                &share(ShareStatus::Succeeded, 250, 0, 0),
                &ret(ReturnStatus::Failed, 100),
                Some(&answer(ReturnResult::Processing, 100)),
                now()
            )
            .is_err()
        );
        assert!(
            adopt_return(
                &share(ShareStatus::Succeeded, 250, 0, 0),
                &ret(ReturnStatus::Failed, 100),
                Some(&answer(ReturnResult::Success, 101)),
                now()
            )
            .is_err()
        );
    }
}
