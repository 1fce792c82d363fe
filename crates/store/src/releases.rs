//! [`ReleaseRepo`]: tenants' authorisations (refresh tokens encrypted), authorisation attempts,
//! the verify ticket (encrypted), pushed events already processed, kept code packages, and the
//! upload, audit and release tasks.
//!
//! The rules the port states are kept by the database, so they hold across instances: the app
//! id is unique across tenants, a version once per tenant, and a partial unique index lets a
//! tenant have one running (`auditing` | `delayed`) audit at most. Task changes and the ticket
//! are conditional writes against the state read, so racing writers never move a record back.
//! Packages are files in the store's package directory named `<sha256>.zip`, moved there off
//! the async workers.
use crate::audit_log::write_audit;
use crate::crypto::FieldCipher;
use crate::db::{Db, DbConn, MultiBackend, on_backend};
use crate::error::db_error;
use crate::org::tenants::in_scope;
use crate::org::{page, parse_enum, total};
use crate::schema::{
    mp_audit_tasks, mp_authorization_attempts, mp_authorizations, mp_events, mp_packages, mp_release_tasks, mp_upload_tasks,
    mp_verify_ticket, tenants,
};
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{AuditRecord, Error, Id, Page, Party, Result, SortOrder, Timestamp};
use atrium_miniprogram::{
    AuditState, AuditStatus, AuditTask, AuditTaskQuery, Authorization, AuthorizationAttempt, AuthorizationStatus, PackageInfo, ReleaseRepo,
    ReleaseState, ReleaseTask, ReleaseTenant, Secret, StoredPackage, TaskSort, UploadSource, UploadStatus, UploadTask, UploadTaskQuery,
    VerifyTicket,
};
use chrono::{NaiveDateTime, SubsecRound};
use diesel::dsl::{InnerJoin, IntoBoxed};
use diesel::expression::BoxableExpression;
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::Bool;
use diesel::upsert::excluded;
use std::io;
use std::path::{Path, PathBuf};

/// The code-release repository: rows in the database, and code packages as files in one
/// directory, each named by its content hash.
#[derive(Clone)]
pub struct ReleaseStore {
    db: Db,
    cipher: FieldCipher,
    package_dir: PathBuf,
}

impl ReleaseStore {
    /// `cipher` is the one built from the master key (`FieldCipher::new`), as for the org
    /// store. `package_dir` is where kept packages live (`<sha256>.zip`); it is created when
    /// the first package arrives, and the uploader must be able to read it.
    pub fn new(db: Db, cipher: FieldCipher, package_dir: PathBuf) -> Self {
        ReleaseStore { db, cipher, package_dir }
    }
}

/// A unique violation as `Conflict` with `message`; any other error as [`db_error`] maps it (a
/// missing tenant, a foreign key, is a `Conflict` of its own wording there).
fn unique_or(e: DieselError, message: impl FnOnce() -> String) -> Error {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => Error::Conflict(Reason::Duplicate, message()),
        other => db_error(other),
    }
}

fn json_text<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(anyhow::Error::new(e).context("cannot serialise a JSON column")))
}

fn from_json_text<T: serde::de::DeserializeOwned>(raw: &str, what: &str) -> Result<T> {
    serde_json::from_str(raw).map_err(|e| Error::Internal(anyhow::Error::new(e).context(format!("stored {what} is not valid JSON"))))
}

fn to_i64(n: u64, what: &str) -> Result<i64> {
    i64::try_from(n).map_err(|_| Error::internal(format!("{what} {n} does not fit a BIGINT")))
}

fn to_u64(n: i64, what: &str) -> Result<u64> {
    u64::try_from(n).map_err(|_| Error::internal(format!("stored {what} {n} is negative")))
}

fn percentage_from_db(p: Option<i32>) -> Result<Option<u8>> {
    p.map(|p| u8::try_from(p).map_err(|_| Error::internal(format!("stored gray percentage {p} is out of range")))).transpose()
}

// --- authorisations ---------------------------------------------------------------------------

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = mp_authorizations, primary_key(tenant_id), treat_none_as_null = true)]
struct AuthorizationRow {
    tenant_id: i64,
    status: String,
    authorizer_appid: String,
    refresh_token_enc: String,
    nickname: Option<String>,
    user_name: Option<String>,
    func_info: String,
    authorized_at: NaiveDateTime,
    revoked_at: Option<NaiveDateTime>,
    updated_at: NaiveDateTime,
}

