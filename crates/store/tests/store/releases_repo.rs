//! Contract tests of the code-release repository, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{AuditRecord, Effects, Error, ListQuery, Page, Party, Timestamp};
use atrium_miniprogram::*;
use atrium_org::*;
use atrium_store::schema::{audit_logs, mp_authorizations, mp_packages, mp_release_tasks, mp_upload_tasks, mp_verify_ticket};
use atrium_store::{Db, FieldCipher, OrgStore, PackageDir, ReleaseStore, store_test};
use chrono::{Duration, NaiveDateTime, TimeZone, Utc};
use diesel::prelude::*;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const REFRESH_TOKEN: &str = "refreshtoken@@@RU0Sgi7RkvKhjyTkI7P0pYc1ZyY2yJcXWt5ZsQ";
const TICKET: &str = "ticket@@@lEHjsBEi_TPDey0IZxw4Zbb7JRYLOtEf9ksvDpSwzkwog3R6MEpdaK0jI";

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid") + Duration::microseconds(123_456)
}

fn at(minutes: i64) -> Timestamp {
    t0() + Duration::minutes(minutes)
}

/// A directory of this test's own, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join("atrium-tests").join(format!(
            "{what}-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            Utc::now().timestamp_micros()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Fixture {
    repo: ReleaseStore,
    packages: PackageDir,
    partner: i64,
    tenant: i64,
    /// A second tenant of the same partner.
    sibling: i64,
    /// A tenant of another partner.
    other: i64,
    other_partner: i64,
    /// Where the store keeps packages (not created until the first one arrives).
    package_dir: PathBuf,
    /// Where the test writes the files it hands over.
    uploads: TempDir,
    _kept: TempDir,
}

async fn fixture(db: &Db) -> Fixture {
    let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let mut partners = vec![];
    for name in ["P", "Q"] {
        let p = Partner {
            id: 0,
            name: name.into(),
            contact_name: None,
            phone: None,
            email: None,
            status: PartnerStatus::Active,
            created_at: t0(),
            updated_at: t0(),
        };
        partners
            .push(org.insert_partner(p, Effects::audited(AuditRecord::system(t0(), "partner.create", "partner", None))).await.unwrap().id);
    }
    let mut tenants = vec![];
    for partner in [partners[0], partners[0], partners[1]] {
        let t = Tenant::draft(Some(partner), "T", t0());
        tenants.push(org.insert_tenant(t, Effects::audited(AuditRecord::system(t0(), "tenant.create", "tenant", None))).await.unwrap().id);
    }
    let kept = TempDir::new("kept");
    let package_dir = kept.0.join("packages");
    Fixture {
        repo: ReleaseStore::new(db.clone(), FieldCipher::new(&[9u8; 32])),
        packages: PackageDir::new(db.clone(), package_dir.clone()),
        partner: partners[0],
        tenant: tenants[0],
        sibling: tenants[1],
        other: tenants[2],
        other_partner: partners[1],
        package_dir,
        uploads: TempDir::new("uploads"),
        _kept: kept,
    }
}

fn authorization(tenant_id: i64, appid: &str) -> Authorization {
    Authorization {
        tenant_id,
        status: AuthorizationStatus::Authorized,
        authorizer_appid: appid.into(),
        refresh_token: Secret::new(REFRESH_TOKEN),
        nickname: Some("Ann's shop".into()),
        user_name: Some("gh_eb5e3a772040".into()),
        func_info: vec![17, 18, 25],
        authorized_at: t0(),
        revoked_at: None,
        updated_at: t0(),
    }
}

fn authorization_audit(tenant_id: i64, action: &str) -> AuditRecord {
    AuditRecord::system(t0(), action, "miniprogram_authorization", Some(tenant_id)).owned_by(None, Some(tenant_id))
}

fn attempt(tenant_id: i64, state_hash: &str, code: &str) -> AuthorizationAttempt {
    AuthorizationAttempt {
        state_hash: state_hash.into(),
        tenant_id,
        pre_auth_code: code.into(),
        created_by: 42,
        created_at: t0(),
        expires_at: at(10),
    }
}

fn upload(tenant_id: i64, version: &str, source: UploadSource) -> UploadTask {
    UploadTask {
        id: 0,
        tenant_id,
        source,
        version: version.into(),
        description: format!("Version {version}"),
        status: UploadStatus::Queued,
        template_id: None,
        errcode: None,
        error: None,
        created_by: 42,
        created_at: t0(),
        started_at: None,
        finished_at: None,
        updated_at: t0(),
    }
}

fn template(id: i64) -> UploadSource {
    UploadSource::Template {
        template_id: id,
        ext_json: serde_json::json!({"extEnable": true, "extAppid": "wx8888888888888888", "ext": {"shop": "Ann's", "rate": 0.1}}),
    }
}

async fn insert_upload(f: &Fixture, tenant_id: i64, version: &str) -> UploadTask {
    f.repo.insert_upload_task(upload(tenant_id, version, template(7))).await.unwrap()
}

/// A stored upload that went through its run and was committed, finished at `finished`.
async fn uploaded(f: &Fixture, tenant_id: i64, version: &str, finished: Timestamp) -> UploadTask {
    let task = insert_upload(f, tenant_id, version).await;
    let done = UploadTask {
        status: UploadStatus::Uploaded,
        template_id: Some(7),
        started_at: Some(t0()),
        finished_at: Some(finished),
        updated_at: finished,
        ..task
    };
    assert!(f.repo.update_upload_task(done.clone(), UploadStatus::Queued).await.unwrap());
    done
}

fn audit(upload: &UploadTask, auditid: i64) -> AuditTask {
    AuditTask {
        id: 0,
        tenant_id: upload.tenant_id,
        upload_task_id: upload.id,
        version: upload.version.clone(),
        auditid,
        status: AuditStatus::Auditing,
        reason: None,
        screenshots: vec![],
        submitted_at: t0(),
        decided_at: None,
        release: ReleaseState::default(),
        created_by: 42,
        updated_at: t0(),
    }
}

/// A stored audit of a fresh upload of `tenant_id`, decided `status` unless that is running.
async fn audited(f: &Fixture, tenant_id: i64, version: &str, status: AuditStatus, submitted: Timestamp) -> AuditTask {
    let up = uploaded(f, tenant_id, version, submitted).await;
    let task =
        f.repo.insert_audit_task(AuditTask { submitted_at: submitted, updated_at: submitted, ..audit(&up, up.id + 1000) }).await.unwrap();
    if status == AuditStatus::Auditing {
        return task;
    }
    let decided = AuditTask { status, decided_at: (!status.is_running()).then_some(submitted), ..task.clone() };
    assert!(f.repo.update_audit_task(decided.clone(), task.state(), Effects::none()).await.unwrap());
    decided
}

fn ids<T>(page: &Page<T>, id: impl Fn(&T) -> i64) -> Vec<i64> {
    page.items.iter().map(id).collect()
}

fn upload_query() -> UploadTaskQuery {
    UploadTaskQuery::default()
}

fn audit_query() -> AuditTaskQuery {
    AuditTaskQuery::default()
}

/// Writes `bytes` to a new file in the test's upload directory; returns it with its info.
fn package_file(f: &Fixture, name: &str, bytes: &[u8]) -> (PathBuf, PackageInfo) {
    let path = f.uploads.0.join(name);
    std::fs::write(&path, bytes).unwrap();
    (path, package_info(bytes))
}

