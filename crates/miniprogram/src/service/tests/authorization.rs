//! [`AuthorizationService`]: the authorisation view, link and callback, and the authorisation
//! events the platform pushes (taken in as the routes take them, through the pipeline's
//! `receive_event`).
use super::*;

// --- authorisation ------------------------------------------------------------------------

#[tokio::test]
async fn the_authorization_view_carries_a_link_whose_state_is_kept_hashed() {
    let s = state();
    let mut d = doubles();
    d.platform
        .expect_pre_auth_code()
        .withf(|t| t.expose() == "ticket-1")
        .returning(|_| Ok(PreAuthCode { code: "preauth-1".into(), expires_in_secs: 1800 }));
    d.platform
        .expect_authorize_url()
        .withf(|code, redirect| {
            code == "preauth-1" && redirect.starts_with("https://atrium.example.com/api/v1/miniprogram/authorization/callback?state=")
        })
        .times(1)
        .returning(|code, redirect| format!("https://mp.example/login?pre_auth_code={code}&redirect_uri={redirect}"));

    let view = authorizations(&s, d).authorization(&tenant_actor(), None).await.unwrap();

    assert_eq!(view.status, AuthorizationStatus::Authorized);
    assert_eq!(view.authorizer_appid.as_deref(), Some(APPID));
    let url = view.authorize_url.unwrap();
    let state = url.split("state=").nth(1).unwrap();
    let attempts = &lock(&s).attempts;
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].state_hash, atrium_kernel::secret::hash_secret(state));
    assert_ne!(attempts[0].state_hash, state);
    assert_eq!(attempts[0].expires_at, now() + Duration::minutes(30));
    assert_eq!(attempts[0].tenant_id, TENANT);
}

#[tokio::test]
async fn before_the_first_verify_ticket_the_view_has_no_link() {
    let s = state();
    lock(&s).ticket = None;
    let view = authorizations(&s, doubles()).authorization(&tenant_actor(), None).await.unwrap();
    assert_eq!(view.authorize_url, None);
    assert!(lock(&s).attempts.is_empty());
}

#[tokio::test]
async fn a_reader_who_may_not_authorise_sees_the_authorisation_without_a_link() {
    let s = state();
    let reader = Actor::new(12, "s", Party::Tenant { tenant_id: TENANT, partner_id: Some(PARTNER) }, ["miniprogram:read"]);
    // The platform double expects no call: no pre-auth code is made for a reader.
    let view = authorizations(&s, doubles()).authorization(&reader, None).await.unwrap();
    assert_eq!((view.status, view.authorize_url), (AuthorizationStatus::Authorized, None));
    assert!(lock(&s).attempts.is_empty());
}

#[tokio::test]
async fn another_partners_tenant_is_not_found() {
    let s = state();
    let partner = Actor::new(5, "s", Party::Partner { partner_id: 77 }, ["miniprogram:*"]);
    let err = authorizations(&s, doubles()).authorization(&partner, Some(TENANT)).await.unwrap_err();
    assert!(matches!(err, Error::NoSuch(ref f) if f.field == "tenant_id"), "{err:?}");
}

fn attempt(state: &str, expires_at: Timestamp) -> AuthorizationAttempt {
    AuthorizationAttempt {
        state_hash: atrium_kernel::secret::hash_secret(state),
        tenant_id: TENANT,
        pre_auth_code: "preauth-1".into(),
        created_by: 10,
        created_at: now() - Duration::minutes(1),
        expires_at,
    }
}

