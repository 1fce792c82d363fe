//! Contract tests of the identity repository, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_identity::*;
use atrium_kernel::{AuditRecord, Effects, Error, Party, Timestamp};
use atrium_store::{Db, IdentityStore, store_test};
use chrono::{Duration, TimeZone, Utc};

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid")
}

async fn admin(db: &Db) -> (IdentityStore, User) {
    let repo = IdentityStore::new(db.clone());
    let user = repo.create_platform_admin("root", "Root", "hash", t0(), audit("user.create")).await.expect("admin created");
    (repo, user)
}

fn audit(action: &str) -> AuditRecord {
    AuditRecord::system(t0(), action, "user", None)
}

fn refresh(hash: &str, session: &str) -> NewRefreshToken {
    NewRefreshToken { token_hash: hash.into(), session_id: session.into(), created_at: t0(), expires_at: t0() + Duration::days(7) }
}

async fn session(repo: &IdentityStore, user: &User, sid: &str, first_refresh: &str) {
    repo.create_session(
        NewSession {
            id: sid.into(),
            user_id: user.id,
            created_at: t0(),
            expires_at: t0() + Duration::days(30),
            ip: None,
            user_agent: None,
        },
        refresh(first_refresh, sid),
        audit("session.login"),
    )
    .await
    .expect("session created");
}

store_test!(a_created_admin_holds_the_platform_admin_role, |db| {
    let (repo, user) = admin(&db).await;
    session(&repo, &user, "s1", "r1").await;

    let p = repo.load_principal("s1").await.unwrap().expect("principal");

    assert_eq!(p.user.party, Party::Platform);
    assert_eq!(p.roles[0].code, "platform_admin");
    assert!(p.permissions.allows("payroll:approve"));
    assert!(repo.platform_admin_exists().await.unwrap());
});

store_test!(a_duplicate_username_is_a_conflict, |db| {
    let (repo, _) = admin(&db).await;

    let err = repo.create_platform_admin("root", "Other", "hash", t0(), audit("user.create")).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("username")), "{err:?}");
});

store_test!(a_refresh_token_rotates_once_and_its_replay_revokes_the_session, |db| {
    let (repo, user) = admin(&db).await;
    session(&repo, &user, "s1", "r1").await;

    let first =
        repo.rotate_refresh_token("r1", refresh("r2", ""), t0() + Duration::hours(1), audit("session.replay_revoked")).await.unwrap();
    let replay =
        repo.rotate_refresh_token("r1", refresh("r3", ""), t0() + Duration::hours(2), audit("session.replay_revoked")).await.unwrap();
    let after =
        repo.rotate_refresh_token("r2", refresh("r4", ""), t0() + Duration::hours(3), audit("session.replay_revoked")).await.unwrap();

    assert!(matches!(first, RefreshOutcome::Rotated { ref session } if session.id == "s1"));
    assert_eq!(replay, RefreshOutcome::Replayed { session_id: "s1".into() });
    assert_eq!(after, RefreshOutcome::Rejected, "the whole session ended, the new token included");
    let p = repo.load_principal("s1").await.unwrap().unwrap();
    assert!(p.session.revoked_at.is_some());
});

store_test!(an_unknown_or_expired_refresh_token_is_rejected, |db| {
    let (repo, user) = admin(&db).await;
    session(&repo, &user, "s1", "r1").await;

    let unknown = repo.rotate_refresh_token("nope", refresh("x", ""), t0(), audit("session.replay_revoked")).await.unwrap();
    let expired =
        repo.rotate_refresh_token("r1", refresh("y", ""), t0() + Duration::days(8), audit("session.replay_revoked")).await.unwrap();

    assert_eq!(unknown, RefreshOutcome::Rejected);
    assert_eq!(expired, RefreshOutcome::Rejected);
});