fn package_info(bytes: &[u8]) -> PackageInfo {
    let sha256 = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>();
    PackageInfo { sha256, size: bytes.len() as u64, unpacked_size: 4096, entries: 3, project_root: "shop/".into() }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

// --- tenants and authorisations -------------------------------------------------------------

store_test!(the_tenant_is_found_within_the_callers_scope_only, |db| {
    let f = fixture(&db).await;
    let mine = Some(ReleaseTenant { id: f.tenant, partner_id: Some(f.partner) });

    assert_eq!(f.repo.tenant(Party::Platform, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Partner { partner_id: f.partner }, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Partner { partner_id: f.partner }, f.other).await.unwrap(), None);
    assert_eq!(f.repo.tenant(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, f.tenant).await.unwrap(), mine);
    assert_eq!(f.repo.tenant(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, f.sibling).await.unwrap(), None);
    assert_eq!(f.repo.tenant(Party::Platform, f.other + 1000).await.unwrap(), None);
});

store_test!(an_authorization_round_trips_with_its_refresh_token_encrypted_at_rest, |db| {
    let f = fixture(&db).await;
    assert_eq!(f.repo.get_authorization(f.tenant).await.unwrap(), None);

    let stored = f
        .repo
        .save_authorization(authorization(f.tenant, "wxa1"), Effects::audited(authorization_audit(f.tenant, "authorize")))
        .await
        .unwrap();

    assert_eq!(stored, authorization(f.tenant, "wxa1"));
    assert_eq!(f.repo.get_authorization(f.tenant).await.unwrap(), Some(stored.clone()));
    assert_eq!(f.repo.authorization_by_appid("wxa1".into()).await.unwrap(), Some(stored));
    assert_eq!(f.repo.authorization_by_appid("wxa2".into()).await.unwrap(), None);
    assert_eq!(f.repo.get_authorization(f.other).await.unwrap(), None);
    let mut conn = db.conn().unwrap();
    let raw: String = mp_authorizations::table.find(f.tenant).select(mp_authorizations::refresh_token_enc).first(&mut *conn).unwrap();
    assert!(raw.starts_with("v1:"), "{raw}");
    assert!(!raw.contains(REFRESH_TOKEN) && !raw.contains("refreshtoken"), "{raw}");
    let audits: Vec<(String, Option<i64>, Option<i64>)> = audit_logs::table
        .filter(audit_logs::target_type.eq("miniprogram_authorization"))
        .select((audit_logs::action, audit_logs::tenant_id, audit_logs::partner_id))
        .load(&mut *conn)
        .unwrap();
    assert_eq!(audits, vec![("authorize".to_owned(), Some(f.tenant), Some(f.partner))]);
});

store_test!(authorised_mini_programs_are_listed_in_scope_by_tenant_a_page_at_a_time, |db| {
    let f = fixture(&db).await;
    for (tenant, appid) in [(f.tenant, "wxa1"), (f.sibling, "wxa2"), (f.other, "wxa3")] {
        f.repo.save_authorization(authorization(tenant, appid), Effects::audited(authorization_audit(tenant, "authorize"))).await.unwrap();
    }
    let revoked = Authorization { status: AuthorizationStatus::Revoked, revoked_at: Some(t0()), ..authorization(f.sibling, "wxa2") };
    f.repo.save_authorization(revoked, Effects::audited(authorization_audit(f.sibling, "revoke"))).await.unwrap();
    let tenants = |list: Vec<Authorization>| list.into_iter().map(|a| a.tenant_id).collect::<Vec<_>>();

    assert_eq!(tenants(f.repo.authorized_in_scope(Party::Platform, None, 0, 10).await.unwrap()), [f.tenant, f.other]);
    assert_eq!(tenants(f.repo.authorized_in_scope(Party::Platform, None, 0, 1).await.unwrap()), [f.tenant]);
    assert_eq!(tenants(f.repo.authorized_in_scope(Party::Platform, None, f.tenant, 10).await.unwrap()), [f.other]);
    assert_eq!(tenants(f.repo.authorized_in_scope(Party::Platform, Some(f.other_partner), 0, 10).await.unwrap()), [f.other]);
    let partner = Party::Partner { partner_id: f.partner };
    assert_eq!(tenants(f.repo.authorized_in_scope(partner, None, 0, 10).await.unwrap()), [f.tenant]);
    assert_eq!(tenants(f.repo.authorized_in_scope(partner, Some(f.other_partner), 0, 10).await.unwrap()), Vec::<i64>::new());
    let tenant = Party::Tenant { tenant_id: f.other, partner_id: Some(f.other_partner) };
    let mine = f.repo.authorized_in_scope(tenant, None, 0, 10).await.unwrap();
    assert_eq!(mine, vec![authorization(f.other, "wxa3")], "the refresh token is decrypted");
});

store_test!(a_second_save_replaces_the_tenants_authorization_and_may_change_its_app, |db| {
    let f = fixture(&db).await;
    f.repo.save_authorization(authorization(f.tenant, "wxa1"), Effects::audited(authorization_audit(f.tenant, "authorize"))).await.unwrap();
    let revoked = Authorization {
        status: AuthorizationStatus::Revoked,
        revoked_at: Some(at(5)),
        updated_at: at(5),
        ..authorization(f.tenant, "wxa1")
    };
    f.repo.save_authorization(revoked.clone(), Effects::audited(authorization_audit(f.tenant, "revoke"))).await.unwrap();
    assert_eq!(f.repo.get_authorization(f.tenant).await.unwrap(), Some(revoked));

    // Authorised again, with another mini-program: the first app id is free again.
    let again = Authorization {
        refresh_token: Secret::new("another token"),
        nickname: None,
        user_name: None,
        func_info: vec![],
        authorized_at: at(9),
        updated_at: at(9),
        ..authorization(f.tenant, "wxa2")
    };
    f.repo.save_authorization(again.clone(), Effects::audited(authorization_audit(f.tenant, "authorize"))).await.unwrap();

    assert_eq!(f.repo.get_authorization(f.tenant).await.unwrap(), Some(again.clone()));
    assert_eq!(f.repo.authorization_by_appid("wxa1".into()).await.unwrap(), None);
    assert_eq!(f.repo.authorization_by_appid("wxa2".into()).await.unwrap(), Some(again));
    f.repo.save_authorization(authorization(f.other, "wxa1"), Effects::audited(authorization_audit(f.other, "authorize"))).await.unwrap();
    let mut conn = db.conn().unwrap();
    let rows: i64 = mp_authorizations::table.count().get_result(&mut *conn).unwrap();
    let audits: i64 =
        audit_logs::table.filter(audit_logs::target_type.eq("miniprogram_authorization")).count().get_result(&mut *conn).unwrap();
    assert_eq!((rows, audits), (2, 4));
});

store_test!(an_app_authorised_for_one_tenant_is_refused_for_another_and_nothing_is_written, |db| {
    let f = fixture(&db).await;
    let first = f
        .repo
        .save_authorization(authorization(f.tenant, "wxa1"), Effects::audited(authorization_audit(f.tenant, "authorize")))
        .await
        .unwrap();
    f.repo.save_authorization(authorization(f.other, "wxa9"), Effects::audited(authorization_audit(f.other, "authorize"))).await.unwrap();

    let fresh =
        f.repo.save_authorization(authorization(f.sibling, "wxa1"), Effects::audited(authorization_audit(f.sibling, "authorize"))).await;
    let moved =
        f.repo.save_authorization(authorization(f.other, "wxa1"), Effects::audited(authorization_audit(f.other, "authorize"))).await;

    for err in [fresh.unwrap_err(), moved.unwrap_err()] {
        assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("wxa1")), "{err:?}");
    }
    assert_eq!(f.repo.get_authorization(f.sibling).await.unwrap(), None);
    assert_eq!(f.repo.get_authorization(f.other).await.unwrap().unwrap().authorizer_appid, "wxa9");
    assert_eq!(f.repo.authorization_by_appid("wxa1".into()).await.unwrap(), Some(first));
    let mut conn = db.conn().unwrap();
    let audits: Vec<Option<i64>> = audit_logs::table
        .filter(audit_logs::target_type.eq("miniprogram_authorization"))
        .order(audit_logs::id.asc())
        .select(audit_logs::tenant_id)
        .load(&mut *conn)
        .unwrap();
    assert_eq!(audits, vec![Some(f.tenant), Some(f.other)], "the refused saves wrote no audit entry");
});

store_test!(an_authorization_for_a_missing_tenant_is_refused_and_writes_no_audit, |db| {
    let f = fixture(&db).await;

    let err = f
        .repo
        .save_authorization(authorization(f.other + 1000, "wxa1"), Effects::audited(authorization_audit(f.tenant, "authorize")))
        .await
        .unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    let mut conn = db.conn().unwrap();
    let audits: i64 =
        audit_logs::table.filter(audit_logs::target_type.eq("miniprogram_authorization")).count().get_result(&mut *conn).unwrap();
    assert_eq!(audits, 0);
});

store_test!(an_authorization_attempt_is_taken_once_and_found_by_its_code_until_then, |db| {
    let f = fixture(&db).await;
    let hash = "a".repeat(64);
    f.repo.insert_authorization_attempt(attempt(f.tenant, &hash, "preauthcode@@@1")).await.unwrap();
    f.repo.insert_authorization_attempt(attempt(f.other, &"b".repeat(64), "preauthcode@@@2")).await.unwrap();
    let again = f.repo.insert_authorization_attempt(attempt(f.other, &hash, "preauthcode@@@3")).await.unwrap_err();
    assert!(matches!(again, Error::Conflict(..)), "{again:?}");

    // Looking it up by its code leaves it in place.
    let by_code = f.repo.authorization_attempt_by_code("preauthcode@@@1".into()).await.unwrap();
    assert_eq!(by_code, Some(attempt(f.tenant, &hash, "preauthcode@@@1")));
    assert_eq!(f.repo.authorization_attempt_by_code("preauthcode@@@1".into()).await.unwrap(), by_code);
    assert_eq!(f.repo.authorization_attempt_by_code("preauthcode@@@9".into()).await.unwrap(), None);

    assert_eq!(f.repo.take_authorization_attempt(hash.clone()).await.unwrap(), by_code);
    assert_eq!(f.repo.take_authorization_attempt(hash.clone()).await.unwrap(), None, "a state is used once");
    assert_eq!(f.repo.authorization_attempt_by_code("preauthcode@@@1".into()).await.unwrap(), None);
    assert_eq!(f.repo.take_authorization_attempt("c".repeat(64)).await.unwrap(), None);
    assert!(f.repo.take_authorization_attempt("b".repeat(64)).await.unwrap().is_some(), "the other attempt is untouched");
});

