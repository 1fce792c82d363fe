//! [`CampaignRepo`]: release campaigns and their tenants, on [`CampaignStore`].
//!
//! Every write of a campaign or of a tenant's progress is conditional on the revision read.
//! A tenant's row is `active` while its campaign is running or paused; the partial unique
//! index `mp_campaign_tenants_active_idx` lets a tenant be active in one campaign at most, so
//! of two campaigns naming one tenant only one can start, even when both start at once on two
//! instances: the second's update of its tenants meets the index and its whole transaction
//! rolls back.
use super::{from_json_text, json_text};
use crate::db::{Db, DbConn, MultiBackend, on_backend};
use crate::error::db_error;
use crate::org::tenants::ids_of_partner;
use crate::org::{count_up_to, nothing, page, parse_enum, total};
use crate::outbox;
use crate::schema::{mp_campaign_tenants, mp_campaigns};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::{Effects, Error, Id, Page, Party, Reason, Result, SortOrder, StrEnum, Timestamp};
use atrium_miniprogram::campaign::{CampaignQuery, CampaignTenantQuery, CampaignTenantSort};
use atrium_miniprogram::{Campaign, CampaignRepo, CampaignStatus, CampaignTenant, CampaignTenantStatus, PauseReason, TaskSort};
use chrono::NaiveDateTime;
use diesel::expression::BoxableExpression;
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::Bool;

/// Rows of a campaign's tenants inserted per statement: 15 columns a row keeps a statement
/// within SQLite's 32,766 bind parameters and PostgreSQL's 65,535.
const INSERT_CHUNK: usize = 1000;
/// Ids bound per statement when a list of tenants is looked up or updated.
const ID_CHUNK: usize = 1000;

/// The release campaigns over the database; implements `CampaignRepo`.
#[derive(Clone)]
pub struct CampaignStore {
    db: Db,
}

impl CampaignStore {
    /// A campaign store over `db`.
    pub fn new(db: Db) -> Self {
        CampaignStore { db }
    }
}

fn to_i32(n: u32, what: &str) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::internal(format!("{what} {n} does not fit an INTEGER")))
}

fn to_u32(n: i32, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::internal(format!("stored {what} {n} is negative")))
}

/// The conflict of a tenant that is active in another campaign.
fn in_campaign(tenant_id: Id, campaign_id: Id) -> Error {
    Error::conflict(Reason::TenantInCampaign, format!("tenant {tenant_id} is in campaign {campaign_id}, which is running or paused"))
}

// --- campaigns --------------------------------------------------------------------------------

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_campaigns, treat_none_as_null = true)]
struct CampaignRow {
    #[diesel(skip_insertion)]
    id: i64,
    name: String,
    partner_id: Option<i64>,
    status: String,
    template_id: i64,
    version: String,
    description: String,
    version_desc: Option<String>,
    ext_json: String,
    waves: String,
    current_wave: Option<i32>,
    auto_advance: bool,
    max_rejections: i32,
    domains: Option<String>,
    privacy: Option<String>,
    paused_reason: Option<String>,
    tenant_total: i32,
    created_by: i64,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    started_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTimeOpt)]
    finished_at: Option<NaiveDateTime>,
    revision: i64,
}

fn campaign_row(c: &Campaign) -> Result<CampaignRow> {
    Ok(CampaignRow {
        id: c.id,
        name: c.name.clone(),
        partner_id: c.partner_id,
        status: c.status.as_str().to_owned(),
        template_id: c.template_id,
        version: c.version.clone(),
        description: c.description.clone(),
        version_desc: c.version_desc.clone(),
        ext_json: json_text(&c.ext_json)?,
        waves: json_text(&c.waves)?,
        current_wave: c.current_wave.map(|w| to_i32(w, "wave")).transpose()?,
        auto_advance: c.auto_advance,
        max_rejections: to_i32(c.max_rejections, "max_rejections")?,
        domains: c.domains.as_ref().map(json_text).transpose()?,
        privacy: c.privacy.as_ref().map(json_text).transpose()?,
        paused_reason: c.paused_reason.map(|r| r.as_str().to_owned()),
        tenant_total: to_i32(c.tenant_total, "tenant_total")?,
        created_by: c.created_by,
        created_at: to_db(c.created_at),
        started_at: c.started_at.map(to_db),
        finished_at: c.finished_at.map(to_db),
        revision: c.revision,
    })
}