fn authorization_row(a: &Authorization, cipher: &FieldCipher) -> Result<AuthorizationRow> {
    if a.status == AuthorizationStatus::None {
        // `none` is the absence of a record, never a stored status.
        return Err(Error::internal("an authorisation is stored as authorized or revoked, never none"));
    }
    Ok(AuthorizationRow {
        tenant_id: a.tenant_id,
        status: a.status.as_str().to_owned(),
        authorizer_appid: a.authorizer_appid.clone(),
        refresh_token_enc: cipher.encrypt(a.refresh_token.expose())?,
        nickname: a.nickname.clone(),
        user_name: a.user_name.clone(),
        func_info: json_text(&a.func_info)?,
        authorized_at: to_db(a.authorized_at),
        revoked_at: a.revoked_at.map(to_db),
        updated_at: to_db(a.updated_at),
    })
}

fn authorization_from_row(r: AuthorizationRow, cipher: &FieldCipher) -> Result<Authorization> {
    Ok(Authorization {
        tenant_id: r.tenant_id,
        status: parse_enum(&r.status, AuthorizationStatus::parse, "authorisation status")?,
        authorizer_appid: r.authorizer_appid,
        refresh_token: Secret::new(cipher.decrypt(&r.refresh_token_enc)?),
        nickname: r.nickname,
        user_name: r.user_name,
        func_info: from_json_text(&r.func_info, "func_info")?,
        authorized_at: from_db(r.authorized_at),
        revoked_at: r.revoked_at.map(from_db),
        updated_at: from_db(r.updated_at),
    })
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_authorization_attempts)]
struct AttemptRow {
    state_hash: String,
    tenant_id: i64,
    pre_auth_code: String,
    created_by: i64,
    created_at: NaiveDateTime,
    expires_at: NaiveDateTime,
}

fn attempt_row(a: &AuthorizationAttempt) -> AttemptRow {
    AttemptRow {
        state_hash: a.state_hash.clone(),
        tenant_id: a.tenant_id,
        pre_auth_code: a.pre_auth_code.clone(),
        created_by: a.created_by,
        created_at: to_db(a.created_at),
        expires_at: to_db(a.expires_at),
    }
}

fn attempt_from_row(r: AttemptRow) -> AuthorizationAttempt {
    AuthorizationAttempt {
        state_hash: r.state_hash,
        tenant_id: r.tenant_id,
        pre_auth_code: r.pre_auth_code,
        created_by: r.created_by,
        created_at: from_db(r.created_at),
        expires_at: from_db(r.expires_at),
    }
}

// --- packages ---------------------------------------------------------------------------------

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_packages, treat_none_as_null = true)]
struct PackageRow {
    sha256: String,
    size: i64,
    project_root: String,
    path: String,
    tenant_id: Option<i64>,
    created_at: NaiveDateTime,
}

fn package_from_row(r: PackageRow) -> Result<StoredPackage> {
    Ok(StoredPackage {
        size: to_u64(r.size, "package size")?,
        sha256: r.sha256,
        project_root: r.project_root,
        path: PathBuf::from(r.path),
        created_at: from_db(r.created_at),
    })
}

/// The kept file's name: the hash, checked to be 64 lower-case hex digits so that it can
/// never name a path outside the package directory.
fn package_file_name(sha256: &str) -> Result<String> {
    if sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(format!("{sha256}.zip"))
    } else {
        Err(Error::internal(format!("{sha256:?} is not a lower-case hex SHA-256")))
    }
}

/// Moves `source` to `target` in `dir` (blocking file I/O). When `target` already holds a
/// file of `size` bytes, it is the same package (they share the hash), so `source` is removed
/// instead. A rename across file systems falls back to a copy under a temporary name in `dir`,
/// renamed into place, so `target` never shows a partly written file.
fn keep_file(dir: &Path, source: &Path, target: &Path, size: u64) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::metadata(target) {
        Ok(kept) if kept.is_file() && kept.len() == size => {
            // The package handed in may be the kept file itself: then there is nothing to drop.
            if std::fs::canonicalize(source)? != std::fs::canonicalize(target)? {
                std::fs::remove_file(source)?;
            }
            return Ok(());
        }
        // Absent, or not what its name says (a file cut short by hand): put the new one there.
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    match std::fs::rename(source, target) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => copy_into_place(dir, source, target),
        Err(e) => Err(e),
    }
}