store_test!(of_ten_concurrent_takes_of_one_attempt_exactly_one_gets_it, |db| {
    let f = fixture(&db).await;
    let hash = "d".repeat(64);
    f.repo.insert_authorization_attempt(attempt(f.tenant, &hash, "preauthcode@@@1")).await.unwrap();
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = vec![];
    for _ in 0..10 {
        let (repo, start, hash) = (repo.clone(), start.clone(), hash.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.take_authorization_attempt(hash).await
        }));
    }

    let mut taken = vec![];
    for t in tasks {
        if let Some(a) = t.await.unwrap().unwrap() {
            taken.push(a);
        }
    }

    assert_eq!(taken, vec![attempt(f.tenant, &hash, "preauthcode@@@1")]);
});

// --- the verify ticket and events ------------------------------------------------------------

store_test!(the_verify_ticket_is_encrypted_and_only_replaced_by_a_newer_one, |db| {
    let f = fixture(&db).await;
    let ticket = |value: &str, minutes: i64| VerifyTicket { ticket: Secret::new(value), created_at: at(minutes) };
    assert_eq!(f.repo.verify_ticket().await.unwrap(), None);

    assert!(f.repo.save_verify_ticket(ticket(TICKET, 10)).await.unwrap());
    assert!(!f.repo.save_verify_ticket(ticket("older", 5)).await.unwrap(), "an older push");
    assert!(!f.repo.save_verify_ticket(ticket("same time", 10)).await.unwrap(), "as new is not newer");
    assert_eq!(f.repo.verify_ticket().await.unwrap(), Some(ticket(TICKET, 10)));

    let mut conn = db.conn().unwrap();
    let raw: Vec<String> = mp_verify_ticket::table.select(mp_verify_ticket::ticket_enc).load(&mut *conn).unwrap();
    assert_eq!(raw.len(), 1);
    assert!(raw[0].starts_with("v1:") && !raw[0].contains(TICKET) && !raw[0].contains("ticket@@@"), "{raw:?}");

    assert!(f.repo.save_verify_ticket(ticket("newer", 20)).await.unwrap());
    assert_eq!(f.repo.verify_ticket().await.unwrap(), Some(ticket("newer", 20)));
    let rows: i64 = mp_verify_ticket::table.count().get_result(&mut *conn).unwrap();
    assert_eq!(rows, 1);
});

