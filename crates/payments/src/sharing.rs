//! Profit sharing (分账): who takes a share of a sub-merchant's payments and at what rate.
//!
//! The platform takes `platform_bp` of each payment of a tenant collecting as a sub-merchant;
//! the tenant's partner takes its commission by its share plan. Rates are basis points (1/100
//! of a percent) of the payment; both together may not exceed the sub-merchant's `max_ratio`
//! on the pay platform.
use crate::model::{ProviderConfig, Refund, RefundRefusal, SubMerchant};
pub use atrium_kernel::pay::{ReceiverType, ShareRole, ShareStatus};
use atrium_kernel::{Id, Money, Timestamp};
use std::collections::HashSet;

/// A profit-sharing receiver as the pay platform knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receiver {
    /// Merchant or person.
    pub kind: ReceiverType,
    /// The merchant id, or the openid.
    pub account: String,
    /// The merchant's registered name, or the person's real name.
    pub name: Option<String>,
}

impl Receiver {
    /// The account as views show it: its first and last quarter (at most four characters
    /// each) kept, the rest masked.
    pub fn masked_account(&self) -> String {
        let keep = (self.account.chars().count() / 4).min(4);
        atrium_kernel::mask_middle(&self.account, keep, keep)
    }
}

/// One version of a partner's share plan: what its tenants' sub-merchant payments are shared
/// at. A version is never changed once stored; setting a plan stores the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePlan {
    /// The partner paid by it.
    pub partner_id: Id,
    /// 1 for the partner's first plan, one more for each change.
    pub version: i64,
    /// The partner's commission, basis points; `None` follows the provider's
    /// `default_commission_bp`.
    pub commission_bp: Option<u32>,
    /// The platform's share of these tenants' payments, basis points; `None` follows the
    /// provider's `platform_bp`.
    pub platform_bp: Option<u32>,
    /// Where the partner's commission goes.
    pub receiver: Receiver,
    /// When this version was set.
    pub created_at: Timestamp,
}

/// The rates one payment is shared at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rates {
    /// The platform's share, basis points.
    pub platform_bp: u32,
    /// The partner's commission, basis points (0 without a plan: nobody to pay it to).
    pub commission_bp: u32,
}

impl Rates {
    /// The rates of a tenant whose partner has `plan` (`None`: no partner, or a partner without
    /// a plan) under `provider` (`None`: no provider account yet, every default 0).
    pub fn of(plan: Option<&SharePlan>, provider: Option<&ProviderConfig>) -> Rates {
        let (platform_default, commission_default) = provider.map_or((0, 0), |p| (p.platform_bp, p.default_commission_bp));
        match plan {
            None => Rates { platform_bp: platform_default, commission_bp: 0 },
            Some(plan) => Rates {
                platform_bp: plan.platform_bp.unwrap_or(platform_default),
                commission_bp: plan.commission_bp.unwrap_or(commission_default),
            },
        }
    }

    /// Both shares together, basis points (at most 20,000: no overflow).
    pub fn total(self) -> u32 {
        self.platform_bp + self.commission_bp
    }
}

/// A tenant collecting as a sub-merchant, with its partner's current share plan: what a
/// change of rates must be checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubMerchantTenant {
    /// The tenant.
    pub tenant_id: Id,
    /// Its partner, if it has one.
    pub partner_id: Option<Id>,
    /// The sub-merchant it collects as.
    pub sub: SubMerchant,
    /// Its partner's current share plan, if the partner has one.
    pub plan: Option<SharePlan>,
}

/// How a receiver is related to the sub-merchant, as the platform records it when the
/// receiver is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum Relation {
    /// The platform itself, as the sub-merchant's service provider.
    ServiceProvider,
    /// The partner that brought the tenant.
    Partner,
}

impl From<ShareRole> for Relation {
    /// How the receiver of a role is related to the sub-merchant.
    fn from(role: ShareRole) -> Relation {
        match role {
            ShareRole::Platform => Relation::ServiceProvider,
            ShareRole::Partner => Relation::Partner,
        }
    }
}

/// One receiver's share of one transaction: what is recorded before the platform is asked,
/// and what it reports since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// 0 until stored.
    pub id: Id,
    /// The tenant (sub-merchant) whose payment is shared.
    pub tenant_id: Id,
    /// Our id of the transaction shared.
    pub payment_id: Id,
    /// Our number of the transaction shared.
    pub out_trade_no: String,
    /// The tenant's partner when the share was computed.
    pub partner_id: Option<Id>,
    /// The platform's share or the partner's commission.
    pub role: ShareRole,
    /// Who receives it.
    pub receiver: Receiver,
    /// Fen: `floor(base × rate / 10,000)`, at least 1 (nothing is requested for 0).
    pub amount: Money,
    /// Fen given back so far by succeeded returns, before refunds.
    pub returned: Money,
    /// Fen kept back from a retried share for the refunds made while it was closed: a retry
    /// requests `amount − withheld`.
    pub withheld: Money,
    /// Where it stands.
    pub status: ShareStatus,
    /// Why the platform closed it (its `fail_reason`, or its refusal of the request).
    pub fail_reason: Option<String>,
    /// The share request (`out_order_no`) it was last sent in, fixed before the call: the
    /// first is the transaction's [`share_order_no`], a retry's that number with `-r1`, `-r2`….
    pub out_order_no: String,
    /// How many times it was retried.
    pub retries: i32,
    /// The version of the partner's share plan it was computed under; `None` without a plan.
    pub plan_version: Option<i64>,
    /// When it was computed.
    pub created_at: Timestamp,
    /// When it reached `succeeded` (or `returned`).
    pub settled_at: Option<Timestamp>,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// What the platform's record of it (or of a return from it) says that ours does not,
    /// found by the daily reconciliation: kept for a person to resolve. While a share of a
    /// payment holds one, the payment is not refunded and the share not retried. `None`
    /// normally.
    pub discrepancy: Option<String>,
}

