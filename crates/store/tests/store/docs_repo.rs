//! Contract tests of the docs repository, on SQLite and (when configured) PostgreSQL.
use atrium_docs::*;
use atrium_kernel::{AuditRecord, Error, PageRequest, Party, PartyType, Timestamp};
use atrium_store::{Db, DocsStore, store_test};
use chrono::{Duration, TimeZone, Utc};

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid")
}

fn tenant(id: i64) -> Owner {
    Owner::from_parts(PartyType::Tenant, Some(id)).expect("tenant owner")
}

async fn new_project(repo: &DocsStore, name: &str, owner: Owner) -> Project {
    let audit = AuditRecord::system(t0(), "doc_project.create", "doc_project", None);
    repo.create_project(NewProject { name: name.into(), owner, at: t0(), audit }).await.expect("project created")
}

/// A tenant row with `id` and `status` (tokens of a tenant that does not exist are suspended).
fn tenant_row(db: &Db, id: i64, status: &str) {
    use diesel::RunQueryDsl;
    let mut conn = db.conn().expect("connection");
    diesel::sql_query(format!(
        "INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES ({id}, 'T{id}', '{status}', '2026-05-01 09:00:00', '2026-05-01 09:00:00')"
    ))
    .execute(&mut *conn)
    .expect("tenant inserted");
}

fn new_token(hash: &str, owner: Owner, projects: ProjectGrant) -> NewToken {
    NewToken {
        name: "ci".into(),
        token_hash: hash.into(),
        owner,
        projects,
        created_by: None,
        created_at: t0(),
        expires_at: Some(t0() + Duration::days(30)),
        audit: AuditRecord::system(t0(), "doc_token.create", "doc_token", None),
    }
}

/// The audit entries of `action`, by target id.
fn audited(db: &Db, action: &str) -> Vec<Option<i64>> {
    use atrium_store::schema::audit_logs;
    use diesel::prelude::*;
    let mut conn = db.conn().expect("connection");
    audit_logs::table.filter(audit_logs::action.eq(action)).select(audit_logs::target_id).load(&mut *conn).expect("audit read")
}

fn new_doc(project_id: i64, parent_id: Option<i64>, name: &str, sort: i64) -> NewDocument {
    NewDocument {
        project_id,
        parent_id,
        name: name.into(),
        content: format!("# {name}"),
        sort,
        depth: i32::from(parent_id.is_some()),
        author_token_id: None,
        at: t0(),
    }
}

fn repo(db: &Db) -> DocsStore {
    DocsStore::new(db.clone())
}

store_test!(projects_are_listed_per_scope_and_paged, |db| {
    let repo = repo(&db);
    let a = new_project(&repo, "a", Owner::PLATFORM).await;
    let b = new_project(&repo, "b", Owner::PLATFORM).await;
    new_project(&repo, "t", tenant(1)).await;
    new_project(&repo, "u", tenant(2)).await;

    let page1 = repo.list_projects(Party::Platform, PageRequest::new(Some(1), Some(1)).unwrap()).await.unwrap();
    let page2 = repo.list_projects(Party::Platform, PageRequest::new(Some(2), Some(1)).unwrap()).await.unwrap();
    let of_tenant = repo.list_projects(Party::Tenant { tenant_id: 1, partner_id: None }, PageRequest::default()).await.unwrap();

    assert_eq!((page1.total, page1.items[0].id), (4, a.id), "the platform sees every party's projects");
    assert_eq!(page2.items[0].id, b.id);
    assert_eq!(of_tenant.total, 1);
    assert_eq!(of_tenant.items[0].owner, tenant(1));
    assert_eq!(repo.get_project(b.id).await.unwrap(), Some(b));
    assert_eq!(repo.get_project(999_999).await.unwrap(), None);
});

store_test!(a_token_is_found_by_its_hash_with_its_projects, |db| {
    let repo = repo(&db);
    tenant_row(&db, 1, "active");
    let p1 = new_project(&repo, "p1", tenant(1)).await;
    let p2 = new_project(&repo, "p2", tenant(1)).await;

    let created = repo.create_token(new_token("h1", tenant(1), ProjectGrant::Only(vec![p1.id, p2.id]))).await.unwrap();
    let found = repo.find_token_by_hash("h1").await.unwrap().expect("found");
    let unknown = repo.find_token_by_hash("nope").await.unwrap();

    assert_eq!(found, created);
    assert_eq!(found.projects, ProjectGrant::Only(vec![p1.id, p2.id]));
    assert_eq!(found.owner, tenant(1));
    assert_eq!(found.expires_at, Some(t0() + Duration::days(30)));
    assert_eq!((found.revoked_at, found.last_used_at), (None, None));
    assert_eq!(unknown, None);
});

