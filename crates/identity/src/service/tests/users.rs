//! User administration against mocked ports.
use super::{actor, admin_clock, admin_now, role};
use crate::api::{NewUser, UserPatch};
use crate::model::{Principal, SessionRecord, User, UserStatus, UserWithRoles};
use crate::ports::{MockPasswordHasher, MockRateBucketRepo, MockUserRepo};
use crate::service::{SessionCache, UserService};
use atrium_kernel::Reason;
use atrium_kernel::{Actor, Error, Id, Name, Party, PartyStanding, PartyType, PermissionSet};
use std::sync::Arc;

fn new_user(role_ids: Vec<Id>) -> NewUser {
    NewUser {
        username: atrium_kernel::Text::parse("newbie").unwrap(),
        password: "good-pass-123".into(),
        name: Name::parse("N").unwrap(),
        phone: None,
        email: None,
        partner_id: None,
        tenant_id: None,
        role_ids,
        status: None,
    }
}

fn sessions() -> Arc<SessionCache> {
    Arc::new(SessionCache::new(std::time::Duration::from_secs(60)))
}

fn open_budget() -> MockRateBucketRepo {
    let mut buckets = MockRateBucketRepo::new();
    buckets.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    buckets.expect_hit_rate_bucket().returning(|_, _, _| Ok(1));
    buckets
}

fn user_service(repo: MockUserRepo, hasher: MockPasswordHasher, cache: Arc<SessionCache>) -> UserService {
    UserService::new(Arc::new(repo), Arc::new(open_budget()), Arc::new(hasher), cache, admin_clock())
}

fn tenant_user(id: Id, perms: &[&str]) -> UserWithRoles {
    UserWithRoles {
        user: User {
            id,
            username: "u".into(),
            name: "U".into(),
            phone: None,
            email: None,
            party: Party::Tenant { tenant_id: 3, partner_id: None },
            status: UserStatus::Active,
            chat_bound: false,
            created_at: admin_now(),
            updated_at: admin_now(),
        },
        roles: vec![],
        permissions: perms.iter().map(|p| p.to_string()).collect(),
    }
}

#[tokio::test]
async fn nobody_grants_a_role_holding_permissions_they_lack() {
    let mut repo = MockUserRepo::new();
    repo.expect_roles_by_ids().times(1).returning(|_, _| Ok(vec![role(5, PartyType::Tenant, &["agent:read"])]));
    repo.expect_insert_user().never();
    let mut hasher = MockPasswordHasher::new();
    hasher.expect_hash().never();
    let svc = user_service(repo, hasher, sessions());

    let err = svc.create(&actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["user:*"]), new_user(vec![5])).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(..)));
}

#[tokio::test]
async fn a_role_for_another_kind_of_party_is_refused() {
    let mut repo = MockUserRepo::new();
    repo.expect_roles_by_ids().times(1).returning(|_, _| Ok(vec![role(2, PartyType::Partner, &["user:read"])]));
    repo.expect_insert_user().never();
    let svc = user_service(repo, MockPasswordHasher::new(), sessions());

    let err = svc.create(&actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["*"]), new_user(vec![2])).await.unwrap_err();

    assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "role_ids"));
}

#[tokio::test]
async fn a_new_user_holds_the_granted_roles_and_their_permissions() {
    let mut repo = MockUserRepo::new();
    repo.expect_roles_by_ids()
        .withf(|_, ids| ids == &[4, 5])
        .times(1)
        .returning(|_, _| Ok(vec![role(5, PartyType::Tenant, &["employee:read"]), role(4, PartyType::Tenant, &["payroll:read"])]));
    repo.expect_insert_user()
        .withf(|u, hash, audit| {
            u.roles.iter().map(|r| r.id).collect::<Vec<_>>() == [4, 5]
                && u.permissions == ["employee:read", "payroll:read"]
                && hash == "hashed"
                && audit.audit.as_ref().is_some_and(|a| a.action == "user.create")
        })
        .times(1)
        .returning(|u, _, _| Ok(UserWithRoles { user: User { id: 77, ..u.user }, ..u }));
    let mut hasher = MockPasswordHasher::new();
    hasher.expect_hash().withf(|p| p == "good-pass-123").times(1).returning(|_| Ok("hashed".into()));
    let svc = user_service(repo, hasher, sessions());

    let caller = actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["user:*", "employee:*", "payroll:*"]);
    let created = svc.create(&caller, new_user(vec![5, 4, 5])).await.unwrap();

    assert_eq!(created.user.id, 77);
    assert_eq!(created.user.party, Party::Tenant { tenant_id: 3, partner_id: None });
}

