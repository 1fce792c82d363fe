use super::{OrgStore, count_up_to, like_pattern, lower, nothing, page, parse_enum, searchable, total};
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::outbox;
use crate::schema::{employees, partners, roles, tenants, users};
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::payroll::PayrollPolicy;
use atrium_kernel::{Effects, Error, Id, Page, Party, PartyType, Result, SortOrder, Timestamp};
use atrium_org::{Tenant, TenantQuery, TenantRepo, TenantSort, TenantStatus};
use chrono::NaiveDateTime;
use diesel::dsl;
use diesel::prelude::*;

#[derive(Queryable, Selectable)]
#[diesel(table_name = tenants)]
struct Row {
    id: i64,
    partner_id: Option<i64>,
    name: String,
    credit_code: Option<String>,
    contact_name: Option<String>,
    phone: Option<String>,
    email: Option<String>,
    status: String,
    payroll_policy: Option<String>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

fn from_row(r: Row) -> Result<Tenant> {
    let policy = match r.payroll_policy {
        Some(json) => serde_json::from_str(&json)
            .map_err(|e| Error::Internal(anyhow::Error::new(e).context("stored payroll policy is unreadable")))?,
        None => PayrollPolicy::default(),
    };
    Ok(Tenant {
        id: r.id,
        partner_id: r.partner_id,
        name: r.name,
        credit_code: r.credit_code,
        contact_name: r.contact_name,
        phone: r.phone,
        email: r.email,
        status: parse_enum(&r.status, TenantStatus::parse, "tenant status")?,
        payroll_policy: policy,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

/// The ids of a partner's tenants, as a subquery: how partner scope reaches tenant-owned rows.
pub(crate) fn ids_of_partner(partner_id: Id) -> dsl::Select<dsl::Filter<tenants::table, dsl::Eq<tenants::partner_id, Id>>, tenants::id> {
    tenants::table.filter(tenants::partner_id.eq(partner_id)).select(tenants::id)
}

/// Tenants visible to `scope`.
pub(crate) fn scoped(scope: Party) -> tenants::BoxedQuery<'static, MultiBackend> {
    let q = tenants::table.into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(tenants::partner_id.eq(partner_id)),
        Party::Tenant { tenant_id, .. } => q.filter(tenants::id.eq(tenant_id)),
    }
}

/// The tenant `id` with its partner, if it is in `scope`: what the payment and release
/// repositories' scope checks need.
pub(crate) fn in_scope(conn: &mut crate::db::DbConn, scope: Party, id: Id) -> Result<Option<(Id, Option<Id>)>, Error> {
    scoped(scope)
        .filter(tenants::id.eq(id))
        .select((tenants::id, tenants::partner_id))
        .first(conn)
        .optional()
        .map_err(crate::error::db_error)
}

fn filtered<'a>(scope: Party, q: &'a TenantQuery) -> tenants::BoxedQuery<'a, MultiBackend> {
    let mut query = scoped(scope);
    if let Some(s) = q.status {
        query = query.filter(tenants::status.eq(s.as_str()));
    }
    if let Some(p) = q.partner_id {
        query = query.filter(tenants::partner_id.eq(p));
    }
    if q.list.keyword.as_deref().is_some_and(|k| !searchable(k)) {
        query = query.filter(nothing());
    } else if let Some(k) = &q.list.keyword {
        let p = like_pattern(k);
        query = query.filter(
            lower(tenants::name.nullable())
                .like(p.clone())
                .escape('\\')
                .or(lower(tenants::credit_code).like(p.clone()).escape('\\'))
                .or(lower(tenants::contact_name).like(p.clone()).escape('\\'))
                .or(tenants::phone.like(p).escape('\\')),
        );
    }
    query
}

pub(crate) fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<Tenant>> {
    let row: Option<Row> = scoped(scope).filter(tenants::id.eq(id)).select(Row::as_select()).first(conn).optional().map_err(db_error)?;
    row.map(from_row).transpose()
}

/// The partner of a tenant visible to `scope`; `NotFound` otherwise.
pub(crate) fn tenant_partner(conn: &mut DbConn, scope: Party, tenant_id: Id) -> Result<Option<Id>> {
    scoped(scope)
        .filter(tenants::id.eq(tenant_id))
        .select(tenants::partner_id)
        .first(conn)
        .optional()
        .map_err(db_error)?
        .ok_or(Error::NotFound("tenant"))
}

pub(crate) fn partner_exists(conn: &mut DbConn, id: Id) -> Result<bool> {
    let n: i64 = partners::table.filter(partners::id.eq(id)).count().get_result(conn).map_err(db_error)?;
    Ok(n > 0)
}

/// Removes a tenant with its employees, users (their sessions cascade) and custom roles.
/// Returns the removed user ids. Records of later domains that refer to the tenant make the
/// delete fail with `Conflict`.
pub(crate) fn delete_cascade(conn: &mut DbConn, tenant_id: Id, at: Timestamp) -> Result<Vec<Id>> {
    let user_ids: Vec<i64> = users::table.filter(users::tenant_id.eq(tenant_id)).select(users::id).load(conn).map_err(db_error)?;
    crate::docs::revoke_tokens_issued_by(conn, &user_ids, at)?;
    crate::docs::remove_party_documents(conn, PartyType::Tenant, tenant_id)?;
    diesel::delete(users::table.filter(users::tenant_id.eq(tenant_id))).execute(conn).map_err(db_error)?;
    diesel::delete(employees::table.filter(employees::tenant_id.eq(tenant_id))).execute(conn).map_err(db_error)?;
    diesel::delete(roles::table.filter(roles::owner_tenant_id.eq(tenant_id))).execute(conn).map_err(db_error)?;
    diesel::delete(tenants::table.find(tenant_id)).execute(conn).map_err(|e| match db_error(e) {
        Error::Conflict(..) => Error::conflict(Reason::InUse, "the tenant has payroll or order records and cannot be deleted"),
        other => other,
    })?;
    Ok(user_ids)
}

