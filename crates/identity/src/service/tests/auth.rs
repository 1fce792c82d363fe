//! Service tests against mocked ports.
use super::super::auth::normalise_login;
use crate::config::IdentityConfig;
use crate::model::*;
use crate::ports::*;
use crate::service::IdentityService;
use crate::token::hash_code;
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id, Timestamp};
use atrium_kernel::{FixedClock, Party, PartyStanding, PermissionSet};
use chrono::Duration;
use chrono::TimeZone;
use std::sync::{Arc, Mutex};

fn now() -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 3, 1, 8, 0, 0).single().expect("valid date")
}

fn user(id: Id, status: UserStatus) -> User {
    User {
        id,
        username: "alice".into(),
        name: "Alice".into(),
        phone: Some("+8613800138000".into()),
        email: None,
        party: Party::Platform,
        status,
        chat_bound: false,
        created_at: now(),
        updated_at: now(),
    }
}

fn creds() -> UserCredentials {
    UserCredentials { user: user(1, UserStatus::Active), password_hash: Some("hash".into()), standing: PartyStanding::Active }
}

/// What `find_login` gives for an identifier with `failures` and `locked_until`, naming
/// `credentials` (an existing account) or nothing (a made-up name).
fn lookup(credentials: Option<UserCredentials>, failures: i32, locked_until: Option<Timestamp>) -> LoginLookup {
    LoginLookup { credentials, failures, locked_until }
}

fn config() -> IdentityConfig {
    IdentityConfig { jwt_secret: b"test-secret-test-secret-test-secret".to_vec(), ..IdentityConfig::default() }
}

struct Mocks {
    repo: MockIdentityRepo,
    hasher: MockPasswordHasher,
    codes: MockCodeSender,
}

impl Mocks {
    fn new() -> Self {
        Mocks { repo: MockIdentityRepo::new(), hasher: MockPasswordHasher::new(), codes: MockCodeSender::new() }
    }

    fn service(self) -> IdentityService {
        IdentityService::new(
            Arc::new(self.repo),
            Arc::new(self.hasher),
            Arc::new(self.codes),
            None,
            Arc::new(FixedClock::new(now())),
            config(),
        )
    }
}

fn client() -> ClientInfo {
    ClientInfo { ip: Some("10.0.0.1".into()), user_agent: None, request_id: Some("r1".into()) }
}

#[tokio::test]
async fn unknown_user_and_wrong_password_get_the_same_answer() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_hit_rate_bucket().returning(|_, _, _| Ok(1));
    m.repo.expect_find_login().withf(|l| l == "ghost").returning(|_| Ok(lookup(None, 0, None)));
    m.repo.expect_find_login().withf(|l| l == "alice").returning(|_| Ok(lookup(Some(creds()), 0, None)));
    m.repo.expect_record_login_failure().times(2).returning(|_, _, _, _, _| Ok(None));
    m.hasher.expect_verify().times(2).returning(|_, _| Ok(false));
    let svc = m.service();

    let unknown = svc.login_password("ghost", "whatever-pass", &client()).await.unwrap_err();
    let wrong = svc.login_password("alice", "whatever-pass", &client()).await.unwrap_err();

    assert_eq!(unknown.to_string(), wrong.to_string());
    assert!(matches!(unknown, Error::Unauthenticated(_)));
}

#[tokio::test]
async fn a_locked_account_is_refused_without_checking_the_password() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_find_login().returning(|_| Ok(lookup(Some(creds()), 0, Some(now() + Duration::minutes(10)))));
    m.hasher.expect_verify().never();
    let svc = m.service();

    let err = svc.login_password("alice", "right-password", &client()).await.unwrap_err();

    match err {
        Error::RateLimited { retry_after_secs, .. } => assert_eq!(retry_after_secs, 600),
        other => panic!("expected 429, got {other:?}"),
    }
}