store_test!(of_concurrent_verify_tickets_the_newest_is_kept, |db| {
    let f = fixture(&db).await;
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = vec![];
    // Pushed in a shuffled order of creation times.
    for minutes in [3, 9, 1, 7, 5, 0, 8, 2, 6, 4] {
        let (repo, start) = (repo.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.save_verify_ticket(VerifyTicket { ticket: Secret::new(format!("ticket {minutes}")), created_at: at(minutes) }).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    assert_eq!(f.repo.verify_ticket().await.unwrap(), Some(VerifyTicket { ticket: Secret::new("ticket 9"), created_at: at(9) }));
});

store_test!(an_event_is_seen_once_recorded_and_recording_it_again_is_no_error, |db| {
    let f = fixture(&db).await;
    let id = "wx8888888888888888:1700000000:component_verify_ticket".to_owned();
    assert!(!f.repo.event_seen(id.clone()).await.unwrap());

    f.repo.record_event(id.clone(), "component_verify_ticket".into(), t0()).await.unwrap();
    // Two deliveries racing both record it.
    let repo = Arc::new(f.repo.clone());
    let mut tasks = vec![];
    for _ in 0..5 {
        let (repo, id) = (repo.clone(), id.clone());
        tasks.push(tokio::spawn(async move { repo.record_event(id, "component_verify_ticket".into(), t0()).await }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    assert!(f.repo.event_seen(id).await.unwrap());
    assert!(!f.repo.event_seen("another".into()).await.unwrap());
});

// --- purging ---------------------------------------------------------------------------------

/// The state hashes of the attempts left, sorted.
fn attempts_left(db: &Db) -> Vec<String> {
    use atrium_store::schema::mp_authorization_attempts::dsl::*;
    let mut conn = db.conn().unwrap();
    mp_authorization_attempts.select(state_hash).order(state_hash).load(&mut *conn).unwrap()
}

/// The event ids left, sorted.
fn events_left(db: &Db) -> Vec<String> {
    use atrium_store::schema::mp_events::dsl::*;
    let mut conn = db.conn().unwrap();
    mp_events.select(event_id).order(event_id).load(&mut *conn).unwrap()
}

store_test!(a_purge_removes_expired_attempts_and_old_event_ids_a_bounded_batch_at_a_time, |db| {
    let f = fixture(&db).await;
    // Attempts that expired at minutes -30..-26, one expiring exactly at the cut-off (kept:
    // only those expired before it go) and two still running.
    for (i, minute) in [-30, -29, -28, -27, -26, 0, 5, 60].into_iter().enumerate() {
        let a = AuthorizationAttempt { expires_at: at(minute), ..attempt(f.tenant, &format!("state-{i}"), &format!("code-{i}")) };
        f.repo.insert_authorization_attempt(a).await.unwrap();
    }
    // Events recorded at minutes -20..-16 (old) and one at the cut-off and one after (recent).
    for (i, minute) in [-20, -19, -18, -17, -16, 0, 1].into_iter().enumerate() {
        f.repo.record_event(format!("event-{i}"), "component_verify_ticket".into(), at(minute)).await.unwrap();
    }

    // Each call removes at most a batch of each.
    let first = f.repo.purge_authorization_records(at(0), at(0), 2).await.unwrap();
    assert_eq!(first, PurgedRecords { attempts: 2, events: 2 });
    assert_eq!((attempts_left(&db).len(), events_left(&db).len()), (6, 5));
    let second = f.repo.purge_authorization_records(at(0), at(0), 2).await.unwrap();
    assert_eq!(second, PurgedRecords { attempts: 2, events: 2 });
    let third = f.repo.purge_authorization_records(at(0), at(0), 2).await.unwrap();
    assert_eq!(third, PurgedRecords { attempts: 1, events: 1 });

    // What was live or recent stays, and is still found.
    assert_eq!(attempts_left(&db), vec!["state-5", "state-6", "state-7"]);
    assert_eq!(events_left(&db), vec!["event-5", "event-6"]);
    assert_eq!(f.repo.take_authorization_attempt("state-6".into()).await.unwrap().map(|a| a.pre_auth_code), Some("code-6".into()));
    assert!(f.repo.authorization_attempt_by_code("code-7".into()).await.unwrap().is_some());
    assert!(f.repo.authorization_attempt_by_code("code-0".into()).await.unwrap().is_none());
    for (id, seen) in [("event-5", true), ("event-6", true), ("event-0", false), ("event-4", false)] {
        assert_eq!(f.repo.event_seen(id.into()).await.unwrap(), seen, "{id}");
    }

    // A second purge with the same cut-offs finds nothing.
    assert_eq!(f.repo.purge_authorization_records(at(0), at(0), 2).await.unwrap(), PurgedRecords::default());
    assert_eq!(f.repo.purge_authorization_records(at(0), at(0), 500).await.unwrap(), PurgedRecords::default());
});

store_test!(the_two_cut_offs_are_independent_and_purges_racing_remove_each_row_once, |db| {
    let f = fixture(&db).await;
    for i in 0..30 {
        let a = AuthorizationAttempt { expires_at: at(-60), ..attempt(f.tenant, &format!("state-{i:02}"), &format!("code-{i:02}")) };
        f.repo.insert_authorization_attempt(a).await.unwrap();
        f.repo.record_event(format!("event-{i:02}"), "unauthorized".into(), at(-60)).await.unwrap();
    }
    // Event ids are kept longer than attempts: a cut-off before they arrived leaves them all.
    let attempts_only = f.repo.purge_authorization_records(at(0), at(-61), 10).await.unwrap();
    assert_eq!(attempts_only, PurgedRecords { attempts: 10, events: 0 });

    // Several instances purging at once: every row goes, and goes once.
    let repo = Arc::new(f.repo.clone());
    let mut tasks = vec![];
    for _ in 0..4 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move {
            let mut total = PurgedRecords::default();
            loop {
                let n = repo.purge_authorization_records(at(0), at(0), 3).await.unwrap();
                if n.is_empty() {
                    return total;
                }
                total.attempts += n.attempts;
                total.events += n.events;
            }
        }));
    }
    let mut total = PurgedRecords::default();
    for t in tasks {
        let n = t.await.unwrap();
        total.attempts += n.attempts;
        total.events += n.events;
    }
    assert_eq!(total, PurgedRecords { attempts: 20, events: 30 });
    assert!(attempts_left(&db).is_empty() && events_left(&db).is_empty());
});

// --- packages --------------------------------------------------------------------------------

store_test!(a_kept_package_is_moved_under_its_hash_and_found_again, |db| {
    let f = fixture(&db).await;
    let (file, info) = package_file(&f, "upload-1.zip", b"PK\x03\x04 first package");

    let kept = f.packages.put(f.tenant, info.clone(), file.clone()).await.unwrap();

    let name = format!("{}.zip", info.sha256);
    assert_eq!(kept.sha256, info.sha256);
    assert_eq!(kept.size, info.size);
    assert_eq!(kept.project_root, "shop/");
    assert_eq!(kept.path, f.package_dir.join(&name));
    assert!(!file.exists(), "the upload was moved, not copied");
    assert_eq!(std::fs::read(&kept.path).unwrap(), b"PK\x03\x04 first package");
    assert_eq!(files_in(&f.package_dir), vec![name]);
    assert_eq!(f.packages.get(info.sha256.clone()).await.unwrap(), Some(kept));
    assert_eq!(f.packages.get("0".repeat(64)).await.unwrap(), None);
});

store_test!(the_same_package_twice_is_kept_once_and_the_second_file_is_removed, |db| {
    let f = fixture(&db).await;
    let bytes = b"PK\x03\x04 shared package";
    let (first_file, info) = package_file(&f, "upload-1.zip", bytes);
    let first = f.packages.put(f.tenant, info.clone(), first_file).await.unwrap();
    let (second_file, _) = package_file(&f, "upload-2.zip", bytes);

    let second = f.packages.put(f.other, info.clone(), second_file.clone()).await.unwrap();

    assert_eq!(second, first, "the first keeping's record, time included");
    assert!(!second_file.exists(), "the second copy was dropped");
    assert_eq!(files_in(&f.package_dir), vec![format!("{}.zip", info.sha256)]);
    assert_eq!(std::fs::read(&first.path).unwrap(), bytes);
    let mut conn = db.conn().unwrap();
    let rows: Vec<Option<i64>> = mp_packages::table.select(mp_packages::tenant_id).load(&mut *conn).unwrap();
    assert_eq!(rows, vec![Some(f.tenant)], "one record, naming the first uploader");

    // Another package is another file.
    let (third_file, third) = package_file(&f, "upload-3.zip", b"PK\x03\x04 another package");
    f.packages.put(f.tenant, third.clone(), third_file).await.unwrap();
    assert_eq!(files_in(&f.package_dir).len(), 2);
    assert!(f.packages.get(third.sha256).await.unwrap().is_some());
});

store_test!(a_kept_file_that_went_missing_is_replaced_by_the_next_upload_of_it, |db| {
    let f = fixture(&db).await;
    let bytes = b"PK\x03\x04 package";
    let (file, info) = package_file(&f, "upload-1.zip", bytes);
    let kept = f.packages.put(f.tenant, info.clone(), file).await.unwrap();
    std::fs::remove_file(&kept.path).unwrap();
    let (again, _) = package_file(&f, "upload-2.zip", bytes);

    assert_eq!(f.packages.put(f.sibling, info, again.clone()).await.unwrap(), kept);

    assert_eq!(std::fs::read(&kept.path).unwrap(), bytes);
    assert!(!again.exists());
});

/// A writable directory on another file system than `dir`, so a rename from there to `dir`
/// crosses devices: /dev/shm is a tmpfs on Linux (and on CI's runners); the others are tried
/// where it is not.
fn another_file_system(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let device = std::fs::metadata(dir).ok()?.dev();
    let candidates = ["/dev/shm", "/run/shm", "/var/tmp", "/tmp", env!("CARGO_TARGET_TMPDIR")];
    candidates.into_iter().map(PathBuf::from).find(|c| {
        let probe = c.join(format!("atrium-probe-{}-{}", std::process::id(), Utc::now().timestamp_micros()));
        let other = std::fs::metadata(c).is_ok_and(|m| m.is_dir() && m.dev() != device);
        other && std::fs::write(&probe, b"").is_ok() && std::fs::remove_file(&probe).is_ok()
    })
}

/// A test that cannot run on this machine says so past the test harness's capture, so its
/// pass is not mistaken for a run; in CI (`CI` set, as GitHub Actions sets it) it fails.
fn cannot_run_here(test: &str, why: &str) {
    use std::io::Write;
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    assert!(!ci, "{test} must run in CI, but {why}");
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

store_test!(a_package_from_another_file_system_is_copied_and_its_file_removed, |db| {
    let f = fixture(&db).await;
    let Some(elsewhere) = another_file_system(&f.uploads.0) else {
        cannot_run_here(module_path!(), "no writable directory on a second file system to move a package from (tried /dev/shm, …)");
        return;
    };
    let bytes = b"PK\x03\x04 from another file system";
    let file = elsewhere.join(format!("atrium-test-{}-{}.zip", std::process::id(), Utc::now().timestamp_micros()));
    std::fs::write(&file, bytes).unwrap();

    let kept = f.packages.put(f.tenant, package_info(bytes), file.clone()).await.unwrap();

    assert!(!file.exists(), "the source was removed after the copy");
    assert_eq!(std::fs::read(&kept.path).unwrap(), bytes);
    assert_eq!(files_in(&f.package_dir), vec![format!("{}.zip", kept.sha256)], "no partial file left behind");
});

store_test!(a_kept_package_opens_as_its_file_and_is_deleted_with_it, |db| {
    let f = fixture(&db).await;
    let bytes = b"PK\x03\x04 package to open";
    let (file, info) = package_file(&f, "upload-1.zip", bytes);
    assert!(!f.packages.exists(info.sha256.clone()).await.unwrap());
    let kept = f.packages.put(f.tenant, info.clone(), file).await.unwrap();

    assert!(f.packages.exists(info.sha256.clone()).await.unwrap());
    let opened = f.packages.open(info.sha256.clone()).await.unwrap().unwrap();
    assert_eq!(opened.package(), &kept);
    assert_eq!(opened.path(), kept.path.as_path());
    let mut content = Vec::new();
    std::io::Read::read_to_end(&mut opened.reader().unwrap(), &mut content).unwrap();
    assert_eq!(content, bytes);
    drop(opened);
    assert!(kept.path.exists(), "the kept file is not a copy to remove");
    assert!(f.packages.open("0".repeat(64)).await.unwrap().is_none());

    assert!(f.packages.delete(info.sha256.clone()).await.unwrap());

    assert!(!kept.path.exists());
    assert_eq!(files_in(&f.package_dir), Vec::<String>::new());
    assert_eq!(f.packages.get(info.sha256.clone()).await.unwrap(), None);
    assert!(!f.packages.exists(info.sha256.clone()).await.unwrap());
    assert!(!f.packages.delete(info.sha256).await.unwrap(), "deleted once");
});

store_test!(a_package_whose_file_went_missing_is_not_kept, |db| {
    let f = fixture(&db).await;
    let (file, info) = package_file(&f, "upload-1.zip", b"PK\x03\x04 package");
    let kept = f.packages.put(f.tenant, info.clone(), file).await.unwrap();
    std::fs::remove_file(&kept.path).unwrap();

    assert!(!f.packages.exists(info.sha256.clone()).await.unwrap());
    assert_eq!(f.packages.get(info.sha256).await.unwrap(), Some(kept), "the record stays until the next keeping or a delete");
});

store_test!(a_package_an_upload_task_refers_to_is_not_deleted, |db| {
    let f = fixture(&db).await;
    let (file, info) = package_file(&f, "upload-1.zip", b"PK\x03\x04 package in use");
    let kept = f.packages.put(f.tenant, info.clone(), file).await.unwrap();
    let source = UploadSource::Package { sha256: kept.sha256.clone(), size: kept.size };
    f.repo.insert_upload_task(upload(f.tenant, "1.0.0", source)).await.unwrap();

    let err = f.packages.delete(info.sha256.clone()).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    assert_eq!(f.packages.get(info.sha256.clone()).await.unwrap(), Some(kept.clone()));
    assert!(f.packages.exists(info.sha256).await.unwrap());
    assert_eq!(std::fs::read(&kept.path).unwrap(), b"PK\x03\x04 package in use");
});

// --- upload tasks ----------------------------------------------------------------------------

store_test!(an_upload_task_round_trips_with_either_source, |db| {
    let f = fixture(&db).await;
    let (file, info) = package_file(&f, "upload.zip", b"PK\x03\x04 package");
    let kept = f.packages.put(f.tenant, info, file).await.unwrap();

    let from_template = f.repo.insert_upload_task(upload(f.tenant, "1.0.0", template(7))).await.unwrap();
    let package = UploadSource::Package { sha256: kept.sha256.clone(), size: kept.size };
    let from_package = f.repo.insert_upload_task(upload(f.tenant, "1.0.1", package.clone())).await.unwrap();

    assert!(from_template.id > 0 && from_package.id > from_template.id);
    assert_eq!(from_template, UploadTask { id: from_template.id, ..upload(f.tenant, "1.0.0", template(7)) });
    assert_eq!(from_package, UploadTask { id: from_package.id, ..upload(f.tenant, "1.0.1", package) });
    assert_eq!(f.repo.upload_task(Party::Platform, from_template.id).await.unwrap(), Some(from_template));
    assert_eq!(f.repo.upload_task(Party::Platform, from_package.id).await.unwrap(), Some(from_package.clone()));

    let finished = UploadTask {
        status: UploadStatus::Failed,
        template_id: Some(12),
        errcode: Some(-10008),
        error: Some("IP not allowed".into()),
        started_at: Some(at(1)),
        finished_at: Some(at(2)),
        updated_at: at(2),
        ..from_package.clone()
    };
    assert!(f.repo.update_upload_task(finished.clone(), UploadStatus::Queued).await.unwrap());
    assert_eq!(f.repo.upload_task(Party::Platform, from_package.id).await.unwrap(), Some(finished));
    assert_eq!(f.repo.upload_task(Party::Platform, from_package.id + 1000).await.unwrap(), None);
});

store_test!(an_upload_of_a_package_that_is_not_kept_is_refused, |db| {
    let f = fixture(&db).await;

    let err =
        f.repo.insert_upload_task(upload(f.tenant, "1.0.0", UploadSource::Package { sha256: "e".repeat(64), size: 10 })).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    assert!(!f.repo.upload_version_used(f.tenant, "1.0.0".into()).await.unwrap());
});

store_test!(a_version_is_used_once_per_tenant_and_is_free_for_another, |db| {
    let f = fixture(&db).await;
    assert!(!f.repo.upload_version_used(f.tenant, "1.0.0".into()).await.unwrap());
    let first = insert_upload(&f, f.tenant, "1.0.0").await;

    let again = f.repo.insert_upload_task(upload(f.tenant, "1.0.0", template(8))).await.unwrap_err();
    let elsewhere = f.repo.insert_upload_task(upload(f.other, "1.0.0", template(8))).await.unwrap();

    assert!(matches!(again, Error::Conflict(_, ref m) if m.contains("1.0.0")), "{again:?}");
    assert_eq!(elsewhere.tenant_id, f.other);
    assert!(f.repo.upload_version_used(f.tenant, "1.0.0".into()).await.unwrap());
    assert!(f.repo.upload_version_used(f.other, "1.0.0".into()).await.unwrap());
    assert!(!f.repo.upload_version_used(f.sibling, "1.0.0".into()).await.unwrap());
    assert!(!f.repo.upload_version_used(f.tenant, "1.0.1".into()).await.unwrap());
    let mut conn = db.conn().unwrap();
    let mine: Vec<i64> =
        mp_upload_tasks::table.filter(mp_upload_tasks::tenant_id.eq(f.tenant)).select(mp_upload_tasks::id).load(&mut *conn).unwrap();
    assert_eq!(mine, vec![first.id], "the refused insert wrote nothing");
});

store_test!(an_upload_update_applies_only_over_the_status_it_read, |db| {
    let f = fixture(&db).await;
    let task = insert_upload(&f, f.tenant, "1.0.0").await;
    let running = UploadTask { status: UploadStatus::Running, started_at: Some(at(1)), updated_at: at(1), ..task.clone() };
    let failed = UploadTask { status: UploadStatus::Failed, error: Some("queue refused".into()), updated_at: at(2), ..task.clone() };

    assert!(f.repo.update_upload_task(running.clone(), UploadStatus::Queued).await.unwrap());
    // A racing writer that also read `queued` loses and changes nothing.
    assert!(!f.repo.update_upload_task(failed, UploadStatus::Queued).await.unwrap());
    assert_eq!(f.repo.upload_task(Party::Platform, task.id).await.unwrap(), Some(running.clone()));
    // A task is addressed by its tenant too.
    let foreign = UploadTask { tenant_id: f.other, status: UploadStatus::Uploaded, ..running.clone() };
    assert!(!f.repo.update_upload_task(foreign, UploadStatus::Running).await.unwrap());
    assert_eq!(f.repo.upload_task(Party::Platform, task.id).await.unwrap(), Some(running));
});

store_test!(of_ten_concurrent_upload_updates_from_one_read_exactly_one_wins, |db| {
    let f = fixture(&db).await;
    let task = insert_upload(&f, f.tenant, "1.0.0").await;
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = vec![];
    for i in 0..10 {
        let (repo, start) = (repo.clone(), start.clone());
        let change = UploadTask { status: UploadStatus::Running, started_at: Some(at(i)), updated_at: at(i), ..task.clone() };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.update_upload_task(change.clone(), UploadStatus::Queued).await.map(|won| won.then_some(change))
        }));
    }

    let mut winners = vec![];
    for t in tasks {
        winners.extend(t.await.unwrap().unwrap());
    }

    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(f.repo.upload_task(Party::Platform, task.id).await.unwrap(), winners.pop());
});