store_test!(concurrent_presentations_of_one_refresh_token_rotate_at_most_once, |db| {
    let (repo, user) = admin(&db).await;
    session(&repo, &user, "s1", "r1").await;

    // Six presentations released at once, each on its own blocking thread and connection.
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(6));
    let mut tasks = Vec::new();
    for i in 0..6 {
        let (repo, start) = (repo.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.rotate_refresh_token("r1", refresh(&format!("n{i}"), ""), t0(), audit("session.replay_revoked")).await
        }));
    }
    let mut rotated = 0;
    let mut replayed = 0;
    for t in tasks {
        match t.await.unwrap().unwrap() {
            RefreshOutcome::Rotated { .. } => rotated += 1,
            RefreshOutcome::Replayed { session_id } => {
                assert_eq!(session_id, "s1");
                replayed += 1;
            }
            RefreshOutcome::Rejected => {}
        }
    }
    let after = repo.load_principal("s1").await.unwrap().unwrap();

    assert_eq!(rotated, 1, "exactly one presentation rotates");
    assert!(replayed >= 1, "the others see a used token: {replayed} replays");
    assert!(after.session.revoked_at.is_some(), "a replay ends the session");
});

store_test!(the_fifth_consecutive_failure_locks_and_resets_the_count, |db| {
    let (repo, _) = admin(&db).await;
    let until = t0() + Duration::minutes(15);

    let mut locks = Vec::new();
    for _ in 0..5 {
        locks.push(repo.record_login_failure("root", t0(), 5, until, Some(audit("user.locked"))).await.unwrap());
    }
    let lookup = repo.find_login("root").await.unwrap();

    assert_eq!(locks, vec![None, None, None, None, Some(until)]);
    assert_eq!(lookup.locked_until, Some(until));
    assert_eq!(lookup.failures, 0);
    assert_eq!(lookup.credentials.unwrap().user.username, "root");
});

store_test!(a_made_up_login_is_counted_and_locked_like_a_real_one, |db| {
    let (repo, _) = admin(&db).await;
    let until = t0() + Duration::minutes(15);

    for _ in 0..4 {
        repo.record_login_failure("ghost", t0(), 5, until, None).await.unwrap();
    }
    let counting = repo.find_login("ghost").await.unwrap();
    let lock = repo.record_login_failure("ghost", t0(), 5, until, None).await.unwrap();
    let locked = repo.find_login("ghost").await.unwrap();

    assert!(counting.credentials.is_none());
    assert_eq!((counting.failures, counting.locked_until), (4, None));
    assert_eq!(lock, Some(until));
    assert_eq!(locked.locked_until, Some(until));
});

store_test!(concurrent_failures_on_one_login_are_all_counted, |db| {
    let (repo, _) = admin(&db).await;
    let until = t0() + Duration::minutes(15);

    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let repo = repo.clone();
            tokio::spawn(async move { repo.record_login_failure("fresh-name", t0(), 100, until, None).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    assert_eq!(repo.find_login("fresh-name").await.unwrap().failures, 8);
});

store_test!(a_password_reset_clears_the_lock_of_every_login_of_the_user, |db| {
    let (repo, user) = admin(&db).await;
    let until = t0() + Duration::minutes(15);
    for _ in 0..5 {
        repo.record_login_failure("root", t0(), 5, until, None).await.unwrap();
    }
    repo.record_login_failure("ghost", t0(), 5, until, None).await.unwrap();

    repo.reset_password(user.id, "new-hash", t0(), audit("user.password_reset")).await.unwrap();

    assert_eq!(repo.find_login("root").await.unwrap().locked_until, None);
    assert_eq!(repo.find_login("ghost").await.unwrap().failures, 1);
});

store_test!(rate_buckets_count_only_their_window, |db| {
    let repo = IdentityStore::new(db.clone());
    let hour_ago = |t: Timestamp| t - Duration::hours(1);

    repo.hit_rate_bucket("b", t0(), hour_ago(t0())).await.unwrap();
    repo.hit_rate_bucket("b", t0() + Duration::minutes(30), hour_ago(t0() + Duration::minutes(30))).await.unwrap();
    repo.hit_rate_bucket("other", t0(), hour_ago(t0())).await.unwrap();
    let later = t0() + Duration::minutes(70);
    let (count, oldest) = repo.rate_bucket("b", hour_ago(later)).await.unwrap();

    assert_eq!(count, 1);
    assert_eq!(oldest, Some(t0() + Duration::minutes(30)));
});

store_test!(a_code_is_consumed_once_even_under_concurrency, |db| {
    let repo = IdentityStore::new(db.clone());
    repo.insert_code(NewCode {
        target: "+8613800138000".into(),
        purpose: CodePurpose::Login,
        code_hash: "h".into(),
        created_at: t0(),
        expires_at: t0() + Duration::minutes(5),
        ip: None,
    })
    .await
    .unwrap();
    let code = repo.latest_code("+8613800138000", CodePurpose::Login).await.unwrap().unwrap();

    let mut tasks = Vec::new();
    for _ in 0..5 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move { repo.consume_code(code.id, t0()).await.unwrap() }));
    }
    let mut wins = 0;
    for t in tasks {
        wins += usize::from(t.await.unwrap());
    }

    assert_eq!(wins, 1);
    assert!(repo.latest_code("+8613800138000", CodePurpose::Register).await.unwrap().is_none(), "codes are per purpose");
});

