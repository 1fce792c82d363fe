//! [`AccountRepo`]: tenant self-registration, password reset and the platform-admin bootstrap.
use super::users::insert_user;
use super::{IdentityStore, clear_user_lockout};
use crate::audit_log::{audit_created, write_audit};
use crate::error::db_error;
use crate::outbox;
use crate::schema::{tenants, user_roles, users};
use crate::time::to_db;
use async_trait::async_trait;
use atrium_identity::{AccountRepo, NewRegistration, Registered, User, UserStatus};
use atrium_kernel::{AuditRecord, Effects, Id, Party, Result, Timestamp};
use diesel::prelude::*;

/// Role id of the built-in roles seeded by migration.
const PLATFORM_ADMIN_ROLE: Id = 1;
const TENANT_ADMIN_ROLE: Id = 3;

#[async_trait]
impl AccountRepo for IdentityStore {
    async fn register_tenant(&self, r: NewRegistration, effects: Effects) -> Result<Registered> {
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
                let user = User {
                    id: 0,
                    username: r.username.clone(),
                    name: r.name.clone(),
                    phone: r.phone.clone(),
                    email: r.email.clone(),
                    party: Party::Tenant { tenant_id, partner_id: None },
                    status: UserStatus::Active,
                    chat_bound: false,
                    created_at: r.at,
                    updated_at: r.at,
                };
                let user_id = insert_user(conn, &user, &r.password_hash, &[TENANT_ADMIN_ROLE])?;
                let user = User { id: user_id, ..user };
                let audit = effects.audit.map(|audit| {
                    audit
                        .acted_by(Some(user_id))
                        .owned_by(None, Some(tenant_id))
                        .with_after(serde_json::json!({"tenant_name": r.tenant_name, "username": r.username, "status": "pending"}))
                });
                outbox::write_created(conn, Effects { audit, ..effects }, tenant_id)?;
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
                let user = User {
                    id: 0,
                    username: username.clone(),
                    name,
                    phone: None,
                    email: None,
                    party: Party::Platform,
                    status: UserStatus::Active,
                    chat_bound: false,
                    created_at: at,
                    updated_at: at,
                };
                let user_id = insert_user(conn, &user, &hash, &[PLATFORM_ADMIN_ROLE])?;
                let audit = if audit.after.is_none() {
                    audit.with_after(serde_json::json!({"username": username, "role": "platform_admin"}))
                } else {
                    audit
                };
                audit_created(conn, audit, user_id)?;
                Ok(User { id: user_id, ..user })
            })
            .await
    }
}
