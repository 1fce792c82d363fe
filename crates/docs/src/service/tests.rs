//! Service tests against a mocked repository: the token rules and the document rules.
use super::*;
use crate::ports::MockDocsRepo;
use crate::token::hash_token;
use atrium_kernel::{FixedClock, PartyType};
use chrono::{Duration, TimeZone};

fn now() -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).single().expect("valid date")
}

fn tenant(id: Id) -> Owner {
    Owner::from_parts(PartyType::Tenant, Some(id)).expect("tenant owner")
}

fn service(repo: MockDocsRepo) -> DocsService {
    DocsService::new(Arc::new(repo), Arc::new(FixedClock::new(now())), DocsConfig::default())
}

fn project(id: Id, owner: Owner) -> Project {
    Project { id, name: format!("p{id}"), owner, created_at: now(), updated_at: now() }
}

fn api_token(owner: Owner, projects: ProjectGrant) -> ApiToken {
    ApiToken {
        id: 9,
        name: "ci".into(),
        owner,
        projects,
        created_by: None,
        created_at: now() - Duration::days(1),
        expires_at: None,
        revoked_at: None,
        last_used_at: Some(now() - Duration::seconds(5)),
        suspended: None,
    }
}

fn document(id: Id, project_id: Id, depth: i32) -> Document {
    Document {
        id,
        project_id,
        parent_id: None,
        name: "d".into(),
        content: String::new(),
        sort: 0,
        depth,
        author_token_id: None,
        created_at: now(),
        updated_at: now(),
    }
}

fn input(project: Id) -> CreateDocumentRequest {
    CreateDocumentRequest { project, name: "Intro".into(), ..CreateDocumentRequest::default() }
}

/// A repo that finds the given token for any hash.
fn repo_with_token(t: ApiToken) -> MockDocsRepo {
    let mut repo = MockDocsRepo::new();
    repo.expect_find_token_by_hash().returning(move |_| Ok(Some(t.clone())));
    repo
}

async fn issue(owner: Owner, req: CreateTokenRequest) -> (IssuedToken, NewToken) {
    let stored = Arc::new(std::sync::Mutex::new(None));
    let seen = stored.clone();
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().returning(move |id| Ok(Some(project(id, owner))));
    repo.expect_create_token().times(1).returning(move |t: NewToken| {
        *seen.lock().expect("lock") = Some(t.clone());
        Ok(ApiToken {
            id: 1,
            name: t.name,
            owner: t.owner,
            projects: t.projects,
            created_by: t.created_by,
            created_at: t.created_at,
            expires_at: t.expires_at,
            revoked_at: None,
            last_used_at: None,
            suspended: None,
        })
    });
    let issued =
        service(repo).create_token(Some(&atrium_kernel::Actor::new(3, "s", Party::Platform, ["*"])), owner, req).await.expect("issued");
    let row = stored.lock().expect("lock").clone().expect("stored");
    (issued, row)
}

// ----- issuing tokens ---------------------------------------------------------------------

#[tokio::test]
async fn a_token_is_stored_only_as_the_hash_of_its_value() {
    let (issued, row) = issue(tenant(1), CreateTokenRequest { name: "ci".into(), ..CreateTokenRequest::default() }).await;

    assert!(issued.secret.starts_with("atd_"));
    assert!(issued.secret.len() >= 4 + 43, "at least 32 bytes of entropy");
    assert_eq!(row.token_hash, hash_token(&issued.secret));
    assert_ne!(row.token_hash, issued.secret);
    assert!(!format!("{issued:?}").contains(&issued.secret), "Debug hides the value");
    // The issue is audited, by its user and for its owner, with neither the value nor its hash.
    assert_eq!((row.audit.action.as_str(), row.audit.target_type, row.audit.actor_user_id), ("doc_token.create", "doc_token", Some(3)));
    assert_eq!(row.audit.tenant_id, Some(1));
    let shown = format!("{:?}", row.audit);
    assert!(!shown.contains(&issued.secret) && !shown.contains(&row.token_hash), "{shown}");
}

#[tokio::test]
async fn a_token_limited_to_projects_keeps_them_sorted_without_duplicates() {
    let req = CreateTokenRequest { name: "ci".into(), project_ids: Some(vec![5, 2, 5]), expires_at: None };

    let (_, row) = issue(tenant(1), req).await;

    assert_eq!(row.projects, ProjectGrant::Only(vec![2, 5]));
    assert_eq!(row.created_by, Some(3));
}

#[tokio::test]
async fn a_token_cannot_be_limited_to_another_owners_project() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().returning(|id| Ok(Some(project(id, tenant(2)))));
    repo.expect_create_token().never();

    let req = CreateTokenRequest { name: "ci".into(), project_ids: Some(vec![4]), expires_at: None };
    let err = service(repo).create_token(None, tenant(1), req).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("project")), "{err:?}");
}

