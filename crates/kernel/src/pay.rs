//! The one contract between the money ledger (the payments domain) and the domains that pay
//! through it (orders): how something was paid ([`PaymentMethod`]), a refund's status
//! ([`RefundStatus`]), what a payer's mini-program needs to pay ([`PayParams`]), and the port
//! itself, [`OrderLedger`], with what crosses it — the requests ([`Charge`],
//! [`OfflineCharge`], [`RefundCharge`]) and what the ledger holds of an order's money
//! ([`OrderMoney`]: its [`LedgerPayment`] and [`OrderRefund`]s), and how a shared payment is
//! split ([`ShareView`], by [`OrderShare`]).
//!
//! Orders call the port and the payments ledger implements it, so neither domain depends on
//! the other and the contract is written once, here.
use crate::{AuditRecord, Id, Money, Result, Timestamp};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// How a payment was (or is being) made.
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

/// A refund's status: `processing` → `succeeded` | `failed` | `closed`; the last three are
/// final. A processing or succeeded refund holds its amount; a failed or closed one gives it
/// back to what is left to refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RefundStatus {
    /// Accepted by the platform (or about to be sent), not settled yet.
    Processing,
    /// The money went back to the payer (an offline refund is succeeded at once).
    Succeeded,
    /// The platform could not refund (its `ABNORMAL`), or refused the request.
    Failed,
    /// The platform closed the refund without paying it.
    Closed,
}

impl RefundStatus {
    /// Whether the refund's amount is spoken for: a processing or succeeded refund counts
    /// against what is left to refund; a failed or closed one gives its amount back.
    pub fn holds_amount(self) -> bool {
        matches!(self, RefundStatus::Processing | RefundStatus::Succeeded)
    }

    /// Whether the platform has settled the refund (succeeded, failed or closed) and it will
    /// not change again.
    pub fn is_final(self) -> bool {
        self != RefundStatus::Processing
    }

    /// When a refund of this status settled, from what its record keeps: a succeeded one when
    /// the money went back (`succeeded_at`, or its last change when the platform gave no
    /// time), a failed or closed one at its last change; a processing one has not.
    pub fn settled_at(self, succeeded_at: Option<Timestamp>, updated_at: Timestamp) -> Option<Timestamp> {
        match self {
            RefundStatus::Processing => None,
            RefundStatus::Succeeded => Some(succeeded_at.unwrap_or(updated_at)),
            RefundStatus::Failed | RefundStatus::Closed => Some(updated_at),
        }
    }

    /// The status once the platform has reported `reported`: only a processing refund
    /// settles, and only once.
    pub fn advance(self, reported: RefundStatus) -> Option<RefundStatus> {
        (self == RefundStatus::Processing && reported != RefundStatus::Processing).then_some(reported)
    }
}

/// What the mini-program passes to `wx.requestPayment`, signed with the merchant key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PayParams {
    /// The mini-program's app id (`appId`).
    #[serde(rename = "appId")]
    pub app_id: String,
    /// Unix seconds, as a string.
    #[serde(rename = "timeStamp")]
    pub time_stamp: String,
    /// A random string the signature covers (`nonceStr`).
    #[serde(rename = "nonceStr")]
    pub nonce_str: String,
    /// `prepay_id=…`
    pub package: String,
    /// Always `RSA`.
    #[serde(rename = "signType")]
    pub sign_type: String,
    /// The signature over app id, time stamp, nonce and package (`paySign`), base64.
    #[serde(rename = "paySign")]
    pub pay_sign: String,
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

/// A payment of an order made outside the platform, to record.
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
    /// The user asking, kept with the refund; `None` when the system does.
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
    /// Placed for a sub-merchant (the platform's service provider collecting for the tenant):
    /// only such a payment is shared, so only its order asks for [`OrderLedger::shares`].
    pub sub_merchant: bool,
}