fn policy_json(t: &Tenant) -> Result<String> {
    serde_json::to_string(&t.payroll_policy).map_err(|e| Error::Internal(e.into()))
}

/// The columns a write of `t` sets (all but the id and creation time).
#[allow(clippy::type_complexity)]
fn changes(
    t: &Tenant,
) -> Result<(
    diesel::dsl::Eq<tenants::partner_id, Option<i64>>,
    diesel::dsl::Eq<tenants::name, &str>,
    diesel::dsl::Eq<tenants::credit_code, Option<&str>>,
    diesel::dsl::Eq<tenants::contact_name, Option<&str>>,
    diesel::dsl::Eq<tenants::phone, Option<&str>>,
    diesel::dsl::Eq<tenants::email, Option<&str>>,
    diesel::dsl::Eq<tenants::status, &'static str>,
    diesel::dsl::Eq<tenants::payroll_policy, Option<String>>,
    diesel::dsl::Eq<tenants::updated_at, chrono::NaiveDateTime>,
)> {
    Ok((
        tenants::partner_id.eq(t.partner_id),
        tenants::name.eq(t.name.as_str()),
        tenants::credit_code.eq(t.credit_code.as_deref()),
        tenants::contact_name.eq(t.contact_name.as_deref()),
        tenants::phone.eq(t.phone.as_deref()),
        tenants::email.eq(t.email.as_deref()),
        tenants::status.eq(t.status.as_str()),
        tenants::payroll_policy.eq(Some(policy_json(t)?)),
        tenants::updated_at.eq(to_db(t.updated_at)),
    ))
}

#[async_trait]
impl TenantRepo for OrgStore {
    async fn list_tenants(&self, scope: Party, q: TenantQuery) -> Result<Page<Tenant>> {
        self.db
            .run(move |conn| {
                let mut query = filtered(scope, &q).select(Row::as_select());
                query = match q.list.sort.unwrap_or((TenantSort::Id, SortOrder::Desc)) {
                    (TenantSort::Name, SortOrder::Asc) => query.order((tenants::name.asc(), tenants::id.asc())),
                    (TenantSort::Name, SortOrder::Desc) => query.order((tenants::name.desc(), tenants::id.desc())),
                    (TenantSort::Id | TenantSort::CreatedAt, SortOrder::Asc) => query.order(tenants::id.asc()),
                    (TenantSort::Id | TenantSort::CreatedAt, SortOrder::Desc) => query.order(tenants::id.desc()),
                };
                let rows: Vec<Row> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), |n| count_up_to(filtered(scope, &q).select(tenants::id).limit(n), conn))?;
                Ok(page(rows.into_iter().map(from_row).collect::<Result<_>>()?, total, q.list.page))
            })
            .await
    }

    async fn get_tenant(&self, scope: Party, id: Id) -> Result<Option<Tenant>> {
        self.db.run(move |conn| get(conn, scope, id)).await
    }

    async fn partner_exists(&self, id: Id) -> Result<bool> {
        self.db.run(move |conn| partner_exists(conn, id)).await
    }

    async fn insert_tenant(&self, t: Tenant, effects: Effects) -> Result<Tenant> {
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(tenants::table)
                    .values((changes(&t)?, tenants::created_at.eq(to_db(t.created_at))))
                    .returning(tenants::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                outbox::write_created(conn, effects, id)?;
                Ok(Tenant { id, ..t })
            })
            .await
    }

    async fn update_tenant(&self, t: Tenant, effects: Effects) -> Result<Tenant> {
        self.write_searched(move |conn| {
            let n = diesel::update(tenants::table.find(t.id)).set(changes(&t)?).execute(conn).map_err(db_error)?;
            if n == 0 {
                return Err(Error::NotFound("tenant"));
            }
            outbox::write(conn, &effects)?;
            Ok(t)
        })
        .await
    }

    async fn delete_tenant(&self, id: Id, cascade: bool, effects: Effects) -> Result<Vec<Id>> {
        // Tokens the deletion revokes are revoked as of the deletion.
        let at = effects.audit.as_ref().map_or_else(chrono::Utc::now, |a| a.at);
        self.write_searched(move |conn| {
            let employees: i64 = employees::table.filter(employees::tenant_id.eq(id)).count().get_result(conn).map_err(db_error)?;
            let users: i64 = users::table.filter(users::tenant_id.eq(id)).count().get_result(conn).map_err(db_error)?;
            let projects = crate::docs::party_project_count(conn, PartyType::Tenant, id)?;
            if !cascade && (employees > 0 || users > 0 || projects > 0) {
                return Err(Error::conflict(
                    Reason::InUse,
                    format!(
                        "the tenant still has {employees} employee(s), {users} user(s) and {projects} document project(s); \
                         delete them first or pass cascade=true"
                    ),
                ));
            }
            if tenants::table.find(id).count().get_result::<i64>(conn).map_err(db_error)? == 0 {
                return Err(Error::NotFound("tenant"));
            }
            let removed = delete_cascade(conn, id, at)?;
            outbox::write(conn, &effects)?;
            Ok(removed)
        })
        .await
    }
}