#[tokio::test]
async fn an_empty_project_list_or_a_past_expiry_is_invalid() {
    let mut repo = MockDocsRepo::new();
    repo.expect_create_token().never();
    let svc = service(repo);

    let empty =
        svc.create_token(None, tenant(1), CreateTokenRequest { name: "ci".into(), project_ids: Some(vec![]), expires_at: None }).await;
    let past =
        svc.create_token(None, tenant(1), CreateTokenRequest { name: "ci".into(), project_ids: None, expires_at: Some(now()) }).await;

    assert!(matches!(empty, Err(Error::Invalid(ref e)) if e[0].field == "project_ids"), "{empty:?}");
    assert!(matches!(past, Err(Error::Invalid(ref e)) if e[0].field == "expires_at"), "{past:?}");
}

#[tokio::test]
async fn revoking_another_owners_token_is_not_found() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_token().returning(|_| Ok(Some(api_token(tenant(2), ProjectGrant::All))));
    repo.expect_revoke_token().never();

    let err = service(repo).revoke_token(None, Party::Tenant { tenant_id: 1, partner_id: None }, 9).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("API token")), "{err:?}");
}

// ----- authenticating ---------------------------------------------------------------------

#[tokio::test]
async fn a_malformed_token_is_refused_without_a_lookup() {
    let mut repo = MockDocsRepo::new();
    repo.expect_find_token_by_hash().never();

    let err = service(repo).authenticate("not-a-token").await.unwrap_err();

    assert!(matches!(err, Error::Unauthenticated(_)));
}

#[tokio::test]
async fn an_unknown_token_is_unauthenticated() {
    let mut repo = MockDocsRepo::new();
    repo.expect_find_token_by_hash().returning(|_| Ok(None));

    let err = service(repo).authenticate(&token::generate()).await.unwrap_err();

    assert!(matches!(err, Error::Unauthenticated(_)));
}

#[tokio::test]
async fn a_revoked_token_is_unauthenticated() {
    let mut t = api_token(tenant(1), ProjectGrant::All);
    t.revoked_at = Some(now() - Duration::minutes(1));
    let mut repo = repo_with_token(t);
    repo.expect_touch_token().never();

    let err = service(repo).authenticate(&token::generate()).await.unwrap_err();

    assert!(matches!(err, Error::Unauthenticated(ref m) if m.contains("revoked")), "{err:?}");
}

#[tokio::test]
async fn a_token_of_a_disabled_party_is_refused_saying_why() {
    let mut t = api_token(tenant(1), ProjectGrant::All);
    t.suspended = Some("the tenant this token belongs to is disabled".into());
    let mut repo = repo_with_token(t);
    repo.expect_touch_token().never();

    let err = service(repo).authenticate(&token::generate()).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(_, ref m) if m.contains("tenant") && m.contains("disabled")), "{err:?}");
}

#[tokio::test]
async fn a_token_is_expired_from_its_expiry_instant_on() {
    let mut t = api_token(tenant(1), ProjectGrant::All);
    t.expires_at = Some(now());
    let repo = repo_with_token(t);

    let err = service(repo).authenticate(&token::generate()).await.unwrap_err();

    assert!(matches!(err, Error::Unauthenticated(ref m) if m.contains("expired")), "{err:?}");
}

#[tokio::test]
async fn the_presented_value_is_looked_up_by_its_hash() {
    let value = token::generate();
    let expected = hash_token(&value);
    let mut repo = MockDocsRepo::new();
    repo.expect_find_token_by_hash()
        .withf(move |h| h == expected)
        .times(1)
        .returning(|_| Ok(Some(api_token(tenant(1), ProjectGrant::All))));

    let t = service(repo).authenticate(&value).await.expect("authenticated");

    assert_eq!(t.id, 9);
}

#[tokio::test]
async fn a_token_used_within_the_last_minute_is_not_written_again() {
    let mut t = api_token(tenant(1), ProjectGrant::All);
    t.last_used_at = Some(now() - Duration::seconds(59));
    let mut repo = repo_with_token(t);
    repo.expect_touch_token().never();

    assert!(service(repo).authenticate(&token::generate()).await.is_ok());
}

#[tokio::test]
async fn a_token_unused_for_a_minute_records_its_use() {
    let mut t = api_token(tenant(1), ProjectGrant::All);
    t.last_used_at = Some(now() - Duration::seconds(61));
    let mut repo = repo_with_token(t);
    repo.expect_touch_token()
        .withf(|id, at, stale_before| *id == 9 && *at == now() && *stale_before == now() - Duration::seconds(60))
        .times(1)
        .returning(|_, _, _| Ok(true));

    assert!(service(repo).authenticate(&token::generate()).await.is_ok());
}

#[tokio::test]
async fn a_failing_use_record_does_not_refuse_a_valid_token() {
    let mut t = api_token(tenant(1), ProjectGrant::All);
    t.last_used_at = None;
    let mut repo = repo_with_token(t);
    repo.expect_touch_token().times(1).returning(|_, _, _| Err(Error::internal("disk full")));

    assert!(service(repo).authenticate(&token::generate()).await.is_ok());
}