#[tokio::test]
async fn the_callback_stores_what_the_code_grants_once() {
    let s = state();
    lock(&s).authorization = None;
    lock(&s).attempts.push(attempt("st-1", now() + Duration::minutes(10)));
    let mut d = doubles();
    d.platform.expect_query_auth().withf(|_, code| code.expose() == "auth-code-1").times(1).returning(|_, _| {
        Ok(AuthorizationGrant { authorizer_appid: APPID.into(), refresh_token: Secret::new("refresh-new"), func_info: vec![18] })
    });
    d.platform
        .expect_authorizer_profile()
        .withf(|ticket, appid| ticket.expose() == "ticket-1" && appid == APPID)
        .times(1)
        .returning(|_, _| Ok(AuthorizerProfile { nickname: Some("Shop".into()), user_name: Some(GH.into()) }));
    let svc = authorizations(&s, d);
    let callback = |state: &str| AuthorizationCallback { auth_code: "auth-code-1".into(), expires_in: Some(3600), state: state.into() };

    let view = svc.finish_authorization(callback("st-1")).await.unwrap();

    assert_eq!(view.status, AuthorizationStatus::Authorized);
    let stored = lock(&s).authorization.clone().unwrap();
    assert_eq!((stored.tenant_id, stored.authorizer_appid.as_str(), stored.refresh_token.expose()), (TENANT, APPID, "refresh-new"));
    assert_eq!(stored.user_name.as_deref(), Some(GH));
    // The state is used up.
    let again = svc.finish_authorization(callback("st-1")).await.unwrap_err();
    assert_eq!(field_of(&again), Some("state"));
}

#[tokio::test]
async fn an_expired_or_unknown_state_changes_nothing() {
    let s = state();
    lock(&s).attempts.push(attempt("old", now() - Duration::seconds(1)));
    let svc = authorizations(&s, doubles());
    for st in ["old", "never-issued"] {
        let err = svc
            .finish_authorization(AuthorizationCallback { auth_code: "c".into(), expires_in: None, state: st.into() })
            .await
            .unwrap_err();
        assert_eq!(field_of(&err), Some("state"), "{st}");
    }
    assert!(lock(&s).saved_authorizations.is_empty());
}

#[tokio::test]
async fn a_mini_program_authorised_by_another_tenant_is_refused() {
    let s = state();
    {
        let mut st = lock(&s);
        st.authorization = Some(Authorization { tenant_id: OTHER_TENANT, ..authorization(AuthorizationStatus::Authorized) });
        st.attempts.push(attempt("st-2", now() + Duration::minutes(10)));
    }
    let mut d = doubles();
    d.platform
        .expect_query_auth()
        .withf(|_, code| code.expose() == "c")
        .times(1)
        .returning(|_, _| Ok(AuthorizationGrant { authorizer_appid: APPID.into(), refresh_token: Secret::new("r"), func_info: vec![] }));
    d.platform.expect_authorizer_profile().returning(|_, _| Err(PlatformError::Unavailable("down".into())));
    let err = authorizations(&s, d)
        .finish_authorization(AuthorizationCallback { auth_code: "c".into(), expires_in: None, state: "st-2".into() })
        .await
        .unwrap_err();
    assert_eq!(field_of(&err), Some("authorizer_appid"));
    assert!(matches!(err, Error::Blocked(..)));
    assert_eq!(lock(&s).authorization.as_ref().map(|a| a.tenant_id), Some(OTHER_TENANT));
}

#[tokio::test]
async fn a_code_the_authorized_event_used_first_answers_what_the_event_stored() {
    let s = state();
    {
        let mut st = lock(&s);
        // Stored by the event after the link was made.
        st.authorization = Some(Authorization { updated_at: now(), ..authorization(AuthorizationStatus::Authorized) });
        st.attempts.push(attempt("st-3", now() + Duration::minutes(10)));
        st.attempts
            .push(AuthorizationAttempt { created_at: now() + Duration::seconds(1), ..attempt("st-4", now() + Duration::minutes(10)) });
    }
    let mut d = doubles();
    d.platform.expect_query_auth().withf(|_, code| code.expose() == "used").times(2).returning(|_, _| Err(refused(61009)));
    let svc = authorizations(&s, d);
    let callback = |state: &str| AuthorizationCallback { auth_code: "used".into(), expires_in: None, state: state.into() };

    let view = svc.finish_authorization(callback("st-3")).await.unwrap();
    assert_eq!((view.status, view.authorizer_appid.as_deref()), (AuthorizationStatus::Authorized, Some(APPID)));
    assert!(lock(&s).saved_authorizations.is_empty());

    // A link made after the last authorisation was stored gets the platform's refusal.
    let err = svc.finish_authorization(callback("st-4")).await.unwrap_err();
    assert!(matches!(err, Error::PlatformRefused { errcode: 61009, .. }), "{err:?}");
}

