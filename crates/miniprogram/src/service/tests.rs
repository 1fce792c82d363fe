//! The release use cases against mocked storage, platform, inspector, uploader and job queue,
//! one file per service. Storage is three mocks (authorisations, tasks, packages) whose
//! answers come from one in-memory state, with conditional writes as the store does them, so a
//! test can look at what was written; the platform and the uploader are plain mocks, so a call
//! a test does not expect fails it.
use crate::api::*;
use crate::config::{RecordRetention, ReleaseSettings};
use crate::lifecycle::{AuditStatus, AuthorizationStatus, UploadStatus};
use crate::model::*;
use crate::ports::{
    AuthorizationRepo, MiniProgramPlatform, MockAuthorizationRepo, MockCodeUploader, MockMiniProgramPlatform, MockPackageInspector,
    MockPackageStore, MockReleaseTaskRepo, PlatformError,
};
use crate::service::{AuthorizationService, PipelinePorts, PipelineService};
use atrium_kernel::Reason;
use atrium_kernel::jobs::MockJobStore;
use atrium_kernel::{Actor, Error, FixedClock, Id, NewJob, Page, Party, Secret, Timestamp};
use chrono::{Duration, TimeZone, Utc};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod authorization;
mod campaigns;
mod pipeline;
mod preflight;

const TENANT: Id = 3;
const OTHER_TENANT: Id = 4;
const PARTNER: Id = 9;
const APPID: &str = "wx_tenant_mp";
const GH: &str = "gh_tenant";

fn now() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 4, 1, 4, 0, 0).single().expect("valid")
}

fn tenant_actor() -> Actor {
    Actor::new(10, "s", Party::Tenant { tenant_id: TENANT, partner_id: Some(PARTNER) }, ["miniprogram:*"])
}

fn other_tenant_actor() -> Actor {
    Actor::new(11, "s", Party::Tenant { tenant_id: OTHER_TENANT, partner_id: None }, ["miniprogram:*"])
}

fn authorization(status: AuthorizationStatus) -> Authorization {
    Authorization {
        tenant_id: TENANT,
        status,
        authorizer_appid: APPID.into(),
        refresh_token: Secret::new("refresh-1"),
        nickname: Some("Ann's shop".into()),
        user_name: Some(GH.into()),
        func_info: vec![17, 18],
        authorized_at: now() - Duration::days(10),
        revoked_at: None,
        updated_at: now() - Duration::days(10),
    }
}

fn upload(id: Id, version: &str, status: UploadStatus, source: UploadSource) -> UploadTask {
    UploadTask {
        id,
        tenant_id: TENANT,
        source,
        version: version.into(),
        description: "d".into(),
        status,
        template_id: None,
        errcode: None,
        error: None,
        created_by: 10,
        created_at: now() - Duration::hours(2),
        started_at: None,
        finished_at: None,
        updated_at: now() - Duration::hours(2),
    }
}

fn template_source() -> UploadSource {
    template_source_of(1)
}

fn template_source_of(template_id: i64) -> UploadSource {
    UploadSource::Template { template_id, ext_json: serde_json::json!({"ext": {"shop": "Ann"}}) }
}

/// A template of the library with this description.
fn library_template(template_id: i64, user_desc: &str) -> Template {
    Template { template_id, user_version: "1.0.0".into(), user_desc: user_desc.into(), create_time: 10 + template_id }
}

/// The platform's library as `gettemplatelist` lists it (asked with the verify ticket):
/// templates 1 and 2, which the platform added, and `more`.
fn library(platform: &mut MockMiniProgramPlatform, more: Vec<Template>) {
    let mut all = vec![library_template(1, "sandbox template 1"), library_template(2, "sandbox template 2")];
    all.extend(more);
    platform.expect_templates().withf(|ticket| ticket.expose() == "ticket-1").returning(move |_| Ok(all.clone()));
}

fn package_source() -> UploadSource {
    UploadSource::Package { sha256: "ab".repeat(32), size: 2048 }
}