store_test!(the_fifth_wrong_try_burns_a_code, |db| {
    let repo = IdentityStore::new(db.clone());
    repo.insert_code(NewCode {
        target: "a@b.cn".into(),
        purpose: CodePurpose::Login,
        code_hash: "h".into(),
        created_at: t0(),
        expires_at: t0() + Duration::minutes(5),
        ip: None,
    })
    .await
    .unwrap();
    let id = repo.latest_code("a@b.cn", CodePurpose::Login).await.unwrap().unwrap().id;

    for _ in 0..4 {
        repo.record_code_attempt(id, 5, t0()).await.unwrap();
    }
    let after_four = repo.latest_code("a@b.cn", CodePurpose::Login).await.unwrap().unwrap();
    repo.record_code_attempt(id, 5, t0()).await.unwrap();
    let after_five = repo.latest_code("a@b.cn", CodePurpose::Login).await.unwrap().unwrap();

    assert!(after_four.consumed_at.is_none());
    assert_eq!(after_five.attempts, 5);
    assert!(after_five.consumed_at.is_some());
});

store_test!(registration_creates_a_pending_tenant_and_its_admin, |db| {
    let repo = IdentityStore::new(db.clone());
    let reg = || NewRegistration {
        tenant_name: "Acme".into(),
        name: "Ann".into(),
        username: "+8613800138001".into(),
        phone: Some("+8613800138001".into()),
        email: None,
        password_hash: "h".into(),
        at: t0(),
    };

    let done = repo.register_tenant(reg(), Effects::audited(audit("tenant.register"))).await.unwrap();
    let again = repo.register_tenant(reg(), Effects::audited(audit("tenant.register"))).await.unwrap_err();

    assert_eq!(done.user.party, Party::Tenant { tenant_id: done.tenant_id, partner_id: None });
    assert!(matches!(again, Error::Conflict(..)), "{again:?}");
    let found = repo.find_credentials("+8613800138001").await.unwrap().unwrap();
    assert_eq!(found.user.id, done.user.id);
});

store_test!(a_password_reset_revokes_every_session, |db| {
    let (repo, user) = admin(&db).await;
    session(&repo, &user, "s1", "r1").await;
    session(&repo, &user, "s2", "r2").await;

    repo.reset_password(user.id, "new-hash", t0(), audit("user.password_reset")).await.unwrap();

    for sid in ["s1", "s2"] {
        assert!(repo.load_principal(sid).await.unwrap().unwrap().session.revoked_at.is_some());
    }
    assert_eq!(repo.find_credentials("root").await.unwrap().unwrap().password_hash.as_deref(), Some("new-hash"));
});

