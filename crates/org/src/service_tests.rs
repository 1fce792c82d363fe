//! Service tests of the org rules against mocked ports.
use crate::*;
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{Actor, Error, FixedClock, Id, Money, Name, Party, PartyStanding, PermissionSet};
use chrono::TimeZone;
use std::sync::Arc;

fn now() -> atrium_kernel::Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).single().expect("valid")
}

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(now()))
}

fn actor(party: Party, perms: &[&str]) -> Actor {
    Actor {
        user_id: 10,
        session_id: "s".into(),
        party,
        standing: PartyStanding::Active,
        permissions: PermissionSet::new(perms.iter().copied()),
        ip: None,
        request_id: None,
    }
}

fn quiet_access() -> Arc<MockAccessChanged> {
    Arc::new(MockAccessChanged::new())
}

fn tenant(id: Id, partner: Option<Id>) -> Tenant {
    Tenant {
        id,
        partner_id: partner,
        name: "T".into(),
        credit_code: None,
        contact_name: None,
        phone: None,
        email: None,
        status: TenantStatus::Active,
        payroll_policy: Default::default(),
        created_at: now(),
        updated_at: now(),
    }
}

fn new_tenant(partner_id: Option<Id>) -> NewTenant {
    NewTenant {
        name: Name::parse("Acme").unwrap(),
        partner_id,
        credit_code: None,
        contact_name: None,
        phone: None,
        email: None,
        status: None,
        payroll_policy: None,
    }
}

#[tokio::test]
async fn only_platform_users_create_partners() {
    let mut repo = MockPartnerRepo::new();
    repo.expect_insert_partner().never();
    let svc = PartnerService::new(Arc::new(repo), quiet_access(), clock());
    let input = NewPartner { name: Name::parse("P").unwrap(), contact_name: None, phone: None, email: None, status: None };

    let err = svc.create(&actor(Party::Partner { partner_id: 1 }, &["*"]), input).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(_)));
}

#[tokio::test]
async fn a_partner_creates_tenants_under_itself_and_the_audit_says_so() {
    let mut repo = MockTenantRepo::new();
    repo.expect_partner_exists().returning(|_| Ok(true));
    repo.expect_insert_tenant()
        .withf(|t, audit| {
            t.partner_id == Some(7) && audit.action == "tenant.create" && audit.partner_id == Some(7) && audit.actor_user_id == Some(10)
        })
        .times(1)
        .returning(|t, _| Ok(Tenant { id: 1, ..t }));
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());

    let t = svc.create(&actor(Party::Partner { partner_id: 7 }, &["tenant:*"]), new_tenant(None)).await.unwrap();

    assert_eq!(t.partner_id, Some(7));
}

#[tokio::test]
async fn a_partner_cannot_name_another_partner_for_a_tenant() {
    let mut repo = MockTenantRepo::new();
    repo.expect_insert_tenant().never();
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());

    let err = svc.create(&actor(Party::Partner { partner_id: 7 }, &["tenant:*"]), new_tenant(Some(8))).await.unwrap_err();

    assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "partner_id"));
}

#[tokio::test]
async fn a_tenant_cannot_change_its_own_status_or_partner() {
    let mut repo = MockTenantRepo::new();
    repo.expect_get_tenant().returning(|_, id| Ok(Some(tenant(id, Some(7)))));
    repo.expect_update_tenant().never();
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());
    let me = actor(Party::Tenant { tenant_id: 3, partner_id: Some(7) }, &["tenant:*"]);

    let status = svc.update(&me, 3, TenantPatch { status: Some(TenantStatus::Disabled), ..Default::default() }).await.unwrap_err();
    let moved = svc.update(&me, 3, TenantPatch { partner_id: Some(Some(8)), ..Default::default() }).await.unwrap_err();

    assert!(matches!(status, Error::Forbidden(_)));
    assert!(matches!(moved, Error::Forbidden(_)));
}

#[tokio::test]
async fn an_out_of_scope_tenant_is_not_found() {
    let mut repo = MockTenantRepo::new();
    repo.expect_get_tenant().returning(|_, _| Ok(None));
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());

    let err = svc.get(&actor(Party::Partner { partner_id: 1 }, &["tenant:read"]), 99).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("tenant")));
}