/// Copies `source` to `target` through a temporary file in `dir`, then removes `source`.
fn copy_into_place(dir: &Path, source: &Path, target: &Path) -> io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("package");
    let partial = dir.join(format!(".{name}.{}-{}.partial", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let copied = std::fs::copy(source, &partial)
        .and_then(|_| std::fs::File::open(&partial)?.sync_all())
        .and_then(|()| std::fs::rename(&partial, target));
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::remove_file(source)
}

// --- upload tasks -----------------------------------------------------------------------------

const SOURCE_TEMPLATE: &str = "template";
const SOURCE_PACKAGE: &str = "package";

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_upload_tasks, treat_none_as_null = true)]
struct UploadRow {
    #[diesel(skip_insertion)]
    id: i64,
    tenant_id: i64,
    source_kind: String,
    source_template_id: Option<i64>,
    ext_json: Option<String>,
    package_sha256: Option<String>,
    package_size: Option<i64>,
    version: String,
    description: String,
    status: String,
    template_id: Option<i64>,
    errcode: Option<i64>,
    error: Option<String>,
    created_by: i64,
    created_at: NaiveDateTime,
    started_at: Option<NaiveDateTime>,
    finished_at: Option<NaiveDateTime>,
    updated_at: NaiveDateTime,
}

fn upload_row(t: &UploadTask) -> Result<UploadRow> {
    let (source_kind, source_template_id, ext_json, package_sha256, package_size) = match &t.source {
        UploadSource::Template { template_id, ext_json } => (SOURCE_TEMPLATE, Some(*template_id), Some(json_text(ext_json)?), None, None),
        UploadSource::Package { sha256, size } => (SOURCE_PACKAGE, None, None, Some(sha256.clone()), Some(to_i64(*size, "package size")?)),
    };
    Ok(UploadRow {
        id: t.id,
        tenant_id: t.tenant_id,
        source_kind: source_kind.to_owned(),
        source_template_id,
        ext_json,
        package_sha256,
        package_size,
        version: t.version.clone(),
        description: t.description.clone(),
        status: t.status.as_str().to_owned(),
        template_id: t.template_id,
        errcode: t.errcode,
        error: t.error.clone(),
        created_by: t.created_by,
        created_at: to_db(t.created_at),
        started_at: t.started_at.map(to_db),
        finished_at: t.finished_at.map(to_db),
        updated_at: to_db(t.updated_at),
    })
}

fn upload_from_row(r: UploadRow) -> Result<UploadTask> {
    let source = match (r.source_kind.as_str(), r.source_template_id, r.ext_json, r.package_sha256, r.package_size) {
        (SOURCE_TEMPLATE, Some(template_id), Some(ext_json), None, None) => {
            UploadSource::Template { template_id, ext_json: from_json_text(&ext_json, "ext_json")? }
        }
        (SOURCE_PACKAGE, None, None, Some(sha256), Some(size)) => UploadSource::Package { sha256, size: to_u64(size, "package size")? },
        (kind, ..) => return Err(Error::internal(format!("upload task {} has an incomplete {kind:?} source", r.id))),
    };
    Ok(UploadTask {
        id: r.id,
        tenant_id: r.tenant_id,
        source,
        version: r.version,
        description: r.description,
        status: parse_enum(&r.status, UploadStatus::parse, "upload status")?,
        template_id: r.template_id,
        errcode: r.errcode,
        error: r.error,
        created_by: r.created_by,
        created_at: from_db(r.created_at),
        started_at: r.started_at.map(from_db),
        finished_at: r.finished_at.map(from_db),
        updated_at: from_db(r.updated_at),
    })
}

/// Upload tasks joined with their tenants (for a partner's scope), as a boxed query.
type ScopedUploads = IntoBoxed<'static, InnerJoin<mp_upload_tasks::table, tenants::table>, MultiBackend>;

/// Upload tasks visible to `scope`: a partner's reach goes through its tenants.
fn uploads_in(scope: Party) -> ScopedUploads {
    let q = mp_upload_tasks::table.inner_join(tenants::table).into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(tenants::partner_id.eq(partner_id)),
        Party::Tenant { tenant_id, .. } => q.filter(mp_upload_tasks::tenant_id.eq(tenant_id)),
    }
}

fn uploads_filtered(scope: Party, q: &UploadTaskQuery) -> ScopedUploads {
    let mut query = uploads_in(scope);
    if let Some(s) = q.status {
        query = query.filter(mp_upload_tasks::status.eq(s.as_str()));
    }
    if let Some(t) = q.tenant_id {
        query = query.filter(mp_upload_tasks::tenant_id.eq(t));
    }
    query
}

// --- audit tasks ------------------------------------------------------------------------------

