//! [`AccountRepo`]: tenant self-registration, password reset and the platform-admin bootstrap.
use super::{IdentityStore, UserFilter, clear_user_lockout, load_user};
use crate::audit_log::{audit_created, write_audit};
use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::{tenants, user_roles, users};
use crate::time::to_db;
use async_trait::async_trait;
use atrium_identity::{AccountRepo, NewRegistration, Registered, User};
use atrium_kernel::{AuditRecord, Error, Id, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;

/// Role id of the built-in roles seeded by migration.
const PLATFORM_ADMIN_ROLE: Id = 1;
const TENANT_ADMIN_ROLE: Id = 3;

/// A user row as the account flows create it (one built-in role each).
#[derive(Insertable)]
#[diesel(table_name = users)]
struct AccountRow<'a> {
    username: &'a str,
    password_hash: &'a str,
    name: &'a str,
    phone: Option<&'a str>,
    email: Option<&'a str>,
    party_type: &'a str,
    tenant_id: Option<Id>,
    status: &'a str,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

/// Inserts the user and grants it `role`; returns its id.
fn insert_user_with_role(conn: &mut DbConn, row: AccountRow<'_>, role: Id) -> Result<Id> {
    let user_id: Id = diesel::insert_into(users::table).values(&row).returning(users::id).get_result(conn).map_err(db_error)?;
    diesel::insert_into(user_roles::table)
        .values((user_roles::user_id.eq(user_id), user_roles::role_id.eq(role)))
        .execute(conn)
        .map_err(db_error)?;
    Ok(user_id)
}

#[async_trait]
impl AccountRepo for IdentityStore {
    async fn register_tenant(&self, r: NewRegistration, audit: AuditRecord) -> Result<Registered> {
        self.db
            .write(move |conn| {
                let at = to_db(r.at);
                let tenant_id: i64 = diesel::insert_into(tenants::table)
                    .values((
                        tenants::name.eq(&r.tenant_name),
                        tenants::status.eq("pending"),
                        tenants::phone.eq(&r.phone),
                        tenants::contact_name.eq(&r.name),
                        tenants::created_at.eq(at),
                        tenants::updated_at.eq(at),
                    ))
                    .returning(tenants::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                let user_id = insert_user_with_role(
                    conn,
                    AccountRow {
                        username: &r.username,
                        password_hash: &r.password_hash,
                        name: &r.name,
                        phone: r.phone.as_deref(),
                        email: r.email.as_deref(),
                        party_type: "tenant",
                        tenant_id: Some(tenant_id),
                        status: "active",
                        created_at: at,
                        updated_at: at,
                    },
                    TENANT_ADMIN_ROLE,
                )?;
                let user = load_user(conn, UserFilter::Id(user_id))?.ok_or_else(|| Error::internal("registered user vanished"))?.user;
                let audit = audit
                    .acted_by(Some(user_id))
                    .owned_by(None, Some(tenant_id))
                    .with_after(serde_json::json!({"tenant_name": r.tenant_name, "username": r.username, "status": "pending"}));
                audit_created(conn, audit, tenant_id)?;
                Ok(Registered { user, tenant_id, tenant_name: r.tenant_name })
            })
            .await
    }

    async fn reset_password(&self, user_id: Id, password_hash: &str, at: Timestamp, audit: AuditRecord) -> Result<()> {
        let hash = password_hash.to_owned();
        self.db
            .write(move |conn| {
                diesel::update(users::table.find(user_id))
                    .set((users::password_hash.eq(Some(hash)), users::updated_at.eq(to_db(at))))
                    .execute(conn)
                    .map_err(db_error)?;
                clear_user_lockout(conn, user_id)?;
                super::sessions::revoke_user_sessions(conn, user_id, "password reset", at)?;
                write_audit(conn, &audit)
            })
            .await
    }

    async fn platform_admin_exists(&self) -> Result<bool> {
        self.db
            .run(|conn| {
                let n: i64 = users::table
                    .inner_join(user_roles::table)
                    .filter(user_roles::role_id.eq(PLATFORM_ADMIN_ROLE))
                    .filter(users::status.eq("active"))
                    .count()
                    .get_result(conn)
                    .map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn create_platform_admin(
        &self,
        username: &str,
        name: &str,
        password_hash: &str,
        at: Timestamp,
        audit: AuditRecord,
    ) -> Result<User> {
        let (username, name, hash) = (username.trim().to_lowercase(), name.to_owned(), password_hash.to_owned());
        self.db
            .write(move |conn| {
                let at = to_db(at);
                let user_id = insert_user_with_role(
                    conn,
                    AccountRow {
                        username: &username,
                        password_hash: &hash,
                        name: &name,
                        phone: None,
                        email: None,
                        party_type: "platform",
                        tenant_id: None,
                        status: "active",
                        created_at: at,
                        updated_at: at,
                    },
                    PLATFORM_ADMIN_ROLE,
                )?;
                let audit = if audit.after.is_none() {
                    audit.with_after(serde_json::json!({"username": username, "role": "platform_admin"}))
                } else {
                    audit
                };
                audit_created(conn, audit, user_id)?;
                Ok(load_user(conn, UserFilter::Id(user_id))?.ok_or_else(|| Error::internal("created user vanished"))?.user)
            })
            .await
    }
}
