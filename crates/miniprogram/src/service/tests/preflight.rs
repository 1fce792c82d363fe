//! [`PreflightService`] and the audit speed-up and withdrawal: domains, privacy settings, the
//! audit quota and its cache, and the pre-flight check.
use super::*;
use crate::service::{PreflightService, QUOTA_CACHE};

fn platform_actor() -> Actor {
    Actor::new(1, "s", Party::Platform, ["miniprogram:*"])
}

/// The pre-flight service and a pipeline over the same state, sharing `platform`.
fn preflight(s: &Shared, platform: MockMiniProgramPlatform, clock: Arc<FixedClock>) -> PreflightService {
    let platform: Arc<dyn MiniProgramPlatform> = Arc::new(platform);
    let authorization = Arc::new(AuthorizationService::new(Arc::new(authorization_repo(s)), platform.clone(), clock.clone(), settings()));
    PreflightService::new(authorization, platform, clock)
}

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(now()))
}

fn quota(rest: i64) -> AuditQuota {
    AuditQuota { rest, limit: 20, speedup_rest: 1, speedup_limit: 3 }
}

fn privacy_set() -> PrivacySettings {
    PrivacySettings {
        owner_setting: PrivacyOwner {
            contact_email: Some("p@example.com".into()),
            notice_method: "in the app".into(),
            ..Default::default()
        },
        setting_list: vec![PrivacyItem { privacy_key: "PhoneNumber".into(), privacy_text: "to ship orders".into() }],
    }
}

fn category() -> Category {
    Category { first_id: 1, first_class: "Tools".into(), second_id: 2, second_class: "Office".into() }
}

fn ready(platform: &mut MockMiniProgramPlatform) {
    platform
        .expect_domains()
        .returning(|_| Ok(ServerDomains { requestdomain: vec!["https://api.example.com".into()], ..Default::default() }));
    platform.expect_privacy().returning(|_| Ok(privacy_set()));
    platform.expect_categories().returning(|_| Ok(vec![category()]));
    platform.expect_audit_quota().returning(|_| Ok(quota(5)));
}

fn names(view: &PreflightView, ok: bool) -> Vec<&str> {
    view.checks.iter().filter(|c| c.ok == ok).map(|c| c.name.as_str()).collect()
}

#[tokio::test]
async fn a_ready_mini_program_passes_every_check() {
    let s = state();
    let mut platform = MockMiniProgramPlatform::new();
    ready(&mut platform);
    let view = preflight(&s, platform, clock()).preflight(&tenant_actor(), None).await.unwrap();
    assert!(view.ok);
    assert_eq!(names(&view, true), ["authorized", "code_management", "domains", "privacy", "category", "audit_quota"]);
}

#[tokio::test]
async fn without_an_authorisation_every_check_fails_and_the_platform_is_not_asked() {
    let s = state();
    lock(&s).authorization = None;
    // A mock without expectations: any platform call fails the test.
    let view = preflight(&s, MockMiniProgramPlatform::new(), clock()).preflight(&tenant_actor(), None).await.unwrap();
    assert!(!view.ok);
    assert_eq!(view.checks.len(), 6);
    assert!(view.checks.iter().all(|c| !c.ok));
    assert!(view.checks[1].detail.contains("not checked"));
}

#[tokio::test]
async fn each_missing_setting_fails_its_own_check_and_a_platform_failure_fails_only_its_check() {
    let s = state();
    lock(&s).authorization.as_mut().unwrap().func_info = vec![17];
    let mut platform = MockMiniProgramPlatform::new();
    platform.expect_domains().returning(|_| Ok(ServerDomains::default()));
    platform.expect_privacy().returning(|_| Ok(PrivacySettings::default()));
    platform.expect_categories().returning(|_| Err(PlatformError::Unavailable("timed out".into())));
    platform.expect_audit_quota().returning(|_| Ok(quota(0)));
    let view = preflight(&s, platform, clock()).preflight(&tenant_actor(), None).await.unwrap();
    assert!(!view.ok);
    assert_eq!(names(&view, true), ["authorized"]);
    assert_eq!(names(&view, false), ["code_management", "domains", "privacy", "category", "audit_quota"]);
    assert!(view.checks[4].detail.contains("timed out"), "{:?}", view.checks[4]);
    assert!(view.checks[5].detail.contains("used up"), "{:?}", view.checks[5]);
}

#[tokio::test]
async fn a_tenant_out_of_scope_is_a_404_before_any_platform_call() {
    let s = state();
    let e = preflight(&s, MockMiniProgramPlatform::new(), clock()).preflight(&other_tenant_actor(), Some(TENANT)).await.unwrap_err();
    assert_eq!(field_of(&e), Some("tenant_id"), "{e:?}");
}

