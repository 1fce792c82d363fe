//! Partners' share plans: who reads and sets them, their versions, and the `max_ratio` check
//! when a plan is set, a tenant becomes a sub-merchant, or the provider's defaults rise.
use super::provider::{SP_MCHID, SUB_MCHID, no_plan, partner_actor, provider, provider_put, sub_put, with_provider};
use super::*;
use crate::sharing::*;

const OTHER_SUB: &str = "1900000202";

fn plan(version: i64, commission_bp: Option<u32>, platform_bp: Option<u32>) -> SharePlan {
    SharePlan {
        partner_id: PARTNER,
        version,
        commission_bp,
        platform_bp,
        receiver: Receiver { kind: ReceiverType::MerchantId, account: "1900000301".into(), name: Some("Harbour Agency Ltd".into()) },
        created_at: now() - Duration::days(3),
    }
}

fn plan_put(commission_bp: Option<i64>, platform_bp: Option<i64>) -> SharePlanPut {
    SharePlanPut {
        commission_bp,
        platform_bp,
        receiver: ReceiverInput {
            kind: ReceiverType::MerchantId,
            account: ReceiverAccount::parse("1900000301").unwrap(),
            name: Some(MerchantName::parse("Harbour Agency Ltd").unwrap()),
        },
    }
}

fn sub_tenant(tenant_id: Id, sub_mchid: &str, plan: Option<SharePlan>) -> SubMerchantTenant {
    SubMerchantTenant { tenant_id, partner_id: Some(PARTNER), sub: SubMerchant { sub_mchid: sub_mchid.into(), sub_appid: None }, plan }
}

/// A repository where partner [`PARTNER`] exists with `current` as its plan, the provider is
/// [`provider`] (platform 100 bp, default commission 200 bp) and `tenants` are its
/// sub-merchant tenants.
fn plan_repo(current: Option<SharePlan>, tenants: Vec<SubMerchantTenant>) -> MockPaymentRepo {
    let mut repo = MockPaymentRepo::new();
    repo.expect_partner()
        .returning(|scope, id| Ok(id == PARTNER && matches!(scope, Party::Platform | Party::Partner { partner_id: PARTNER })));
    repo.expect_share_plan().returning(move |_| Ok(current.clone()));
    let mut p = provider();
    p.platform_bp = 100;
    p.default_commission_bp = 200;
    repo.expect_get_provider().returning(move || Ok(Some(p.clone())));
    repo.expect_sub_merchant_tenants().returning(move |_| Ok(tenants.clone()));
    repo
}

/// The platform's max ratio by sub-merchant.
fn ratios(of: &'static [(&'static str, u32)]) -> MockPayPlatform {
    let mut platform = MockPayPlatform::new();
    platform.expect_max_ratio().returning(move |account| {
        let sub = account.sub_merchant.as_ref().map(|s| s.sub_mchid.clone()).unwrap_or_default();
        assert_eq!(account.mchid, SP_MCHID, "asked as the provider");
        Ok(of.iter().find(|(s, _)| *s == sub).map_or(3000, |(_, r)| *r))
    });
    platform
}

fn storing(repo: &mut MockPaymentRepo) -> Arc<Mutex<Vec<(SharePlan, AuditRecord)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    repo.expect_put_share_plan().returning(move |p, audit| {
        keep.lock().unwrap().push((p.clone(), audit.audit.expect("audited")));
        Ok(p)
    });
    seen
}

// --- who reads and sets a plan -----------------------------------------------------------------

#[tokio::test]
async fn only_platform_users_set_a_plan_and_a_partner_setting_its_own_gets_403() {
    let mut repo = plan_repo(None, vec![]);
    repo.expect_put_share_plan().never();
    let svc = svc(repo, MockPayPlatform::new());

    for actor in [partner_actor(), tenant_actor()] {
        let err = svc.put_share_plan(&actor, PARTNER, plan_put(Some(500), None)).await.unwrap_err();

        assert!(matches!(err, Error::Forbidden(Reason::PartyNotAllowed, _)), "{err:?}");
    }
}

