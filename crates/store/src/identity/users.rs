//! [`UserRepo`]: the administration's users, and the one way a user row is written
//! ([`insert_user`]), which registration and the platform-admin bootstrap use too.
use super::{IdentityStore, UserRow};
use crate::audit_log::write_audit;
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::org::{count_up_to, like_pattern, lower, nothing, page, searchable, total};
use crate::outbox;
use crate::schema::{roles, tenants, user_roles, users};
use crate::time::to_db;
use async_trait::async_trait;
use atrium_identity::{Role, RoleRef, User, UserQuery, UserRepo, UserSort, UserWithRoles, UserWrite};
use atrium_kernel::StrEnum;
use atrium_kernel::{AuditRecord, Effects, Error, Id, Page, Party, PermissionSet, Result, SortOrder};
use diesel::prelude::*;
use std::collections::HashMap;

type Scoped = diesel::dsl::IntoBoxed<'static, diesel::dsl::LeftJoin<users::table, tenants::table>, MultiBackend>;

/// Users visible to `scope`, joined with their tenant (for the tenant's partner).
fn scoped(scope: Party) -> Scoped {
    let q = users::table.left_join(tenants::table).into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(users::partner_id.eq(partner_id).or(tenants::partner_id.eq(partner_id))),
        Party::Tenant { tenant_id, .. } => q.filter(users::tenant_id.eq(tenant_id)),
    }
}