impl Share {
    /// What a request of this share pays its receiver: its amount less what was kept back.
    pub fn to_pay(&self) -> Money {
        self.amount.checked_sub(self.withheld).unwrap_or(Money::ZERO).max(Money::ZERO)
    }

    /// This closed share to be requested again under `out_order_no` at `now`: what the
    /// refunds made while it was closed took of it (their parts in `returns`, counting only
    /// refunds in `refunds` that still hold their amount) is kept back, and a share left with
    /// nothing to pay is `returned` at once. Called with the transaction locked and no refund
    /// of it processing, so the parts are final.
    pub fn retried(&self, returns: &[ShareReturn], refunds: &[Refund], out_order_no: String, now: Timestamp) -> Share {
        let live = live_refunds(refunds);
        let mine: Vec<&ShareReturn> = returns.iter().filter(|r| r.share_id == self.id).collect();
        let withheld = owed(&mine, &live).checked_sub(back(&mine)).unwrap_or(Money::ZERO).max(Money::ZERO).min(self.amount);
        // The closed share's reason stays shown until the retry settles it.
        let retried = Share { withheld, out_order_no, retries: self.retries + 1, updated_at: now, ..self.clone() };
        if retried.to_pay().is_positive() {
            Share { status: ShareStatus::Pending, ..retried }
        } else {
            Share { status: ShareStatus::Returned, settled_at: Some(now), ..retried }
        }
    }
}

/// How one paid transaction is shared, fixed once when it is first shared: the base and rates,
/// and whether the rest was unfrozen for the tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharing {
    /// Our id of the transaction.
    pub payment_id: Id,
    /// The tenant.
    pub tenant_id: Id,
    /// What the shares were computed on: paid minus refunded when sharing began.
    pub base: Money,
    /// The rates used.
    pub rates: Rates,
    /// When the rest was unfrozen for the tenant (the last step); `None` before.
    pub unfrozen_at: Option<Timestamp>,
    /// When sharing began.
    pub created_at: Timestamp,
}

/// Where a return stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReturnStatus {
    /// To be asked of the platform, or asked and not finished.
    Processing,
    /// The money is back with the sub-merchant (or nothing had to be asked).
    Succeeded,
    /// The platform could not take it back (`fail_reason`); its refund is not sent.
    Failed,
}

/// One share's part of one refund of a shared transaction, taken back from the receiver before
/// the refund is sent (the platform's 分账回退). Stored with the refund's reservation, under a
/// number fixed before the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareReturn {
    /// 0 until stored.
    pub id: Id,
    /// The tenant (sub-merchant).
    pub tenant_id: Id,
    /// Our id of the transaction.
    pub payment_id: Id,
    /// The share it takes from.
    pub share_id: Id,
    /// The refund it is for.
    pub out_refund_no: String,
    /// What the refund takes of the share: `floor(share × refund / base)`, or all that is left
    /// of it for the refund that brings the refunded total to the base.
    pub part: Money,
    /// What is asked back of the receiver: the part, less what earlier returns brought back
    /// beyond what their refunds took (a refund that failed after its returns). 0 asks
    /// nothing, and a closed share's part is never asked: its money never left.
    pub amount: Money,
    /// Where it stands.
    pub status: ReturnStatus,
    /// Our number of the return ([`return_no`]).
    pub out_return_no: String,
    /// The platform's number of it, once known.
    pub return_id: Option<String>,
    /// Why the platform did not take it back.
    pub fail_reason: Option<String>,
    /// When it was stored.
    pub created_at: Timestamp,
    /// When it finished.
    pub settled_at: Option<Timestamp>,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// The number of the `n`-th return (1, 2, …) taken from share `share_id`: fixed before the
/// call, unique per sub-merchant since our ids are.
pub fn return_no(share_id: Id, n: usize) -> String {
    format!("PR{share_id}-{n}")
}

/// The refunds that hold their amount (processing or succeeded), by number.
fn live_refunds(refunds: &[Refund]) -> HashSet<&str> {
    refunds.iter().filter(|r| r.status.holds_amount()).map(|r| r.out_refund_no.as_str()).collect()
}

/// What the live refunds took of a share: the parts of its returns for them.
fn owed(returns: &[&ShareReturn], live: &HashSet<&str>) -> Money {
    sum(returns.iter().filter(|r| live.contains(r.out_refund_no.as_str())).map(|r| r.part))
}

/// What a share's receiver gave back or is giving back: its returns that did not fail.
fn back(returns: &[&ShareReturn]) -> Money {
    sum(returns.iter().filter(|r| r.status != ReturnStatus::Failed).map(|r| r.amount))
}

fn sum(amounts: impl Iterator<Item = Money>) -> Money {
    Money::checked_sum(amounts).unwrap_or(Money::MAX_INPUT)
}