#[tokio::test]
async fn a_partner_reads_its_own_plan_and_nobody_reads_one_outside_their_scope() {
    let svc = svc(plan_repo(Some(plan(2, Some(500), None)), vec![]), MockPayPlatform::new());
    let other_partner = Actor::new(21, "s", Party::Partner { partner_id: PARTNER + 1 }, ["*"]);

    let own = svc.get_share_plan(&partner_actor(), PARTNER).await.unwrap();
    let platform = svc.get_share_plan(&platform_actor(), PARTNER).await.unwrap();
    let refused = [
        svc.get_share_plan(&other_partner, PARTNER).await.unwrap_err(),
        svc.get_share_plan(&tenant_actor(), PARTNER).await.unwrap_err(),
        svc.get_share_plan(&platform_actor(), PARTNER + 1).await.unwrap_err(),
    ];

    assert_eq!(own, platform);
    assert_eq!((own.version, own.commission_bp, own.platform_bp), (2, 500, 100));
    assert!(refused.iter().all(|e| matches!(e, Error::NotFound(_))), "{refused:?}");
}

#[tokio::test]
async fn before_a_plan_is_set_reading_it_is_a_404() {
    let svc = svc(plan_repo(None, vec![]), MockPayPlatform::new());

    let err = svc.get_share_plan(&platform_actor(), PARTNER).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("share plan")), "{err:?}");
}

// --- what a plan holds -------------------------------------------------------------------------

#[tokio::test]
async fn rates_outside_0_to_10000_basis_points_are_a_400_naming_the_field() {
    let mut repo = plan_repo(None, vec![]);
    repo.expect_put_share_plan().never();
    let svc = svc(repo, MockPayPlatform::new());

    let err = svc.put_share_plan(&platform_actor(), PARTNER, plan_put(Some(10_001), Some(-1))).await.unwrap_err();

    assert_eq!(field_of(&err), ["commission_bp", "platform_bp"]);
}

#[tokio::test]
async fn a_merchant_receiver_needs_a_merchant_id_and_its_registered_name() {
    let mut repo = plan_repo(None, vec![]);
    repo.expect_put_share_plan().never();
    let svc = svc(repo, MockPayPlatform::new());
    let mut input = plan_put(Some(500), None);
    input.receiver.account = ReceiverAccount::parse("o-not-digits").unwrap();
    input.receiver.name = None;
    let mut own = plan_put(Some(500), None);
    own.receiver.account = ReceiverAccount::parse(SP_MCHID).unwrap();

    let errors = [
        svc.put_share_plan(&platform_actor(), PARTNER, input).await.unwrap_err(),
        svc.put_share_plan(&platform_actor(), PARTNER, own).await.unwrap_err(),
    ];

    assert_eq!(field_of(&errors[0]), ["receiver.account", "receiver.name"]);
    assert_eq!(field_of(&errors[1]), ["receiver.account"], "the platform is not a partner's receiver");
}

#[tokio::test]
async fn a_person_receiver_needs_no_name() {
    let mut repo = plan_repo(None, vec![]);
    let seen = storing(&mut repo);
    let svc = svc(repo, MockPayPlatform::new());
    let mut input = plan_put(Some(0), None);
    input.receiver = ReceiverInput {
        kind: ReceiverType::PersonalOpenid,
        account: ReceiverAccount::parse("oUpF8uMuAJO_M2pxb1Q9zNjWeS6o").unwrap(),
        name: None,
    };

    let view = svc.put_share_plan(&platform_actor(), PARTNER, input).await.unwrap();

    assert_eq!(
        view.receiver,
        ReceiverView { kind: ReceiverType::PersonalOpenid, account: "oUpF********************eS6o".into(), name: None }
    );
    assert_eq!(seen.lock().unwrap()[0].0.receiver.account, "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o", "stored in full, shown masked");
}

#[tokio::test]
async fn a_missing_partner_is_a_404() {
    let mut repo = plan_repo(None, vec![]);
    repo.expect_put_share_plan().never();
    let svc = svc(repo, MockPayPlatform::new());

    let err = svc.put_share_plan(&platform_actor(), PARTNER + 1, plan_put(Some(500), None)).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("partner")), "{err:?}");
}