store_test!(the_latest_uploaded_task_is_the_last_to_finish_uploaded, |db| {
    let f = fixture(&db).await;
    assert_eq!(f.repo.latest_uploaded(f.tenant).await.unwrap(), None);
    // Created first, finished last.
    let slow = insert_upload(&f, f.tenant, "1.0.0").await;
    let quick = uploaded(&f, f.tenant, "1.0.1", at(5)).await;
    let slow = UploadTask { status: UploadStatus::Uploaded, finished_at: Some(at(9)), updated_at: at(9), ..slow };
    assert!(f.repo.update_upload_task(slow.clone(), UploadStatus::Queued).await.unwrap());
    // Newer, but not uploaded.
    let failed = insert_upload(&f, f.tenant, "1.0.2").await;
    let failed = UploadTask { status: UploadStatus::Failed, finished_at: Some(at(20)), updated_at: at(20), ..failed };
    assert!(f.repo.update_upload_task(failed, UploadStatus::Queued).await.unwrap());
    insert_upload(&f, f.tenant, "1.0.3").await;
    // Another tenant's, finished later still.
    let theirs = uploaded(&f, f.other, "1.0.0", at(30)).await;

    assert_eq!(f.repo.latest_uploaded(f.tenant).await.unwrap(), Some(slow));
    assert_ne!(quick.finished_at, Some(at(9)));
    assert_eq!(f.repo.latest_uploaded(f.other).await.unwrap(), Some(theirs));
    assert_eq!(f.repo.latest_uploaded(f.sibling).await.unwrap(), None);
});

store_test!(upload_tasks_are_read_and_listed_within_the_callers_scope_only, |db| {
    let f = fixture(&db).await;
    let a = insert_upload(&f, f.tenant, "1.0.0").await;
    let b = insert_upload(&f, f.sibling, "1.0.0").await;
    let c = insert_upload(&f, f.other, "1.0.0").await;
    let partner = Party::Partner { partner_id: f.partner };
    let tenant = Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) };
    let stranger = Party::Tenant { tenant_id: f.other, partner_id: Some(f.other_partner) };
    let list = |scope: Party, q: UploadTaskQuery| {
        let repo = f.repo.clone();
        async move { ids(&repo.list_upload_tasks(scope, q).await.unwrap(), |t| t.id) }
    };

    assert_eq!(list(Party::Platform, upload_query()).await, [c.id, b.id, a.id]);
    assert_eq!(list(partner, upload_query()).await, [b.id, a.id]);
    assert_eq!(list(tenant, upload_query()).await, [a.id]);
    assert_eq!(list(stranger, upload_query()).await, [c.id]);
    assert_eq!(f.repo.upload_task(partner, a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(f.repo.upload_task(partner, c.id).await.unwrap(), None);
    assert_eq!(f.repo.upload_task(tenant, a.id).await.unwrap(), Some(a));
    assert_eq!(f.repo.upload_task(tenant, b.id).await.unwrap(), None);
    assert_eq!(f.repo.upload_task(stranger, b.id).await.unwrap(), None);
    // A filter never widens the scope.
    assert!(list(partner, UploadTaskQuery { tenant_id: Some(f.other), ..upload_query() }).await.is_empty());
    assert!(list(tenant, UploadTaskQuery { tenant_id: Some(f.sibling), ..upload_query() }).await.is_empty());
});