#[tokio::test]
async fn a_tenant_user_adds_employees_only_to_its_own_tenant() {
    let mut repo = MockEmployeeRepo::new();
    repo.expect_insert_employee().never();
    let svc = EmployeeService::new(Arc::new(repo), clock());
    let input = NewEmployee {
        tenant_id: Some(4),
        name: Name::parse("E").unwrap(),
        base_salary: Money::from_fen(1),
        employee_no: None,
        phone: None,
        email: None,
        id_card_no: None,
        bank_name: None,
        bank_account: None,
        department: None,
        position: None,
        hire_date: None,
        status: None,
        si_base: None,
        housing_fund_rate: Some(HousingFundRate::MIN),
        special_deductions: None,
        openid: None,
    };

    let err = svc.create(&actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["employee:*"]), input).await.unwrap_err();

    assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "tenant_id"));
}

// ----- four-eyes ----------------------------------------------------------------------------

fn policy_with_four_eyes(on: bool) -> atrium_kernel::payroll::PayrollPolicy {
    atrium_kernel::payroll::PayrollPolicy { four_eyes: on, ..Default::default() }
}

fn tenant_with_four_eyes(id: Id, on: bool) -> Tenant {
    Tenant { payroll_policy: policy_with_four_eyes(on), ..tenant(id, Some(7)) }
}

#[tokio::test]
async fn a_tenant_user_cannot_turn_off_four_eyes_approval() {
    let mut repo = MockTenantRepo::new();
    repo.expect_get_tenant().returning(|_, id| Ok(Some(tenant_with_four_eyes(id, true))));
    repo.expect_update_tenant().never();
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());
    let me = actor(Party::Tenant { tenant_id: 3, partner_id: Some(7) }, &["tenant:*"]);

    let err =
        svc.update(&me, 3, TenantPatch { payroll_policy: Some(policy_with_four_eyes(false)), ..Default::default() }).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
}

#[tokio::test]
async fn a_tenant_user_may_keep_or_turn_on_four_eyes_approval() {
    for (before, requested) in [(true, true), (false, true), (false, false)] {
        let mut repo = MockTenantRepo::new();
        repo.expect_get_tenant().returning(move |_, id| Ok(Some(tenant_with_four_eyes(id, before))));
        repo.expect_update_tenant().times(1).returning(|t, _| Ok(t));
        let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());
        let me = actor(Party::Tenant { tenant_id: 3, partner_id: Some(7) }, &["tenant:*"]);

        let patch = TenantPatch { payroll_policy: Some(policy_with_four_eyes(requested)), ..Default::default() };
        let t = svc.update(&me, 3, patch).await.unwrap();

        assert_eq!(t.payroll_policy.four_eyes, requested, "from {before} to {requested}");
    }
}

#[tokio::test]
async fn the_partner_turns_off_four_eyes_and_the_audit_shows_before_and_after() {
    let mut repo = MockTenantRepo::new();
    repo.expect_get_tenant().returning(|_, id| Ok(Some(tenant_with_four_eyes(id, true))));
    repo.expect_update_tenant()
        .withf(|t, audit| {
            !t.payroll_policy.four_eyes
                && audit.action == "tenant.update"
                && audit.before.as_ref().is_some_and(|b| b["payroll_policy"]["four_eyes"] == true)
                && audit.after.as_ref().is_some_and(|a| a["payroll_policy"]["four_eyes"] == false)
        })
        .times(1)
        .returning(|t, _| Ok(t));
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());

    let patch = TenantPatch { payroll_policy: Some(policy_with_four_eyes(false)), ..Default::default() };
    svc.update(&actor(Party::Partner { partner_id: 7 }, &["tenant:*"]), 3, patch).await.unwrap();
}

// ----- audit visibility ---------------------------------------------------------------------

