use super::{OrgStore, audit_created, like_pattern, lower, nothing, page, parse_enum, searchable, total, write_audit};
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::schema::{roles, tenants, user_roles, users};
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::StrEnum;
use atrium_kernel::{AuditRecord, Error, Id, Page, Party, PermissionSet, Result, SortOrder};
use atrium_org::{OrgUser, Role, UserQuery, UserRepo, UserRole, UserSort, UserStatus, UserWrite};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use std::collections::HashMap;

type Row = (
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    Option<i64>,
    Option<i64>,
    String,
    Option<String>,
    NaiveDateTime,
    NaiveDateTime,
    Option<i64>,
);

type Cols = (
    users::id,
    users::username,
    users::name,
    users::phone,
    users::email,
    users::party_type,
    users::partner_id,
    users::tenant_id,
    users::status,
    users::chat_identity,
    users::created_at,
    users::updated_at,
    diesel::dsl::Nullable<tenants::partner_id>,
);

fn cols() -> Cols {
    (
        users::id,
        users::username,
        users::name,
        users::phone,
        users::email,
        users::party_type,
        users::partner_id,
        users::tenant_id,
        users::status,
        users::chat_identity,
        users::created_at,
        users::updated_at,
        tenants::partner_id.nullable(),
    )
}

/// Users visible to `scope`, joined with their tenant (for the tenant's partner).
fn scoped(scope: Party) -> diesel::dsl::IntoBoxed<'static, diesel::dsl::LeftJoin<users::table, tenants::table>, MultiBackend> {
    let q = users::table.left_join(tenants::table).into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(users::partner_id.eq(partner_id).or(tenants::partner_id.eq(partner_id))),
        Party::Tenant { tenant_id, .. } => q.filter(users::tenant_id.eq(tenant_id)),
    }
}

fn filtered(
    scope: Party,
    q: &UserQuery,
) -> diesel::dsl::IntoBoxed<'static, diesel::dsl::LeftJoin<users::table, tenants::table>, MultiBackend> {
    let mut query = scoped(scope);
    if let Some(s) = q.status {
        query = query.filter(users::status.eq(s.as_str()));
    }
    if let Some(t) = q.party_type {
        query = query.filter(users::party_type.eq(t.as_str()));
    }
    if let Some(p) = q.partner_id {
        query = query.filter(users::partner_id.eq(p).or(tenants::partner_id.eq(p)));
    }
    if let Some(t) = q.tenant_id {
        query = query.filter(users::tenant_id.eq(t));
    }
    if q.list.keyword.as_deref().is_some_and(|k| !searchable(k)) {
        query = query.filter(nothing());
    } else if let Some(k) = &q.list.keyword {
        let p = like_pattern(k);
        query = query.filter(
            users::username
                .like(p.clone())
                .escape('\\')
                .or(lower(users::name.nullable()).like(p.clone()).escape('\\'))
                .or(users::phone.like(p.clone()).escape('\\'))
                .or(users::email.like(p).escape('\\')),
        );
    }
    query
}

fn party_of(r: &Row) -> Result<Party> {
    match (r.5.as_str(), r.6, r.7) {
        ("platform", _, _) => Ok(Party::Platform),
        ("partner", Some(partner_id), _) => Ok(Party::Partner { partner_id }),
        ("tenant", _, Some(tenant_id)) => Ok(Party::Tenant { tenant_id, partner_id: r.12 }),
        _ => Err(Error::internal(format!("user {} has an inconsistent party", r.0))),
    }
}

/// Loads rows' roles in one query and builds the users.
fn assemble(conn: &mut DbConn, rows: Vec<Row>) -> Result<Vec<OrgUser>> {
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let role_rows: Vec<(i64, i64, String, String, String)> = user_roles::table
        .inner_join(roles::table)
        .filter(user_roles::user_id.eq_any(&ids))
        .select((user_roles::user_id, roles::id, roles::code, roles::name, roles::permissions))
        .order((user_roles::user_id, roles::id))
        .load(conn)
        .map_err(db_error)?;
    let mut by_user: HashMap<i64, Vec<(i64, String, String, String)>> = HashMap::new();
    for (uid, rid, code, name, perms) in role_rows {
        by_user.entry(uid).or_default().push((rid, code, name, perms));
    }
    rows.into_iter()
        .map(|r| {
            let party = party_of(&r)?;
            let mut perms = Vec::new();
            let mut roles_out = Vec::new();
            for (id, code, name, p) in by_user.remove(&r.0).unwrap_or_default() {
                perms.extend(super::roles::parse_permissions(&p)?);
                roles_out.push(UserRole { id, code, name });
            }
            Ok(OrgUser {
                id: r.0,
                username: r.1,
                name: r.2,
                phone: r.3,
                email: r.4,
                party,
                status: parse_enum(&r.8, UserStatus::parse, "user status")?,
                roles: roles_out,
                permissions: PermissionSet::new(perms).to_vec(),
                chat_bound: r.9.is_some(),
                created_at: from_db(r.10),
                updated_at: from_db(r.11),
            })
        })
        .collect()
}

fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<OrgUser>> {
    let row: Option<Row> = scoped(scope).filter(users::id.eq(id)).select(cols()).first(conn).optional().map_err(db_error)?;
    Ok(match row {
        Some(r) => assemble(conn, vec![r])?.pop(),
        None => None,
    })
}

