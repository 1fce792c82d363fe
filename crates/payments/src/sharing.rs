//! Profit sharing (分账): who takes a share of a sub-merchant's payments and at what rate.
//!
//! The platform takes `platform_bp` of each payment of a tenant collecting as a sub-merchant;
//! the tenant's partner takes its commission by its share plan. Rates are basis points (1/100
//! of a percent) of the payment; both together may not exceed the sub-merchant's `max_ratio`
//! on the pay platform.
use crate::model::{ProviderConfig, SubMerchant};
use atrium_kernel::{Id, Money, Timestamp};

/// Who receives a share: a merchant by its merchant id, or a person by the openid they have in
/// the provider's app (`sp_appid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ReceiverType {
    /// A merchant, by its merchant id; its registered name is required.
    MerchantId,
    /// A person, by their openid in the provider's app; a name is optional.
    PersonalOpenid,
}

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

/// Who a share is for: the platform, or the tenant's partner.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize, strum::IntoStaticStr, strum::EnumString,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ShareRole {
    /// The platform's share (`platform_bp`), to the provider's own merchant account.
    Platform,
    /// The partner's commission (`commission_bp`), to its plan's receiver.
    Partner,
}

impl ShareRole {
    /// How the receiver of this role is related to the sub-merchant.
    pub fn relation(self) -> Relation {
        match self {
            ShareRole::Platform => Relation::ServiceProvider,
            ShareRole::Partner => Relation::Partner,
        }
    }
}

/// Where one share stands.
///
/// `pending` (computed, not yet requested, or to be requested again after a retry) →
/// `processing` (requested; the platform is carrying it out) → `succeeded` | `closed` (the
/// platform could not pay the receiver: `fail_reason` says why; a retry makes it `pending`
/// again under a new `out_order_no`). `returned`: given back before a refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, strum::IntoStaticStr, strum::EnumString)]
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
    /// Given back to the sub-merchant before a refund.
    Returned,
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
}