// --- pushed events ------------------------------------------------------------------------

#[tokio::test]
async fn a_verify_ticket_is_kept_once_and_an_older_one_never_replaces_it() {
    let s = state();
    let mut d = doubles();
    d.platform.expect_open_event().returning(|_, r| {
        let kind = EventKind::VerifyTicket { ticket: Secret::new(format!("ticket-{}", r.nonce)) };
        let at = if r.nonce == "old" { now() - Duration::hours(1) } else { now() };
        Ok(PlatformEvent { id: format!("e-{}", r.nonce), created_at: at, kind })
    });
    let svc = pipeline(&s, d);
    let push = |nonce: &str| EventRequest { nonce: nonce.into(), ..request() };

    assert_eq!(svc.receive_event(EventUrl::Component, None, push("new")).await.unwrap(), EventOutcome::Applied);
    assert_eq!(svc.receive_event(EventUrl::Component, None, push("new")).await.unwrap(), EventOutcome::Duplicate);
    assert_eq!(svc.receive_event(EventUrl::Component, None, push("old")).await.unwrap(), EventOutcome::Stale);
    assert_eq!(lock(&s).ticket.as_ref().map(|t| t.ticket.expose().to_owned()).as_deref(), Some("ticket-new"));
}

#[tokio::test]
async fn a_push_that_does_not_verify_changes_nothing() {
    for refusal in [EventError::BadSignature, EventError::ForeignAppid] {
        let s = state();
        let mut d = doubles();
        let r = refusal.clone();
        d.platform.expect_open_event().returning(move |_, _| Err(r.clone()));
        let got = pipeline(&s, d).receive_event(EventUrl::Component, None, request()).await.unwrap_err();
        assert_eq!(got, refusal);
        assert!(lock(&s).events.is_empty());
    }
}

#[tokio::test]
async fn a_message_for_a_mini_program_not_authorised_here_or_addressed_elsewhere_is_refused() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform
        .expect_open_event()
        .returning(|_, r| Ok(audit_event(if r.nonce == "gh" { "gh_someone_else" } else { GH }, AuditStatus::Passed)));
    let svc = pipeline(&s, d);

    let unknown = svc.receive_event(EventUrl::Message, Some("wx_stranger"), request()).await.unwrap_err();
    assert_eq!(unknown, EventError::ForeignAppid);
    let elsewhere = svc.receive_event(EventUrl::Message, Some(APPID), EventRequest { nonce: "gh".into(), ..request() }).await.unwrap_err();
    assert_eq!(elsewhere, EventError::ForeignAppid);
    assert_eq!(lock(&s).audits[0].status, AuditStatus::Auditing);
}

#[tokio::test]
async fn an_unauthorized_event_revokes_the_tenants_authorisation() {
    let s = state();
    let mut d = doubles();
    d.platform.expect_open_event().returning(|_, _| Ok(event("u1", EventKind::Unauthorized { authorizer_appid: APPID.into() })));
    let outcome = pipeline(&s, d).receive_event(EventUrl::Component, None, request()).await.unwrap();
    assert_eq!(outcome, EventOutcome::Applied);
    let a = lock(&s).authorization.clone().unwrap();
    assert_eq!((a.status, a.revoked_at), (AuthorizationStatus::Revoked, Some(now())));
}