fn campaign_from_row(r: CampaignRow) -> Result<Campaign> {
    Ok(Campaign {
        id: r.id,
        name: r.name,
        partner_id: r.partner_id,
        status: parse_enum(&r.status, CampaignStatus::parse, "campaign status")?,
        template_id: r.template_id,
        version: r.version,
        description: r.description,
        version_desc: r.version_desc,
        ext_json: from_json_text(&r.ext_json, "ext_json")?,
        waves: from_json_text(&r.waves, "waves")?,
        current_wave: r.current_wave.map(|w| to_u32(w, "wave")).transpose()?,
        auto_advance: r.auto_advance,
        max_rejections: to_u32(r.max_rejections, "max_rejections")?,
        domains: r.domains.as_deref().map(|d| from_json_text(d, "domains")).transpose()?,
        privacy: r.privacy.as_deref().map(|p| from_json_text(p, "privacy")).transpose()?,
        paused_reason: r.paused_reason.as_deref().map(|p| parse_enum(p, PauseReason::parse, "pause reason")).transpose()?,
        tenant_total: to_u32(r.tenant_total, "tenant_total")?,
        created_by: r.created_by,
        created_at: from_db(r.created_at),
        started_at: r.started_at.map(from_db),
        finished_at: r.finished_at.map(from_db),
        revision: r.revision,
    })
}

/// What a write of a campaign changes: everything but its id, partner, creator and creation
/// time.
#[derive(AsChangeset)]
#[diesel(table_name = mp_campaigns, treat_none_as_null = true)]
struct CampaignChanges {
    name: String,
    status: String,
    template_id: i64,
    version: String,
    description: String,
    version_desc: Option<String>,
    ext_json: String,
    waves: String,
    current_wave: Option<i32>,
    auto_advance: bool,
    max_rejections: i32,
    domains: Option<String>,
    privacy: Option<String>,
    paused_reason: Option<String>,
    tenant_total: i32,
    started_at: Option<NaiveDateTime>,
    finished_at: Option<NaiveDateTime>,
    revision: i64,
}

impl CampaignChanges {
    fn new(r: CampaignRow, revision: i64) -> Self {
        CampaignChanges {
            name: r.name,
            status: r.status,
            template_id: r.template_id,
            version: r.version,
            description: r.description,
            version_desc: r.version_desc,
            ext_json: r.ext_json,
            waves: r.waves,
            current_wave: r.current_wave,
            auto_advance: r.auto_advance,
            max_rejections: r.max_rejections,
            domains: r.domains,
            privacy: r.privacy,
            paused_reason: r.paused_reason,
            tenant_total: r.tenant_total,
            started_at: r.started_at,
            finished_at: r.finished_at,
            revision,
        }
    }
}

/// Campaigns visible to `scope`: the platform sees all, a partner its own, a tenant none.
fn scoped(scope: Party) -> mp_campaigns::BoxedQuery<'static, MultiBackend> {
    let q = mp_campaigns::table.into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(mp_campaigns::partner_id.eq(partner_id)),
        Party::Tenant { .. } => q.filter(nothing()),
    }
}

fn campaigns_filtered(scope: Party, q: &CampaignQuery) -> mp_campaigns::BoxedQuery<'static, MultiBackend> {
    let mut query = scoped(scope);
    if let Some(s) = q.status {
        query = query.filter(mp_campaigns::status.eq(s.as_str()));
    }
    query
}

/// The first of `tenant_ids` (in their order) that is active in a campaign, with that
/// campaign.
fn first_active(conn: &mut DbConn, tenant_ids: &[Id]) -> Result<Option<(Id, Id)>> {
    for chunk in tenant_ids.chunks(ID_CHUNK) {
        let found: Vec<(i64, i64)> = mp_campaign_tenants::table
            .filter(mp_campaign_tenants::active.eq(true))
            .filter(mp_campaign_tenants::tenant_id.eq_any(chunk))
            .select((mp_campaign_tenants::tenant_id, mp_campaign_tenants::campaign_id))
            .load(conn)
            .map_err(db_error)?;
        if let Some(first) = chunk.iter().find_map(|t| found.iter().find(|(tenant, _)| tenant == t)) {
            return Ok(Some(*first));
        }
    }
    Ok(None)
}

