//! Repositories of the identity domain, one file per port: [`LoginRepo`](atrium_identity::LoginRepo)
//! (`logins`), [`RateBucketRepo`](atrium_identity::RateBucketRepo) (`rate_buckets`),
//! [`SessionRepo`](atrium_identity::SessionRepo) (`sessions`), [`CodeRepo`](atrium_identity::CodeRepo)
//! (`codes`), [`AccountRepo`](atrium_identity::AccountRepo) (`accounts`) and
//! [`ChatTicketRepo`](atrium_identity::ChatTicketRepo) (`tickets`), and the administration's
//! [`UserRepo`](atrium_identity::UserRepo) (`users`, which also holds the one way a user row is
//! written) and [`RoleRepo`](atrium_identity::RoleRepo) (`roles`), all on [`IdentityStore`].
//! Each write stores its audit record in the same transaction.
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::{self, login_failures, partners, tenants};
use crate::standing::standing_of;
use crate::time::{DbTime, from_db};
use atrium_identity::{User, UserCredentials, UserStatus};
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id, Party, Result};
use chrono::NaiveDateTime;
use diesel::prelude::*;

mod accounts;
mod codes;
mod logins;
mod rate_buckets;
mod roles;
mod sessions;
pub(crate) use sessions::revoke_user_sessions;
mod tickets;
mod users;

/// The identity repositories over the database; implements every identity port, and so
/// [`IdentityRepo`](atrium_identity::IdentityRepo).
#[derive(Clone)]
pub struct IdentityStore {
    db: Db,
}

impl IdentityStore {
    pub fn new(db: Db) -> Self {
        IdentityStore { db }
    }
}

/// A `users` row without its password hash; [`UserRow::into_user`] makes it the domain's user.
#[derive(Queryable, Selectable)]
#[diesel(table_name = schema::users)]
pub(crate) struct UserRow {
    id: i64,
    username: String,
    name: String,
    phone: Option<String>,
    email: Option<String>,
    party_type: String,
    partner_id: Option<i64>,
    tenant_id: Option<i64>,
    status: String,
    chat_identity: Option<String>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

impl UserRow {
    /// The user, given its tenant's partner (tenant users; joined from `tenants`).
    pub(crate) fn into_user(self, tenant_partner: Option<Id>) -> Result<User> {
        let party = match (self.party_type.as_str(), self.partner_id, self.tenant_id) {
            ("platform", _, _) => Party::Platform,
            ("partner", Some(partner_id), _) => Party::Partner { partner_id },
            ("tenant", _, Some(tenant_id)) => Party::Tenant { tenant_id, partner_id: tenant_partner },
            (other, _, _) => return Err(Error::internal(format!("user {} has an inconsistent party ({other})", self.id))),
        };
        let status = UserStatus::parse(&self.status).ok_or_else(|| Error::internal(format!("user {} has unknown status", self.id)))?;
        Ok(User {
            id: self.id,
            username: self.username,
            name: self.name,
            phone: self.phone,
            email: self.email,
            party,
            status,
            chat_bound: self.chat_identity.is_some(),
            created_at: from_db(self.created_at),
            updated_at: from_db(self.updated_at),
        })
    }
}

/// A tenant user's partner id and tenant status, and the status of the user's partner.
type PartyRows = (Option<i64>, Option<String>, Option<String>);

/// How [`load_user`] finds its user.
pub(crate) enum UserFilter<'a> {
    Id(Id),
    Login(&'a str),
    ChatIdentity(&'a str),
}

/// A user with its password hash and the standing of its party, in one query; `None` if no
/// user matches.
pub(crate) fn load_user(conn: &mut DbConn, filter: UserFilter<'_>) -> Result<Option<UserCredentials>> {
    // The partner is the user's own (partner users) or its tenant's (tenant users).
    let partner_of_user = partners::id
        .nullable()
        .eq(tenants::partner_id)
        .or(schema::users::party_type.eq("partner").and(partners::id.nullable().eq(schema::users::partner_id)));
    let query = schema::users::table
        .left_join(tenants::table)
        .left_join(partners::table.on(partner_of_user))
        .select((
            UserRow::as_select(),
            schema::users::password_hash,
            (tenants::partner_id.nullable(), tenants::status.nullable(), partners::status.nullable()),
        ))
        .into_boxed();
    let query = match filter {
        UserFilter::Id(id) => query.filter(schema::users::id.eq(id)),
        UserFilter::Login(login) => {
            query.filter(schema::users::username.eq(login).or(schema::users::phone.eq(login)).or(schema::users::email.eq(login)))
        }
        UserFilter::ChatIdentity(key) => query.filter(schema::users::chat_identity.eq(key)),
    };
    let row: Option<(UserRow, Option<String>, PartyRows)> = query.first(conn).optional().map_err(db_error)?;
    row.map(|(u, password_hash, (tenant_partner, tenant_status, partner_status))| {
        let user = u.into_user(tenant_partner)?;
        let standing = standing_of(user.party.party_type(), tenant_status.as_deref(), partner_status.as_deref());
        Ok(UserCredentials { user, password_hash, standing })
    })
    .transpose()
}

/// Clears the failure counts and locks of every identifier of a user (after a new password).
pub(crate) fn clear_user_lockout(conn: &mut DbConn, user_id: Id) -> Result<()> {
    let ids: Option<(String, Option<String>, Option<String>)> = schema::users::table
        .find(user_id)
        .select((schema::users::username, schema::users::phone, schema::users::email))
        .first(conn)
        .optional()
        .map_err(db_error)?;
    if let Some((username, phone, email)) = ids {
        let keys: Vec<String> = [Some(username), phone, email].into_iter().flatten().collect();
        diesel::delete(login_failures::table.filter(login_failures::login_key.eq_any(keys))).execute(conn).map_err(db_error)?;
    }
    Ok(())
}