#[tokio::test]
async fn bad_domains_are_a_400_naming_each_entry_and_nothing_is_sent() {
    let s = state();
    let input = DomainsInput {
        tenant_id: None,
        requestdomain: vec!["https://api.example.com".into(), "https://10.0.0.1".into()],
        wsrequestdomain: vec![],
        uploaddomain: vec!["https://up.example.com:8443".into()],
        downloaddomain: vec![],
        webviewdomain: vec![],
    };
    let e = preflight(&s, MockMiniProgramPlatform::new(), clock()).set_domains(&tenant_actor(), input).await.unwrap_err();
    let Error::Invalid(errors) = e else { panic!("{e:?}") };
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["requestdomain[1]", "uploaddomain[0]"]);
}

#[tokio::test]
async fn good_domains_and_privacy_are_sent_as_given_and_audited_with_what_they_were() {
    let s = state();
    let mut platform = MockMiniProgramPlatform::new();
    platform
        .expect_domains()
        .times(1)
        .returning(|_| Ok(ServerDomains { webviewdomain: vec!["https://old.example.com".into()], ..Default::default() }));
    // The settings before cannot be read: the change is audited without them.
    platform.expect_privacy().times(1).returning(|_| Err(PlatformError::Unavailable("timed out".into())));
    platform
        .expect_set_domains()
        .withf(|access, d| access.authorizer_appid == APPID && d.webviewdomain == ["https://www.example.com"])
        .times(1)
        .returning(|_, _| Ok(()));
    platform.expect_set_privacy().withf(|_, p| *p == privacy_set()).times(1).returning(|_, _| Ok(()));
    let svc = preflight(&s, platform, clock());
    let input = DomainsInput {
        tenant_id: Some(TENANT),
        requestdomain: vec![],
        wsrequestdomain: vec![],
        uploaddomain: vec![],
        downloaddomain: vec![],
        webviewdomain: vec!["https://www.example.com".into()],
    };
    let view = svc.set_domains(&tenant_actor(), input).await.unwrap();
    assert_eq!(view.tenant_id, TENANT);
    let p = privacy_set();
    let view = svc
        .set_privacy(&tenant_actor(), PrivacyInput { tenant_id: None, owner_setting: p.owner_setting, setting_list: p.setting_list })
        .await
        .unwrap();
    assert_eq!(view.settings, privacy_set());
    let audits = lock(&s).settings_audits.clone();
    let shown: Vec<(&str, &str, Option<Id>, Option<Id>)> =
        audits.iter().map(|a| (a.action.as_str(), a.target_type, a.target_id, a.tenant_id)).collect();
    assert_eq!(
        shown,
        [
            ("miniprogram.domains.update", "miniprogram_settings", Some(TENANT), Some(TENANT)),
            ("miniprogram.privacy.update", "miniprogram_settings", Some(TENANT), Some(TENANT))
        ]
    );
    assert_eq!(audits[0].partner_id, Some(PARTNER));
    assert_eq!(audits[0].actor_user_id, Some(tenant_actor().user_id));
    assert_eq!(audits[0].before, Some(serde_json::json!({"webviewdomain": ["https://old.example.com"]})));
    assert_eq!(audits[0].after, Some(serde_json::json!({"webviewdomain": ["https://www.example.com"]})));
    assert_eq!(audits[1].before, None);
    assert_eq!(audits[1].after.as_ref().map(|a| a["setting_list"][0]["privacy_key"].clone()), Some(serde_json::json!("PhoneNumber")));
}

#[tokio::test]
async fn the_quota_is_asked_with_any_authorised_mini_program_of_a_platform_caller() {
    let s = state();
    let mut platform = MockMiniProgramPlatform::new();
    platform.expect_audit_quota().withf(|a| a.authorizer_appid == APPID).times(1).returning(|_| Ok(quota(7)));
    assert_eq!(preflight(&s, platform, clock()).audit_quota(&platform_actor(), None).await.unwrap().rest, 7);

    lock(&s).authorization = None;
    let e = preflight(&s, MockMiniProgramPlatform::new(), clock()).audit_quota(&platform_actor(), None).await.unwrap_err();
    assert_eq!(e.reason(), Reason::MiniprogramAuthorization);
    assert_eq!(field_of(&e), Some("tenant_id"));
}

#[tokio::test]
async fn the_cached_quota_is_asked_once_a_minute_and_counts_submits_since() {
    let s = state();
    let clock = clock();
    let mut platform = MockMiniProgramPlatform::new();
    platform.expect_audit_quota().times(2).returning(|_| Ok(quota(2)));
    let svc = preflight(&s, platform, clock.clone());
    assert_eq!(svc.cached_quota(TENANT).await.unwrap().rest, 2);
    svc.spend_cached_quota();
    assert_eq!(svc.cached_quota(TENANT).await.unwrap().rest, 1);
    svc.spend_cached_quota();
    svc.spend_cached_quota();
    assert_eq!(svc.cached_quota(TENANT).await.unwrap().rest, 0, "never below zero");
    clock.advance(chrono::Duration::from_std(QUOTA_CACHE).unwrap());
    assert_eq!(svc.cached_quota(TENANT).await.unwrap().rest, 2, "asked again after a minute");
}

