//! Repositories of the identity domain, one file per port: [`LoginRepo`](atrium_identity::LoginRepo)
//! (`logins`), [`RateBucketRepo`](atrium_identity::RateBucketRepo) (`rate_buckets`),
//! [`SessionRepo`](atrium_identity::SessionRepo) (`sessions`), [`CodeRepo`](atrium_identity::CodeRepo)
//! (`codes`), [`AccountRepo`](atrium_identity::AccountRepo) (`accounts`) and
//! [`ChatTicketRepo`](atrium_identity::ChatTicketRepo) (`tickets`), all on [`IdentityStore`].
//! Each write stores its audit record in the same transaction.
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::{login_failures, tenants, users};
use crate::standing::party_standing;
use crate::time::from_db;
use atrium_identity::{User, UserCredentials, UserStatus};
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id, Party, Result};
use chrono::NaiveDateTime;
use diesel::prelude::*;

mod accounts;
mod codes;
mod logins;
mod rate_buckets;
mod sessions;
mod tickets;

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

#[derive(Queryable, Selectable)]
#[diesel(table_name = users)]
struct UserRow {
    id: i64,
    username: String,
    password_hash: Option<String>,
    name: String,
    phone: Option<String>,
    email: Option<String>,
    party_type: String,
    partner_id: Option<i64>,
    tenant_id: Option<i64>,
    status: String,
    chat_identity: Option<String>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

impl UserRow {
    /// `tenant_partner` is the partner of the user's tenant, for tenant users.
    fn into_credentials(self, tenant_partner: Option<i64>, conn: &mut DbConn) -> Result<UserCredentials> {
        let party = match (self.party_type.as_str(), self.partner_id, self.tenant_id) {
            ("platform", _, _) => Party::Platform,
            ("partner", Some(partner_id), _) => Party::Partner { partner_id },
            ("tenant", _, Some(tenant_id)) => Party::Tenant { tenant_id, partner_id: tenant_partner },
            (other, _, _) => return Err(Error::internal(format!("user {} has an inconsistent party ({other})", self.id))),
        };
        let status = UserStatus::parse(&self.status).ok_or_else(|| Error::internal(format!("user {} has unknown status", self.id)))?;
        let standing = party_standing(conn, party)?;
        Ok(UserCredentials {
            user: User {
                id: self.id,
                username: self.username,
                name: self.name,
                phone: self.phone,
                email: self.email,
                party,
                standing,
                status,
                chat_bound: self.chat_identity.is_some(),
                created_at: from_db(self.created_at),
                updated_at: from_db(self.updated_at),
            },
            password_hash: self.password_hash,
        })
    }
}

/// How [`load_user`] finds its user.
enum UserFilter<'a> {
    Id(Id),
    Login(&'a str),
    ChatIdentity(&'a str),
}

/// A user with its password hash and the standing of its party; `None` if no user matches.
fn load_user(conn: &mut DbConn, filter: UserFilter<'_>) -> Result<Option<UserCredentials>> {
    let query = users::table.left_join(tenants::table).select((UserRow::as_select(), tenants::partner_id.nullable())).into_boxed();
    let query = match filter {
        UserFilter::Id(id) => query.filter(users::id.eq(id)),
        UserFilter::Login(login) => query.filter(users::username.eq(login).or(users::phone.eq(login)).or(users::email.eq(login))),
        UserFilter::ChatIdentity(key) => query.filter(users::chat_identity.eq(key)),
    };
    let row: Option<(UserRow, Option<i64>)> = query.first(conn).optional().map_err(db_error)?;
    row.map(|(u, tp)| u.into_credentials(tp, conn)).transpose()
}

/// Clears the failure counts and locks of every identifier of a user (after a new password).
pub(crate) fn clear_user_lockout(conn: &mut DbConn, user_id: Id) -> Result<()> {
    let ids: Option<(String, Option<String>, Option<String>)> =
        users::table.find(user_id).select((users::username, users::phone, users::email)).first(conn).optional().map_err(db_error)?;
    if let Some((username, phone, email)) = ids {
        let keys: Vec<String> = [Some(username), phone, email].into_iter().flatten().collect();
        diesel::delete(login_failures::table.filter(login_failures::login_key.eq_any(keys))).execute(conn).map_err(db_error)?;
    }
    Ok(())
}
