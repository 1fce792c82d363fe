//! [`CampaignService`]: what a campaign refuses before anything is stored, starting once, and
//! ticks that move a tenant through pre-flight and upload, pause on a used-up quota, and leave a
//! tenant another tick has claimed. Campaign storage is an in-memory mock with the store's
//! conditional writes.
use super::*;
use crate::campaign::*;
use crate::ports::MockCampaignRepo;
use crate::service::{CAMPAIGN_JOB, CampaignService, CampaignSettings, PreflightService};

#[derive(Default)]
struct Campaigns {
    campaigns: Vec<Campaign>,
    tenants: Vec<CampaignTenant>,
    /// Events written with the campaign writes that took: type and subject.
    published: Vec<(&'static str, Option<Id>)>,
}

type SharedCampaigns = Arc<Mutex<Campaigns>>;

fn held(c: &SharedCampaigns) -> std::sync::MutexGuard<'_, Campaigns> {
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// Campaign storage answering from `c`, writes conditional on revisions as the store does.
fn campaign_repo(c: &SharedCampaigns) -> MockCampaignRepo {
    let mut r = MockCampaignRepo::new();
    let st = c.clone();
    r.expect_insert_campaign().returning(move |mut campaign, tenants, _audit| {
        let mut s = held(&st);
        campaign.id = s.campaigns.len() as Id + 1;
        for mut t in tenants {
            t.campaign_id = campaign.id;
            s.tenants.push(t);
        }
        s.campaigns.push(campaign.clone());
        Ok(campaign)
    });
    let st = c.clone();
    r.expect_campaign()
        .returning(move |scope, id| Ok(held(&st).campaigns.iter().find(|c| c.id == id && !matches!(scope, Party::Tenant { .. })).cloned()));
    let st = c.clone();
    r.expect_update_campaign().returning(move |campaign, read, effects| {
        let mut s = held(&st);
        let Some(stored) = s.campaigns.iter_mut().find(|c| c.id == campaign.id) else { return Ok(false) };
        if stored.revision != read {
            return Ok(false);
        }
        *stored = Campaign { revision: read + 1, ..campaign };
        s.published.extend(effects.events.iter().map(|e| (e.kind, e.subject)));
        Ok(true)
    });
    let st = c.clone();
    r.expect_wave_tenants()
        .returning(move |id, wave| Ok(held(&st).tenants.iter().filter(|t| t.campaign_id == id && t.wave == Some(wave)).cloned().collect()));
    let st = c.clone();
    r.expect_assign_wave().returning(move |id, wave, limit| {
        let mut s = held(&st);
        let mut took = 0;
        for t in s.tenants.iter_mut().filter(|t| t.campaign_id == id && t.wave.is_none()) {
            if took == limit {
                break;
            }
            t.wave = Some(wave);
            took += 1;
        }
        Ok(took)
    });
    let st = c.clone();
    r.expect_update_campaign_tenant().returning(move |t, read| {
        let mut s = held(&st);
        let Some(stored) = s.tenants.iter_mut().find(|x| x.campaign_id == t.campaign_id && x.tenant_id == t.tenant_id) else {
            return Ok(false);
        };
        if stored.revision != read {
            return Ok(false);
        }
        *stored = CampaignTenant { revision: read + 1, ..t };
        Ok(true)
    });
    let st = c.clone();
    // The campaigns here are the platform's: every tenant is in scope.
    r.expect_tenants_outside().returning(|_, _, _, _| Ok(Vec::new()));
    r.expect_campaign_counts().returning(move |_, id, wave| {
        let mut counts: std::collections::BTreeMap<CampaignTenantStatus, u32> = Default::default();
        for t in held(&st).tenants.iter().filter(|t| t.campaign_id == id && wave.is_none_or(|w| t.wave == Some(w))) {
            *counts.entry(t.status).or_default() += 1;
        }
        Ok(counts.into_iter().collect())
    });
    r
}

fn platform_actor() -> Actor {
    Actor::new(1, "s", Party::Platform, ["miniprogram:*"])
}

/// The campaign service over `c`, and a pipeline and pre-flight over `s`, sharing `d`'s platform.
fn campaigns(s: &Shared, c: &SharedCampaigns, mut d: Doubles) -> CampaignService {
    library(&mut d.platform, vec![]);
    let pipeline = Arc::new(pipeline(s, d));
    let preflight =
        Arc::new(PreflightService::new(pipeline.authorization().clone(), pipeline.platform().clone(), Arc::new(FixedClock::new(now()))));
    CampaignService::new(
        Arc::new(campaign_repo(c)),
        pipeline,
        preflight,
        Arc::new(jobs(s)),
        Arc::new(FixedClock::new(now())),
        CampaignSettings::default(),
    )
}

fn new_campaign(tenants: TenantSelection) -> NewCampaign {
    NewCampaign {
        name: atrium_kernel::Text::parse("Spring").unwrap(),
        template_id: 1,
        version: version("2.0.0"),
        description: description("Spring"),
        version_desc: None,
        ext_json: Some(serde_json::json!({"extAppid": "{authorizer_appid}"}).as_object().cloned().unwrap_or_default()),
        tenants,
        waves: None,
        auto_advance: None,
        max_rejections: None,
        domains: None,
        privacy: None,
    }
}

fn only(tenant: Id) -> TenantSelection {
    TenantSelection { all: None, partner_id: None, tenant_ids: Some(vec![tenant]) }
}

fn ready_platform(d: &mut Doubles) {
    d.platform
        .expect_domains()
        .returning(|_| Ok(ServerDomains { requestdomain: vec!["https://api.example.com".into()], ..Default::default() }));
    d.platform.expect_privacy().returning(|_| {
        Ok(PrivacySettings {
            owner_setting: PrivacyOwner { contact_email: Some("p@example.com".into()), notice_method: "app".into(), ..Default::default() },
            setting_list: vec![PrivacyItem { privacy_key: "PhoneNumber".into(), privacy_text: "orders".into() }],
        })
    });
    d.platform
        .expect_categories()
        .returning(|_| Ok(vec![Category { first_id: 1, first_class: "a".into(), second_id: 2, second_class: "b".into() }]));
}

#[tokio::test]
async fn a_tenant_caller_runs_no_campaign_and_nothing_is_stored() {
    let (s, c) = (state(), SharedCampaigns::default());
    let e = campaigns(&s, &c, doubles()).create(&tenant_actor(), new_campaign(only(TENANT))).await.unwrap_err();
    assert_eq!(e.reason(), Reason::PartyNotAllowed);
    assert!(held(&c).campaigns.is_empty());
}

#[tokio::test]
async fn a_template_not_in_the_library_is_a_404_naming_it() {
    let (s, c) = (state(), SharedCampaigns::default());
    let mut input = new_campaign(only(TENANT));
    input.template_id = 99;
    let e = campaigns(&s, &c, doubles()).create(&platform_actor(), input).await.unwrap_err();
    assert_eq!(field_of(&e), Some("template_id"), "{e:?}");
    assert!(held(&c).campaigns.is_empty());
}

#[tokio::test]
async fn no_authorised_tenant_in_scope_is_a_400_naming_tenants() {
    let (s, c) = (state(), SharedCampaigns::default());
    lock(&s).authorization = None;
    let all = TenantSelection { all: Some(true), partner_id: None, tenant_ids: None };
    let e = campaigns(&s, &c, doubles()).create(&platform_actor(), new_campaign(all)).await.unwrap_err();
    assert_eq!(field_of(&e), Some("tenants"), "{e:?}");
    assert!(held(&c).campaigns.is_empty());
}

#[tokio::test]
async fn a_draft_starts_once_and_its_driver_is_queued() {
    let (s, c) = (state(), SharedCampaigns::default());
    let svc = campaigns(&s, &c, doubles());
    let view = svc.create(&platform_actor(), new_campaign(only(TENANT))).await.unwrap();
    assert_eq!((view.status, view.tenant_total, view.waves.len()), (CampaignStatus::Draft, 1, 2));
    let started = svc.start(&platform_actor(), view.id).await.unwrap();
    assert_eq!(started.status, CampaignStatus::Running);
    let queued: Vec<NewJob> = lock(&s).jobs.iter().filter(|j| j.kind == CAMPAIGN_JOB).cloned().collect();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].dedupe_key.as_deref(), Some("campaign:1"));
    let e = svc.start(&platform_actor(), view.id).await.unwrap_err();
    assert_eq!(e.reason(), Reason::State);
}