/// The returns a refund of `wanted.amount` needs before it is sent, from the shares of a
/// transaction of `paid` fen shared as `sharing`, with the returns and refunds it has so far
/// (`refunds` without `wanted`). Called by the store with the transaction locked, after the
/// [`RefundRule`](crate::RefundRule) allowed the refund.
///
/// - While a share is being requested (`pending`, `processing`) nothing is refunded
///   ([`RefundRefusal::BeingShared`]): the money may be leaving.
/// - Share i gives back `floor(share_i × refund / base)`; the refund that brings what was
///   refunded since the sharing to the base takes all that is left of each share, so every
///   fen shared comes back once the whole base is refunded.
/// - A closed share's part is recorded (a later retry pays that much less) but never asked:
///   its money is still with the sub-merchant.
/// - What a receiver already gave back beyond what live refunds took (returns of a refund
///   that failed after them) is counted first, so nothing is given back twice.
/// - A person's part cannot be taken back by the platform ([`RefundRefusal::NotReturnable`]).
///
/// ```
/// use atrium_kernel::{Money, RefundStatus};
/// use atrium_payments::*;
///
/// let now = chrono::Utc::now();
/// let receiver = |account: &str| Receiver { kind: ReceiverType::MerchantId, account: account.into(), name: Some("N".into()) };
/// let share = |id, fen| Share {
///     id, tenant_id: 7, payment_id: 1, out_trade_no: "T1".into(), partner_id: Some(3), role: ShareRole::Partner,
///     receiver: receiver("1900000109"), amount: Money::from_fen(fen), returned: Money::ZERO, withheld: Money::ZERO,
///     status: ShareStatus::Succeeded, fail_reason: None, out_order_no: "PS1".into(), retries: 0, plan_version: Some(1),
///     created_at: now, settled_at: Some(now), updated_at: now, discrepancy: None,
/// };
/// let sharing = Sharing { payment_id: 1, tenant_id: 7, base: Money::from_fen(10_001), rates: Rates { platform_bp: 60, commission_bp: 250 }, unfrozen_at: None, created_at: now };
/// let refund = |no: &str, fen| Refund {
///     id: 0, tenant_id: 7, out_trade_no: "T1".into(), order_id: None, out_refund_no: no.into(), refund_id: None,
///     amount: Money::from_fen(fen), status: RefundStatus::Processing, reason: None, requested_by: None, fail_reason: None,
///     succeeded_at: None, created_at: now, updated_at: now,
/// };
/// let shares = [share(1, 60), share(2, 250)];
/// // A third back: floor(60 × 3,333 / 10,001) = 19, floor(250 × 3,333 / 10,001) = 83.
/// let first = plan_returns(Money::from_fen(10_001), &sharing, &shares, &[], &[], &refund("R1", 3_333)).unwrap();
/// assert_eq!(first.iter().map(|r| r.amount.fen()).collect::<Vec<_>>(), [19, 83]);
/// // The rest: all that is left of each share.
/// let last = plan_returns(Money::from_fen(10_001), &sharing, &shares, &first, &[refund("R1", 3_333)], &refund("R2", 6_668)).unwrap();
/// assert_eq!(last.iter().map(|r| r.amount.fen()).collect::<Vec<_>>(), [41, 167]);
/// ```
pub fn plan_returns(
    paid: Money,
    sharing: &Sharing,
    shares: &[Share],
    returns: &[ShareReturn],
    refunds: &[Refund],
    wanted: &Refund,
) -> Result<Vec<ShareReturn>, RefundRefusal> {
    if let Some(share) = shares.iter().find(|s| s.discrepancy.is_some()) {
        return Err(RefundRefusal::ShareDiscrepancy { share_id: share.id });
    }
    if shares.iter().any(|s| matches!(s.status, ShareStatus::Pending | ShareStatus::Processing)) {
        return Err(RefundRefusal::BeingShared);
    }
    let base = sharing.base.fen();
    if base <= 0 {
        return Ok(Vec::new());
    }
    let live = live_refunds(refunds);
    let refunded = sum(refunds.iter().filter(|r| r.status.holds_amount()).map(|r| r.amount)).fen();
    // What was refunded since the sharing began: the refunds before it made the base.
    let since = (refunded - (paid.fen() - base)).max(0);
    let completes = since + wanted.amount.fen() >= base;
    let mut planned = Vec::new();
    for share in shares {
        let mine: Vec<&ShareReturn> = returns.iter().filter(|r| r.share_id == share.id).collect();
        let owed = owed(&mine, &live);
        let left = (share.amount.fen() - owed.fen()).max(0);
        let part =
            if completes { left } else { (i128::from(share.amount.fen()) * i128::from(wanted.amount.fen()) / i128::from(base)) as i64 };
        let part = part.min(left);
        if part <= 0 {
            continue;
        }
        let ask = match share.status {
            ShareStatus::Closed => 0,
            _ => (owed.fen() + part - back(&mine).fen() - share.withheld.fen()).clamp(0, part),
        };
        if ask > 0 && share.receiver.kind != ReceiverType::MerchantId {
            return Err(RefundRefusal::NotReturnable { share_id: share.id });
        }
        planned.push(ShareReturn {
            id: 0,
            tenant_id: share.tenant_id,
            payment_id: share.payment_id,
            share_id: share.id,
            out_refund_no: wanted.out_refund_no.clone(),
            part: Money::from_fen(part),
            amount: Money::from_fen(ask),
            status: if ask > 0 { ReturnStatus::Processing } else { ReturnStatus::Succeeded },
            out_return_no: return_no(share.id, mine.len() + 1),
            return_id: None,
            fail_reason: None,
            created_at: wanted.created_at,
            settled_at: (ask == 0).then_some(wanted.created_at),
            updated_at: wanted.created_at,
        });
    }
    Ok(planned)
}

/// What the day's reconciliation makes of one of our shares or returns and the platform's
/// record of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Both say the same (or it is still being carried out on both sides).
    Agrees,
    /// Ours is still processing and the platform's is final: settle ours from the platform, as
    /// the sharing job does.
    Settle,
    /// They differ: this is what to keep as the share's discrepancy.
    Differs(String),
}