#[tokio::test]
async fn an_authorized_event_finds_the_tenant_by_its_pre_auth_code() {
    let s = state();
    lock(&s).authorization = None;
    lock(&s).attempts.push(attempt("st-9", now() + Duration::minutes(10)));
    let mut d = doubles();
    d.platform.expect_open_event().returning(|_, _| {
        Ok(event(
            "a1",
            EventKind::Authorized {
                authorizer_appid: APPID.into(),
                authorization_code: Secret::new("code-9"),
                pre_auth_code: Some("preauth-1".into()),
                update: false,
            },
        ))
    });
    // The code the event carries is the one exchanged.
    d.platform.expect_query_auth().withf(|_, code| code.expose() == "code-9").times(1).returning(|_, _| {
        Ok(AuthorizationGrant { authorizer_appid: APPID.into(), refresh_token: Secret::new("refresh-9"), func_info: vec![18] })
    });
    d.platform.expect_authorizer_profile().withf(|_, appid| appid == APPID).times(1).returning(|_, _| Ok(AuthorizerProfile::default()));

    let outcome = pipeline(&s, d).receive_event(EventUrl::Component, None, request()).await.unwrap();

    assert_eq!(outcome, EventOutcome::Applied);
    assert_eq!(
        lock(&s).authorization.as_ref().map(|a| (a.tenant_id, a.refresh_token.expose().to_owned())),
        Some((TENANT, "refresh-9".into()))
    );
}

#[tokio::test]
async fn an_event_whose_effect_cannot_be_stored_is_not_accepted() {
    let s = state();
    let mut repo = MockAuthorizationRepo::new();
    repo.expect_event_seen().returning(|_| Err(Error::internal("database down")));
    let mut platform = MockMiniProgramPlatform::new();
    platform.expect_open_event().returning(|_, _| Ok(event("t1", EventKind::VerifyTicket { ticket: Secret::new("t") })));
    let d = Doubles { platform, inspector: MockPackageInspector::new(), uploader: MockCodeUploader::new() };
    let svc = pipeline_over(Arc::new(repo), &s, d, ReleaseSettings::new("https://a.example"));
    assert_eq!(svc.receive_event(EventUrl::Component, None, request()).await.unwrap_err(), EventError::Unavailable);
}

// --- housekeeping ---------------------------------------------------------------------------

/// The service over `repo` alone (nothing else is called).
fn purging(repo: MockAuthorizationRepo) -> AuthorizationService {
    AuthorizationService::new(Arc::new(repo), Arc::new(MockMiniProgramPlatform::new()), Arc::new(FixedClock::new(now())), settings())
}

#[tokio::test]
async fn a_purge_cuts_off_by_the_retention_and_repeats_while_a_batch_comes_back_full() {
    let mut repo = MockAuthorizationRepo::new();
    // Five expired attempts and two old event ids, taken two at a time.
    let left = Arc::new(Mutex::new((5u64, 2u64)));
    repo.expect_purge_authorization_records()
        .withf(|attempts, events, batch| (*attempts, *events, *batch) == (now() - Duration::hours(2), now() - Duration::days(3), 2))
        .times(3)
        .returning(move |_, _, batch| {
            let mut left = left.lock().unwrap();
            let n = PurgedRecords { attempts: left.0.min(u64::from(batch)), events: left.1.min(u64::from(batch)) };
            *left = (left.0 - n.attempts, left.1 - n.events);
            Ok(n)
        });
    let retention = RecordRetention { attempts_after_expiry: Duration::hours(2), event_ids: Duration::days(3) };

    let purged = purging(repo).purge_records(retention, 2).await.unwrap();

    assert_eq!(purged, PurgedRecords { attempts: 5, events: 2 });
}

#[tokio::test]
async fn a_purge_with_nothing_to_remove_asks_once_and_an_unavailable_store_is_an_error() {
    let mut repo = MockAuthorizationRepo::new();
    repo.expect_purge_authorization_records().times(1).returning(|_, _, _| Ok(PurgedRecords::default()));
    let purged = purging(repo).purge_records(RecordRetention::default(), 500).await.unwrap();
    assert!(purged.is_empty(), "{purged:?}");

    let mut repo = MockAuthorizationRepo::new();
    repo.expect_purge_authorization_records().times(1).returning(|_, _, _| Err(Error::internal("database down")));
    assert!(purging(repo).purge_records(RecordRetention::default(), 500).await.is_err());
}