/// The campaign's tenant (lowest id first) that is active in another campaign, with that
/// campaign.
fn active_elsewhere(conn: &mut DbConn, campaign_id: Id) -> Result<Option<(Id, Id)>> {
    let other = diesel::alias!(mp_campaign_tenants as other);
    mp_campaign_tenants::table
        .inner_join(other.on(other.field(mp_campaign_tenants::tenant_id).eq(mp_campaign_tenants::tenant_id)))
        .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
        .filter(other.field(mp_campaign_tenants::active).eq(true))
        .filter(other.field(mp_campaign_tenants::campaign_id).ne(campaign_id))
        .order(mp_campaign_tenants::tenant_id)
        .select((mp_campaign_tenants::tenant_id, other.field(mp_campaign_tenants::campaign_id)))
        .first(conn)
        .optional()
        .map_err(db_error)
}

/// Serialises, until the end of the write transaction, the campaigns whose tenants become
/// active (a PostgreSQL transaction-level advisory lock; SQLite's one writer already
/// serialises them). The unique index alone keeps a tenant in one active campaign; the lock
/// keeps two campaigns sharing several tenants from each taking some of them and waiting for
/// the other's (a deadlock, which PostgreSQL ends with an error of its own, not a conflict).
fn lock_activation(conn: &mut DbConn) -> Result<()> {
    if let DbConn::Pg(c) = conn {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(b"mp-campaign-tenants:activation");
        let mut key = [0u8; 8];
        key.copy_from_slice(&digest[..8]);
        diesel::sql_query("SELECT pg_advisory_xact_lock($1)")
            .bind::<diesel::sql_types::BigInt, _>(i64::from_be_bytes(key))
            .execute(c)
            .map_err(db_error)?;
    }
    Ok(())
}

/// Makes the campaign's tenants active or not, in the caller's transaction. `Conflict`
/// (`tenant_in_campaign`) naming a tenant that is active in another campaign; the caller's
/// transaction must then roll back (the statement itself is undone in a savepoint, so the
/// tenant can be looked up).
fn set_active(conn: &mut DbConn, campaign_id: Id, active: bool) -> Result<()> {
    if active {
        lock_activation(conn)?;
    }
    let changed = conn.transaction(|c| {
        diesel::update(
            mp_campaign_tenants::table
                .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
                .filter(mp_campaign_tenants::active.ne(active)),
        )
        .set(mp_campaign_tenants::active.eq(active))
        .execute(c)
    });
    match changed {
        Ok(_) => Ok(()),
        Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => match active_elsewhere(conn, campaign_id)? {
            Some((tenant, other)) => Err(in_campaign(tenant, other)),
            None => Err(Error::conflict(Reason::TenantInCampaign, "one of the campaign's tenants is in a running or paused campaign")),
        },
        Err(e) => Err(db_error(e)),
    }
}

// --- campaign tenants -------------------------------------------------------------------------

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_campaign_tenants, treat_none_as_null = true)]
struct TenantRow {
    campaign_id: i64,
    tenant_id: i64,
    authorizer_appid: Option<String>,
    wave: Option<i32>,
    status: String,
    upload_task_id: Option<i64>,
    audit_task_id: Option<i64>,
    release_task_id: Option<i64>,
    reason: Option<String>,
    errcode: Option<i64>,
    attempts: i32,
    #[diesel(deserialize_as = DbTimeOpt)]
    next_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
    revision: i64,
    active: bool,
}

fn tenant_row(t: &CampaignTenant, active: bool) -> Result<TenantRow> {
    Ok(TenantRow {
        campaign_id: t.campaign_id,
        tenant_id: t.tenant_id,
        authorizer_appid: t.authorizer_appid.clone(),
        wave: t.wave.map(|w| to_i32(w, "wave")).transpose()?,
        status: t.status.as_str().to_owned(),
        upload_task_id: t.upload_task_id,
        audit_task_id: t.audit_task_id,
        release_task_id: t.release_task_id,
        reason: t.reason.clone(),
        errcode: t.errcode,
        attempts: to_i32(t.attempts, "attempts")?,
        next_at: t.next_at.map(to_db),
        updated_at: to_db(t.updated_at),
        revision: t.revision,
        active,
    })
}