#[tokio::test]
async fn a_wrong_password_counts_towards_the_lockout_threshold() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_hit_rate_bucket().returning(|_, _, _| Ok(1));
    m.repo.expect_find_login().returning(|_| Ok(lookup(Some(creds()), 4, None)));
    m.hasher.expect_verify().returning(|_, _| Ok(false));
    m.repo
        .expect_record_login_failure()
        .withf(|login, at, threshold, until, audit| {
            login == "alice"
                && *at == now()
                && *threshold == 5
                && *until == now() + Duration::minutes(15)
                && audit.as_ref().is_some_and(|a| a.action == "user.locked" && a.target_id == Some(1))
        })
        .times(1)
        .returning(|_, _, _, until, _| Ok(Some(until)));
    let svc = m.service();

    assert!(svc.login_password("alice", "nope-nope", &client()).await.is_err());
}

#[tokio::test]
async fn a_made_up_login_counts_failures_and_locks_like_a_real_one() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_hit_rate_bucket().returning(|_, _, _| Ok(1));
    m.repo.expect_find_login().withf(|l| l == "ghost").times(1).returning(|_| Ok(lookup(None, 4, None)));
    m.hasher.expect_verify().times(1).returning(|_, _| Ok(false));
    m.repo
        .expect_record_login_failure()
        .withf(|login, _, threshold, _, audit| login == "ghost" && *threshold == 5 && audit.is_none())
        .times(1)
        .returning(|_, _, _, until, _| Ok(Some(until)));
    let svc = m.service();

    let err = svc.login_password("ghost", "nope-nope", &client()).await.unwrap_err();

    assert!(matches!(err, Error::Unauthenticated(_)), "{err:?}");
}

#[tokio::test]
async fn a_locked_made_up_login_answers_exactly_as_a_locked_account() {
    let until = Some(now() + Duration::minutes(10));
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_find_login().withf(|l| l == "ghost").returning(move |_| Ok(lookup(None, 0, until)));
    m.repo.expect_find_login().withf(|l| l == "alice").returning(move |_| Ok(lookup(Some(creds()), 0, until)));
    m.hasher.expect_verify().never();
    let svc = m.service();

    let ghost = svc.login_password("ghost", "whatever", &client()).await.unwrap_err();
    let alice = svc.login_password("alice", "whatever", &client()).await.unwrap_err();

    assert_eq!(format!("{ghost:?}"), format!("{alice:?}"));
    assert!(matches!(ghost, Error::RateLimited { retry_after_secs: 600, .. }), "{ghost:?}");
}

#[tokio::test]
async fn a_user_of_a_disabled_tenant_cannot_log_in_and_is_told_why() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_find_login().returning(|_| {
        let mut c = creds();
        c.user.party = Party::Tenant { tenant_id: 4, partner_id: Some(2) };
        c.standing = PartyStanding::Disabled(atrium_kernel::PartyType::Tenant);
        Ok(lookup(Some(c), 0, None))
    });
    m.hasher.expect_verify().returning(|_, _| Ok(true));
    m.repo.expect_create_session().never();
    let svc = m.service();

    let err = svc.login_password("alice", "right-password", &client()).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(_, ref m) if m.contains("tenant") && m.contains("disabled")), "{err:?}");
}

#[tokio::test]
async fn an_ip_over_its_failure_budget_is_refused() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((100, Some(now() - Duration::minutes(30)))));
    m.repo.expect_find_login().never();
    let svc = m.service();

    let err = svc.login_password("alice", "right-password", &client()).await.unwrap_err();

    assert!(matches!(err, Error::RateLimited { retry_after_secs: 1800, .. }), "{err:?}");
}

#[tokio::test]
async fn a_disabled_user_cannot_log_in_even_with_the_right_password() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_find_login().returning(|_| {
        let mut c = creds();
        c.user.status = UserStatus::Disabled;
        Ok(lookup(Some(c), 0, None))
    });
    m.hasher.expect_verify().returning(|_, _| Ok(true));
    m.repo.expect_create_session().never();
    let svc = m.service();

    let err = svc.login_password("alice", "right-password", &client()).await.unwrap_err();

    assert!(matches!(err, Error::Unauthenticated(_)));
}