store_test!(a_chat_identity_binds_to_one_user_only, |db| {
    let (repo, user) = admin(&db).await;
    let other = repo.create_platform_admin("second", "Second", "h", t0(), audit("user.create")).await.unwrap();

    repo.bind_chat_identity(user.id, "unionid:u1", t0(), audit("user.chat_bind")).await.unwrap();
    let err = repo.bind_chat_identity(other.id, "unionid:u1", t0(), audit("user.chat_bind")).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)));
    assert_eq!(repo.find_user_by_chat_identity("unionid:u1").await.unwrap().unwrap().user.id, user.id);
});

store_test!(a_chat_ticket_is_scanned_and_consumed_once, |db| {
    let (repo, user) = admin(&db).await;
    repo.create_chat_ticket(ChatTicket {
        ticket: "T".into(),
        status: TicketStatus::Pending,
        chat_identity: None,
        user_id: None,
        created_at: t0(),
        expires_at: t0() + Duration::minutes(5),
        consumed_at: None,
    })
    .await
    .unwrap();

    let first_scan = repo.scan_chat_ticket("T", TicketStatus::Confirmed, "unionid:u", Some(user.id)).await.unwrap();
    let second_scan = repo.scan_chat_ticket("T", TicketStatus::Unbound, "unionid:v", None).await.unwrap();
    let first_use = repo.consume_chat_ticket("T", TicketStatus::Confirmed, t0()).await.unwrap();
    let second_use = repo.consume_chat_ticket("T", TicketStatus::Confirmed, t0()).await.unwrap();

    assert!(first_scan && !second_scan);
    assert!(first_use && !second_use);
    let t = repo.get_chat_ticket("T").await.unwrap().unwrap();
    assert_eq!((t.status, t.user_id), (TicketStatus::Confirmed, Some(user.id)));
});

fn role_audit(action: &str, target: &'static str) -> AuditRecord {
    AuditRecord::system(t0(), action, target, None)
}

store_test!(roles_in_use_cannot_be_deleted_and_builtins_never, |db| {
    let s = IdentityStore::new(db.clone());
    let custom = Role {
        id: 0,
        code: "reader".into(),
        name: "Reader".into(),
        party_type: atrium_kernel::PartyType::Platform,
        owner_partner_id: None,
        owner_tenant_id: None,
        builtin: false,
        permissions: vec!["user:read".into()],
        created_at: t0(),
        updated_at: t0(),
    };
    let role = s.insert_role(custom.clone(), Effects::audited(role_audit("role.create", "role"))).await.unwrap();

    let holder = User {
        id: 0,
        username: "holder".into(),
        name: "Holder".into(),
        phone: None,
        email: None,
        party: Party::Platform,
        status: UserStatus::Active,
        chat_bound: false,
        created_at: t0(),
        updated_at: t0(),
    };
    let holder = s
        .insert_user(
            UserWithRoles::new(holder, std::slice::from_ref(&role)),
            "hash".into(),
            Effects::audited(role_audit("user.create", "user")),
        )
        .await
        .unwrap();
    assert_eq!(s.get_user(Party::Platform, holder.user.id).await.unwrap().as_ref(), Some(&holder), "stored as returned");

    let dup = s.insert_role(custom, Effects::audited(role_audit("role.create", "role"))).await.unwrap_err();
    let builtin = s.delete_role(1, Effects::audited(role_audit("role.delete", "role"))).await.unwrap_err();
    let in_use = s.delete_role(role.id, Effects::audited(role_audit("role.delete", "role"))).await.unwrap_err();
    let write = UserWrite { role_ids: Some(vec![]), ..UserWrite::default() };
    s.update_user(holder, write, Effects::audited(role_audit("user.update", "user"))).await.unwrap();
    s.delete_role(role.id, Effects::audited(role_audit("role.delete", "role"))).await.unwrap();

    assert!(matches!(dup, Error::Conflict(..)));
    assert!(matches!(builtin, Error::NotFound(_)));
    assert!(matches!(in_use, Error::Conflict(..)), "{in_use:?}");
    assert_eq!(s.get_role(Party::Platform, role.id).await.unwrap(), None);
});