fn tenant_from_row(r: TenantRow) -> Result<CampaignTenant> {
    Ok(CampaignTenant {
        campaign_id: r.campaign_id,
        tenant_id: r.tenant_id,
        authorizer_appid: r.authorizer_appid,
        wave: r.wave.map(|w| to_u32(w, "wave")).transpose()?,
        status: parse_enum(&r.status, CampaignTenantStatus::parse, "campaign tenant status")?,
        upload_task_id: r.upload_task_id,
        audit_task_id: r.audit_task_id,
        release_task_id: r.release_task_id,
        reason: r.reason,
        errcode: r.errcode,
        attempts: to_u32(r.attempts, "attempts")?,
        next_at: r.next_at.map(from_db),
        updated_at: from_db(r.updated_at),
        revision: r.revision,
    })
}

/// What a write of a tenant's progress changes: everything but its keys and `active` (which
/// follows the campaign).
#[derive(AsChangeset)]
#[diesel(table_name = mp_campaign_tenants, treat_none_as_null = true)]
struct TenantChanges {
    authorizer_appid: Option<String>,
    wave: Option<i32>,
    status: String,
    upload_task_id: Option<i64>,
    audit_task_id: Option<i64>,
    release_task_id: Option<i64>,
    reason: Option<String>,
    errcode: Option<i64>,
    attempts: i32,
    next_at: Option<NaiveDateTime>,
    updated_at: NaiveDateTime,
    revision: i64,
}

impl TenantChanges {
    fn new(r: TenantRow, revision: i64) -> Self {
        TenantChanges {
            authorizer_appid: r.authorizer_appid,
            wave: r.wave,
            status: r.status,
            upload_task_id: r.upload_task_id,
            audit_task_id: r.audit_task_id,
            release_task_id: r.release_task_id,
            reason: r.reason,
            errcode: r.errcode,
            attempts: r.attempts,
            next_at: r.next_at,
            updated_at: r.updated_at,
            revision,
        }
    }
}

fn tenants_filtered(
    scope: Party,
    campaign_id: Id,
    q: &CampaignTenantQuery,
) -> Result<mp_campaign_tenants::BoxedQuery<'static, MultiBackend>> {
    let mut query =
        mp_campaign_tenants::table.filter(mp_campaign_tenants::campaign_id.eq(campaign_id)).filter(in_scope(scope)).into_boxed();
    if let Some(s) = q.status {
        query = query.filter(mp_campaign_tenants::status.eq(s.as_str()));
    }
    if let Some(w) = q.wave {
        query = query.filter(mp_campaign_tenants::wave.eq(to_i32(w, "wave")?));
    }
    Ok(query)
}

/// The statuses a retry starts again (those `CampaignTenantStatus::is_retryable` names), as
/// stored.
fn retryable() -> Vec<&'static str> {
    use CampaignTenantStatus::*;
    [PreflightFailed, Rejected, Failed].into_iter().filter(|s| s.is_retryable()).map(|s| s.as_str()).collect()
}

/// A condition on a campaign's tenants, boxed so that "every one" and "these" are one type.
type TenantCondition = Box<dyn BoxableExpression<mp_campaign_tenants::table, MultiBackend, SqlType = Bool>>;

/// The campaign tenants that are in `scope` now: every one for the platform, a partner's own
/// tenants (by the tenants' `partner_id` today), a tenant itself.
fn in_scope(scope: Party) -> TenantCondition {
    match scope {
        Party::Platform => Box::new(mp_campaign_tenants::tenant_id.is_not_null()),
        Party::Partner { partner_id } => Box::new(mp_campaign_tenants::tenant_id.eq_any(ids_of_partner(partner_id))),
        Party::Tenant { tenant_id, .. } => Box::new(mp_campaign_tenants::tenant_id.eq(tenant_id)),
    }
}

