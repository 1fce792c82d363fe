//! [`RoleRepo`]: built-in and custom roles, scoped to the caller's party.
use super::IdentityStore;
use super::users::parse_permissions;
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::outbox;
use crate::schema::{roles, tenants, user_roles};
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_identity::{Role, RoleRepo};
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Effects, Error, Id, Page, PageRequest, Party, PartyType, Result};
use chrono::NaiveDateTime;
use diesel::prelude::*;

/// A `roles` row.
#[derive(Queryable, Selectable)]
#[diesel(table_name = roles)]
struct RoleRow {
    id: i64,
    code: String,
    name: String,
    party_type: String,
    owner_partner_id: Option<i64>,
    owner_tenant_id: Option<i64>,
    builtin: bool,
    permissions: String,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

fn from_row(r: RoleRow) -> Result<Role> {
    Ok(Role {
        id: r.id,
        code: r.code,
        name: r.name,
        party_type: PartyType::parse(&r.party_type).ok_or_else(|| Error::internal("stored role party type is unknown"))?,
        owner_partner_id: r.owner_partner_id,
        owner_tenant_id: r.owner_tenant_id,
        builtin: r.builtin,
        permissions: parse_permissions(&r.permissions)?,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

/// Roles a caller of `scope` can see: every role for the platform; for a partner the
/// built-in partner and tenant roles, its own and its tenants' custom roles; for a tenant
/// the built-in tenant roles, its partner's tenant roles and its own.
fn scoped(scope: Party) -> roles::BoxedQuery<'static, MultiBackend> {
    let q = roles::table.into_boxed();
    let global = roles::owner_partner_id.is_null().and(roles::owner_tenant_id.is_null());
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => {
            q.filter(global.and(roles::party_type.ne("platform")).or(roles::owner_partner_id.eq(partner_id)).or(
                roles::owner_tenant_id.eq_any(tenants::table.filter(tenants::partner_id.eq(partner_id)).select(tenants::id.nullable())),
            ))
        }
        Party::Tenant { tenant_id, partner_id } => q.filter(
            roles::party_type.eq("tenant").and(
                global
                    .or(roles::owner_tenant_id.eq(tenant_id))
                    .or(roles::owner_partner_id.eq(partner_id.unwrap_or(-1)).and(roles::owner_tenant_id.is_null())),
            ),
        ),
    }
}

pub(crate) fn by_ids(conn: &mut DbConn, scope: Party, ids: &[Id]) -> Result<Vec<Role>> {
    let rows: Vec<RoleRow> = scoped(scope).filter(roles::id.eq_any(ids)).select(RoleRow::as_select()).load(conn).map_err(db_error)?;
    rows.into_iter().map(from_row).collect()
}

fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<Role>> {
    let row: Option<RoleRow> =
        scoped(scope).filter(roles::id.eq(id)).select(RoleRow::as_select()).first(conn).optional().map_err(db_error)?;
    row.map(from_row).transpose()
}

fn perms_json(r: &Role) -> Result<String> {
    serde_json::to_string(&r.permissions).map_err(|e| Error::Internal(e.into()))
}

#[async_trait]
impl RoleRepo for IdentityStore {
    async fn list_roles(&self, scope: Party, req: PageRequest) -> Result<Page<Role>> {
        self.db
            .run(move |conn| {
                let total: i64 = scoped(scope).count().get_result(conn).map_err(db_error)?;
                let rows: Vec<RoleRow> = scoped(scope)
                    .select(RoleRow::as_select())
                    .order(roles::id.asc())
                    .offset(req.offset())
                    .limit(req.limit())
                    .load(conn)
                    .map_err(db_error)?;
                Ok(Page::new(rows.into_iter().map(from_row).collect::<Result<_>>()?, total, req))
            })
            .await
    }

    async fn get_role(&self, scope: Party, id: Id) -> Result<Option<Role>> {
        self.db.run(move |conn| get(conn, scope, id)).await
    }

    async fn insert_role(&self, r: Role, effects: Effects) -> Result<Role> {
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(roles::table)
                    .values((
                        roles::code.eq(&r.code),
                        roles::name.eq(&r.name),
                        roles::party_type.eq(r.party_type.as_str()),
                        roles::owner_partner_id.eq(r.owner_partner_id),
                        roles::owner_tenant_id.eq(r.owner_tenant_id),
                        roles::builtin.eq(false),
                        roles::permissions.eq(perms_json(&r)?),
                        roles::created_at.eq(to_db(r.created_at)),
                        roles::updated_at.eq(to_db(r.updated_at)),
                    ))
                    .returning(roles::id)
                    .get_result(conn)
                    .map_err(|e| match db_error(e) {
                        Error::Conflict(..) => Error::conflict(Reason::Duplicate, "a role with this code already exists"),
                        other => other,
                    })?;
                outbox::write_created(conn, effects, id)?;
                Ok(Role { id, builtin: false, ..r })
            })
            .await
    }

    async fn update_role(&self, r: Role, effects: Effects) -> Result<Role> {
        self.db
            .write(move |conn| {
                let n = diesel::update(roles::table.find(r.id).filter(roles::builtin.eq(false)))
                    .set((roles::name.eq(&r.name), roles::permissions.eq(perms_json(&r)?), roles::updated_at.eq(to_db(r.updated_at))))
                    .execute(conn)
                    .map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("role"));
                }
                outbox::write(conn, &effects)?;
                Ok(r)
            })
            .await
    }

    async fn delete_role(&self, id: Id, effects: Effects) -> Result<()> {
        self.db
            .write(move |conn| {
                let holders: i64 = user_roles::table.filter(user_roles::role_id.eq(id)).count().get_result(conn).map_err(db_error)?;
                if holders > 0 {
                    return Err(Error::conflict(Reason::InUse, format!("{holders} user(s) hold this role; take it from them first")));
                }
                let n = diesel::delete(roles::table.find(id).filter(roles::builtin.eq(false))).execute(conn).map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("role"));
                }
                outbox::write(conn, &effects)
            })
            .await
    }
}