/// A refund of (part of) an order's payment, as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRefund {
    /// The ledger's id of the refund.
    pub id: Id,
    /// The order refunded.
    pub order_id: Id,
    /// The order's tenant.
    pub tenant_id: Id,
    /// Our number for the platform: one number, one refund. Unique per tenant.
    pub out_refund_no: String,
    /// How much is refunded.
    pub amount: Money,
    /// Processing until the platform settles it, then succeeded, failed or closed.
    pub status: RefundStatus,
    /// The reason given, shown to the payer.
    pub reason: Option<String>,
    /// The user who asked for it; `None` when the system did.
    pub requested_by: Option<Id>,
    /// Why it failed, when the ledger knows: a share of the payment that could not be taken
    /// back from its receiver first (the platform's `fail_reason`).
    pub fail_reason: Option<String>,
    /// When it reached a final status (see [`RefundStatus::settled_at`]).
    pub settled_at: Option<Timestamp>,
    /// When it was requested.
    pub created_at: Timestamp,
    /// When its status last changed.
    pub updated_at: Timestamp,
}

// --- Shares of a payment (service-provider mode) -------------------------------------------

/// Who receives a share: a merchant by its merchant id, or a person by the openid they have in
/// the provider's app (`sp_appid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ReceiverType {
    /// A merchant, by its merchant id; its registered name is required.
    MerchantId,
    /// A person, by their openid in the provider's app; a name is optional.
    PersonalOpenid,
}

/// Who a share is for: the platform, or the tenant's partner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ShareRole {
    /// The platform's share (`platform_bp`), to the provider's own merchant account.
    Platform,
    /// The partner's commission (`commission_bp`), to its plan's receiver.
    Partner,
}

/// Where one share stands.
///
/// `pending` (computed, not yet requested, or to be requested again after a retry) →
/// `processing` (requested; the platform is carrying it out) → `succeeded` | `closed` (the
/// platform could not pay the receiver: `fail_reason` says why; a retry makes it `pending`
/// again under a new `out_order_no`). `returned`: all of it given back before refunds (or,
/// for a closed share, kept back for refunds made while it was closed), so the receiver
/// holds nothing of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ShareStatus {
    /// Computed; not requested yet (or requested again after a retry).
    Pending,
    /// Requested; the platform has not finished it.
    Processing,
    /// The receiver has the money.
    Succeeded,
    /// The platform could not pay the receiver (`fail_reason`); kept until retried.
    Closed,
    /// All of it given back to the sub-merchant before refunds; the receiver holds nothing.
    Returned,
}

/// A share's receiver as shown: the account masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShareReceiverView {
    /// `MERCHANT_ID` or `PERSONAL_OPENID`.
    #[serde(rename = "type")]
    pub kind: ReceiverType,
    /// The account, its middle masked.
    pub account: String,
}

/// One receiver's share of one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShareView {
    /// The share's id.
    pub id: Id,
    /// The transaction shared.
    pub out_trade_no: String,
    /// The tenant whose payment it is.
    pub tenant_id: Id,
    /// The tenant's partner when the share was computed.
    pub partner_id: Option<Id>,
    /// `platform` or `partner`.
    pub role: ShareRole,
    /// Who receives it.
    pub receiver: ShareReceiverView,
    /// Fen: what the share was computed as.
    pub amount: Money,
    /// Fen the receiver gave back before refunds of the payment.
    pub returned: Money,
    /// Fen kept back from the share for refunds made while it was closed (a retry pays
    /// `amount − withheld`).
    pub withheld: Money,
    /// `pending`, `processing`, `succeeded`, `closed` or `returned` (all of it given back).
    pub status: ShareStatus,
    /// Why the pay platform closed it; null unless `closed` (or closed before a retry).
    pub fail_reason: Option<String>,
    /// The share request it was last sent in.
    pub out_order_no: String,
    /// The partner's share plan version it was computed under; null without a plan.
    pub plan_version: Option<i64>,
    /// When it was computed.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it succeeded (or was returned); null before.
    pub settled_at: Option<chrono::DateTime<chrono::Utc>>,
    /// What the pay platform's record of it says that ours does not (found by the daily
    /// reconciliation): while set, the payment is not refunded and the share not retried.
    /// Null normally.
    pub discrepancy: Option<String>,
}