/// The statuses of an audit the platform is still deciding; the partial unique index
/// `mp_audit_tasks_running_idx` names the same two.
const RUNNING: [&str; 2] = ["auditing", "delayed"];

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_audit_tasks, treat_none_as_null = true)]
struct AuditRow {
    #[diesel(skip_insertion)]
    id: i64,
    tenant_id: i64,
    upload_task_id: i64,
    version: String,
    auditid: i64,
    status: String,
    reason: Option<String>,
    screenshots: String,
    submitted_at: NaiveDateTime,
    decided_at: Option<NaiveDateTime>,
    gray_percentage: Option<i32>,
    released_at: Option<NaiveDateTime>,
    created_by: i64,
    updated_at: NaiveDateTime,
}

fn audit_row(t: &AuditTask) -> Result<AuditRow> {
    Ok(AuditRow {
        id: t.id,
        tenant_id: t.tenant_id,
        upload_task_id: t.upload_task_id,
        version: t.version.clone(),
        auditid: t.auditid,
        status: t.status.as_str().to_owned(),
        reason: t.reason.clone(),
        screenshots: json_text(&t.screenshots)?,
        submitted_at: to_db(t.submitted_at),
        decided_at: t.decided_at.map(to_db),
        gray_percentage: t.release.gray_percentage.map(i32::from),
        released_at: t.release.released_at.map(to_db),
        created_by: t.created_by,
        updated_at: to_db(t.updated_at),
    })
}

fn audit_from_row(r: AuditRow) -> Result<AuditTask> {
    Ok(AuditTask {
        id: r.id,
        tenant_id: r.tenant_id,
        upload_task_id: r.upload_task_id,
        version: r.version,
        auditid: r.auditid,
        status: parse_enum(&r.status, AuditStatus::parse, "audit status")?,
        reason: r.reason,
        screenshots: from_json_text(&r.screenshots, "screenshots")?,
        submitted_at: from_db(r.submitted_at),
        decided_at: r.decided_at.map(from_db),
        release: ReleaseState { gray_percentage: percentage_from_db(r.gray_percentage)?, released_at: r.released_at.map(from_db) },
        created_by: r.created_by,
        updated_at: from_db(r.updated_at),
    })
}

/// Audit tasks joined with their tenants (for a partner's scope), as a boxed query.
type ScopedAudits = IntoBoxed<'static, InnerJoin<mp_audit_tasks::table, tenants::table>, MultiBackend>;

/// Audit tasks visible to `scope`: a partner's reach goes through its tenants.
fn audits_in(scope: Party) -> ScopedAudits {
    let q = mp_audit_tasks::table.inner_join(tenants::table).into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(tenants::partner_id.eq(partner_id)),
        Party::Tenant { tenant_id, .. } => q.filter(mp_audit_tasks::tenant_id.eq(tenant_id)),
    }
}

fn audits_filtered(scope: Party, q: &AuditTaskQuery) -> ScopedAudits {
    let mut query = audits_in(scope);
    if let Some(s) = q.status {
        query = query.filter(mp_audit_tasks::status.eq(s.as_str()));
    }
    if let Some(t) = q.tenant_id {
        query = query.filter(mp_audit_tasks::tenant_id.eq(t));
    }
    query
}

/// A condition on one audit column, boxed so that "equals the value read" and "is null, as
/// read" are one type.
type AuditCondition = Box<dyn BoxableExpression<mp_audit_tasks::table, MultiBackend, SqlType = Bool>>;

/// The stored audit is still in the state `read`: its status, gray percentage and full
/// release as they were read (a column read as null must still be null).
fn audit_still(read: &AuditState) -> (AuditCondition, AuditCondition, AuditCondition) {
    let status: AuditCondition = Box::new(mp_audit_tasks::status.eq(read.status.as_str()));
    let gray: AuditCondition = match read.release.gray_percentage {
        Some(p) => Box::new(mp_audit_tasks::gray_percentage.eq(i32::from(p)).assume_not_null()),
        None => Box::new(mp_audit_tasks::gray_percentage.is_null()),
    };
    let released: AuditCondition = match read.release.released_at {
        Some(at) => Box::new(mp_audit_tasks::released_at.eq(to_db(at)).assume_not_null()),
        None => Box::new(mp_audit_tasks::released_at.is_null()),
    };
    (status, gray, released)
}

// --- release tasks ----------------------------------------------------------------------------

#[derive(Insertable)]
#[diesel(table_name = mp_release_tasks, treat_none_as_null = true)]
struct NewReleaseRow {
    tenant_id: i64,
    audit_task_id: Option<i64>,
    kind: String,
    version: Option<String>,
    gray_percentage: Option<i32>,
    status: String,
    errcode: Option<i64>,
    errmsg: Option<String>,
    created_by: i64,
    created_at: NaiveDateTime,
}