store_test!(a_token_for_all_projects_lists_none, |db| {
    let repo = repo(&db);

    let t = repo.create_token(new_token("h1", Owner::PLATFORM, ProjectGrant::All)).await.unwrap();

    assert_eq!(repo.get_token(t.id).await.unwrap().expect("found").projects, ProjectGrant::All);
});

store_test!(a_duplicate_token_hash_is_a_conflict, |db| {
    let repo = repo(&db);
    repo.create_token(new_token("same", Owner::PLATFORM, ProjectGrant::All)).await.unwrap();

    let err = repo.create_token(new_token("same", tenant(1), ProjectGrant::All)).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
});

store_test!(tokens_are_listed_per_owner_with_their_projects, |db| {
    let repo = repo(&db);
    let p = new_project(&repo, "p", tenant(1)).await;
    repo.create_token(new_token("a", tenant(1), ProjectGrant::Only(vec![p.id]))).await.unwrap();
    repo.create_token(new_token("b", tenant(1), ProjectGrant::All)).await.unwrap();
    repo.create_token(new_token("c", tenant(2), ProjectGrant::All)).await.unwrap();

    let page = repo.list_tokens(Party::Tenant { tenant_id: 1, partner_id: None }, PageRequest::default()).await.unwrap();

    assert_eq!(page.total, 2);
    assert_eq!(page.items[0].projects, ProjectGrant::Only(vec![p.id]));
    assert_eq!(page.items[1].projects, ProjectGrant::All);
});

store_test!(revoking_keeps_the_first_revocation_time, |db| {
    let repo = repo(&db);
    let t = repo.create_token(new_token("h", Owner::PLATFORM, ProjectGrant::All)).await.unwrap();

    let revoke = |at| AuditRecord::system(at, "doc_token.revoke", "doc_token", Some(t.id));
    repo.revoke_token(t.id, t0() + Duration::hours(1), atrium_kernel::Effects::audited(revoke(t0() + Duration::hours(1)))).await.unwrap();
    repo.revoke_token(t.id, t0() + Duration::hours(2), atrium_kernel::Effects::audited(revoke(t0() + Duration::hours(2)))).await.unwrap();

    assert_eq!(repo.get_token(t.id).await.unwrap().unwrap().revoked_at, Some(t0() + Duration::hours(1)));
    // The issue and the one revocation are audited with the token's id; the second changed nothing.
    assert_eq!(audited(&db, "doc_token.create"), [Some(t.id)]);
    assert_eq!(audited(&db, "doc_token.revoke"), [Some(t.id)]);
});

store_test!(touching_writes_only_when_the_last_use_is_stale, |db| {
    let repo = repo(&db);
    let t = repo.create_token(new_token("h", Owner::PLATFORM, ProjectGrant::All)).await.unwrap();
    let minute = Duration::seconds(60);
    let (first, soon, later) = (t0(), t0() + Duration::seconds(30), t0() + Duration::seconds(90));

    let wrote_first = repo.touch_token(t.id, first, first - minute).await.unwrap();
    let wrote_soon = repo.touch_token(t.id, soon, soon - minute).await.unwrap();
    let after_soon = repo.get_token(t.id).await.unwrap().unwrap().last_used_at;
    let wrote_later = repo.touch_token(t.id, later, later - minute).await.unwrap();

    assert!(wrote_first);
    assert!(!wrote_soon);
    assert_eq!(after_soon, Some(first));
    assert!(wrote_later);
    assert_eq!(repo.get_token(t.id).await.unwrap().unwrap().last_used_at, Some(later));
});