#[tokio::test]
async fn a_successful_login_issues_a_token_that_authenticates() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_find_login().returning(|_| Ok(lookup(Some(creds()), 2, None)));
    m.hasher.expect_verify().returning(|_, _| Ok(true));
    m.repo.expect_clear_login_failures().withf(|l| l == "alice").times(1).returning(|_| Ok(()));
    let sid = Arc::new(Mutex::new(String::new()));
    let sid_in = sid.clone();
    m.repo.expect_create_session().times(1).returning(move |s, r, audit| {
        assert_eq!((audit.action.as_str(), audit.actor_user_id), ("session.login", Some(1)));
        assert_eq!(r.session_id, s.id);
        *sid_in.lock().unwrap() = s.id;
        Ok(())
    });
    let sid_out = sid.clone();
    m.repo.expect_load_principal().times(1).returning(move |id| {
        assert_eq!(id, *sid_out.lock().unwrap());
        Ok(Some(Principal {
            session: SessionRecord {
                id: id.to_owned(),
                user_id: 1,
                created_at: now(),
                expires_at: now() + Duration::days(30),
                revoked_at: None,
            },
            user: user(1, UserStatus::Active),
            standing: PartyStanding::Active,
            roles: vec![],
            permissions: PermissionSet::new(["user:read"]),
        }))
    });
    let svc = m.service();

    let grant = svc.login_password(" Alice ", "right-password", &client()).await.unwrap();
    let first = svc.authenticate(&grant.access_token).await.unwrap();
    let second = svc.authenticate(&grant.access_token).await.unwrap();

    assert_eq!(grant.expires_in, 7200);
    assert_eq!(grant.refresh_expires_in, 7 * 24 * 3600);
    assert!(first.permissions.allows("user:read"));
    assert_eq!(second.user.id, 1, "served from the cache: load_principal ran once");
}

#[tokio::test]
async fn a_revoked_session_does_not_authenticate() {
    let mut m = Mocks::new();
    m.repo.expect_load_principal().returning(|id| {
        Ok(Some(Principal {
            session: SessionRecord {
                id: id.to_owned(),
                user_id: 1,
                created_at: now(),
                expires_at: now() + Duration::days(1),
                revoked_at: Some(now()),
            },
            user: user(1, UserStatus::Active),
            standing: PartyStanding::Active,
            roles: vec![],
            permissions: PermissionSet::default(),
        }))
    });
    let svc = m.service();
    let token = svc.grant(user(1, UserStatus::Active), "sid", now() + Duration::days(1), "r".into(), now(), now()).unwrap().access_token;

    assert!(matches!(svc.authenticate(&token).await, Err(Error::Unauthenticated(_))));
}

#[tokio::test]
async fn a_replayed_refresh_token_ends_the_session() {
    let mut m = Mocks::new();
    m.repo.expect_rotate_refresh_token().returning(|_, _, _, _| Ok(RefreshOutcome::Replayed { session_id: "sid".into() }));
    let svc = m.service();

    let err = svc.refresh("old-token", &client()).await.unwrap_err();

    assert!(err.to_string().contains("already used"));
}

#[tokio::test]
async fn a_second_code_within_the_resend_interval_is_refused() {
    let mut m = Mocks::new();
    m.repo.expect_latest_code().returning(|t, p| {
        Ok(Some(CodeRecord {
            id: 1,
            target: t.to_owned(),
            purpose: p,
            code_hash: "x".into(),
            attempts: 0,
            created_at: now() - Duration::seconds(20),
            expires_at: now() + Duration::minutes(4),
            consumed_at: None,
        }))
    });
    m.codes.expect_send_code().never();
    let svc = m.service();

    let err = svc.send_code("13800138000", CodePurpose::Login, &client()).await.unwrap_err();

    assert!(matches!(err, Error::RateLimited { retry_after_secs: 40, .. }), "{err:?}");
}