/// `share` (sent: not `pending`) against `order`, the platform's answer for the request it was
/// last sent in (`None`: the platform does not know that request).
pub fn check_share(share: &Share, order: Option<&PlatformShareOrder>) -> Check {
    let Some(order) = order else {
        return Check::Differs(format!("the pay platform has no share request {}", share.out_order_no));
    };
    let Some(line) = order.line_of(&share.receiver) else {
        return Check::Differs(format!("share request {} on the pay platform has no line for this receiver", share.out_order_no));
    };
    let theirs = |line: &PlatformShareLine| match (line.result, &line.fail_reason) {
        (ReceiverResult::Closed, Some(why)) => format!("closed ({why})"),
        (result, _) => <&str>::from(result).to_ascii_lowercase(),
    };
    match (share.status, line.result) {
        (ShareStatus::Pending | ShareStatus::Processing, ReceiverResult::Pending) => Check::Agrees,
        (ShareStatus::Pending | ShareStatus::Processing, _) => Check::Settle,
        (ShareStatus::Succeeded | ShareStatus::Returned, ReceiverResult::Success) if line.amount == share.to_pay() => Check::Agrees,
        (ShareStatus::Succeeded | ShareStatus::Returned, ReceiverResult::Success) => Check::Differs(format!(
            "the pay platform paid the receiver {} fen in {}; our record says {} fen",
            line.amount.fen(),
            share.out_order_no,
            share.to_pay().fen()
        )),
        (ShareStatus::Closed, ReceiverResult::Closed) => Check::Agrees,
        (ours, _) => {
            let ours: &str = ours.into();
            Check::Differs(format!("the pay platform has this share {} in {}; our record says {ours}", theirs(line), share.out_order_no))
        }
    }
}

/// `ret` against `answer`, the platform's record of it (`None`: the platform does not know it).
/// A return of 0 fen was never sent; one the platform refused outright was never made there.
pub fn check_return(ret: &ShareReturn, answer: Option<&PlatformReturn>) -> Check {
    let ours: &str = ret.status.into();
    match (ret.status, answer) {
        (_, _) if !ret.amount.is_positive() => Check::Agrees,
        (ReturnStatus::Processing, None | Some(PlatformReturn { result: ReturnResult::Processing, .. })) => Check::Agrees,
        (ReturnStatus::Processing, Some(_)) => Check::Settle,
        (ReturnStatus::Failed, None | Some(PlatformReturn { result: ReturnResult::Failed, .. })) => Check::Agrees,
        (ReturnStatus::Succeeded, Some(a)) if a.result == ReturnResult::Success && a.amount.is_none_or(|fen| fen == ret.amount) => {
            Check::Agrees
        }
        (_, None) => Check::Differs(format!("the pay platform has no return {}; our record says {ours}", ret.out_return_no)),
        (_, Some(a)) => {
            let theirs = <&str>::from(a.result).to_ascii_lowercase();
            let fen = a.amount.map_or_else(String::new, |fen| format!(" of {} fen", fen.fen()));
            Check::Differs(format!(
                "the pay platform has return {} {theirs}{fen}; our record says {ours} of {} fen",
                ret.out_return_no,
                ret.amount.fen()
            ))
        }
    }
}

/// What `GET /miniprogram/payment/shares` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareQuery {
    /// The page.
    pub page: atrium_kernel::PageRequest,
    /// Only this tenant's shares.
    pub tenant_id: Option<Id>,
    /// Only shares of this partner's tenants.
    pub partner_id: Option<Id>,
    /// Only shares in this status.
    pub status: Option<ShareStatus>,
    /// Only shares of this transaction.
    pub out_trade_no: Option<String>,
    /// Only shares holding a discrepancy (`true`) or none (`false`).
    pub discrepancy: Option<bool>,
}

/// The share request number of a transaction's first request: fixed, so asking again after a
/// lost answer is the same request. Unique per sub-merchant since our ids are.
pub fn share_order_no(payment_id: Id) -> String {
    format!("PS{payment_id}")
}

/// The number of a transaction's unfreeze request (fixed for the same reason).
pub fn unfreeze_order_no(payment_id: Id) -> String {
    format!("PS{payment_id}-u")
}

/// The number of retry `n` (1, 2, …) of share `share_id`, first sent as `first`: the first
/// number, `-r` and `n`, then the share (two shares of one request retried apart never share a
/// number).
pub fn retry_order_no(first: &str, share_id: Id, n: i32) -> String {
    format!("{first}-r{n}-{share_id}")
}

/// The shares of `base` at `rates`: `floor(base × bp / 10,000)` for each role with a rate and a
/// receiver, none of 0 fen. The tenant keeps the rest, so the shares and the rest add up to
/// `base` exactly. `partner` is the partner's receiver (`None`: no partner or no plan).
pub fn split(base: Money, rates: Rates, platform: &Receiver, partner: Option<&Receiver>) -> Vec<(ShareRole, Receiver, Money)> {
    let part = |bp: u32| Money::from_fen(base.fen().max(0) * i64::from(bp.min(10_000)) / 10_000);
    let mut shares = Vec::new();
    let platform_part = part(rates.platform_bp);
    if platform_part.is_positive() {
        shares.push((ShareRole::Platform, platform.clone(), platform_part));
    }
    if let Some(receiver) = partner {
        let commission = part(rates.commission_bp);
        if commission.is_positive() {
            shares.push((ShareRole::Partner, receiver.clone(), commission));
        }
    }
    shares
}

// --- What the pay platform is asked and answers ---------------------------------------------

/// A receiver to add for the sub-merchant an account acts for (`POST
/// /v3/profitsharing/receivers/add`); adding one again is no error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverAdd {
    /// Who.
    pub receiver: Receiver,
    /// How it is related to the sub-merchant.
    pub relation: Relation,
}