// ----- documents --------------------------------------------------------------------------

#[tokio::test]
async fn a_project_of_another_owner_is_not_found() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().returning(|id| Ok(Some(project(id, tenant(2)))));
    repo.expect_insert_document().never();

    let err = service(repo).create_document(&api_token(tenant(1), ProjectGrant::All), input(4)).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("project")), "{err:?}");
}

#[tokio::test]
async fn a_token_limited_to_other_projects_is_forbidden() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().returning(|id| Ok(Some(project(id, tenant(1)))));
    repo.expect_insert_document().never();

    let t = api_token(tenant(1), ProjectGrant::Only(vec![3]));
    let err = service(repo).create_document(&t, input(4)).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(..)), "{err:?}");
}

/// Creates a child of document 8 in project 4 where the store gives that parent's depth in
/// project 4 as `parent_depth`, and returns the refusal; nothing may be stored.
async fn refused_child_of_8(parent_depth: Option<i32>) -> Error {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().returning(|id| Ok(Some(project(id, tenant(1)))));
    repo.expect_document_depth().withf(|project_id, id| (*project_id, *id) == (4, 8)).returning(move |_, _| Ok(parent_depth));
    repo.expect_insert_document().never();

    service(repo)
        .create_document(&api_token(tenant(1), ProjectGrant::All), CreateDocumentRequest { parent: Some(8), ..input(4) })
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_parent_in_another_project_is_not_found() {
    // Document 8 exists, but in project 5: asked about project 4, the store finds nothing.
    let err = refused_child_of_8(None).await;

    assert!(matches!(err, Error::NoSuch(ref e) if e.field == "parent"), "{err:?}");
}

#[tokio::test]
async fn a_child_is_one_level_below_its_parent_and_records_its_author() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().returning(|id| Ok(Some(project(id, tenant(1)))));
    repo.expect_document_depth().returning(|_, _| Ok(Some(2)));
    repo.expect_insert_document()
        .withf(|d| d.depth == 3 && d.parent_id == Some(8) && d.author_token_id == Some(9) && d.sort == 7 && d.content.is_empty())
        .times(1)
        .returning(|d| Ok(Document { id: 10, parent_id: d.parent_id, ..document(10, d.project_id, d.depth) }));

    let doc = service(repo)
        .create_document(&api_token(tenant(1), ProjectGrant::All), CreateDocumentRequest { parent: Some(8), sort: Some(7), ..input(4) })
        .await
        .expect("created");

    assert_eq!((doc.id, doc.depth), (10, 3));
}

#[tokio::test]
async fn nesting_beyond_the_maximum_depth_is_invalid() {
    let err = refused_child_of_8(Some(DocsConfig::default().max_depth)).await;

    assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "parent"), "{err:?}");
}

#[tokio::test]
async fn an_empty_or_over_long_name_is_invalid_before_any_lookup() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().never();
    let svc = service(repo);
    let t = api_token(tenant(1), ProjectGrant::All);

    for name in ["", "   ", &"x".repeat(256), "a\nb"] {
        let err = svc.create_document(&t, CreateDocumentRequest { name: name.into(), ..input(4) }).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "name"), "{name:?}: {err:?}");
    }
}

#[tokio::test]
async fn content_over_the_limit_is_too_large() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().never();

    let content = "x".repeat(DocsConfig::default().max_content_bytes + 1);
    let err = service(repo)
        .create_document(&api_token(tenant(1), ProjectGrant::All), CreateDocumentRequest { content: Some(content), ..input(4) })
        .await
        .unwrap_err();

    assert!(matches!(err, Error::TooLarge(_)), "{err:?}");
}

#[tokio::test]
async fn reading_a_document_of_another_owner_is_not_found() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_document().returning(|id| Ok(Some(document(id, 4, 0))));
    repo.expect_get_project().returning(|id| Ok(Some(project(id, tenant(2)))));

    let err = service(repo).get_document(&api_token(tenant(1), ProjectGrant::All), 8).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("document")), "{err:?}");
}

#[tokio::test]
async fn a_partner_sees_the_projects_of_its_own_tenants_only() {
    let mut repo = MockDocsRepo::new();
    repo.expect_get_project().returning(|id| Ok(Some(project(id, tenant(id)))));
    repo.expect_tenant_partner().returning(|t| Ok(if t == 1 { Some(7) } else { Some(8) }));
    let svc = service(repo);
    let partner = Party::Partner { partner_id: 7 };

    let own_tenants = svc.get_project(partner, 1).await;
    let other_tenants = svc.get_project(partner, 2).await;
    let as_platform = svc.get_project(Party::Platform, 2).await;

    assert!(own_tenants.is_ok());
    assert!(matches!(other_tenants, Err(Error::NotFound("project"))));
    assert!(as_platform.is_ok());
}