fn release_row(t: &ReleaseTask) -> NewReleaseRow {
    NewReleaseRow {
        tenant_id: t.tenant_id,
        audit_task_id: t.audit_task_id,
        kind: t.kind.as_str().to_owned(),
        version: t.version.clone(),
        gray_percentage: t.gray_percentage.map(i32::from),
        status: t.status.as_str().to_owned(),
        errcode: t.errcode,
        errmsg: t.errmsg.clone(),
        created_by: t.created_by,
        created_at: to_db(t.created_at),
    }
}

fn one_upload(conn: &mut DbConn, query: ScopedUploads) -> Result<Option<UploadTask>> {
    let row: Option<UploadRow> = query.select(UploadRow::as_select()).first(conn).optional().map_err(db_error)?;
    row.map(upload_from_row).transpose()
}

fn one_audit(conn: &mut DbConn, query: ScopedAudits) -> Result<Option<AuditTask>> {
    let row: Option<AuditRow> = query.select(AuditRow::as_select()).first(conn).optional().map_err(db_error)?;
    row.map(audit_from_row).transpose()
}

#[async_trait]
impl ReleaseRepo for ReleaseStore {
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<ReleaseTenant>> {
        self.db.run(move |conn| Ok(in_scope(conn, scope, tenant_id)?.map(|(id, partner_id)| ReleaseTenant { id, partner_id }))).await
    }