/// One receiver's share of an order's payment, as the ledger holds it (a sub-merchant's
/// payment in service-provider mode is shared with the platform and the tenant's partner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderShare {
    /// The order whose payment it is a share of.
    pub order_id: Id,
    /// The share as every view shows it.
    pub share: ShareView,
}

/// What the ledger holds of an order's money.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrderMoney {
    /// `None` before a payment was started.
    pub payment: Option<LedgerPayment>,
    /// The refunds of the order's payment, oldest first.
    pub refunds: Vec<OrderRefund>,
}

/// The money ledger as the domains paying through it see it, acting on one tenant's merchant
/// account per call. It owns every movement of an order's money — what is refundable, the
/// refund window and the count limit are decided there — and tells the order of each change
/// through a durable event (the server runs the orders' `sync` for it). Errors are kernel
/// errors: a rule of the ledger's → `Conflict`, a platform refusal → `Blocked`/`Invalid`
/// naming `pay_platform`, unavailability → `Upstream`.
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
    async fn refund(&self, tenant_id: Id, refund: RefundCharge) -> Result<OrderRefund>;
    /// Closes the order's open platform payment, if any: `Ok` once nothing can pay it any
    /// more (or it was paid meanwhile — [`OrderLedger::money`] then says so); `Upstream` when
    /// the platform cannot be asked now.
    async fn close(&self, tenant_id: Id, order_id: Id) -> Result<()>;
    /// What the ledger holds of the order's money now.
    async fn money(&self, tenant_id: Id, order_id: Id) -> Result<OrderMoney>;
    /// The refunds of several orders, each named `(tenant_id, order_id)` (a page of a list,
    /// which may span tenants): every refund of those orders, oldest first, and none of any
    /// other order or tenant.
    async fn refunds(&self, orders: Vec<(Id, Id)>) -> Result<Vec<OrderRefund>>;
    /// The shares of several orders' payments, named as for [`OrderLedger::refunds`]: each
    /// receiver's share of a sub-merchant's payment, by order and then id; none for a payment
    /// not shared (a direct merchant's, an offline one, one not shared yet).
    async fn shares(&self, orders: Vec<(Id, Id)>) -> Result<Vec<OrderShare>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StrEnum;

    #[test]
    fn a_refund_settles_once_and_failed_or_closed_ones_free_their_amount() {
        use RefundStatus as R;
        for to in [R::Succeeded, R::Failed, R::Closed] {
            assert_eq!(R::Processing.advance(to), Some(to));
            assert!(to.is_final());
            for again in [R::Processing, R::Succeeded, R::Failed, R::Closed] {
                assert_eq!(to.advance(again), None, "{to:?} -> {again:?}");
            }
        }
        assert_eq!(R::Processing.advance(R::Processing), None);
        assert!(R::Processing.holds_amount() && R::Succeeded.holds_amount());
        assert!(!R::Failed.holds_amount() && !R::Closed.holds_amount());
        assert_eq!(R::Succeeded.as_str(), "succeeded");
        let (at, later) = (chrono::DateTime::UNIX_EPOCH, chrono::DateTime::UNIX_EPOCH + chrono::Duration::hours(1));
        assert_eq!(R::Processing.settled_at(Some(at), later), None, "a processing refund has not settled");
        assert_eq!(R::Succeeded.settled_at(Some(at), later), Some(at), "when the money went back");
        assert_eq!(R::Succeeded.settled_at(None, later), Some(later), "no time from the platform: its last change");
        assert_eq!(R::Failed.settled_at(Some(at), later), Some(later));
        assert_eq!(R::Closed.settled_at(None, later), Some(later));
        assert_eq!(PaymentMethod::WechatJsapi.as_str(), "wechat_jsapi");
    }

    #[test]
    fn pay_params_use_the_mini_program_field_names() {
        let p = PayParams {
            app_id: "wx1".into(),
            time_stamp: "1700000000".into(),
            nonce_str: "n".into(),
            package: "prepay_id=p".into(),
            sign_type: "RSA".into(),
            pay_sign: "s".into(),
        };
        let v = serde_json::to_value(p).unwrap_or_default();
        for k in ["appId", "timeStamp", "nonceStr", "package", "signType", "paySign"] {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
    }
}