#[tokio::test]
async fn undo_withdraws_a_running_audit_and_a_decided_one_is_a_409_with_no_platform_call() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    lock(&s).audits.push(audit(201, 100, AuditStatus::Passed));
    let mut d = doubles();
    d.platform.expect_undo_audit().withf(|a| a.authorizer_appid == APPID).times(1).returning(|_| Ok(()));
    let svc = pipeline(&s, d);
    let view = svc.undo_audit(&tenant_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap();
    assert_eq!(view.status, AuditStatus::Withdrawn);
    assert_eq!(lock(&s).audits[0].status, AuditStatus::Withdrawn);

    let e = svc.undo_audit(&tenant_actor(), AuditTaskRef { audit_task_id: 201 }).await.unwrap_err();
    assert_eq!(e.reason(), Reason::State);
    let e = svc.undo_audit(&other_tenant_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap_err();
    assert_eq!(field_of(&e), Some("audit_task_id"), "another tenant's audit is not found: {e:?}");
}

#[tokio::test]
async fn a_speed_up_names_the_audit_and_no_speed_up_left_is_a_429() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform.expect_speedup_audit().withf(|_, auditid| *auditid == 1234).times(1).returning(|_, _| Ok(()));
    let view = pipeline(&s, d).speedup_audit(&tenant_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap();
    assert_eq!(view.status, AuditStatus::Auditing);

    let mut d = doubles();
    d.platform.expect_speedup_audit().returning(|_, _| Err(refused(87013)));
    let e = pipeline(&s, d).speedup_audit(&tenant_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap_err();
    assert!(matches!(e, Error::RateLimited { .. }), "{e:?}");
}

#[tokio::test]
async fn a_tenant_spends_its_own_budget_and_the_platform_keeps_its_reserve() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    // The platform has plenty left, then is down to its reserve of speed-ups (1 of 5 is 20 %).
    let mut left = vec![AuditQuota { rest: 50, limit: 100, speedup_rest: 1, speedup_limit: 5 }, quota(20)];
    left.reverse();
    let left = std::sync::Mutex::new(left);
    d.platform.expect_audit_quota().returning(move |_| {
        Ok(left.lock().unwrap().pop().unwrap_or(AuditQuota { rest: 50, limit: 100, speedup_rest: 4, speedup_limit: 5 }))
    });
    d.platform.expect_speedup_audit().times(3).returning(|_, _| Ok(()));
    let svc = pipeline_over(Arc::new(authorization_repo(&s)), &s, d, budgeted_settings());
    let tenant = tenant_actor();
    let speedup = || svc.speedup_audit(&tenant, AuditTaskRef { audit_task_id: 200 });

    // 1 of 5 speed-ups left is the platform's reserve: the tenant is refused, nothing spent.
    let e = speedup().await.unwrap_err();
    assert!(matches!(&e, Error::RateLimited { message, .. } if message.contains("20 %")), "{e:?}");
    assert!(lock(&s).spends.is_empty());
    // With speed-ups left (1 of 3, then 4 of 5), one an hour: the second is a 429
    // saying when the hour is over.
    speedup().await.unwrap();
    let e = speedup().await.unwrap_err();
    match &e {
        Error::RateLimited { message, retry_after_secs } => {
            assert_eq!(*retry_after_secs, 3600, "{message}");
            assert!(message.contains("audit speed-ups (1 in 1 hour(s))"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(lock(&s).spends.len(), 1);
    // The platform's users spend no tenant budget.
    svc.speedup_audit(&platform_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap();
    svc.speedup_audit(&platform_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap();
    assert_eq!(lock(&s).spends.len(), 1);
}

#[tokio::test]
async fn a_call_the_platform_refuses_gives_its_spend_back() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform.expect_audit_quota().returning(|_| Ok(AuditQuota { rest: 50, limit: 100, speedup_rest: 4, speedup_limit: 5 }));
    d.platform.expect_speedup_audit().times(1).returning(|_, _| Err(refused(87013)));
    d.platform.expect_undo_audit().times(1).returning(|_| Err(PlatformError::Unavailable("timed out".into())));
    let svc = pipeline_over(Arc::new(authorization_repo(&s)), &s, d, budgeted_settings());
    svc.speedup_audit(&tenant_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap_err();
    svc.undo_audit(&tenant_actor(), AuditTaskRef { audit_task_id: 200 }).await.unwrap_err();
    assert!(lock(&s).spends.is_empty(), "given back: {:?}", lock(&s).spends);
}