store_test!(upload_lists_filter_by_status_and_tenant_and_sort_and_page, |db| {
    let f = fixture(&db).await;
    let mut made = vec![];
    // Created at hours 3, 1, 2, 0: creation time and id disagree.
    for (i, (tenant, hour)) in [(f.tenant, 3), (f.tenant, 1), (f.sibling, 2), (f.other, 0)].into_iter().enumerate() {
        let task = UploadTask { created_at: t0() + Duration::hours(hour), ..upload(tenant, &format!("1.0.{i}"), template(7)) };
        made.push(f.repo.insert_upload_task(task).await.unwrap().id);
    }
    let done = uploaded(&f, f.tenant, "2.0.0", at(1)).await;
    let by = |q: UploadTaskQuery| {
        let repo = f.repo.clone();
        async move { ids(&repo.list_upload_tasks(Party::Platform, q).await.unwrap(), |t| t.id) }
    };
    let sorted = |s: &str| UploadTaskQuery {
        list: ListQuery::parse(None, None, None, Some(s)).unwrap(),
        status: Some(UploadStatus::Queued),
        ..upload_query()
    };

    assert_eq!(
        by(UploadTaskQuery { status: Some(UploadStatus::Queued), tenant_id: Some(f.tenant), ..upload_query() }).await,
        [made[1], made[0]]
    );
    assert_eq!(by(UploadTaskQuery { status: Some(UploadStatus::Uploaded), ..upload_query() }).await, [done.id]);
    assert_eq!(by(UploadTaskQuery { tenant_id: Some(f.other), ..upload_query() }).await, [made[3]]);
    assert!(by(UploadTaskQuery { status: Some(UploadStatus::Failed), ..upload_query() }).await.is_empty());
    assert_eq!(by(sorted("id")).await, made);
    assert_eq!(by(sorted("-id")).await, [made[3], made[2], made[1], made[0]]);
    assert_eq!(by(sorted("created_at")).await, [made[3], made[1], made[2], made[0]]);
    assert_eq!(by(sorted("-created_at")).await, [made[0], made[2], made[1], made[3]]);

    let page2 = UploadTaskQuery { list: ListQuery::parse(Some(2), Some(2), None, Some("id")).unwrap(), ..upload_query() };
    let page = f.repo.list_upload_tasks(Party::Platform, page2).await.unwrap();
    assert_eq!((ids(&page, |t| t.id), page.total, page.page, page.page_size), (vec![made[2], made[3]], 5, 2, 2));
    let page3 = UploadTaskQuery { list: ListQuery::parse(Some(3), Some(2), None, Some("id")).unwrap(), ..upload_query() };
    let page = f.repo.list_upload_tasks(Party::Platform, page3).await.unwrap();
    assert_eq!((ids(&page, |t| t.id), page.total), (vec![done.id], 5));
    let beyond = UploadTaskQuery { list: ListQuery::parse(Some(9), Some(2), None, None).unwrap(), ..upload_query() };
    let page = f.repo.list_upload_tasks(Party::Platform, beyond).await.unwrap();
    assert_eq!((page.items.len(), page.total), (0, 5));
    let partner = f.repo.list_upload_tasks(Party::Partner { partner_id: f.partner }, upload_query()).await.unwrap();
    assert_eq!(partner.total, 4, "the total counts what the scope sees");
});

// --- audit tasks -----------------------------------------------------------------------------

store_test!(an_audit_task_round_trips_with_its_screenshots_and_release_state, |db| {
    let f = fixture(&db).await;
    let up = uploaded(&f, f.tenant, "1.0.0", at(1)).await;

    let stored = f.repo.insert_audit_task(audit(&up, 1234567)).await.unwrap();

    assert!(stored.id > 0);
    assert_eq!(stored, AuditTask { id: stored.id, ..audit(&up, 1234567) });
    assert_eq!(f.repo.audit_task(Party::Platform, stored.id).await.unwrap(), Some(stored.clone()));
    let rejected = AuditTask {
        status: AuditStatus::Rejected,
        reason: Some("<li>1:The page is blank</li>".into()),
        screenshots: vec!["media-1".into(), "media-2|with|pipes".into()],
        decided_at: Some(at(30)),
        updated_at: at(30),
        ..stored.clone()
    };
    assert!(f.repo.update_audit_task(rejected.clone(), stored.state(), Effects::none()).await.unwrap());
    assert_eq!(f.repo.audit_task(Party::Platform, stored.id).await.unwrap(), Some(rejected));

    let passed = audited(&f, f.tenant, "1.0.1", AuditStatus::Passed, at(40)).await;
    let gray = AuditTask { release: ReleaseState { gray_percentage: Some(20), released_at: None }, updated_at: at(41), ..passed.clone() };
    assert!(f.repo.update_audit_task(gray.clone(), passed.state(), Effects::none()).await.unwrap());
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), Some(gray.clone()));
    let full =
        AuditTask { release: ReleaseState { gray_percentage: Some(20), released_at: Some(at(42)) }, updated_at: at(42), ..gray.clone() };
    assert!(f.repo.update_audit_task(full.clone(), gray.state(), Effects::none()).await.unwrap());
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), Some(full));
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id + 1000).await.unwrap(), None);
});

store_test!(a_tenant_has_one_running_audit_at_most_and_a_finished_one_frees_the_slot, |db| {
    let f = fixture(&db).await;
    let first = audited(&f, f.tenant, "1.0.0", AuditStatus::Auditing, at(1)).await;
    let up = uploaded(&f, f.tenant, "1.0.1", at(2)).await;

    let second = f.repo.insert_audit_task(audit(&up, 2)).await.unwrap_err();
    assert!(matches!(second, Error::Conflict(..)), "{second:?}");
    // Another tenant audits meanwhile.
    let theirs = audited(&f, f.other, "1.0.0", AuditStatus::Auditing, at(1)).await;
    assert_eq!(theirs.status, AuditStatus::Auditing);

    // Delayed is still running.
    let delayed = AuditTask { status: AuditStatus::Delayed, reason: Some("busy".into()), updated_at: at(3), ..first.clone() };
    assert!(f.repo.update_audit_task(delayed.clone(), first.state(), Effects::none()).await.unwrap());
    assert!(matches!(f.repo.insert_audit_task(audit(&up, 2)).await, Err(Error::Conflict(..))));

    let withdrawn = AuditTask { status: AuditStatus::Withdrawn, decided_at: Some(at(4)), updated_at: at(4), ..delayed.clone() };
    assert!(f.repo.update_audit_task(withdrawn, delayed.state(), Effects::none()).await.unwrap());
    let next = f.repo.insert_audit_task(audit(&up, 2)).await.unwrap();
    assert_eq!(f.repo.running_audit(f.tenant).await.unwrap(), Some(next));
    let mut conn = db.conn().unwrap();
    let mine: i64 = atrium_store::schema::mp_audit_tasks::table
        .filter(atrium_store::schema::mp_audit_tasks::tenant_id.eq(f.tenant))
        .count()
        .get_result(&mut *conn)
        .unwrap();
    assert_eq!(mine, 2, "the refused inserts wrote nothing");
});

store_test!(of_ten_concurrent_audit_submissions_of_a_tenant_exactly_one_is_stored, |db| {
    let f = fixture(&db).await;
    let up = uploaded(&f, f.tenant, "1.0.0", at(1)).await;
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = vec![];
    for i in 0..10 {
        let (repo, start, task) = (repo.clone(), start.clone(), audit(&up, 100 + i));
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.insert_audit_task(task).await
        }));
    }

    let (mut stored, mut refused) = (vec![], 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(task) => stored.push(task),
            Err(Error::Conflict(..)) => refused += 1,
            Err(other) => panic!("{other:?}"),
        }
    }

    assert_eq!((stored.len(), refused), (1, 9));
    assert_eq!(f.repo.running_audit(f.tenant).await.unwrap(), stored.pop());
});