    async fn get_authorization(&self, tenant_id: Id) -> Result<Option<Authorization>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<AuthorizationRow> = mp_authorizations::table
                    .find(tenant_id)
                    .select(AuthorizationRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(|r| authorization_from_row(r, &cipher)).transpose()
            })
            .await
    }

    async fn authorization_by_appid(&self, authorizer_appid: String) -> Result<Option<Authorization>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<AuthorizationRow> = mp_authorizations::table
                    .filter(mp_authorizations::authorizer_appid.eq(&authorizer_appid))
                    .select(AuthorizationRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(|r| authorization_from_row(r, &cipher)).transpose()
            })
            .await
    }

    async fn save_authorization(&self, authorization: Authorization, audit: AuditRecord) -> Result<Authorization> {
        let row = authorization_row(&authorization, &self.cipher)?;
        self.db
            .write(move |conn| {
                // The upsert's target is the tenant; a clash on the app id is another tenant's
                // row and fails the statement, and with it the transaction and its audit entry.
                on_backend!(conn, |c| diesel::insert_into(mp_authorizations::table)
                    .values(&row)
                    .on_conflict(mp_authorizations::tenant_id)
                    .do_update()
                    .set(&row)
                    .execute(c))
                .map_err(|e| unique_or(e, || format!("the mini-program {} is authorised for another tenant", row.authorizer_appid)))?;
                write_audit(conn, &audit)?;
                Ok(authorization)
            })
            .await
    }

    async fn insert_authorization_attempt(&self, attempt: AuthorizationAttempt) -> Result<()> {
        self.db
            .write(move |conn| {
                diesel::insert_into(mp_authorization_attempts::table)
                    .values(attempt_row(&attempt))
                    .execute(conn)
                    .map_err(|e| unique_or(e, || "this authorisation state is already in use".into()))?;
                Ok(())
            })
            .await
    }

    async fn take_authorization_attempt(&self, state_hash: String) -> Result<Option<AuthorizationAttempt>> {
        self.db
            .write(move |conn| {
                // One statement deletes and returns: of two callers with the same state, the
                // second finds the row gone (PostgreSQL re-checks it after the first commits).
                let row: Option<AttemptRow> = on_backend!(conn, |c| diesel::delete(mp_authorization_attempts::table.find(&state_hash))
                    .returning(AttemptRow::as_returning())
                    .get_result(c)
                    .optional())
                .map_err(db_error)?;
                Ok(row.map(attempt_from_row))
            })
            .await
    }

    async fn authorization_attempt_by_code(&self, pre_auth_code: String) -> Result<Option<AuthorizationAttempt>> {
        self.db
            .run(move |conn| {
                let row: Option<AttemptRow> = mp_authorization_attempts::table
                    .filter(mp_authorization_attempts::pre_auth_code.eq(&pre_auth_code))
                    .order(mp_authorization_attempts::created_at.desc())
                    .select(AttemptRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                Ok(row.map(attempt_from_row))
            })
            .await
    }

    async fn verify_ticket(&self) -> Result<Option<VerifyTicket>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<(String, NaiveDateTime)> = mp_verify_ticket::table
                    .find(TICKET_ROW)
                    .select((mp_verify_ticket::ticket_enc, mp_verify_ticket::created_at))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(|(enc, at)| Ok(VerifyTicket { ticket: Secret::new(cipher.decrypt(&enc)?), created_at: from_db(at) })).transpose()
            })
            .await
    }

    async fn save_verify_ticket(&self, ticket: VerifyTicket) -> Result<bool> {
        let enc = self.cipher.encrypt(ticket.ticket.expose())?;
        let at = to_db(ticket.created_at);
        self.db
            .write(move |conn| {
                // `filter` of an upsert is the `WHERE` of its `DO UPDATE`.
                use diesel::query_dsl::methods::FilterDsl as _;
                // Inserted, or replacing the stored ticket only when that one is older: one
                // statement, so two pushes racing cannot leave the older ticket behind.
                let n = on_backend!(conn, |c| diesel::insert_into(mp_verify_ticket::table)
                    .values((
                        mp_verify_ticket::id.eq(TICKET_ROW),
                        mp_verify_ticket::ticket_enc.eq(&enc),
                        mp_verify_ticket::created_at.eq(at),
                    ))
                    .on_conflict(mp_verify_ticket::id)
                    .do_update()
                    .set((
                        mp_verify_ticket::ticket_enc.eq(excluded(mp_verify_ticket::ticket_enc)),
                        mp_verify_ticket::created_at.eq(excluded(mp_verify_ticket::created_at)),
                    ))
                    .filter(mp_verify_ticket::created_at.lt(at))
                    .execute(c))
                .map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn event_seen(&self, event_id: String) -> Result<bool> {
        self.db
            .run(move |conn| {
                let n: i64 = mp_events::table.filter(mp_events::event_id.eq(&event_id)).count().get_result(conn).map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn record_event(&self, event_id: String, kind: String, at: Timestamp) -> Result<()> {
        self.db
            .write(move |conn| {
                let values = (mp_events::event_id.eq(&event_id), mp_events::kind.eq(&kind), mp_events::received_at.eq(to_db(at)));
                on_backend!(conn, |c| diesel::insert_into(mp_events::table)
                    .values(values)
                    .on_conflict(mp_events::event_id)
                    .do_nothing()
                    .execute(c))
                .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn keep_package(&self, tenant_id: Id, info: PackageInfo, file: PathBuf) -> Result<StoredPackage> {
        let target = self.package_dir.join(package_file_name(&info.sha256)?);
        let path = target.to_str().ok_or_else(|| Error::internal("the package directory's path is not UTF-8"))?.to_owned();
        let size = to_i64(info.size, "package size")?;
        {
            // The file first and outside the database transaction: a copy across file systems
            // may take a while, and no connection or write lock is held meanwhile. A row
            // failing after this leaves a kept file that the next keep of the hash reuses.
            let (dir, target, sha256, size) = (self.package_dir.clone(), target.clone(), info.sha256.clone(), info.size);
            tokio::task::spawn_blocking(move || {
                keep_file(&dir, &file, &target, size)
                    .map_err(|e| Error::Internal(anyhow::Error::new(e).context(format!("cannot keep package {sha256}"))))
            })
            .await
            .map_err(|e| Error::Internal(anyhow::anyhow!("package task failed: {e}")))??;
        }
        let row = PackageRow {
            sha256: info.sha256,
            size,
            project_root: info.project_root,
            path,
            tenant_id: Some(tenant_id),
            // Microseconds, as both databases keep them: what is returned is what is read later.
            created_at: to_db(chrono::Utc::now().trunc_subsecs(6)),
        };
        self.db
            .write(move |conn| {
                // A package kept before keeps its first uploader and time; only where the file
                // now is (the package directory may have moved) is brought up to date.
                on_backend!(conn, |c| diesel::insert_into(mp_packages::table)
                    .values(&row)
                    .on_conflict(mp_packages::sha256)
                    .do_update()
                    .set(mp_packages::path.eq(excluded(mp_packages::path)))
                    .execute(c))
                .map_err(db_error)?;
                let stored: PackageRow =
                    mp_packages::table.find(&row.sha256).select(PackageRow::as_select()).first(conn).map_err(db_error)?;
                package_from_row(stored)
            })
            .await
    }

    async fn package(&self, sha256: String) -> Result<Option<StoredPackage>> {
        self.db
            .run(move |conn| {
                let row: Option<PackageRow> =
                    mp_packages::table.find(&sha256).select(PackageRow::as_select()).first(conn).optional().map_err(db_error)?;
                row.map(package_from_row).transpose()
            })
            .await
    }

    async fn insert_upload_task(&self, task: UploadTask) -> Result<UploadTask> {
        let row = upload_row(&task)?;
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(mp_upload_tasks::table)
                    .values(&row)
                    .returning(mp_upload_tasks::id)
                    .get_result(conn)
                    .map_err(|e| unique_or(e, || format!("version {} is already used by this tenant", task.version)))?;
                Ok(UploadTask { id, ..task })
            })
            .await
    }

    async fn upload_task(&self, scope: Party, id: Id) -> Result<Option<UploadTask>> {
        self.db.run(move |conn| one_upload(conn, uploads_in(scope).filter(mp_upload_tasks::id.eq(id)))).await
    }

    async fn upload_version_used(&self, tenant_id: Id, version: String) -> Result<bool> {
        self.db
            .run(move |conn| {
                let n: i64 = mp_upload_tasks::table
                    .filter(mp_upload_tasks::tenant_id.eq(tenant_id))
                    .filter(mp_upload_tasks::version.eq(&version))
                    .count()
                    .get_result(conn)
                    .map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn latest_uploaded(&self, tenant_id: Id) -> Result<Option<UploadTask>> {
        self.db
            .run(move |conn| {
                let query = uploads_in(Party::Platform)
                    .filter(mp_upload_tasks::tenant_id.eq(tenant_id))
                    .filter(mp_upload_tasks::status.eq(UploadStatus::Uploaded.as_str()))
                    // An uploaded task always has one; the backends sort nulls differently.
                    .filter(mp_upload_tasks::finished_at.is_not_null())
                    .order((mp_upload_tasks::finished_at.desc(), mp_upload_tasks::id.desc()));
                one_upload(conn, query)
            })
            .await
    }

    async fn update_upload_task(&self, task: UploadTask, read_status: UploadStatus) -> Result<bool> {
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    mp_upload_tasks::table
                        .filter(mp_upload_tasks::id.eq(task.id))
                        .filter(mp_upload_tasks::tenant_id.eq(task.tenant_id))
                        .filter(mp_upload_tasks::status.eq(read_status.as_str())),
                )
                .set((
                    mp_upload_tasks::status.eq(task.status.as_str()),
                    mp_upload_tasks::template_id.eq(task.template_id),
                    mp_upload_tasks::errcode.eq(task.errcode),
                    mp_upload_tasks::error.eq(&task.error),
                    mp_upload_tasks::started_at.eq(task.started_at.map(to_db)),
                    mp_upload_tasks::finished_at.eq(task.finished_at.map(to_db)),
                    mp_upload_tasks::updated_at.eq(to_db(task.updated_at)),
                ))
                .execute(conn)
                .map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn list_upload_tasks(&self, scope: Party, q: UploadTaskQuery) -> Result<Page<UploadTask>> {
        self.db
            .run(move |conn| {
                let mut query = uploads_filtered(scope, &q).select(UploadRow::as_select());
                query = match q.list.sort.unwrap_or((TaskSort::Id, SortOrder::Desc)) {
                    (TaskSort::Id, SortOrder::Asc) => query.order(mp_upload_tasks::id.asc()),
                    (TaskSort::Id, SortOrder::Desc) => query.order(mp_upload_tasks::id.desc()),
                    (TaskSort::CreatedAt, SortOrder::Asc) => query.order((mp_upload_tasks::created_at.asc(), mp_upload_tasks::id.asc())),
                    (TaskSort::CreatedAt, SortOrder::Desc) => query.order((mp_upload_tasks::created_at.desc(), mp_upload_tasks::id.desc())),
                };
                let rows: Vec<UploadRow> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), || uploads_filtered(scope, &q).count().get_result(conn).map_err(db_error))?;
                let items = rows.into_iter().map(upload_from_row).collect::<Result<Vec<_>>>()?;
                Ok(page(items, total, q.list.page))
            })
            .await
    }

    async fn insert_audit_task(&self, task: AuditTask) -> Result<AuditTask> {
        let row = audit_row(&task)?;
        self.db
            .write(move |conn| {
                // The partial unique index on running audits refuses a second one, also when
                // two submissions race: the later insert waits for the earlier and then fails.
                let id: i64 = diesel::insert_into(mp_audit_tasks::table)
                    .values(&row)
                    .returning(mp_audit_tasks::id)
                    .get_result(conn)
                    .map_err(|e| unique_or(e, || format!("another audit of tenant {} is running", task.tenant_id)))?;
                Ok(AuditTask { id, ..task })
            })
            .await
    }

    async fn audit_task(&self, scope: Party, id: Id) -> Result<Option<AuditTask>> {
        self.db.run(move |conn| one_audit(conn, audits_in(scope).filter(mp_audit_tasks::id.eq(id)))).await
    }

    async fn latest_audit_task(&self, tenant_id: Id) -> Result<Option<AuditTask>> {
        self.db
            .run(move |conn| {
                // The last one stored: a tenant's audits are submitted one after the other.
                let query = audits_in(Party::Platform).filter(mp_audit_tasks::tenant_id.eq(tenant_id)).order(mp_audit_tasks::id.desc());
                one_audit(conn, query)
            })
            .await
    }

    async fn running_audit(&self, tenant_id: Id) -> Result<Option<AuditTask>> {
        self.db
            .run(move |conn| {
                let query = audits_in(Party::Platform)
                    .filter(mp_audit_tasks::tenant_id.eq(tenant_id))
                    .filter(mp_audit_tasks::status.eq_any(RUNNING))
                    .order(mp_audit_tasks::id.desc());
                one_audit(conn, query)
            })
            .await
    }

    async fn update_audit_task(&self, task: AuditTask, read: AuditState) -> Result<bool> {
        let screenshots = json_text(&task.screenshots)?;
        self.db
            .write(move |conn| {
                let (status, gray, released) = audit_still(&read);
                let n = diesel::update(
                    mp_audit_tasks::table
                        .filter(mp_audit_tasks::id.eq(task.id))
                        .filter(mp_audit_tasks::tenant_id.eq(task.tenant_id))
                        .filter(status)
                        .filter(gray)
                        .filter(released),
                )
                .set((
                    mp_audit_tasks::status.eq(task.status.as_str()),
                    mp_audit_tasks::reason.eq(&task.reason),
                    mp_audit_tasks::screenshots.eq(&screenshots),
                    mp_audit_tasks::decided_at.eq(task.decided_at.map(to_db)),
                    mp_audit_tasks::gray_percentage.eq(task.release.gray_percentage.map(i32::from)),
                    mp_audit_tasks::released_at.eq(task.release.released_at.map(to_db)),
                    mp_audit_tasks::updated_at.eq(to_db(task.updated_at)),
                ))
                .execute(conn)
                .map_err(|e| unique_or(e, || format!("another audit of tenant {} is running", task.tenant_id)))?;
                Ok(n > 0)
            })
            .await
    }

    async fn list_audit_tasks(&self, scope: Party, q: AuditTaskQuery) -> Result<Page<AuditTask>> {
        self.db
            .run(move |conn| {
                let mut query = audits_filtered(scope, &q).select(AuditRow::as_select());
                // An audit is created when it is submitted.
                query = match q.list.sort.unwrap_or((TaskSort::Id, SortOrder::Desc)) {
                    (TaskSort::Id, SortOrder::Asc) => query.order(mp_audit_tasks::id.asc()),
                    (TaskSort::Id, SortOrder::Desc) => query.order(mp_audit_tasks::id.desc()),
                    (TaskSort::CreatedAt, SortOrder::Asc) => query.order((mp_audit_tasks::submitted_at.asc(), mp_audit_tasks::id.asc())),
                    (TaskSort::CreatedAt, SortOrder::Desc) => query.order((mp_audit_tasks::submitted_at.desc(), mp_audit_tasks::id.desc())),
                };
                let rows: Vec<AuditRow> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), || audits_filtered(scope, &q).count().get_result(conn).map_err(db_error))?;
                let items = rows.into_iter().map(audit_from_row).collect::<Result<Vec<_>>>()?;
                Ok(page(items, total, q.list.page))
            })
            .await
    }

    async fn insert_release_task(&self, task: ReleaseTask) -> Result<ReleaseTask> {
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(mp_release_tasks::table)
                    .values(release_row(&task))
                    .returning(mp_release_tasks::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                Ok(ReleaseTask { id, ..task })
            })
            .await
    }
}

/// The verify ticket's one row.
const TICKET_ROW: i32 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_name_is_a_lower_case_hex_hash_and_nothing_else() {
        assert_eq!(package_file_name(&"ab".repeat(32)).ok(), Some(format!("{}.zip", "ab".repeat(32))));
        for bad in ["../../etc/passwd", &"AB".repeat(32), &"ab".repeat(31), &format!("{}/x", "a".repeat(62)), ""] {
            assert!(package_file_name(bad).is_err(), "{bad:?}");
        }
    }
}
