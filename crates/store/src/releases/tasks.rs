//! [`ReleaseTaskRepo`]: upload, audit and release tasks. Every change of a task is a
//! conditional write against the state it was read in; a release and the audit it releases are
//! written in one transaction.
use super::{ReleaseStore, from_json_text, json_text, to_i64, to_u64, unique_or};
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::org::{count_up_to, page, parse_enum, total};
use crate::outbox;
use crate::schema::{mp_audit_tasks, mp_release_tasks, mp_upload_tasks, tenants};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::StrEnum;
use atrium_kernel::{Effects, Error, Id, Page, Party, Result, SortOrder, Timestamp};
use atrium_miniprogram::{
    AuditState, AuditStatus, AuditTask, AuditTaskQuery, AuditUpdate, ReleaseState, ReleaseTask, ReleaseTaskRepo, TaskSort, UploadSource,
    UploadStatus, UploadTask, UploadTaskQuery,
};
use atrium_miniprogram::{Spent, Window};
use chrono::NaiveDateTime;
use diesel::dsl::{InnerJoin, IntoBoxed};
use diesel::expression::BoxableExpression;
use diesel::prelude::*;
use diesel::sql_types::Bool;

fn percentage_from_db(p: Option<i32>) -> Result<Option<u8>> {
    p.map(|p| u8::try_from(p).map_err(|_| Error::internal(format!("stored gray percentage {p} is out of range")))).transpose()
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
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    started_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTimeOpt)]
    finished_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
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
    #[diesel(deserialize_as = DbTime)]
    submitted_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    decided_at: Option<NaiveDateTime>,
    gray_percentage: Option<i32>,
    #[diesel(deserialize_as = DbTimeOpt)]
    released_at: Option<NaiveDateTime>,
    created_by: i64,
    #[diesel(deserialize_as = DbTime)]
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

/// Writes the audit task's mutable fields (status, reason, screenshots, decided, release state,
/// updated) only if its stored status and release state still equal `read`, in the caller's
/// transaction; whether it wrote. `screenshots` is the task's, as JSON text.
fn update_audit(conn: &mut DbConn, task: &AuditTask, read: &AuditState, screenshots: &str) -> Result<bool> {
    let (status, gray, released) = audit_still(read);
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
        mp_audit_tasks::screenshots.eq(screenshots),
        mp_audit_tasks::decided_at.eq(task.decided_at.map(to_db)),
        mp_audit_tasks::gray_percentage.eq(task.release.gray_percentage.map(i32::from)),
        mp_audit_tasks::released_at.eq(task.release.released_at.map(to_db)),
        mp_audit_tasks::updated_at.eq(to_db(task.updated_at)),
    ))
    .execute(conn)
    .map_err(|e| unique_or(e, || format!("another audit of tenant {} is running", task.tenant_id)))?;
    Ok(n > 0)
}

/// Stores a release task in the caller's transaction and returns it with its id.
fn insert_release(conn: &mut DbConn, task: ReleaseTask) -> Result<ReleaseTask> {
    let id: i64 = diesel::insert_into(mp_release_tasks::table)
        .values(release_row(&task))
        .returning(mp_release_tasks::id)
        .get_result(conn)
        .map_err(db_error)?;
    Ok(ReleaseTask { id, ..task })
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
impl ReleaseTaskRepo for ReleaseStore {
    async fn spend(&self, bucket: String, at: Timestamp, windows: Vec<Window>) -> Result<Spent> {
        self.db.write(move |conn| crate::rate::spend(conn, &bucket, at, &windows)).await
    }

    async fn give_back(&self, bucket: String, at: Timestamp) -> Result<()> {
        self.db.write(move |conn| crate::rate::give_back(conn, &bucket, at)).await
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
                let total = total(q.list.page, rows.len(), |n| {
                    count_up_to(uploads_filtered(scope, &q).select(mp_upload_tasks::id).limit(n), conn)
                })?;
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

    async fn update_audit_task(&self, task: AuditTask, read: AuditState, effects: Effects) -> Result<bool> {
        let screenshots = json_text(&task.screenshots)?;
        self.db
            .write(move |conn| {
                if !update_audit(conn, &task, &read, &screenshots)? {
                    return Ok(false);
                }
                outbox::write(conn, &effects)?;
                Ok(true)
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
                let total =
                    total(q.list.page, rows.len(), |n| count_up_to(audits_filtered(scope, &q).select(mp_audit_tasks::id).limit(n), conn))?;
                let items = rows.into_iter().map(audit_from_row).collect::<Result<Vec<_>>>()?;
                Ok(page(items, total, q.list.page))
            })
            .await
    }

    async fn insert_release_task(&self, task: ReleaseTask) -> Result<ReleaseTask> {
        self.db.write(move |conn| insert_release(conn, task)).await
    }

    async fn record_release(&self, task: ReleaseTask, audit: AuditUpdate, effects: Effects) -> Result<Option<ReleaseTask>> {
        let screenshots = json_text(&audit.task.screenshots)?;
        self.db
            .write(move |conn| {
                // The audit first: when it changed since it was read, nothing is written, so
                // there is nothing to undo. A failing insert after it fails the transaction,
                // and the audit's update goes with it.
                if !update_audit(conn, &audit.task, &audit.read, &screenshots)? {
                    return Ok(None);
                }
                let stored = insert_release(conn, task)?;
                outbox::write(conn, &effects)?;
                Ok(Some(stored))
            })
            .await
    }
}