/// One receiver's amount in a share request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareLine {
    /// Merchant or person.
    pub kind: ReceiverType,
    /// The merchant id or openid.
    pub account: String,
    /// Fen, at least 1.
    pub amount: Money,
    /// Shown to the receiver (at most 80 characters).
    pub description: String,
}

/// A share request (`POST /v3/profitsharing/orders`) for the sub-merchant an account acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareOrder {
    /// The platform's transaction id of the payment shared.
    pub transaction_id: String,
    /// Our number of the request, fixed before the call; the platform answers the same number
    /// with the same request's result.
    pub out_order_no: String,
    /// Who gets what.
    pub lines: Vec<ShareLine>,
    /// Whether the platform should unfreeze the rest at once (Atrium sends `false` and
    /// unfreezes once every share succeeded).
    pub unfreeze_unsplit: bool,
}

/// An unfreeze request (`POST /v3/profitsharing/orders/unfreeze`): what is left of the payment
/// goes to the sub-merchant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnfreezeOrder {
    /// The platform's transaction id.
    pub transaction_id: String,
    /// Our number of the request, fixed before the call.
    pub out_order_no: String,
    /// Why (at most 80 characters).
    pub description: String,
}

/// A share or unfreeze request's state on the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ShareOrderState {
    /// Being carried out.
    Processing,
    /// Done: every receiver's result is final.
    Finished,
}

/// One receiver's result in a share request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ReceiverResult {
    /// Not paid yet.
    Pending,
    /// Paid.
    Success,
    /// Could not be paid (`fail_reason`).
    Closed,
}

/// One receiver's line as the platform reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformShareLine {
    /// Merchant or person.
    pub kind: ReceiverType,
    /// The merchant id or openid.
    pub account: String,
    /// Fen.
    pub amount: Money,
    /// Where it stands.
    pub result: ReceiverResult,
    /// Why it was closed (`ACCOUNT_ABNORMAL`, `NO_RELATION`, …).
    pub fail_reason: Option<String>,
    /// When it was finished.
    pub finish_time: Option<Timestamp>,
}

/// A share or unfreeze request as the platform reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformShareOrder {
    /// Our number of the request.
    pub out_order_no: String,
    /// The platform's number of the request.
    pub order_id: Option<String>,
    /// Where it stands.
    pub state: ShareOrderState,
    /// Each receiver's line (an unfreeze reports the sub-merchant's own).
    pub lines: Vec<PlatformShareLine>,
}

impl PlatformShareOrder {
    /// The line of `receiver`, if the request has one.
    pub fn line_of(&self, receiver: &Receiver) -> Option<&PlatformShareLine> {
        self.lines.iter().find(|l| l.kind == receiver.kind && l.account == receiver.account)
    }
}

/// A return (`POST /v3/profitsharing/return-orders`): part of what a merchant receiver was
/// paid in a share request goes back to the sub-merchant, before a refund. Only a merchant's
/// part can be returned; the platform takes nothing back from a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnOrder {
    /// The share request the part was paid in.
    pub out_order_no: String,
    /// Our number of the return, fixed before the call: the platform answers the same number
    /// with the same return's result.
    pub out_return_no: String,
    /// The receiver's merchant id, who gives the money back.
    pub return_mchid: String,
    /// Fen, at least 1; all returns of one receiver's line at most what the line paid it.
    pub amount: Money,
    /// Why (at most 80 characters).
    pub description: String,
}

/// A return's result on the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ReturnResult {
    /// Being carried out; asking again under the same number tells the result.
    Processing,
    /// The money is back with the sub-merchant.
    Success,
    /// It could not be taken back (`fail_reason`: `BALANCE_NOT_ENOUGH`, `ACCOUNT_ABNORMAL`, …).
    Failed,
}