#[tokio::test]
async fn each_change_is_the_next_version_audited_on_the_partner_with_the_account_masked() {
    let mut repo = plan_repo(Some(plan(4, Some(500), None)), vec![]);
    let seen = storing(&mut repo);
    let svc = svc(repo, MockPayPlatform::new());

    let view = svc.put_share_plan(&platform_actor(), PARTNER, plan_put(Some(300), Some(50))).await.unwrap();

    assert_eq!((view.version, view.commission_bp, view.platform_bp), (5, 300, 50));
    assert_eq!(view.updated_at, now());
    let (stored, audit) = seen.lock().unwrap()[0].clone();
    assert_eq!((stored.version, stored.commission_bp, stored.platform_bp), (5, Some(300), Some(50)));
    assert_eq!(
        (audit.action.as_str(), audit.target_type, audit.target_id, audit.partner_id),
        ("share_plan.update", "share_plan", Some(PARTNER), Some(PARTNER))
    );
    let after = audit.after.unwrap();
    assert_eq!((after["version"].as_i64(), after["commission_bp"].as_i64()), (Some(5), Some(300)));
    assert!(!after.to_string().contains("1900000301"), "the audit shows the account masked: {after}");
}

#[tokio::test]
async fn absent_rates_follow_the_providers_defaults_and_say_so() {
    let mut repo = plan_repo(None, vec![]);
    let seen = storing(&mut repo);
    let svc = svc(repo, MockPayPlatform::new());

    let view = svc.put_share_plan(&platform_actor(), PARTNER, plan_put(None, None)).await.unwrap();

    assert_eq!((view.version, view.commission_bp, view.platform_bp), (1, 200, 100));
    assert!(view.commission_bp_default && view.platform_bp_default);
    assert_eq!(seen.lock().unwrap()[0].1.action, "share_plan.create");
    let stored = &seen.lock().unwrap()[0].0;
    assert_eq!((stored.commission_bp, stored.platform_bp), (None, None), "stored as following the default, not as its value today");
}

// --- the max_ratio check -----------------------------------------------------------------------

#[tokio::test]
async fn a_plan_over_a_sub_merchants_max_ratio_is_a_409_naming_the_rate_and_each_sub_merchant() {
    let tenants = vec![sub_tenant(31, SUB_MCHID, None), sub_tenant(32, OTHER_SUB, None), sub_tenant(33, "1900000203", None)];
    let mut repo = plan_repo(None, tenants);
    repo.expect_put_share_plan().never();
    let svc = svc(repo, ratios(&[(SUB_MCHID, 3000), (OTHER_SUB, 1000), ("1900000203", 5000)]));

    let err = svc.put_share_plan(&platform_actor(), PARTNER, plan_put(Some(2950), None)).await.unwrap_err();

    let Error::Blocked(Reason::OverMaxRatio, errors) = &err else { panic!("{err:?}") };
    assert_eq!(errors.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(), ["commission_bp", "commission_bp"]);
    assert!(
        errors[0].message.contains("3050 bp") && errors[0].message.contains("tenant 31") && errors[0].message.contains("3000 bp"),
        "{}",
        errors[0].message
    );
    assert!(errors[1].message.contains(OTHER_SUB) && errors[1].message.contains("1000 bp"), "{}", errors[1].message);
}