#[tokio::test]
async fn a_tick_takes_a_pending_tenant_through_its_preflight_to_an_upload_with_its_ext_json() {
    let (s, c) = (state(), SharedCampaigns::default());
    let mut d = doubles();
    ready_platform(&mut d);
    let svc = campaigns(&s, &c, d);
    let view = svc.create(&platform_actor(), new_campaign(only(TENANT))).await.unwrap();
    svc.start(&platform_actor(), view.id).await.unwrap();

    assert!(svc.tick(view.id).await.unwrap(), "the campaign goes on");
    let t = held(&c).tenants[0].clone();
    assert_eq!((t.wave, t.status), (Some(0), CampaignTenantStatus::Uploading), "{t:?}");
    let uploads = lock(&s).uploads.clone();
    assert_eq!(uploads.len(), 1);
    assert_eq!(Some(uploads[0].id), t.upload_task_id);
    let UploadSource::Template { ext_json, .. } = &uploads[0].source else { panic!("a template upload") };
    assert_eq!(ext_json["extAppid"], APPID, "filled in for the tenant");

    // The upload is still queued: another tick leaves the tenant as it is.
    assert!(svc.tick(view.id).await.unwrap());
    assert_eq!(held(&c).tenants[0].status, CampaignTenantStatus::Uploading);
    assert_eq!(lock(&s).uploads.len(), 1, "uploaded once");
}

