//! Profit sharing (分账): who takes a share of a sub-merchant's payments and at what rate.
//!
//! The platform takes `platform_bp` of each payment of a tenant collecting as a sub-merchant;
//! the tenant's partner takes its commission by its share plan. Rates are basis points (1/100
//! of a percent) of the payment; both together may not exceed the sub-merchant's `max_ratio`
//! on the pay platform.
use crate::model::{ProviderConfig, SubMerchant};
use atrium_kernel::{Id, Timestamp};

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
}