#[async_trait]
impl CampaignRepo for CampaignStore {
    async fn insert_campaign(&self, campaign: Campaign, tenants: Vec<CampaignTenant>, effects: Effects) -> Result<Campaign> {
        let row = campaign_row(&campaign)?;
        let active = campaign.status.is_active();
        let mut rows = tenants.iter().map(|t| tenant_row(t, active)).collect::<Result<Vec<_>>>()?;
        let tenant_ids: Vec<Id> = tenants.iter().map(|t| t.tenant_id).collect();
        self.db
            .write(move |conn| {
                if let Some((tenant, other)) = first_active(conn, &tenant_ids)? {
                    return Err(in_campaign(tenant, other));
                }
                let id: i64 =
                    diesel::insert_into(mp_campaigns::table).values(&row).returning(mp_campaigns::id).get_result(conn).map_err(db_error)?;
                for r in rows.iter_mut() {
                    r.campaign_id = id;
                }
                for chunk in rows.chunks(INSERT_CHUNK) {
                    let inserted = on_backend!(conn, |c| diesel::insert_into(mp_campaign_tenants::table).values(chunk).execute(c));
                    inserted.map_err(|e| match e {
                        // Only a campaign stored as running or paused makes its tenants active.
                        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
                            Error::conflict(Reason::TenantInCampaign, "one of the campaign's tenants is in a running or paused campaign")
                        }
                        other => db_error(other),
                    })?;
                }
                outbox::write_created(conn, effects, id)?;
                Ok(Campaign { id, ..campaign })
            })
            .await
    }

    async fn campaign(&self, scope: Party, id: Id) -> Result<Option<Campaign>> {
        self.db
            .run(move |conn| {
                let row: Option<CampaignRow> = scoped(scope)
                    .filter(mp_campaigns::id.eq(id))
                    .select(CampaignRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(campaign_from_row).transpose()
            })
            .await
    }

    async fn list_campaigns(&self, scope: Party, q: CampaignQuery) -> Result<Page<Campaign>> {
        self.db
            .run(move |conn| {
                let mut query = campaigns_filtered(scope, &q).select(CampaignRow::as_select());
                query = match q.list.sort.unwrap_or((TaskSort::Id, SortOrder::Desc)) {
                    (TaskSort::Id, SortOrder::Asc) => query.order(mp_campaigns::id.asc()),
                    (TaskSort::Id, SortOrder::Desc) => query.order(mp_campaigns::id.desc()),
                    (TaskSort::CreatedAt, SortOrder::Asc) => query.order((mp_campaigns::created_at.asc(), mp_campaigns::id.asc())),
                    (TaskSort::CreatedAt, SortOrder::Desc) => query.order((mp_campaigns::created_at.desc(), mp_campaigns::id.desc())),
                };
                let rows: Vec<CampaignRow> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total =
                    total(q.list.page, rows.len(), |n| count_up_to(campaigns_filtered(scope, &q).select(mp_campaigns::id).limit(n), conn))?;
                let items = rows.into_iter().map(campaign_from_row).collect::<Result<Vec<_>>>()?;
                Ok(page(items, total, q.list.page))
            })
            .await
    }

    async fn update_campaign(&self, campaign: Campaign, read_revision: i64, effects: Effects) -> Result<bool> {
        let id = campaign.id;
        let active = campaign.status.is_active();
        let changes = CampaignChanges::new(campaign_row(&campaign)?, read_revision + 1);
        self.db
            .write(move |conn| {
                // The status as read: a revision is written once, so when the update below
                // finds the row still at `read_revision` this is the status it replaces.
                let read: Option<String> = mp_campaigns::table
                    .filter(mp_campaigns::id.eq(id))
                    .filter(mp_campaigns::revision.eq(read_revision))
                    .select(mp_campaigns::status)
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                let Some(read) = read else { return Ok(false) };
                let was_active = parse_enum(&read, CampaignStatus::parse, "campaign status")?.is_active();
                let n =
                    diesel::update(mp_campaigns::table.filter(mp_campaigns::id.eq(id)).filter(mp_campaigns::revision.eq(read_revision)))
                        .set(&changes)
                        .execute(conn)
                        .map_err(db_error)?;
                if n == 0 {
                    return Ok(false);
                }
                if was_active != active {
                    set_active(conn, id, active)?;
                }
                outbox::write(conn, &effects)?;
                Ok(true)
            })
            .await
    }

    async fn campaign_tenants(&self, scope: Party, campaign_id: Id, q: CampaignTenantQuery) -> Result<Page<CampaignTenant>> {
        self.db
            .run(move |conn| {
                let mut query = tenants_filtered(scope, campaign_id, &q)?.select(TenantRow::as_select());
                query = match q.list.sort.unwrap_or((CampaignTenantSort::TenantId, SortOrder::Asc)) {
                    (CampaignTenantSort::TenantId, SortOrder::Asc) => query.order(mp_campaign_tenants::tenant_id.asc()),
                    (CampaignTenantSort::TenantId, SortOrder::Desc) => query.order(mp_campaign_tenants::tenant_id.desc()),
                    (CampaignTenantSort::UpdatedAt, SortOrder::Asc) => {
                        query.order((mp_campaign_tenants::updated_at.asc(), mp_campaign_tenants::tenant_id.asc()))
                    }
                    (CampaignTenantSort::UpdatedAt, SortOrder::Desc) => {
                        query.order((mp_campaign_tenants::updated_at.desc(), mp_campaign_tenants::tenant_id.desc()))
                    }
                };
                let rows: Vec<TenantRow> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), |n| {
                    count_up_to(tenants_filtered(scope, campaign_id, &q)?.select(mp_campaign_tenants::tenant_id).limit(n), conn)
                })?;
                let items = rows.into_iter().map(tenant_from_row).collect::<Result<Vec<_>>>()?;
                Ok(page(items, total, q.list.page))
            })
            .await
    }

    async fn tenants_outside(&self, scope: Party, campaign_id: Id, wave: Option<u32>, limit: u32) -> Result<Vec<Id>> {
        if scope == Party::Platform {
            return Ok(Vec::new());
        }
        let wave = wave.map(|w| to_i32(w, "wave")).transpose()?;
        self.db
            .run(move |conn| {
                let mut q = mp_campaign_tenants::table
                    .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
                    .filter(diesel::dsl::not(in_scope(scope)))
                    .into_boxed();
                if let Some(w) = wave {
                    q = q.filter(mp_campaign_tenants::wave.eq(w));
                }
                q.order(mp_campaign_tenants::tenant_id)
                    .limit(i64::from(limit))
                    .select(mp_campaign_tenants::tenant_id)
                    .load(conn)
                    .map_err(db_error)
            })
            .await
    }

    async fn wave_tenants(&self, campaign_id: Id, wave: u32) -> Result<Vec<CampaignTenant>> {
        let wave = to_i32(wave, "wave")?;
        self.db
            .run(move |conn| {
                let rows: Vec<TenantRow> = mp_campaign_tenants::table
                    .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
                    .filter(mp_campaign_tenants::wave.eq(wave))
                    .order(mp_campaign_tenants::tenant_id)
                    .select(TenantRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                rows.into_iter().map(tenant_from_row).collect()
            })
            .await
    }

    async fn assign_wave(&self, campaign_id: Id, wave: u32, limit: u32) -> Result<u32> {
        let wave = to_i32(wave, "wave")?;
        self.db
            .write(move |conn| {
                // The first `limit` tenants in no wave, by tenant id, then each of them still in
                // no wave: of two callers at once on PostgreSQL, the second waits for the rows
                // the first took and then finds them in a wave (the condition is checked again
                // on the row it waited for), so it skips them. No tenant is taken twice.
                let first: Vec<i64> = mp_campaign_tenants::table
                    .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
                    .filter(mp_campaign_tenants::wave.is_null())
                    .order(mp_campaign_tenants::tenant_id)
                    .limit(i64::from(limit))
                    .select(mp_campaign_tenants::tenant_id)
                    .load(conn)
                    .map_err(db_error)?;
                let mut n = 0;
                for chunk in first.chunks(ID_CHUNK) {
                    n += diesel::update(
                        mp_campaign_tenants::table
                            .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
                            .filter(mp_campaign_tenants::wave.is_null())
                            .filter(mp_campaign_tenants::tenant_id.eq_any(chunk)),
                    )
                    .set((mp_campaign_tenants::wave.eq(wave), mp_campaign_tenants::revision.eq(mp_campaign_tenants::revision + 1)))
                    .execute(conn)
                    .map_err(db_error)?;
                }
                u32::try_from(n).map_err(|_| Error::internal(format!("{n} tenants assigned to one wave")))
            })
            .await
    }

    async fn update_campaign_tenant(&self, tenant: CampaignTenant, read_revision: i64) -> Result<bool> {
        let changes = TenantChanges::new(tenant_row(&tenant, false)?, read_revision + 1);
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    mp_campaign_tenants::table
                        .filter(mp_campaign_tenants::campaign_id.eq(tenant.campaign_id))
                        .filter(mp_campaign_tenants::tenant_id.eq(tenant.tenant_id))
                        .filter(mp_campaign_tenants::revision.eq(read_revision)),
                )
                .set(&changes)
                .execute(conn)
                .map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn campaign_counts(&self, scope: Party, campaign_id: Id, wave: Option<u32>) -> Result<Vec<(CampaignTenantStatus, u32)>> {
        let wave = wave.map(|w| to_i32(w, "wave")).transpose()?;
        self.db
            .run(move |conn| {
                let of_campaign =
                    mp_campaign_tenants::table.filter(mp_campaign_tenants::campaign_id.eq(campaign_id)).filter(in_scope(scope));
                let counted = (mp_campaign_tenants::status, diesel::dsl::count_star());
                let rows: Vec<(String, i64)> = match wave {
                    Some(w) => {
                        of_campaign.filter(mp_campaign_tenants::wave.eq(w)).group_by(mp_campaign_tenants::status).select(counted).load(conn)
                    }
                    None => of_campaign.group_by(mp_campaign_tenants::status).select(counted).load(conn),
                }
                .map_err(db_error)?;
                let mut counts = rows
                    .into_iter()
                    .map(|(status, n)| {
                        let status = parse_enum(&status, CampaignTenantStatus::parse, "campaign tenant status")?;
                        let n = u32::try_from(n).map_err(|_| Error::internal(format!("{n} tenants in one status")))?;
                        Ok((status, n))
                    })
                    .collect::<Result<Vec<_>>>()?;
                counts.sort_unstable();
                Ok(counts)
            })
            .await
    }

    async fn retry_tenants(&self, campaign_id: Id, up_to_wave: u32, tenant_ids: Option<Vec<Id>>, at: Timestamp) -> Result<u32> {
        let up_to_wave = to_i32(up_to_wave, "wave")?;
        self.db
            .write(move |conn| {
                let retry = |conn: &mut DbConn, ids: Option<&[Id]>| -> Result<usize> {
                    let which: TenantCondition = match ids {
                        Some(ids) => Box::new(mp_campaign_tenants::tenant_id.eq_any(ids.to_vec())),
                        None => Box::new(mp_campaign_tenants::tenant_id.is_not_null()),
                    };
                    let target = mp_campaign_tenants::table
                        .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
                        .filter(mp_campaign_tenants::status.eq_any(retryable()))
                        .filter(mp_campaign_tenants::wave.le(up_to_wave))
                        .filter(which);
                    // Its task ids stay: a retry goes on from where the tenant stopped.
                    diesel::update(target)
                        .set((
                            mp_campaign_tenants::status.eq(CampaignTenantStatus::Pending.as_str()),
                            mp_campaign_tenants::reason.eq(None::<String>),
                            mp_campaign_tenants::errcode.eq(None::<i64>),
                            mp_campaign_tenants::attempts.eq(0),
                            mp_campaign_tenants::next_at.eq(None::<NaiveDateTime>),
                            mp_campaign_tenants::updated_at.eq(to_db(at)),
                            mp_campaign_tenants::revision.eq(mp_campaign_tenants::revision + 1),
                        ))
                        .execute(conn)
                        .map_err(db_error)
                };
                let n = match &tenant_ids {
                    None => retry(conn, None)?,
                    Some(ids) => {
                        let mut n = 0;
                        for chunk in ids.chunks(ID_CHUNK) {
                            n += retry(conn, Some(chunk))?;
                        }
                        n
                    }
                };
                u32::try_from(n).map_err(|_| Error::internal(format!("{n} tenants retried")))
            })
            .await
    }

    async fn skip_pending(&self, campaign_id: Id, at: Timestamp) -> Result<u32> {
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    mp_campaign_tenants::table
                        .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
                        .filter(mp_campaign_tenants::status.eq(CampaignTenantStatus::Pending.as_str())),
                )
                .set((
                    mp_campaign_tenants::status.eq(CampaignTenantStatus::Skipped.as_str()),
                    mp_campaign_tenants::updated_at.eq(to_db(at)),
                    mp_campaign_tenants::revision.eq(mp_campaign_tenants::revision + 1),
                ))
                .execute(conn)
                .map_err(db_error)?;
                u32::try_from(n).map_err(|_| Error::internal(format!("{n} tenants skipped")))
            })
            .await
    }
}