fn entry(target_type: &str, before: serde_json::Value, after: serde_json::Value) -> AuditEntry {
    AuditEntry {
        id: 1,
        at: now(),
        actor_user_id: Some(1),
        ip: None,
        request_id: None,
        action: format!("{target_type}.update"),
        target_type: target_type.into(),
        target_id: Some(5),
        partner_id: Some(7),
        tenant_id: Some(3),
        before: Some(before),
        after: Some(after),
        redacted: false,
    }
}

fn audit_service(entries: Vec<AuditEntry>) -> AuditService {
    let mut repo = MockAuditRepo::new();
    repo.expect_list_audit().returning(move |_, q| Ok(atrium_kernel::Page::new(entries.clone(), entries.len() as i64, q.page)));
    AuditService::new(Arc::new(repo))
}

#[tokio::test]
async fn audit_values_are_withheld_from_callers_who_cannot_read_the_target() {
    let salary =
        entry("employee", serde_json::json!({"base_salary": 500, "phone": "13800000000"}), serde_json::json!({"base_salary": 600}));
    let svc = audit_service(vec![salary]);
    let auditor = actor(Party::Tenant { tenant_id: 3, partner_id: Some(7) }, &["audit:read"]);

    let page = svc.list(&auditor, AuditQuery::default()).await.unwrap();

    let e = &page.items[0];
    assert_eq!((e.before.as_ref(), e.after.as_ref(), e.redacted), (None, None, true));
    assert_eq!((e.action.as_str(), e.target_id), ("employee.update", Some(5)), "who did what to which record stays visible");
}

#[tokio::test]
async fn audit_values_show_to_readers_of_the_target_with_secrets_masked() {
    // An entry written before id_card_no was masked at write time still never shows it.
    let old = entry(
        "employee",
        serde_json::json!({"base_salary": 500, "id_card_no": "110101199003074514"}),
        serde_json::json!({"base_salary": 600}),
    );
    let svc = audit_service(vec![old]);
    let reader = actor(Party::Tenant { tenant_id: 3, partner_id: Some(7) }, &["audit:read", "employee:read"]);

    let page = svc.list(&reader, AuditQuery::default()).await.unwrap();

    let e = &page.items[0];
    assert_eq!(e.before, Some(serde_json::json!({"base_salary": 500, "id_card_no": "***"})));
    assert_eq!(e.after, Some(serde_json::json!({"base_salary": 600})));
    assert!(!e.redacted);
}

#[tokio::test]
async fn each_target_kind_needs_the_permission_its_own_routes_require() {
    let kinds = [
        ("employee", "employee:read"),
        ("user", "user:read"),
        ("tenant", "tenant:read"),
        ("partner", "agent:read"),
        ("role", "role:read"),
        ("payroll_sheet", "payroll:read"),
    ];
    for (kind, permission) in kinds {
        let svc = audit_service(vec![entry(kind, serde_json::json!({"name": "a"}), serde_json::json!({"name": "b"}))]);
        let with = actor(Party::Platform, &["audit:read", permission]);
        let other = if permission == "employee:read" { "user:read" } else { "employee:read" };
        let without = actor(Party::Platform, &["audit:read", other]);

        let shown = svc.list(&with, AuditQuery::default()).await.unwrap();
        let hidden = svc.list(&without, AuditQuery::default()).await.unwrap();

        assert!(shown.items[0].after.is_some() && !shown.items[0].redacted, "{kind} with {permission}");
        assert!(hidden.items[0].after.is_none() && hidden.items[0].redacted, "{kind} without {permission}");
    }
}

#[tokio::test]
async fn values_of_unknown_target_kinds_show_only_to_holders_of_everything() {
    let svc = audit_service(vec![entry("gadget", serde_json::json!({"a": 1}), serde_json::json!({"a": 2}))]);

    let most = svc.list(&actor(Party::Platform, &["audit:read", "employee:*", "user:*", "tenant:*"]), AuditQuery::default()).await.unwrap();
    let all = svc.list(&actor(Party::Platform, &["*"]), AuditQuery::default()).await.unwrap();

    assert!(most.items[0].redacted);
    assert_eq!(all.items[0].after, Some(serde_json::json!({"a": 2})));
}