fn set_roles(conn: &mut DbConn, user_id: Id, role_ids: &[Id]) -> Result<()> {
    diesel::delete(user_roles::table.filter(user_roles::user_id.eq(user_id))).execute(conn).map_err(db_error)?;
    for rid in role_ids {
        diesel::insert_into(user_roles::table)
            .values((user_roles::user_id.eq(user_id), user_roles::role_id.eq(rid)))
            .execute(conn)
            .map_err(db_error)?;
    }
    Ok(())
}

fn party_columns(p: Party) -> (&'static str, Option<Id>, Option<Id>) {
    match p {
        Party::Platform => ("platform", None, None),
        Party::Partner { partner_id } => ("partner", Some(partner_id), None),
        Party::Tenant { tenant_id, .. } => ("tenant", None, Some(tenant_id)),
    }
}

#[async_trait]
impl UserRepo for OrgStore {
    async fn list_users(&self, scope: Party, q: UserQuery) -> Result<Page<OrgUser>> {
        self.db
            .run(move |conn| {
                let mut query = filtered(scope, &q).select(cols());
                query = match q.list.sort.unwrap_or((UserSort::Id, SortOrder::Desc)) {
                    (UserSort::Username, SortOrder::Asc) => query.order(users::username.asc()),
                    (UserSort::Username, SortOrder::Desc) => query.order(users::username.desc()),
                    (UserSort::Name, SortOrder::Asc) => query.order((users::name.asc(), users::id.asc())),
                    (UserSort::Name, SortOrder::Desc) => query.order((users::name.desc(), users::id.desc())),
                    (UserSort::Id | UserSort::CreatedAt, SortOrder::Asc) => query.order(users::id.asc()),
                    (UserSort::Id | UserSort::CreatedAt, SortOrder::Desc) => query.order(users::id.desc()),
                };
                let rows: Vec<Row> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), || filtered(scope, &q).count().get_result(conn).map_err(db_error))?;
                Ok(page(assemble(conn, rows)?, total, q.list.page))
            })
            .await
    }

    async fn get_user(&self, scope: Party, id: Id) -> Result<Option<OrgUser>> {
        self.db.run(move |conn| get(conn, scope, id)).await
    }

    async fn roles_by_ids(&self, scope: Party, ids: Vec<Id>) -> Result<Vec<Role>> {
        self.db.run(move |conn| super::roles::by_ids(conn, scope, &ids)).await
    }

    async fn tenant_partner(&self, scope: Party, tenant_id: Id) -> Result<Option<Id>> {
        self.db.run(move |conn| super::tenants::tenant_partner(conn, scope, tenant_id)).await
    }

    async fn partner_exists(&self, id: Id) -> Result<bool> {
        self.db.run(move |conn| super::tenants::partner_exists(conn, id)).await
    }

    async fn insert_user(&self, u: OrgUser, password_hash: String, role_ids: Vec<Id>, audit: AuditRecord) -> Result<OrgUser> {
        self.db
            .write(move |conn| {
                let (party_type, partner_id, tenant_id) = party_columns(u.party);
                let id: i64 = diesel::insert_into(users::table)
                    .values((
                        users::username.eq(&u.username),
                        users::password_hash.eq(Some(&password_hash)),
                        users::name.eq(&u.name),
                        users::phone.eq(&u.phone),
                        users::email.eq(&u.email),
                        users::party_type.eq(party_type),
                        users::partner_id.eq(partner_id),
                        users::tenant_id.eq(tenant_id),
                        users::status.eq(u.status.as_str()),
                        users::created_at.eq(to_db(u.created_at)),
                        users::updated_at.eq(to_db(u.updated_at)),
                    ))
                    .returning(users::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                set_roles(conn, id, &role_ids)?;
                audit_created(conn, audit, id)?;
                Ok(OrgUser { id, ..u })
            })
            .await
    }

    async fn update_user(&self, u: OrgUser, write: UserWrite, audit: AuditRecord) -> Result<OrgUser> {
        self.db
            .write(move |conn| {
                let at = to_db(u.updated_at);
                let n = diesel::update(users::table.find(u.id))
                    .set((
                        users::name.eq(&u.name),
                        users::phone.eq(&u.phone),
                        users::email.eq(&u.email),
                        users::status.eq(u.status.as_str()),
                        users::updated_at.eq(at),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("user"));
                }
                if let Some(ids) = &write.role_ids {
                    set_roles(conn, u.id, ids)?;
                }
                if let Some(hash) = &write.password_hash {
                    diesel::update(users::table.find(u.id)).set(users::password_hash.eq(Some(hash))).execute(conn).map_err(db_error)?;
                    crate::identity::clear_user_lockout(conn, u.id)?;
                }
                if write.revoke_sessions {
                    crate::identity::revoke_user_sessions(conn, u.id, &audit.action, u.updated_at)?;
                }
                write_audit(conn, &audit)?;
                Ok(u)
            })
            .await
    }

    async fn delete_user(&self, id: Id, audit: AuditRecord) -> Result<()> {
        self.db
            .write(move |conn| {
                // Sessions, refresh tokens and role grants cascade with the row; the API
                // tokens it issued are revoked.
                crate::docs::revoke_tokens_issued_by(conn, &[id], audit.at)?;
                let n = diesel::delete(users::table.find(id)).execute(conn).map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("user"));
                }
                write_audit(conn, &audit)
            })
            .await
    }

    async fn record_refusal(&self, audit: AuditRecord) -> Result<()> {
        self.db.write(move |conn| write_audit(conn, &audit)).await
    }
}