/// A return as the platform reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformReturn {
    /// Our number of the return.
    pub out_return_no: String,
    /// The platform's number of it, once it has one.
    pub return_id: Option<String>,
    /// Where it stands.
    pub result: ReturnResult,
    /// Why it failed.
    pub fail_reason: Option<String>,
    /// Fen, as the platform recorded it.
    pub amount: Option<Money>,
    /// When it finished.
    pub finish_time: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn plan(commission_bp: Option<u32>, platform_bp: Option<u32>) -> SharePlan {
        SharePlan {
            partner_id: 7,
            version: 1,
            commission_bp,
            platform_bp,
            receiver: Receiver { kind: ReceiverType::PersonalOpenid, account: "o-partner-7".into(), name: None },
            created_at: Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
        }
    }

    fn provider(platform_bp: u32, default_commission_bp: u32) -> ProviderConfig {
        let mut p = ProviderConfig::new("1900000100".into(), "wx_sp".into(), Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap());
        p.platform_bp = platform_bp;
        p.default_commission_bp = default_commission_bp;
        p
    }

    #[test]
    fn a_plans_own_rates_win_and_absent_ones_follow_the_provider() {
        let p = provider(100, 200);
        assert_eq!(Rates::of(Some(&plan(Some(500), Some(50))), Some(&p)), Rates { platform_bp: 50, commission_bp: 500 });
        assert_eq!(Rates::of(Some(&plan(None, None)), Some(&p)), Rates { platform_bp: 100, commission_bp: 200 });
        assert_eq!(Rates::of(Some(&plan(Some(0), None)), Some(&p)).total(), 100, "0 is a rate, not a default");
    }

    #[test]
    fn without_a_plan_only_the_platform_takes_a_share() {
        assert_eq!(Rates::of(None, Some(&provider(100, 200))), Rates { platform_bp: 100, commission_bp: 0 });
        assert_eq!(Rates::of(None, None), Rates::default());
        assert_eq!(Rates::of(Some(&plan(None, None)), None), Rates::default());
    }

    #[test]
    fn an_account_is_shown_with_its_middle_masked() {
        let mut r = plan(None, None).receiver;
        r.account = "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o".into();
        assert_eq!(r.masked_account(), "oUpF********************eS6o");
        r.account = "1900000109".into();
        assert_eq!(r.masked_account(), "19******09");
        r.account = "abc".into();
        assert_eq!(r.masked_account(), "***");
    }

    fn receiver(account: &str) -> Receiver {
        Receiver { kind: ReceiverType::MerchantId, account: account.into(), name: Some("N".into()) }
    }

    #[test]
    fn shares_are_floored_per_receiver_and_the_rest_is_the_tenants() {
        let rates = Rates { platform_bp: 60, commission_bp: 250 };
        for (base, platform, partner) in [(1, None, None), (333, Some(1), Some(8)), (10_001, Some(60), Some(250)), (100, None, Some(2))] {
            let shares = split(Money::from_fen(base), rates, &receiver("1900000100"), Some(&receiver("1900000999")));
            let of = |role| shares.iter().find(|s| s.0 == role).map(|s| s.2.fen());
            assert_eq!((of(ShareRole::Platform), of(ShareRole::Partner)), (platform, partner), "{base}");
            let shared: i64 = shares.iter().map(|s| s.2.fen()).sum();
            assert!(shared <= base && shares.iter().all(|s| s.2.is_positive()), "{base}");
        }
    }

    #[test]
    fn without_a_partner_receiver_only_the_platform_shares_and_full_rates_take_everything() {
        let shares = split(Money::from_fen(999), Rates { platform_bp: 10_000, commission_bp: 500 }, &receiver("1"), None);
        assert_eq!(shares.len(), 1);
        assert_eq!(shares[0].2, Money::from_fen(999));
        assert!(split(Money::ZERO, Rates { platform_bp: 500, commission_bp: 500 }, &receiver("1"), Some(&receiver("2"))).is_empty());
    }

    // --- plan_returns and retried ---------------------------------------------------------

    fn t0() -> Timestamp {
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
    }

    fn shared(id: Id, kind: ReceiverType, fen: i64, status: ShareStatus) -> Share {
        Share {
            id,
            tenant_id: 7,
            payment_id: 1,
            out_trade_no: "T1".into(),
            partner_id: Some(3),
            role: if id == 1 { ShareRole::Platform } else { ShareRole::Partner },
            receiver: Receiver { kind, account: format!("acct-{id}"), name: None },
            amount: Money::from_fen(fen),
            returned: Money::ZERO,
            withheld: Money::ZERO,
            status,
            fail_reason: None,
            out_order_no: "PS1".into(),
            retries: 0,
            plan_version: Some(1),
            created_at: t0(),
            settled_at: Some(t0()),
            updated_at: t0(),
            discrepancy: None,
        }
    }

    fn sharing_of(base: i64) -> Sharing {
        Sharing { payment_id: 1, tenant_id: 7, base: Money::from_fen(base), rates: Rates::default(), unfrozen_at: None, created_at: t0() }
    }

    fn refund(no: &str, fen: i64, status: atrium_kernel::RefundStatus) -> Refund {
        Refund {
            id: 0,
            tenant_id: 7,
            out_trade_no: "T1".into(),
            order_id: None,
            out_refund_no: no.into(),
            refund_id: None,
            amount: Money::from_fen(fen),
            status,
            reason: None,
            requested_by: None,
            fail_reason: None,
            succeeded_at: None,
            created_at: t0(),
            updated_at: t0(),
        }
    }

    fn amounts(planned: &[ShareReturn]) -> Vec<(Id, i64, i64, ReturnStatus)> {
        planned.iter().map(|r| (r.share_id, r.part.fen(), r.amount.fen(), r.status)).collect()
    }

    /// Plans `refunds` one after the other (each stored processing, its returns succeeded),
    /// returning what each took.
    fn in_turn(paid: i64, base: i64, shares: &[Share], refunds: &[i64]) -> Vec<Vec<(Id, i64, i64, ReturnStatus)>> {
        use atrium_kernel::RefundStatus::Processing;
        let (mut stored, mut made, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for (i, fen) in refunds.iter().enumerate() {
            let wanted = refund(&format!("R{i}"), *fen, Processing);
            let planned = plan_returns(Money::from_fen(paid), &sharing_of(base), shares, &stored, &made, &wanted).unwrap();
            out.push(amounts(&planned));
            stored.extend(planned.into_iter().map(|r| ShareReturn { status: ReturnStatus::Succeeded, ..r }));
            made.push(wanted);
        }
        out
    }

    #[test]
    fn each_receiver_gives_back_its_floored_part_and_the_refund_completing_the_base_takes_the_rest() {
        use ReturnStatus::Processing;
        let shares = [
            shared(1, ReceiverType::MerchantId, 60, ShareStatus::Succeeded),
            shared(2, ReceiverType::MerchantId, 250, ShareStatus::Succeeded),
        ];
        let taken = in_turn(10_001, 10_001, &shares, &[333, 1, 5_000, 4_667]);
        // floor(60 × 333 / 10,001) = 1, floor(250 × 333 / 10,001) = 8.
        assert_eq!(taken[0], vec![(1, 1, 1, Processing), (2, 8, 8, Processing)]);
        // 1 fen takes nothing of either.
        assert!(taken[1].is_empty());
        assert_eq!(taken[2], vec![(1, 29, 29, Processing), (2, 124, 124, Processing)]);
        // The last refund brings the refunded total to the base: all that is left.
        assert_eq!(taken[3], vec![(1, 30, 30, Processing), (2, 118, 118, Processing)]);
        for id in [1, 2] {
            let back: i64 = taken.iter().flatten().filter(|r| r.0 == id).map(|r| r.2).sum();
            assert_eq!(back, shares[id as usize - 1].amount.fen(), "share {id} comes back whole");
        }
    }

    #[test]
    fn refunds_before_the_sharing_made_the_base_and_do_not_count_toward_completing_it() {
        use atrium_kernel::RefundStatus::{Failed, Succeeded};
        let shares = [shared(2, ReceiverType::MerchantId, 250, ShareStatus::Succeeded)];
        // 10,001 paid, 1 fen refunded before the share: base 10,000; a failed refund counts not.
        let before = [refund("R0", 1, Succeeded), refund("RX", 9_000, Failed)];
        let all =
            plan_returns(Money::from_fen(10_001), &sharing_of(10_000), &shares, &[], &before, &refund("R1", 10_000, Succeeded)).unwrap();
        assert_eq!(amounts(&all), vec![(2, 250, 250, ReturnStatus::Processing)]);
        let half =
            plan_returns(Money::from_fen(10_001), &sharing_of(10_000), &shares, &[], &before, &refund("R1", 5_000, Succeeded)).unwrap();
        assert_eq!(amounts(&half), vec![(2, 125, 125, ReturnStatus::Processing)]);
        assert_eq!(half[0].out_return_no, "PR2-1");
    }

    #[test]
    fn nothing_is_refunded_while_a_share_is_being_requested_nor_a_persons_part_taken_back() {
        use atrium_kernel::RefundStatus::Processing;
        for status in [ShareStatus::Pending, ShareStatus::Processing] {
            let shares =
                [shared(1, ReceiverType::MerchantId, 60, ShareStatus::Succeeded), shared(2, ReceiverType::MerchantId, 250, status)];
            let refused = plan_returns(Money::from_fen(10_001), &sharing_of(10_001), &shares, &[], &[], &refund("R1", 1, Processing));
            assert_eq!(refused, Err(RefundRefusal::BeingShared), "{status:?}");
        }
        let person = [shared(2, ReceiverType::PersonalOpenid, 250, ShareStatus::Succeeded)];
        let refused = plan_returns(Money::from_fen(10_001), &sharing_of(10_001), &person, &[], &[], &refund("R1", 5_000, Processing));
        assert_eq!(refused, Err(RefundRefusal::NotReturnable { share_id: 2 }));
        // A refund too small to take any of it is no return at all.
        let small = plan_returns(Money::from_fen(10_001), &sharing_of(10_001), &person, &[], &[], &refund("R1", 40, Processing));
        assert_eq!(small, Ok(vec![]));
    }

    #[test]
    fn what_a_failed_refund_took_back_counts_toward_the_next_so_nothing_comes_back_twice() {
        use atrium_kernel::RefundStatus::{Failed, Processing};
        let shares = [
            shared(1, ReceiverType::MerchantId, 60, ShareStatus::Succeeded),
            shared(2, ReceiverType::MerchantId, 250, ShareStatus::Succeeded),
        ];
        let first = refund("R1", 5_000, Processing);
        let planned = plan_returns(Money::from_fen(10_001), &sharing_of(10_001), &shares, &[], &[], &first).unwrap();
        // Share 1 gave its part back, share 2's return failed: R1 failed, never sent.
        let stored: Vec<ShareReturn> = planned
            .into_iter()
            .map(|r| ShareReturn { status: if r.share_id == 1 { ReturnStatus::Succeeded } else { ReturnStatus::Failed }, ..r })
            .collect();
        let failed = [Refund { status: Failed, ..first }];
        let again = plan_returns(Money::from_fen(10_001), &sharing_of(10_001), &shares, &stored, &failed, &refund("R2", 5_000, Processing))
            .unwrap();
        // Share 1's 29 fen are back already: nothing more asked; share 2 asked its part anew.
        assert_eq!(amounts(&again), vec![(1, 29, 0, ReturnStatus::Succeeded), (2, 124, 124, ReturnStatus::Processing)]);
        assert_eq!((again[0].out_return_no.as_str(), again[1].out_return_no.as_str()), ("PR1-2", "PR2-2"));
    }

    #[test]
    fn a_closed_shares_part_is_recorded_not_asked_and_its_retry_pays_that_much_less() {
        use atrium_kernel::RefundStatus::{Failed, Processing, Succeeded};
        let closed = shared(2, ReceiverType::PersonalOpenid, 250, ShareStatus::Closed);
        let planned = plan_returns(
            Money::from_fen(10_001),
            &sharing_of(10_001),
            std::slice::from_ref(&closed),
            &[],
            &[],
            &refund("R1", 5_000, Processing),
        )
        .unwrap();
        assert_eq!(amounts(&planned), vec![(2, 124, 0, ReturnStatus::Succeeded)], "a person's closed share: nothing to take back");
        let retried = closed.retried(&planned, &[refund("R1", 5_000, Succeeded)], "PS1-r1-2".into(), t0());
        assert_eq!((retried.status, retried.withheld.fen(), retried.to_pay().fen(), retried.retries), (ShareStatus::Pending, 124, 126, 1));
        assert_eq!(retried.out_order_no, "PS1-r1-2");
        // The refund failed after all: nothing kept back.
        let retried = closed.retried(&planned, &[refund("R1", 5_000, Failed)], "PS1-r1-2".into(), t0());
        assert_eq!(retried.withheld, Money::ZERO);
        // Refunded whole while closed: nothing left to pay, returned at once.
        let all = plan_returns(
            Money::from_fen(10_001),
            &sharing_of(10_001),
            std::slice::from_ref(&closed),
            &[],
            &[],
            &refund("R1", 10_001, Processing),
        )
        .unwrap();
        let retried = closed.retried(&all, &[refund("R1", 10_001, Succeeded)], "PS1-r1-2".into(), t0());
        assert_eq!((retried.status, retried.to_pay()), (ShareStatus::Returned, Money::ZERO));
        // Paid less after the retry, the receiver later gives back only the rest.
        let paid = Share { status: ShareStatus::Succeeded, withheld: Money::from_fen(124), ..closed.clone() };
        let paid = Share { receiver: Receiver { kind: ReceiverType::MerchantId, ..paid.receiver.clone() }, ..paid };
        let made = [refund("R1", 5_000, Succeeded)];
        let rest =
            plan_returns(Money::from_fen(10_001), &sharing_of(10_001), &[paid], &planned, &made, &refund("R2", 5_001, Processing)).unwrap();
        assert_eq!(amounts(&rest), vec![(2, 126, 126, ReturnStatus::Processing)]);
    }

    // --- check_share and check_return ----------------------------------------------------

    fn platform_order(account: &str, fen: i64, result: ReceiverResult) -> PlatformShareOrder {
        PlatformShareOrder {
            out_order_no: "PS1".into(),
            order_id: Some("3008450740201411110007820472".into()),
            state: ShareOrderState::Finished,
            lines: vec![PlatformShareLine {
                kind: ReceiverType::MerchantId,
                account: account.into(),
                amount: Money::from_fen(fen),
                result,
                fail_reason: (result == ReceiverResult::Closed).then(|| "ACCOUNT_ABNORMAL".into()),
                finish_time: None,
            }],
        }
    }

    #[test]
    fn a_share_agrees_with_the_platform_only_on_the_same_result_and_amount() {
        use ReceiverResult::*;
        use ShareStatus as S;
        let share = |status| shared(2, ReceiverType::MerchantId, 250, status);
        let check = |status, fen, result| check_share(&share(status), Some(&platform_order("acct-2", fen, result)));
        assert_eq!(check(S::Succeeded, 250, Success), Check::Agrees);
        assert_eq!(check(S::Returned, 250, Success), Check::Agrees, "returns do not change what was paid");
        assert_eq!(check(S::Closed, 250, Closed), Check::Agrees);
        assert_eq!(check(S::Processing, 250, Pending), Check::Agrees, "still being carried out on both sides");
        assert_eq!(check(S::Processing, 250, Success), Check::Settle);
        assert_eq!(check(S::Processing, 250, Closed), Check::Settle);
        for (status, fen, result, says) in [
            (S::Succeeded, 200, Success, "200 fen"),
            (S::Succeeded, 250, Closed, "closed (ACCOUNT_ABNORMAL)"),
            (S::Closed, 250, Success, "success"),
            (S::Succeeded, 250, Pending, "pending"),
        ] {
            match check(status, fen, result) {
                Check::Differs(why) => assert!(why.contains(says), "{status:?} vs {result:?}: {why}"),
                other => panic!("{status:?} vs {result:?}: {other:?}"),
            }
        }
        let retried = Share { withheld: Money::from_fen(124), ..share(S::Succeeded) };
        assert_eq!(check_share(&retried, Some(&platform_order("acct-2", 126, Success))), Check::Agrees, "a retry paid amount − withheld");
        assert!(matches!(check_share(&share(S::Succeeded), None), Check::Differs(why) if why.contains("no share request")));
        let elsewhere = platform_order("acct-9", 250, Success);
        assert!(matches!(check_share(&share(S::Succeeded), Some(&elsewhere)), Check::Differs(why) if why.contains("no line")));
    }

    #[test]
    fn a_return_agrees_with_the_platform_on_its_result_and_amount_and_one_never_sent_is_not_asked_for() {
        let ret = |status, fen| ShareReturn {
            id: 1,
            tenant_id: 7,
            payment_id: 1,
            share_id: 2,
            out_refund_no: "R1".into(),
            part: Money::from_fen(fen),
            amount: Money::from_fen(fen),
            status,
            out_return_no: "PR2-1".into(),
            return_id: None,
            fail_reason: None,
            created_at: t0(),
            settled_at: None,
            updated_at: t0(),
        };
        let answer = |result, fen| PlatformReturn {
            out_return_no: "PR2-1".into(),
            return_id: Some("3008450740201411110007820472".into()),
            result,
            fail_reason: None,
            amount: Some(Money::from_fen(fen)),
            finish_time: None,
        };
        use ReturnResult as P;
        use ReturnStatus as R;
        assert_eq!(check_return(&ret(R::Succeeded, 83), Some(&answer(P::Success, 83))), Check::Agrees);
        assert_eq!(check_return(&ret(R::Failed, 83), Some(&answer(P::Failed, 83))), Check::Agrees);
        assert_eq!(check_return(&ret(R::Failed, 83), None), Check::Agrees, "refused outright: never made on the platform");
        assert_eq!(check_return(&ret(R::Processing, 83), Some(&answer(P::Success, 83))), Check::Settle);
        assert_eq!(check_return(&ret(R::Succeeded, 0), None), Check::Agrees, "0 fen was never sent");
        for (ours, theirs) in [
            (ret(R::Succeeded, 83), Some(answer(P::Success, 80))),
            (ret(R::Succeeded, 83), Some(answer(P::Failed, 83))),
            (ret(R::Succeeded, 83), None),
            (ret(R::Failed, 83), Some(answer(P::Success, 83))),
        ] {
            assert!(matches!(check_return(&ours, theirs.as_ref()), Check::Differs(_)), "{ours:?} vs {theirs:?}");
        }
    }
}