fn audit(id: Id, upload_task_id: Id, status: AuditStatus) -> AuditTask {
    AuditTask {
        id,
        tenant_id: TENANT,
        upload_task_id,
        version: "1.0.0".into(),
        auditid: 1234,
        status,
        reason: None,
        screenshots: Vec::new(),
        submitted_at: now() - Duration::hours(1),
        decided_at: None,
        release: ReleaseState::default(),
        created_by: 10,
        updated_at: now() - Duration::hours(1),
    }
}

fn refused(errcode: i64) -> PlatformError {
    PlatformError::Refused { errcode, errmsg: "refused rid: 1".into() }
}

/// What storage holds.
#[derive(Default)]
struct State {
    authorization: Option<Authorization>,
    saved_authorizations: Vec<Authorization>,
    attempts: Vec<AuthorizationAttempt>,
    ticket: Option<VerifyTicket>,
    events: Vec<String>,
    packages: Vec<StoredPackage>,
    uploads: Vec<UploadTask>,
    audits: Vec<AuditTask>,
    releases: Vec<ReleaseTask>,
    /// Events written with the writes that took: type and subject.
    published: Vec<(&'static str, Option<Id>)>,
    jobs: Vec<NewJob>,
    /// Audit entries of settings changes (domains, privacy).
    settings_audits: Vec<atrium_kernel::AuditRecord>,
    /// Spends of tenants' budgets: bucket, when.
    spends: Vec<(String, Timestamp)>,
}

type Shared = Arc<Mutex<State>>;

fn state() -> Shared {
    Arc::new(Mutex::new(State {
        authorization: Some(authorization(AuthorizationStatus::Authorized)),
        ticket: Some(VerifyTicket { ticket: Secret::new("ticket-1"), created_at: now() - Duration::minutes(5) }),
        ..State::default()
    }))
}

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

fn sees(scope: Party, tenant_id: Id) -> bool {
    scope.sees_tenant(tenant_id, if tenant_id == TENANT { Some(PARTNER) } else { None })
}

/// Authorisation storage answering from `s`.
fn authorization_repo(s: &Shared) -> MockAuthorizationRepo {
    let mut r = MockAuthorizationRepo::new();
    r.expect_tenant().returning(|scope, id| {
        Ok(([TENANT, OTHER_TENANT].contains(&id) && sees(scope, id))
            .then_some(ReleaseTenant { id, partner_id: (id == TENANT).then_some(PARTNER) }))
    });
    let st = s.clone();
    r.expect_get_authorization().returning(move |t| Ok(lock(&st).authorization.clone().filter(|a| a.tenant_id == t)));
    let st = s.clone();
    r.expect_authorized_in_scope().returning(move |scope, partner, after, limit| {
        let a = lock(&st).authorization.clone().filter(|a| {
            a.status == AuthorizationStatus::Authorized
                && a.tenant_id > after
                && sees(scope, a.tenant_id)
                && partner.is_none_or(|p| p == PARTNER && a.tenant_id == TENANT)
        });
        Ok(a.into_iter().take(limit as usize).collect())
    });
    let st = s.clone();
    r.expect_authorization_by_appid().returning(move |appid| Ok(lock(&st).authorization.clone().filter(|a| a.authorizer_appid == appid)));
    let st = s.clone();
    r.expect_save_authorization().returning(move |a, _audit| {
        let mut s = lock(&st);
        if s.authorization.as_ref().is_some_and(|b| b.tenant_id != a.tenant_id && b.authorizer_appid == a.authorizer_appid) {
            return Err(Error::conflict(Reason::Duplicate, "appid taken"));
        }
        s.authorization = Some(a.clone());
        s.saved_authorizations.push(a.clone());
        Ok(a)
    });
    let st = s.clone();
    r.expect_record_audit().returning(move |a| {
        lock(&st).settings_audits.push(a);
        Ok(())
    });
    let st = s.clone();
    r.expect_insert_authorization_attempt().returning(move |a| {
        lock(&st).attempts.push(a);
        Ok(())
    });
    let st = s.clone();
    r.expect_take_authorization_attempt().returning(move |hash| {
        let mut s = lock(&st);
        let found = s.attempts.iter().position(|a| a.state_hash == hash);
        Ok(found.map(|i| s.attempts.remove(i)))
    });
    let st = s.clone();
    r.expect_authorization_attempt_by_code()
        .returning(move |code| Ok(lock(&st).attempts.iter().find(|a| a.pre_auth_code == code).cloned()));
    let st = s.clone();
    r.expect_verify_ticket().returning(move || Ok(lock(&st).ticket.clone()));
    let st = s.clone();
    r.expect_save_verify_ticket().returning(move |t| {
        let mut s = lock(&st);
        if s.ticket.as_ref().is_some_and(|old| old.created_at >= t.created_at) {
            return Ok(false);
        }
        s.ticket = Some(t);
        Ok(true)
    });
    let st = s.clone();
    r.expect_event_seen().returning(move |id| Ok(lock(&st).events.contains(&id)));
    let st = s.clone();
    r.expect_record_event().returning(move |id, _, _| {
        lock(&st).events.push(id);
        Ok(())
    });
    r
}

/// Task storage answering from `s`.
fn task_repo(s: &Shared) -> MockReleaseTaskRepo {
    let mut r = MockReleaseTaskRepo::new();
    let st = s.clone();
    r.expect_spend().returning(move |bucket, at, windows| {
        let mut s = lock(&st);
        for w in &windows {
            let inside: Vec<Timestamp> = s.spends.iter().filter(|(b, t)| *b == bucket && *t > at - w.period).map(|(_, t)| *t).collect();
            if inside.len() >= w.limit as usize {
                let oldest = inside.iter().min().copied();
                return Ok(crate::budget::Spent::Refused { window: *w, retry_after: oldest.map_or(w.period, |o| o + w.period - at) });
            }
        }
        s.spends.push((bucket, at));
        Ok(crate::budget::Spent::Recorded)
    });
    let st = s.clone();
    r.expect_give_back().returning(move |bucket, at| {
        let mut s = lock(&st);
        if let Some(i) = s.spends.iter().position(|(b, t)| *b == bucket && *t == at) {
            s.spends.remove(i);
        }
        Ok(())
    });
    let st = s.clone();
    r.expect_insert_upload_task().returning(move |mut t| {
        let mut s = lock(&st);
        if s.uploads.iter().any(|u| u.tenant_id == t.tenant_id && u.version == t.version) {
            return Err(Error::conflict(Reason::Duplicate, "version taken"));
        }
        t.id = 100 + s.uploads.len() as Id;
        s.uploads.push(t.clone());
        Ok(t)
    });
    let st = s.clone();
    r.expect_upload_task()
        .returning(move |scope, id| Ok(lock(&st).uploads.iter().find(|u| u.id == id && sees(scope, u.tenant_id)).cloned()));
    let st = s.clone();
    r.expect_upload_version_used().returning(move |t, v| Ok(lock(&st).uploads.iter().any(|u| u.tenant_id == t && u.version == v)));
    let st = s.clone();
    r.expect_latest_uploaded().returning(move |t| {
        Ok(lock(&st).uploads.iter().filter(|u| u.tenant_id == t && u.status == UploadStatus::Uploaded).max_by_key(|u| u.id).cloned())
    });
    let st = s.clone();
    r.expect_update_upload_task().returning(move |t, read| {
        let mut s = lock(&st);
        let Some(stored) = s.uploads.iter_mut().find(|u| u.id == t.id) else { return Ok(false) };
        if stored.status != read {
            return Ok(false);
        }
        *stored = t;
        Ok(true)
    });
    let st = s.clone();
    r.expect_list_upload_tasks().returning(move |scope, q| {
        let items: Vec<UploadTask> = lock(&st)
            .uploads
            .iter()
            .filter(|u| sees(scope, u.tenant_id) && q.status.is_none_or(|s| s == u.status) && q.tenant_id.is_none_or(|t| t == u.tenant_id))
            .cloned()
            .collect();
        let total = items.len() as i64;
        Ok(Page::new(items, total, q.list.page))
    });
    let st = s.clone();
    r.expect_insert_audit_task().returning(move |mut t| {
        let mut s = lock(&st);
        if s.audits.iter().any(|a| a.tenant_id == t.tenant_id && a.status.is_running()) {
            return Err(Error::conflict(Reason::State, "audit running"));
        }
        t.id = 200 + s.audits.len() as Id;
        s.audits.push(t.clone());
        Ok(t)
    });
    let st = s.clone();
    r.expect_audit_task().returning(move |scope, id| Ok(lock(&st).audits.iter().find(|a| a.id == id && sees(scope, a.tenant_id)).cloned()));
    let st = s.clone();
    r.expect_latest_audit_task().returning(move |t| Ok(lock(&st).audits.iter().filter(|a| a.tenant_id == t).max_by_key(|a| a.id).cloned()));
    let st = s.clone();
    r.expect_running_audit().returning(move |t| Ok(lock(&st).audits.iter().find(|a| a.tenant_id == t && a.status.is_running()).cloned()));
    let st = s.clone();
    r.expect_update_audit_task().returning(move |t, read, effects| {
        let mut s = lock(&st);
        let Some(stored) = s.audits.iter_mut().find(|a| a.id == t.id) else { return Ok(false) };
        if stored.state() != read {
            return Ok(false);
        }
        *stored = t;
        s.published.extend(effects.events.iter().map(|e| (e.kind, e.subject)));
        Ok(true)
    });
    let st = s.clone();
    r.expect_list_audit_tasks().returning(move |scope, q| {
        let items: Vec<AuditTask> = lock(&st).audits.iter().filter(|a| sees(scope, a.tenant_id)).cloned().collect();
        let total = items.len() as i64;
        Ok(Page::new(items, total, q.list.page))
    });
    let st = s.clone();
    r.expect_insert_release_task().returning(move |mut t| {
        let mut s = lock(&st);
        t.id = 300 + s.releases.len() as Id;
        s.releases.push(t.clone());
        Ok(t)
    });
    let st = s.clone();
    r.expect_record_release().returning(move |mut t, update, effects| {
        let mut s = lock(&st);
        let Some(stored) = s.audits.iter_mut().find(|a| a.id == update.task.id) else { return Ok(None) };
        if stored.state() != update.read {
            return Ok(None);
        }
        *stored = update.task;
        s.published.extend(effects.events.iter().map(|e| (e.kind, e.subject)));
        t.id = 300 + s.releases.len() as Id;
        s.releases.push(t.clone());
        Ok(Some(t))
    });
    r
}

/// Kept packages answering from `s`.
fn package_store(s: &Shared) -> MockPackageStore {
    let mut r = MockPackageStore::new();
    let st = s.clone();
    r.expect_put().returning(move |_, info, file| {
        let kept = StoredPackage {
            sha256: info.sha256.clone(),
            size: info.size,
            project_root: info.project_root,
            path: PathBuf::from("/kept").join(format!("{}.zip", info.sha256)),
            created_at: now(),
        };
        assert_eq!(file, PathBuf::from("/tmp/upload-1.zip"));
        lock(&st).packages.push(kept.clone());
        Ok(kept)
    });
    let st = s.clone();
    r.expect_get().returning(move |sha| Ok(lock(&st).packages.iter().find(|p| p.sha256 == sha).cloned()));
    let st = s.clone();
    r.expect_open().returning(move |sha| Ok(lock(&st).packages.iter().find(|p| p.sha256 == sha).cloned().map(PackageFile::kept)));
    r
}

fn jobs(s: &Shared) -> MockJobStore {
    let mut j = MockJobStore::new();
    let st = s.clone();
    j.expect_enqueue().returning(move |job| {
        let mut s = lock(&st);
        s.jobs.push(job);
        Ok(Some(s.jobs.len() as Id))
    });
    j
}

struct Doubles {
    platform: MockMiniProgramPlatform,
    inspector: MockPackageInspector,
    uploader: MockCodeUploader,
}

fn doubles() -> Doubles {
    Doubles { platform: MockMiniProgramPlatform::new(), inspector: MockPackageInspector::new(), uploader: MockCodeUploader::new() }
}

/// No tenant budget and no reserve: the tests of the budgets set their own
/// ([`budgeted_settings`]).
fn settings() -> ReleaseSettings {
    let budgets = crate::AuditBudgets { submit: vec![], speedup: vec![], undo: vec![], reserve_percent: 0 };
    ReleaseSettings { budgets, ..ReleaseSettings::new("https://atrium.example.com") }
}

/// The default budgets: speed-ups 1 an hour and 3 in 30 days, a 20 % reserve.
fn budgeted_settings() -> ReleaseSettings {
    ReleaseSettings::new("https://atrium.example.com")
}

/// The authorisation service over storage answering from `s`.
fn authorizations(s: &Shared, d: Doubles) -> AuthorizationService {
    AuthorizationService::new(Arc::new(authorization_repo(s)), Arc::new(d.platform), Arc::new(FixedClock::new(now())), settings())
}

/// The pipeline over storage answering from `s`, acting through an authorisation service
/// over the same state and platform.
fn pipeline(s: &Shared, d: Doubles) -> PipelineService {
    pipeline_over(Arc::new(authorization_repo(s)), s, d, settings())
}

/// The pipeline with authorisation storage of the test's own, the rest answering from `s`.
fn pipeline_over(authorizations: Arc<dyn AuthorizationRepo>, s: &Shared, d: Doubles, settings: ReleaseSettings) -> PipelineService {
    let platform: Arc<dyn MiniProgramPlatform> = Arc::new(d.platform);
    let clock = Arc::new(FixedClock::new(now()));
    let authorization = Arc::new(AuthorizationService::new(authorizations, platform.clone(), clock.clone(), settings.clone()));
    let ports = PipelinePorts {
        tasks: Arc::new(task_repo(s)),
        packages: Arc::new(package_store(s)),
        platform,
        inspector: Arc::new(d.inspector),
        uploader: Arc::new(d.uploader),
        jobs: Arc::new(jobs(s)),
    };
    PipelineService::new(authorization, ports, clock, settings)
}

fn version(v: &str) -> Version {
    Version::parse(v).expect("valid version")
}

fn description(d: &str) -> VersionDescription {
    VersionDescription::parse(d).expect("valid description")
}

fn template_upload(v: &str) -> TemplateUpload {
    let ext_json = serde_json::json!({"ext": {"shop": "Ann"}}).as_object().cloned().unwrap_or_default();
    TemplateUpload { tenant_id: None, template_id: 1, ext_json, version: version(v), description: description("First") }
}

fn package_upload(v: &str) -> PackageUpload {
    PackageUpload { tenant_id: None, file: PathBuf::from("/tmp/upload-1.zip"), version: version(v), description: description("First") }
}

fn field_of(e: &Error) -> Option<&str> {
    match e {
        Error::Invalid(f) | Error::Blocked(_, f) => f.first().map(|f| f.field.as_str()),
        Error::NoSuch(f) => Some(f.field.as_str()),
        _ => None,
    }
}

fn request() -> EventRequest {
    EventRequest { timestamp: "1775016000".into(), nonce: "n".into(), msg_signature: "sig".into(), body: b"<xml/>".to_vec() }
}

fn event(id: &str, kind: EventKind) -> PlatformEvent {
    PlatformEvent { id: id.into(), created_at: now(), kind }
}

fn audit_event(to_user: &str, status: AuditStatus) -> PlatformEvent {
    event(
        &format!("{to_user}:1775016000:audit"),
        EventKind::Audit {
            to_user: to_user.into(),
            result: PlatformAudit { status, reason: None, screenshots: vec![], at: Some(now() - Duration::minutes(1)) },
        },
    )
}