#[tokio::test]
async fn deleting_yourself_is_refused_before_anything_is_read() {
    let mut repo = MockUserRepo::new();
    repo.expect_get_user().never();
    repo.expect_delete_user().never();
    let svc = user_service(repo, MockPasswordHasher::new(), sessions());

    let err = svc.delete(&actor(Party::Platform, &["*"]), 10).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)));
}

#[tokio::test]
async fn disabling_a_user_ends_its_sessions_and_drops_it_from_the_session_cache() {
    let mut repo = MockUserRepo::new();
    repo.expect_get_user().times(1).returning(|_, id| Ok(Some(tenant_user(id, &["employee:read"]))));
    repo.expect_update_user()
        .withf(|u, write, audit| {
            u.user.status == UserStatus::Disabled
                && write.revoke_sessions
                && audit.audit.as_ref().is_some_and(|a| a.action == "user.status")
        })
        .times(1)
        .returning(|u, _, _| Ok(u));
    let cache = sessions();
    let session = SessionRecord { id: "s42".into(), user_id: 42, created_at: admin_now(), expires_at: admin_now(), revoked_at: None };
    let cached = Principal {
        session,
        user: tenant_user(42, &[]).user,
        standing: PartyStanding::Active,
        roles: vec![],
        permissions: PermissionSet::new(["employee:read"]),
    };
    cache.put("s42", Arc::new(cached));
    let svc = user_service(repo, MockPasswordHasher::new(), cache.clone());

    let patch = UserPatch { status: Some(UserStatus::Disabled), ..Default::default() };
    svc.update(&actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["user:*", "employee:*"]), 42, patch).await.unwrap();

    assert!(cache.get("s42").is_none(), "the user's cached session is gone");
}

#[tokio::test]
async fn a_tenant_awaiting_activation_cannot_create_users() {
    let mut repo = MockUserRepo::new();
    repo.expect_insert_user().never();
    let mut hasher = MockPasswordHasher::new();
    hasher.expect_hash().never();
    let svc = user_service(repo, hasher, sessions());
    let pending = Actor { standing: PartyStanding::Pending, ..actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["user:*"]) };

    let err = svc.create(&pending, new_user(vec![])).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(_, ref m) if m.contains("activation")), "{err:?}");
}

#[tokio::test]
async fn a_taken_value_is_a_conflict_that_leaves_an_audit_trace() {
    let mut repo = MockUserRepo::new();
    repo.expect_roles_by_ids().returning(|_, _| Ok(vec![]));
    repo.expect_insert_user().times(1).returning(|_, _, _| Err(Error::conflict(Reason::Duplicate, "this username is taken")));
    repo.expect_record_refusal()
        .withf(|a| {
            a.action == "user.create_conflict"
                && a.actor_user_id == Some(10)
                && a.tenant_id == Some(3)
                && a.after.as_ref().is_some_and(|v| v["username"] == "newbie")
        })
        .times(1)
        .returning(|_| Ok(()));
    let mut hasher = MockPasswordHasher::new();
    hasher.expect_hash().times(1).returning(|_| Ok("h".into()));
    let svc = user_service(repo, hasher, sessions());

    let err = svc.create(&actor(Party::Tenant { tenant_id: 3, partner_id: None }, &["user:*"]), new_user(vec![])).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
}

#[tokio::test]
async fn a_caller_over_its_hourly_create_budget_is_refused_before_any_lookup() {
    let mut repo = MockUserRepo::new();
    repo.expect_roles_by_ids().never();
    repo.expect_insert_user().never();
    let mut buckets = MockRateBucketRepo::new();
    buckets
        .expect_rate_bucket()
        .withf(|key, since| key == "user-create:user:10" && *since == admin_now() - chrono::Duration::hours(1))
        .times(1)
        .returning(|_, _| Ok((3, Some(admin_now() - chrono::Duration::minutes(45)))));
    buckets.expect_hit_rate_bucket().never();
    let svc = UserService::new(Arc::new(repo), Arc::new(buckets), Arc::new(MockPasswordHasher::new()), sessions(), admin_clock())
        .with_create_limit(3);

    let err = svc.create(&actor(Party::Platform, &["*"]), new_user(vec![])).await.unwrap_err();

    assert!(matches!(err, Error::RateLimited { retry_after_secs: 900, .. }), "{err:?}");
}