fn filtered(scope: Party, q: &UserQuery) -> Scoped {
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

pub(crate) fn parse_permissions(raw: &str) -> Result<Vec<String>> {
    serde_json::from_str(raw).map_err(|e| Error::Internal(anyhow::Error::new(e).context("role permissions are not a JSON array")))
}

/// The roles each of these users holds (ordered by role id) and their permissions' union,
/// in one query.
pub(crate) fn roles_of(conn: &mut DbConn, user_ids: &[Id]) -> Result<HashMap<Id, (Vec<RoleRef>, PermissionSet)>> {
    let rows: Vec<(i64, i64, String, String, String)> = user_roles::table
        .inner_join(roles::table)
        .filter(user_roles::user_id.eq_any(user_ids))
        .select((user_roles::user_id, roles::id, roles::code, roles::name, roles::permissions))
        .order((user_roles::user_id, roles::id))
        .load(conn)
        .map_err(db_error)?;
    let mut grouped: HashMap<Id, (Vec<RoleRef>, Vec<String>)> = HashMap::new();
    for (user_id, id, code, name, permissions) in rows {
        let entry = grouped.entry(user_id).or_default();
        entry.1.extend(parse_permissions(&permissions)?);
        entry.0.push(RoleRef { id, code, name });
    }
    Ok(grouped.into_iter().map(|(user_id, (roles, perms))| (user_id, (roles, PermissionSet::new(perms)))).collect())
}

/// Users of rows (with their tenant's partner), each with its roles.
fn with_roles(conn: &mut DbConn, rows: Vec<(UserRow, Option<Id>)>) -> Result<Vec<UserWithRoles>> {
    let ids: Vec<Id> = rows.iter().map(|(r, _)| r.id).collect();
    let mut roles = roles_of(conn, &ids)?;
    rows.into_iter()
        .map(|(row, tenant_partner)| {
            let user = row.into_user(tenant_partner)?;
            let (roles, permissions) = roles.remove(&user.id).unwrap_or_default();
            Ok(UserWithRoles { user, roles, permissions: permissions.to_vec() })
        })
        .collect()
}

fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<UserWithRoles>> {
    let row: Option<(UserRow, Option<Id>)> = scoped(scope)
        .filter(users::id.eq(id))
        .select((UserRow::as_select(), tenants::partner_id.nullable()))
        .first(conn)
        .optional()
        .map_err(db_error)?;
    Ok(with_roles(conn, row.into_iter().collect())?.pop())
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

/// Inserts a user row with its password hash and roles; returns the new id. `Conflict` for
/// a taken username, phone or e-mail. Every way a user comes to be goes through here.
pub(crate) fn insert_user(conn: &mut DbConn, u: &User, password_hash: &str, role_ids: &[Id]) -> Result<Id> {
    let (party_type, partner_id, tenant_id) = party_columns(u.party);
    let id: Id = diesel::insert_into(users::table)
        .values((
            users::username.eq(&u.username),
            users::password_hash.eq(Some(password_hash)),
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
    set_roles(conn, id, role_ids)?;
    Ok(id)
}

#[async_trait]
impl UserRepo for IdentityStore {
    async fn list_users(&self, scope: Party, q: UserQuery) -> Result<Page<UserWithRoles>> {
        self.db
            .run(move |conn| {
                let mut query = filtered(scope, &q).select((UserRow::as_select(), tenants::partner_id.nullable()));
                query = match q.list.sort.unwrap_or((UserSort::Id, SortOrder::Desc)) {
                    (UserSort::Username, SortOrder::Asc) => query.order(users::username.asc()),
                    (UserSort::Username, SortOrder::Desc) => query.order(users::username.desc()),
                    (UserSort::Name, SortOrder::Asc) => query.order((users::name.asc(), users::id.asc())),
                    (UserSort::Name, SortOrder::Desc) => query.order((users::name.desc(), users::id.desc())),
                    (UserSort::Id | UserSort::CreatedAt, SortOrder::Asc) => query.order(users::id.asc()),
                    (UserSort::Id | UserSort::CreatedAt, SortOrder::Desc) => query.order(users::id.desc()),
                };
                let rows: Vec<(UserRow, Option<Id>)> =
                    query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), |n| count_up_to(filtered(scope, &q).select(users::id).limit(n), conn))?;
                Ok(page(with_roles(conn, rows)?, total, q.list.page))
            })
            .await
    }

    async fn get_user(&self, scope: Party, id: Id) -> Result<Option<UserWithRoles>> {
        self.db.run(move |conn| get(conn, scope, id)).await
    }

    async fn roles_by_ids(&self, scope: Party, ids: Vec<Id>) -> Result<Vec<Role>> {
        self.db.run(move |conn| super::roles::by_ids(conn, scope, &ids)).await
    }

    async fn tenant_partner(&self, scope: Party, tenant_id: Id) -> Result<Option<Id>> {
        self.db.run(move |conn| crate::org::tenants::tenant_partner(conn, scope, tenant_id)).await
    }

    async fn partner_exists(&self, id: Id) -> Result<bool> {
        self.db.run(move |conn| crate::org::tenants::partner_exists(conn, id)).await
    }

    async fn insert_user(&self, u: UserWithRoles, password_hash: String, effects: Effects) -> Result<UserWithRoles> {
        self.db
            .write(move |conn| {
                let role_ids: Vec<Id> = u.roles.iter().map(|r| r.id).collect();
                let id = insert_user(conn, &u.user, &password_hash, &role_ids)?;
                outbox::write_created(conn, effects, id)?;
                Ok(UserWithRoles { user: User { id, ..u.user }, ..u })
            })
            .await
    }

    async fn update_user(&self, u: UserWithRoles, write: UserWrite, effects: Effects) -> Result<UserWithRoles> {
        self.db
            .write(move |conn| {
                let user = &u.user;
                let n = diesel::update(users::table.find(user.id))
                    .set((
                        users::name.eq(&user.name),
                        users::phone.eq(&user.phone),
                        users::email.eq(&user.email),
                        users::status.eq(user.status.as_str()),
                        users::updated_at.eq(to_db(user.updated_at)),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("user"));
                }
                if let Some(ids) = &write.role_ids {
                    set_roles(conn, user.id, ids)?;
                }
                if let Some(hash) = &write.password_hash {
                    diesel::update(users::table.find(user.id)).set(users::password_hash.eq(Some(hash))).execute(conn).map_err(db_error)?;
                    super::clear_user_lockout(conn, user.id)?;
                }
                if write.revoke_sessions {
                    let reason = effects.audit.as_ref().map_or("user.update", |a| a.action.as_str());
                    super::revoke_user_sessions(conn, user.id, reason, user.updated_at)?;
                }
                outbox::write(conn, &effects)?;
                Ok(u)
            })
            .await
    }

    async fn delete_user(&self, id: Id, effects: Effects) -> Result<()> {
        // The API tokens it issued are revoked as of the deletion.
        let at = effects.audit.as_ref().map_or_else(chrono::Utc::now, |a| a.at);
        self.db
            .write(move |conn| {
                // Sessions, refresh tokens and role grants cascade with the row; the API
                // tokens it issued are revoked.
                crate::docs::revoke_tokens_issued_by(conn, &[id], at)?;
                let n = diesel::delete(users::table.find(id)).execute(conn).map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("user"));
                }
                outbox::write(conn, &effects)
            })
            .await
    }

    async fn record_refusal(&self, audit: AuditRecord) -> Result<()> {
        self.db.write(move |conn| write_audit(conn, &audit)).await
    }
}