store_test!(documents_are_stored_and_read_back, |db| {
    let repo = repo(&db);
    let p = new_project(&repo, "p", Owner::PLATFORM).await;
    let t = repo.create_token(new_token("h", Owner::PLATFORM, ProjectGrant::All)).await.unwrap();

    let root = repo.insert_document(NewDocument { author_token_id: Some(t.id), ..new_doc(p.id, None, "root", 3) }).await.unwrap();
    let child = repo.insert_document(new_doc(p.id, Some(root.id), "child", -1)).await.unwrap();

    let back = repo.get_document(child.id).await.unwrap().expect("found");
    assert_eq!(back, child);
    assert_eq!((back.parent_id, back.depth, back.sort), (Some(root.id), 1, -1));
    assert_eq!(repo.get_document(root.id).await.unwrap().unwrap().author_token_id, Some(t.id));
    assert_eq!(repo.get_document(999_999).await.unwrap(), None);
});

store_test!(a_documents_depth_is_found_only_in_its_own_project, |db| {
    let repo = repo(&db);
    let p = new_project(&repo, "p", Owner::PLATFORM).await;
    let other = new_project(&repo, "other", Owner::PLATFORM).await;
    let root = repo.insert_document(new_doc(p.id, None, "root", 0)).await.unwrap();
    let child = repo.insert_document(new_doc(p.id, Some(root.id), "child", 0)).await.unwrap();

    assert_eq!(repo.document_depth(p.id, root.id).await.unwrap(), Some(0));
    assert_eq!(repo.document_depth(p.id, child.id).await.unwrap(), Some(1));
    assert_eq!(repo.document_depth(other.id, child.id).await.unwrap(), None);
    assert_eq!(repo.document_depth(p.id, 999_999).await.unwrap(), None);
});

store_test!(a_project_lists_its_documents_without_content, |db| {
    let repo = repo(&db);
    let p = new_project(&repo, "p", Owner::PLATFORM).await;
    let other = new_project(&repo, "other", Owner::PLATFORM).await;
    let root = repo.insert_document(new_doc(p.id, None, "root", 0)).await.unwrap();
    repo.insert_document(new_doc(p.id, Some(root.id), "child", 0)).await.unwrap();
    repo.insert_document(new_doc(other.id, None, "elsewhere", 0)).await.unwrap();

    let listed = repo.list_documents(p.id).await.unwrap();

    assert_eq!(listed.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), vec!["root", "child"]);
    assert_eq!(listed[1].parent_id, Some(root.id));
    assert_eq!(listed[1].depth, 1);
});

store_test!(the_database_refuses_a_parent_in_another_project, |db| {
    let repo = repo(&db);
    let p = new_project(&repo, "p", Owner::PLATFORM).await;
    let other = new_project(&repo, "other", Owner::PLATFORM).await;
    let foreign = repo.insert_document(new_doc(other.id, None, "foreign", 0)).await.unwrap();

    let cross = repo.insert_document(new_doc(p.id, Some(foreign.id), "cross", 0)).await.unwrap_err();
    let missing = repo.insert_document(new_doc(p.id, Some(999_999), "missing", 0)).await.unwrap_err();

    assert!(matches!(cross, Error::Conflict(..)), "{cross:?}");
    assert!(matches!(missing, Error::Conflict(..)), "{missing:?}");
    assert!(repo.list_documents(p.id).await.unwrap().is_empty());
});

store_test!(a_token_of_a_disabled_or_missing_tenant_is_found_suspended, |db| {
    let repo = repo(&db);
    tenant_row(&db, 1, "active");
    tenant_row(&db, 2, "disabled");
    repo.create_token(new_token("live", tenant(1), ProjectGrant::All)).await.unwrap();
    repo.create_token(new_token("off", tenant(2), ProjectGrant::All)).await.unwrap();
    repo.create_token(new_token("gone", tenant(3), ProjectGrant::All)).await.unwrap();

    let live = repo.find_token_by_hash("live").await.unwrap().unwrap();
    let off = repo.find_token_by_hash("off").await.unwrap().unwrap();
    let gone = repo.find_token_by_hash("gone").await.unwrap().unwrap();

    assert_eq!(live.suspended, None);
    assert!(off.suspended.as_deref().is_some_and(|w| w.contains("tenant") && w.contains("disabled")), "{off:?}");
    assert_eq!(off.status(t0()), TokenStatus::Suspended);
    assert!(gone.suspended.is_some(), "{gone:?}");
});