#[tokio::test]
async fn a_sixth_code_in_an_hour_is_refused() {
    let mut m = Mocks::new();
    m.repo.expect_latest_code().returning(|_, _| Ok(None));
    m.repo.expect_rate_bucket().withf(|b, _| b.starts_with("code:target:")).returning(|_, _| Ok((5, Some(now() - Duration::minutes(50)))));
    m.codes.expect_send_code().never();
    let svc = m.service();

    let err = svc.send_code("a@example.com", CodePurpose::Login, &client()).await.unwrap_err();

    assert!(matches!(err, Error::RateLimited { retry_after_secs: 600, .. }), "{err:?}");
}

#[tokio::test]
async fn a_sent_code_is_stored_hashed_and_delivered() {
    let mut m = Mocks::new();
    m.repo.expect_latest_code().returning(|_, _| Ok(None));
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_hit_rate_bucket().times(2).returning(|_, _, _| Ok(1));
    let stored = Arc::new(Mutex::new(None));
    let stored_in = stored.clone();
    m.repo.expect_insert_code().times(1).returning(move |c| {
        *stored_in.lock().unwrap() = Some(c);
        Ok(())
    });
    let delivered = Arc::new(Mutex::new(String::new()));
    let delivered_in = delivered.clone();
    m.codes.expect_send_code().times(1).returning(move |t, _, code| {
        assert_eq!(t.as_str(), "+8613800138000");
        *delivered_in.lock().unwrap() = code.to_owned();
        Ok(())
    });
    let svc = m.service();

    let sent = svc.send_code("13800138000", CodePurpose::Login, &client()).await.unwrap();

    let code = delivered.lock().unwrap().clone();
    let row = stored.lock().unwrap().clone().unwrap();
    assert_eq!(code.len(), 6);
    assert!(code.bytes().all(|b| b.is_ascii_digit()));
    assert_ne!(row.code_hash, code, "the code is not stored in clear");
    assert_eq!(row.expires_at, now() + Duration::minutes(5));
    assert_eq!((sent.expires_in, sent.resend_after, sent.debug_code), (300, 60, None));
}

#[tokio::test]
async fn a_wrong_code_counts_an_attempt_and_fails_the_login() {
    let mut m = Mocks::new();
    m.repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    m.repo.expect_hit_rate_bucket().returning(|_, _, _| Ok(1));
    m.repo.expect_latest_code().returning(|t, p| {
        Ok(Some(CodeRecord {
            id: 9,
            target: t.to_owned(),
            purpose: p,
            code_hash: hash_code(b"test-secret-test-secret-test-secret", t, p.as_str(), "111111"),
            attempts: 0,
            created_at: now(),
            expires_at: now() + Duration::minutes(5),
            consumed_at: None,
        }))
    });
    m.repo.expect_record_code_attempt().withf(|id, max, _| *id == 9 && *max == 5).times(1).returning(|_, _, _| Ok(()));
    m.repo.expect_consume_code().never();
    let svc = m.service();

    let err = svc.login_code("+8613800138000", "222222", &client()).await.unwrap_err();

    assert!(matches!(err, Error::Unauthenticated(_)));
}

#[test]
fn logins_are_normalised_before_lookup() {
    assert_eq!(normalise_login(" Alice "), "alice");
    assert_eq!(normalise_login("138 0013 8000"), "+8613800138000");
    assert_eq!(normalise_login("Bob@Example.com"), "bob@example.com");
}

#[test]
fn chat_identities_bind_by_unionid_first() {
    let with_union = ChatIdentity { openid: "o1".into(), unionid: Some("u1".into()) };
    let without = ChatIdentity { openid: "o1".into(), unionid: None };
    assert_eq!(with_union.binding_key(), "unionid:u1");
    assert_eq!(without.binding_key(), "openid:o1");
}