#[tokio::test]
async fn a_used_up_quota_pauses_the_campaign_and_the_uploaded_tenant_waits() {
    let (s, c) = (state(), SharedCampaigns::default());
    let mut d = doubles();
    ready_platform(&mut d);
    d.platform.expect_audit_quota().times(1).returning(|_| Ok(AuditQuota { rest: 0, limit: 20, speedup_rest: 0, speedup_limit: 3 }));
    let svc = campaigns(&s, &c, d);
    let view = svc.create(&platform_actor(), new_campaign(only(TENANT))).await.unwrap();
    svc.start(&platform_actor(), view.id).await.unwrap();
    svc.tick(view.id).await.unwrap();
    lock(&s).uploads[0].status = UploadStatus::Uploaded;

    svc.tick(view.id).await.unwrap();
    let campaign = held(&c).campaigns[0].clone();
    assert_eq!((campaign.status, campaign.paused_reason), (CampaignStatus::Paused, Some(PauseReason::Quota)));
    assert_eq!(held(&c).published, [(crate::events::CAMPAIGN_PAUSED, Some(campaign.id))], "starting it published nothing");
    assert_eq!(held(&c).tenants[0].status, CampaignTenantStatus::Uploading, "not submitted");
    assert!(lock(&s).audits.is_empty());
}

#[tokio::test]
async fn a_tenant_another_tick_claimed_is_left_alone() {
    let (s, c) = (state(), SharedCampaigns::default());
    // A platform mock without expectations: a pre-flight call would fail the test.
    let svc = campaigns(&s, &c, doubles());
    let view = svc.create(&platform_actor(), new_campaign(only(TENANT))).await.unwrap();
    svc.start(&platform_actor(), view.id).await.unwrap();
    // Another instance's tick holds the tenant: its claim runs for two more minutes.
    {
        let mut held = held(&c);
        let t = &mut held.tenants[0];
        t.wave = Some(0);
        t.next_at = Some(now() + Duration::minutes(2));
    }
    let mut campaign = held(&c).campaigns[0].clone();
    campaign.current_wave = Some(0);
    campaign.revision += 1;
    held(&c).campaigns[0] = campaign;
    assert!(svc.tick(view.id).await.unwrap());
    assert_eq!(held(&c).tenants[0].status, CampaignTenantStatus::Pending);
    assert!(lock(&s).uploads.is_empty());
}