store_test!(an_audit_update_applies_only_over_the_status_and_release_state_it_read, |db| {
    let f = fixture(&db).await;
    let passed = audited(&f, f.tenant, "1.0.0", AuditStatus::Passed, at(1)).await;
    let gray_20 = AuditTask { release: ReleaseState { gray_percentage: Some(20), released_at: None }, updated_at: at(2), ..passed.clone() };
    assert!(f.repo.update_audit_task(gray_20.clone(), passed.state(), Effects::none()).await.unwrap());

    // Read before the gray step: its status still matches, its release state does not.
    let full_over_stale = AuditTask { release: ReleaseState { gray_percentage: None, released_at: Some(at(3)) }, ..passed.clone() };
    assert!(!f.repo.update_audit_task(full_over_stale, passed.state(), Effects::none()).await.unwrap());
    // A report read as auditing comes late.
    let stale_status = AuditState { status: AuditStatus::Auditing, release: gray_20.release.clone() };
    assert!(
        !f.repo
            .update_audit_task(AuditTask { status: AuditStatus::Rejected, ..gray_20.clone() }, stale_status, Effects::none())
            .await
            .unwrap()
    );
    // Another gray percentage than the one stored.
    let other_gray = AuditState { status: AuditStatus::Passed, release: ReleaseState { gray_percentage: Some(10), released_at: None } };
    assert!(!f.repo.update_audit_task(AuditTask { updated_at: at(9), ..gray_20.clone() }, other_gray, Effects::none()).await.unwrap());
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), Some(gray_20.clone()));

    let full =
        AuditTask { release: ReleaseState { gray_percentage: Some(20), released_at: Some(at(4)) }, updated_at: at(4), ..gray_20.clone() };
    assert!(f.repo.update_audit_task(full.clone(), gray_20.state(), Effects::none()).await.unwrap());
    // Read before the full release: the time it was released is part of the state.
    let other_time =
        AuditState { status: AuditStatus::Passed, release: ReleaseState { gray_percentage: Some(20), released_at: Some(at(5)) } };
    assert!(!f.repo.update_audit_task(AuditTask { updated_at: at(9), ..full.clone() }, other_time, Effects::none()).await.unwrap());
    assert!(!f.repo.update_audit_task(AuditTask { updated_at: at(9), ..full.clone() }, gray_20.state(), Effects::none()).await.unwrap());
    assert!(f.repo.update_audit_task(AuditTask { updated_at: at(9), ..full.clone() }, full.state(), Effects::none()).await.unwrap());
    // A task is addressed by its tenant too.
    let foreign = AuditTask { tenant_id: f.other, updated_at: at(10), ..full.clone() };
    assert!(!f.repo.update_audit_task(foreign, AuditTask { updated_at: at(9), ..full.clone() }.state(), Effects::none()).await.unwrap());
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), Some(AuditTask { updated_at: at(9), ..full }));
});

store_test!(of_ten_concurrent_audit_updates_from_one_read_exactly_one_wins, |db| {
    let f = fixture(&db).await;
    let passed = audited(&f, f.tenant, "1.0.0", AuditStatus::Passed, at(1)).await;
    let read = passed.state();
    let repo = Arc::new(f.repo.clone());
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = vec![];
    for i in 0..10u8 {
        let (repo, start, read) = (repo.clone(), start.clone(), read.clone());
        let change = AuditTask {
            release: ReleaseState { gray_percentage: Some(10 + i), released_at: None },
            updated_at: at(i64::from(i)),
            ..passed.clone()
        };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            repo.update_audit_task(change.clone(), read, Effects::none()).await.map(|won| won.then_some(change))
        }));
    }

    let mut winners = vec![];
    for t in tasks {
        winners.extend(t.await.unwrap().unwrap());
    }

    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), winners.pop());
});

store_test!(the_latest_and_the_running_audit_are_the_right_rows, |db| {
    let f = fixture(&db).await;
    assert_eq!(f.repo.latest_audit_task(f.tenant).await.unwrap(), None);
    assert_eq!(f.repo.running_audit(f.tenant).await.unwrap(), None);
    audited(&f, f.tenant, "1.0.0", AuditStatus::Rejected, at(1)).await;
    let passed = audited(&f, f.tenant, "1.0.1", AuditStatus::Passed, at(2)).await;
    let theirs = audited(&f, f.other, "1.0.0", AuditStatus::Delayed, at(3)).await;

    assert_eq!(f.repo.latest_audit_task(f.tenant).await.unwrap(), Some(passed));
    assert_eq!(f.repo.running_audit(f.tenant).await.unwrap(), None, "none of the tenant's is running");
    assert_eq!(f.repo.running_audit(f.other).await.unwrap(), Some(theirs.clone()));
    assert_eq!(f.repo.latest_audit_task(f.other).await.unwrap(), Some(theirs));

    let running = audited(&f, f.tenant, "1.0.2", AuditStatus::Auditing, at(4)).await;
    assert_eq!(f.repo.latest_audit_task(f.tenant).await.unwrap(), Some(running.clone()));
    assert_eq!(f.repo.running_audit(f.tenant).await.unwrap(), Some(running));
    assert_eq!(f.repo.latest_audit_task(f.sibling).await.unwrap(), None);
});

store_test!(audit_tasks_are_read_and_listed_within_the_callers_scope_only, |db| {
    let f = fixture(&db).await;
    let a = audited(&f, f.tenant, "1.0.0", AuditStatus::Auditing, at(1)).await;
    let b = audited(&f, f.sibling, "1.0.0", AuditStatus::Auditing, at(1)).await;
    let c = audited(&f, f.other, "1.0.0", AuditStatus::Auditing, at(1)).await;
    let partner = Party::Partner { partner_id: f.partner };
    let tenant = Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) };
    let stranger = Party::Tenant { tenant_id: f.other, partner_id: Some(f.other_partner) };
    let list = |scope: Party, q: AuditTaskQuery| {
        let repo = f.repo.clone();
        async move { ids(&repo.list_audit_tasks(scope, q).await.unwrap(), |t| t.id) }
    };

    assert_eq!(list(Party::Platform, audit_query()).await, [c.id, b.id, a.id]);
    assert_eq!(list(partner, audit_query()).await, [b.id, a.id]);
    assert_eq!(list(tenant, audit_query()).await, [a.id]);
    assert_eq!(list(stranger, audit_query()).await, [c.id]);
    assert_eq!(f.repo.audit_task(partner, a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(f.repo.audit_task(partner, c.id).await.unwrap(), None);
    assert_eq!(f.repo.audit_task(tenant, a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(f.repo.audit_task(tenant, b.id).await.unwrap(), None);
    assert_eq!(f.repo.audit_task(stranger, a.id).await.unwrap(), None);
    assert!(list(partner, AuditTaskQuery { tenant_id: Some(f.other), ..audit_query() }).await.is_empty());
});

store_test!(audit_lists_filter_by_status_and_tenant_and_sort_and_page, |db| {
    let f = fixture(&db).await;
    // Submitted at minutes 30, 10, 20, 0: submission time and id disagree.
    let rejected = audited(&f, f.tenant, "1.0.0", AuditStatus::Rejected, at(30)).await;
    let passed = audited(&f, f.tenant, "1.0.1", AuditStatus::Passed, at(10)).await;
    let sibling = audited(&f, f.sibling, "1.0.0", AuditStatus::Passed, at(20)).await;
    let other = audited(&f, f.other, "1.0.0", AuditStatus::Delayed, at(0)).await;
    let made = [rejected.id, passed.id, sibling.id, other.id];
    let by = |q: AuditTaskQuery| {
        let repo = f.repo.clone();
        async move { ids(&repo.list_audit_tasks(Party::Platform, q).await.unwrap(), |t| t.id) }
    };
    let sorted = |s: &str| AuditTaskQuery { list: ListQuery::parse(None, None, None, Some(s)).unwrap(), ..audit_query() };

    assert_eq!(by(AuditTaskQuery { status: Some(AuditStatus::Passed), ..audit_query() }).await, [sibling.id, passed.id]);
    assert_eq!(by(AuditTaskQuery { status: Some(AuditStatus::Passed), tenant_id: Some(f.tenant), ..audit_query() }).await, [passed.id]);
    assert_eq!(by(AuditTaskQuery { status: Some(AuditStatus::Delayed), ..audit_query() }).await, [other.id]);
    assert_eq!(by(AuditTaskQuery { tenant_id: Some(f.tenant), ..audit_query() }).await, [passed.id, rejected.id]);
    assert_eq!(by(sorted("id")).await, made);
    assert_eq!(by(sorted("-id")).await, [made[3], made[2], made[1], made[0]]);
    assert_eq!(by(sorted("created_at")).await, [made[3], made[1], made[2], made[0]]);
    assert_eq!(by(sorted("-created_at")).await, [made[0], made[2], made[1], made[3]]);

    let page2 = AuditTaskQuery { list: ListQuery::parse(Some(2), Some(3), None, Some("id")).unwrap(), ..audit_query() };
    let page = f.repo.list_audit_tasks(Party::Platform, page2).await.unwrap();
    assert_eq!((ids(&page, |t| t.id), page.total, page.page, page.page_size), (vec![made[3]], 4, 2, 3));
    let mine = AuditTaskQuery { list: ListQuery::parse(Some(1), Some(1), None, None).unwrap(), ..audit_query() };
    let page = f.repo.list_audit_tasks(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, mine).await.unwrap();
    assert_eq!((ids(&page, |t| t.id), page.total), (vec![passed.id], 2));
});

// --- release tasks ---------------------------------------------------------------------------

store_test!(a_release_task_is_stored_with_its_id_whether_or_not_it_succeeded, |db| {
    let f = fixture(&db).await;
    let passed = audited(&f, f.tenant, "1.0.0", AuditStatus::Passed, at(1)).await;
    let gray = ReleaseTask {
        id: 0,
        tenant_id: f.tenant,
        audit_task_id: Some(passed.id),
        kind: ReleaseKind::Gray,
        version: Some("1.0.0".into()),
        gray_percentage: Some(30),
        status: ReleaseStatus::Succeeded,
        errcode: None,
        errmsg: None,
        created_by: 42,
        created_at: at(2),
    };
    let rollback = ReleaseTask {
        audit_task_id: None,
        kind: ReleaseKind::Rollback,
        version: None,
        gray_percentage: None,
        status: ReleaseStatus::Failed,
        errcode: Some(87011),
        errmsg: Some("gray release in progress".into()),
        created_at: at(3),
        ..gray.clone()
    };

    let stored_gray = f.repo.insert_release_task(gray.clone()).await.unwrap();
    let stored_rollback = f.repo.insert_release_task(rollback.clone()).await.unwrap();

    assert!(stored_gray.id > 0 && stored_rollback.id > stored_gray.id);
    assert_eq!(stored_gray, ReleaseTask { id: stored_gray.id, ..gray });
    assert_eq!(stored_rollback, ReleaseTask { id: stored_rollback.id, ..rollback });
    type Row = (i64, i64, Option<i64>, String, Option<String>, Option<i32>, String, Option<i64>, Option<String>, i64, NaiveDateTime);
    let mut conn = db.conn().unwrap();
    let rows: Vec<Row> = mp_release_tasks::table
        .order(mp_release_tasks::id.asc())
        .select((
            mp_release_tasks::id,
            mp_release_tasks::tenant_id,
            mp_release_tasks::audit_task_id,
            mp_release_tasks::kind,
            mp_release_tasks::version,
            mp_release_tasks::gray_percentage,
            mp_release_tasks::status,
            mp_release_tasks::errcode,
            mp_release_tasks::errmsg,
            mp_release_tasks::created_by,
            mp_release_tasks::created_at,
        ))
        .load(&mut *conn)
        .unwrap();
    let expected: Vec<Row> = vec![
        (
            stored_gray.id,
            f.tenant,
            Some(passed.id),
            "gray".into(),
            Some("1.0.0".into()),
            Some(30),
            "succeeded".into(),
            None,
            None,
            42,
            at(2).naive_utc(),
        ),
        (
            stored_rollback.id,
            f.tenant,
            None,
            "rollback".into(),
            None,
            None,
            "failed".into(),
            Some(87011),
            Some("gray release in progress".into()),
            42,
            at(3).naive_utc(),
        ),
    ];
    assert_eq!(rows, expected);
});

fn gray_release(f: &Fixture, audit: &AuditTask, percentage: u8, at_minute: i64) -> ReleaseTask {
    ReleaseTask {
        id: 0,
        tenant_id: f.tenant,
        audit_task_id: Some(audit.id),
        kind: ReleaseKind::Gray,
        version: Some(audit.version.clone()),
        gray_percentage: Some(percentage),
        status: ReleaseStatus::Succeeded,
        errcode: None,
        errmsg: None,
        created_by: 42,
        created_at: at(at_minute),
    }
}

fn release_ids(db: &Db) -> Vec<i64> {
    let mut conn = db.conn().unwrap();
    mp_release_tasks::table.order(mp_release_tasks::id.asc()).select(mp_release_tasks::id).load(&mut *conn).unwrap()
}

store_test!(a_release_is_recorded_with_its_audits_release_state_in_one_write, |db| {
    let f = fixture(&db).await;
    let passed = audited(&f, f.tenant, "1.0.0", AuditStatus::Passed, at(1)).await;
    let gray_30 = AuditTask { release: ReleaseState { gray_percentage: Some(30), released_at: None }, updated_at: at(2), ..passed.clone() };
    let task = gray_release(&f, &passed, 30, 2);

    let stored = f
        .repo
        .record_release(task.clone(), AuditUpdate { task: gray_30.clone(), read: passed.state() }, Effects::none())
        .await
        .unwrap()
        .unwrap();

    assert!(stored.id > 0);
    assert_eq!(stored, ReleaseTask { id: stored.id, ..task });
    assert_eq!(release_ids(&db), vec![stored.id]);
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), Some(gray_30));
});

