//! Tenants against mocked ports: who may name, move and change a tenant, and four-eyes.
use super::{actor, clock, now, quiet_access};
use crate::api::{NewTenant, TenantPatch};
use crate::model::{Tenant, TenantStatus};
use crate::ports::MockTenantRepo;
use crate::service::TenantService;
use atrium_kernel::{Error, Id, Name, Party};
use std::sync::Arc;

fn tenant(id: Id, partner: Option<Id>) -> Tenant {
    Tenant { id, ..Tenant::draft(partner, "T", now()) }
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
async fn a_partner_creates_tenants_under_itself_and_the_audit_says_so() {
    let mut repo = MockTenantRepo::new();
    repo.expect_partner_exists().returning(|_| Ok(true));
    repo.expect_insert_tenant()
        .withf(|t, effects| {
            effects.audit.as_ref().is_some_and(|audit| {
                t.partner_id == Some(7) && audit.action == "tenant.create" && audit.partner_id == Some(7) && audit.actor_user_id == Some(10)
            })
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

    assert!(matches!(err, Error::NoSuch(ref e) if e.field == "partner_id"), "{err:?}");
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

    assert!(matches!(status, Error::Forbidden(..)));
    assert!(matches!(moved, Error::Forbidden(..)));
}

#[tokio::test]
async fn an_out_of_scope_tenant_is_not_found() {
    let mut repo = MockTenantRepo::new();
    repo.expect_get_tenant().returning(|_, _| Ok(None));
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());

    let err = svc.get(&actor(Party::Partner { partner_id: 1 }, &["tenant:read"]), 99).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("tenant")));
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

    assert!(matches!(err, Error::Forbidden(..)), "{err:?}");
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
        .withf(|t, effects| {
            effects.audit.as_ref().is_some_and(|audit| {
                !t.payroll_policy.four_eyes
                    && audit.action == "tenant.update"
                    && audit.before.as_ref().is_some_and(|b| b["payroll_policy"]["four_eyes"] == true)
                    && audit.after.as_ref().is_some_and(|a| a["payroll_policy"]["four_eyes"] == false)
            })
        })
        .times(1)
        .returning(|t, _| Ok(t));
    let svc = TenantService::new(Arc::new(repo), quiet_access(), clock());

    let patch = TenantPatch { payroll_policy: Some(policy_with_four_eyes(false)), ..Default::default() };
    svc.update(&actor(Party::Partner { partner_id: 7 }, &["tenant:*"]), 3, patch).await.unwrap();
}