#[tokio::test]
async fn a_plan_at_exactly_the_max_ratio_is_set() {
    let mut repo = plan_repo(None, vec![sub_tenant(31, SUB_MCHID, None)]);
    let seen = storing(&mut repo);
    let svc = svc(repo, ratios(&[(SUB_MCHID, 3000)]));

    svc.put_share_plan(&platform_actor(), PARTNER, plan_put(Some(2900), None)).await.unwrap();

    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn lowering_a_plan_is_never_refused_and_asks_the_platform_nothing() {
    let mut repo = plan_repo(Some(plan(1, Some(2900), None)), vec![sub_tenant(31, SUB_MCHID, None)]);
    let seen = storing(&mut repo);
    let mut platform = MockPayPlatform::new();
    platform.expect_max_ratio().never();
    let svc = svc(repo, platform);

    let view = svc.put_share_plan(&platform_actor(), PARTNER, plan_put(Some(2000), Some(100))).await.unwrap();

    assert_eq!((view.version, view.commission_bp), (2, 2000));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_platform_outage_during_the_check_is_a_502_and_stores_nothing() {
    let mut repo = plan_repo(None, vec![sub_tenant(31, SUB_MCHID, None)]);
    repo.expect_put_share_plan().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_max_ratio().returning(|_| Err(PayPlatformError::Unavailable("timed out".into())));
    let svc = svc(repo, platform);

    let err = svc.put_share_plan(&platform_actor(), PARTNER, plan_put(Some(500), None)).await.unwrap_err();

    assert!(matches!(err, Error::Upstream(_)), "{err:?}");
}

#[tokio::test]
async fn switching_a_tenant_to_sub_merchant_checks_its_partners_plan_against_the_max_ratio() {
    let mut repo = with_provider(repo_with(Some(config())), Some(provider()));
    let current = plan(1, Some(2950), Some(100));
    repo.expect_share_plan().withf(|id| *id == PARTNER).returning(move |_| Ok(Some(current.clone())));
    repo.expect_put_config().never();
    let svc = svc(repo, ratios(&[(SUB_MCHID, 3000)]));

    let err = svc.put_config(&tenant_actor(), sub_put(SUB_MCHID)).await.unwrap_err();

    assert!(matches!(err, Error::Blocked(Reason::OverMaxRatio, _)), "{err:?}");
    assert_eq!(field_of(&err), ["sub_mchid"]);
}

#[tokio::test]
async fn a_sub_merchant_the_provider_does_not_have_is_a_409_naming_sub_mchid() {
    let mut repo = no_plan(with_provider(repo_with(Some(config())), Some(provider())));
    repo.expect_put_config().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_max_ratio().returning(|_| Err(refused(400, "INVALID_REQUEST")));
    let svc = svc(repo, platform);

    let err = svc.put_config(&tenant_actor(), sub_put(SUB_MCHID)).await.unwrap_err();

    assert!(matches!(err, Error::Blocked(Reason::PlatformState, _)), "{err:?}");
    assert_eq!(field_of(&err), ["sub_mchid"]);
}

#[tokio::test]
async fn keeping_the_same_sub_merchant_asks_the_platform_nothing() {
    let mut repo = with_provider(repo_with(Some(super::provider::sub_config())), Some(provider()));
    repo.expect_share_plan().never();
    repo.expect_put_config().times(1).returning(|c, _, _| Ok(c));
    let mut platform = MockPayPlatform::new();
    platform.expect_max_ratio().never();
    let svc = svc(repo, platform);
    let input = PaymentConfigPut { mode: None, enabled: Some(false), ..sub_put(SUB_MCHID) };

    let view = svc.put_config(&tenant_actor(), input).await.unwrap();

    assert!(!view.enabled);
}

#[tokio::test]
async fn raising_a_providers_default_is_checked_for_the_tenants_that_follow_it() {
    // Tenant 31's partner plan names its own platform rate: the raise does not touch it.
    let tenants = vec![sub_tenant(31, SUB_MCHID, Some(plan(1, Some(500), Some(100)))), sub_tenant(32, OTHER_SUB, None)];
    let mut before = provider();
    before.platform_bp = 100;
    let mut repo = with_provider(MockPaymentRepo::new(), Some(before));
    repo.expect_sub_merchant_tenants().withf(|p| p.is_none()).returning(move |_| Ok(tenants.clone()));
    repo.expect_put_provider().never();
    let mut platform = MockPayPlatform::new();
    platform
        .expect_max_ratio()
        .times(1)
        .withf(|a| a.sub_merchant.as_ref().is_some_and(|s| s.sub_mchid == OTHER_SUB))
        .returning(|_| Ok(3000));
    let svc = svc(repo, platform);

    let err = svc.put_provider(&platform_actor(), ProviderConfigPut { platform_bp: Some(3100), ..provider_put() }).await.unwrap_err();

    assert!(matches!(err, Error::Blocked(Reason::OverMaxRatio, _)), "{err:?}");
    assert_eq!(field_of(&err), ["platform_bp"]);
}

#[tokio::test]
async fn a_provider_default_kept_or_lowered_is_not_checked() {
    let mut before = provider();
    before.platform_bp = 100;
    before.default_commission_bp = 200;
    let mut repo = with_provider(MockPaymentRepo::new(), Some(before));
    repo.expect_sub_merchant_tenants().never();
    repo.expect_put_provider().times(1).returning(|c, _| Ok(c));
    let mut platform = MockPayPlatform::new();
    platform.expect_max_ratio().never();
    let svc = svc(repo, platform);

    let view = svc.put_provider(&platform_actor(), ProviderConfigPut { platform_bp: Some(50), ..provider_put() }).await.unwrap();

    assert_eq!((view.platform_bp, view.default_commission_bp), (50, 200));
}