store_test!(a_release_over_an_audit_that_changed_since_it_was_read_writes_nothing, |db| {
    let f = fixture(&db).await;
    let passed = audited(&f, f.tenant, "1.0.0", AuditStatus::Passed, at(1)).await;
    let gray_20 = AuditTask { release: ReleaseState { gray_percentage: Some(20), released_at: None }, updated_at: at(2), ..passed.clone() };
    assert!(f.repo.update_audit_task(gray_20.clone(), passed.state(), Effects::none()).await.unwrap());
    // Read before the 20 % step.
    let gray_30 = AuditTask { release: ReleaseState { gray_percentage: Some(30), released_at: None }, updated_at: at(3), ..passed.clone() };

    let recorded = f
        .repo
        .record_release(gray_release(&f, &passed, 30, 3), AuditUpdate { task: gray_30, read: passed.state() }, Effects::none())
        .await
        .unwrap();

    assert_eq!(recorded, None);
    assert_eq!(release_ids(&db), Vec::<i64>::new());
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), Some(gray_20));
});

store_test!(a_release_that_cannot_be_stored_leaves_its_audit_as_it_was, |db| {
    let f = fixture(&db).await;
    let passed = audited(&f, f.tenant, "1.0.0", AuditStatus::Passed, at(1)).await;
    let full = AuditTask { release: ReleaseState { gray_percentage: None, released_at: Some(at(2)) }, updated_at: at(2), ..passed.clone() };
    // A release task naming no tenant fails its insert after the audit's update.
    let orphan =
        ReleaseTask { tenant_id: f.other + 1000, kind: ReleaseKind::Full, gray_percentage: None, ..gray_release(&f, &passed, 1, 2) };

    let err = f.repo.record_release(orphan, AuditUpdate { task: full, read: passed.state() }, Effects::none()).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    assert_eq!(release_ids(&db), Vec::<i64>::new());
    assert_eq!(f.repo.audit_task(Party::Platform, passed.id).await.unwrap(), Some(passed));
});

store_test!(a_tenants_budget_is_never_passed_by_spends_at_once_and_a_full_window_says_when, |db| {
    let store = ReleaseStore::new(db.clone(), FieldCipher::new(&[7u8; 32]));
    let t0 = Utc.with_ymd_and_hms(2026, 6, 1, 9, 0, 0).single().unwrap();
    let hour = Window::new(3, Duration::hours(1));
    let month = Window::new(5, Duration::days(30));
    // Sixteen spends at once against three an hour: exactly three are recorded.
    let spends: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store.spend("mp-speedup:tenant:7".into(), t0 + Duration::milliseconds(i), vec![hour, month]).await.unwrap()
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for s in spends {
        outcomes.push(s.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| **o == Spent::Recorded).count(), 3, "{outcomes:?}");
    // The full window says when its oldest spend leaves it.
    match store.spend("mp-speedup:tenant:7".into(), t0 + Duration::minutes(30), vec![hour, month]).await.unwrap() {
        Spent::Refused { window, retry_after } => {
            assert_eq!(window, hour);
            // The oldest of the three recorded is one of the first sixteen milliseconds.
            assert!(
                retry_after >= Duration::minutes(30) && retry_after < Duration::minutes(30) + Duration::milliseconds(16),
                "{retry_after}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Another tenant's bucket is its own.
    assert_eq!(store.spend("mp-speedup:tenant:8".into(), t0, vec![hour]).await.unwrap(), Spent::Recorded);
    // An hour on, the hour's window is open again; the month's holds five in all.
    let later = t0 + Duration::hours(2);
    assert_eq!(store.spend("mp-speedup:tenant:7".into(), later, vec![hour, month]).await.unwrap(), Spent::Recorded);
    assert_eq!(store.spend("mp-speedup:tenant:7".into(), later + Duration::seconds(1), vec![hour, month]).await.unwrap(), Spent::Recorded);
    let full = store.spend("mp-speedup:tenant:7".into(), later + Duration::seconds(2), vec![hour, month]).await.unwrap();
    assert!(matches!(full, Spent::Refused { window, .. } if window == month), "{full:?}");
    // A spend given back makes room for one more.
    store.give_back("mp-speedup:tenant:7".into(), later + Duration::seconds(1)).await.unwrap();
    assert_eq!(store.spend("mp-speedup:tenant:7".into(), later + Duration::seconds(3), vec![hour, month]).await.unwrap(), Spent::Recorded);
});
