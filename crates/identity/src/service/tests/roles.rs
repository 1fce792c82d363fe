//! Role administration against a mocked repository.
use super::{actor, admin_clock, admin_now, role};
use crate::api::NewRole;
use crate::model::{Principal, SessionRecord, User, UserStatus};
use crate::ports::MockRoleRepo;
use crate::service::{RoleService, SessionCache};
use atrium_kernel::{Error, Name, Party, PartyStanding, PartyType, PermissionSet};
use std::sync::Arc;

fn sessions() -> Arc<SessionCache> {
    Arc::new(SessionCache::new(std::time::Duration::from_secs(60)))
}

#[tokio::test]
async fn a_custom_role_may_not_hold_unknown_or_unheld_permissions() {
    let mut repo = MockRoleRepo::new();
    repo.expect_insert_role().never();
    let svc = RoleService::new(Arc::new(repo), sessions(), admin_clock());
    let me = actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["role:*", "employee:read"]);
    let input = |perms: &[&str]| NewRole {
        code: atrium_kernel::Text::parse("c").unwrap(),
        name: Name::parse("C").unwrap(),
        party_type: PartyType::Tenant,
        permissions: perms.iter().map(|p| p.to_string()).collect(),
    };

    let unknown = svc.create(&me, input(&["employee:fly"])).await.unwrap_err();
    let unheld = svc.create(&me, input(&["employee:*"])).await.unwrap_err();
    let above = svc.create(&me, NewRole { party_type: PartyType::Partner, ..input(&[]) }).await.unwrap_err();

    assert!(matches!(unknown, Error::Invalid(_)));
    assert!(matches!(unheld, Error::Forbidden(..)), "employee:read does not cover employee:*");
    assert!(matches!(above, Error::Invalid(ref e) if e[0].field == "party_type"));
}

#[tokio::test]
async fn a_custom_role_cannot_take_a_built_in_code() {
    let mut repo = MockRoleRepo::new();
    repo.expect_insert_role().never();
    let svc = RoleService::new(Arc::new(repo), sessions(), admin_clock());
    let me = actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["role:*", "employee:read"]);

    for code in ["platform_admin", "Tenant_Admin", "viewer"] {
        let input = NewRole {
            code: atrium_kernel::Text::parse(code).unwrap(),
            name: Name::parse("Mine").unwrap(),
            party_type: PartyType::Tenant,
            permissions: vec!["employee:read".into()],
        };
        let err = svc.create(&me, input).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "code" && e[0].message.contains("reserved")), "{code}: {err:?}");
    }
}

#[tokio::test]
async fn changing_a_role_drops_every_cached_session() {
    let tenant = Party::Tenant { tenant_id: 3, partner_id: None };
    let mut custom = role(7, PartyType::Tenant, &["employee:read"]);
    custom.builtin = false;
    custom.owner_tenant_id = Some(3);
    let mut repo = MockRoleRepo::new();
    let found = custom.clone();
    repo.expect_get_role().times(1).returning(move |_, _| Ok(Some(found.clone())));
    repo.expect_update_role().times(1).returning(|r, _| Ok(r));
    let cache = sessions();
    let holder = User {
        id: 42,
        username: "holder".into(),
        name: "H".into(),
        phone: None,
        email: None,
        party: tenant,
        status: UserStatus::Active,
        chat_bound: false,
        created_at: admin_now(),
        updated_at: admin_now(),
    };
    let session = SessionRecord { id: "s42".into(), user_id: 42, created_at: admin_now(), expires_at: admin_now(), revoked_at: None };
    cache.put(
        "s42",
        Arc::new(Principal {
            session,
            user: holder,
            standing: PartyStanding::Active,
            roles: vec![],
            permissions: PermissionSet::new(["employee:read"]),
        }),
    );
    assert!(cache.get("s42").is_some());
    let svc = RoleService::new(Arc::new(repo), cache.clone(), admin_clock());

    let patch = crate::api::RolePatch { name: Some(Name::parse("Renamed").unwrap()), permissions: None };
    svc.update(&actor(tenant, &["role:*", "employee:read"]), 7, patch).await.unwrap();

    assert!(cache.get("s42").is_none(), "the holder's next request reloads its permissions");
}

#[test]
fn a_tenant_role_is_usable_only_inside_its_owner() {
    let owned = |p: Option<i64>, t: Option<i64>| {
        let mut r = role(1, PartyType::Tenant, &[]);
        r.owner_partner_id = p;
        r.owner_tenant_id = t;
        r
    };
    let t1 = Party::Tenant { tenant_id: 1, partner_id: Some(9) };
    let t2 = Party::Tenant { tenant_id: 2, partner_id: Some(8) };
    assert!(owned(None, None).usable_by(t1));
    assert!(owned(None, Some(1)).usable_by(t1));
    assert!(!owned(None, Some(1)).usable_by(t2));
    assert!(owned(Some(9), None).usable_by(t1), "a partner's role serves its tenants");
    assert!(!owned(Some(9), None).usable_by(t2));
    assert!(!owned(None, None).usable_by(Party::Partner { partner_id: 9 }), "party type must match");
}
