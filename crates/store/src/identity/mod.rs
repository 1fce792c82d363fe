//! Repositories of the identity domain, one file per port: [`LoginRepo`](atrium_identity::LoginRepo)
//! (`logins`), [`RateBucketRepo`](atrium_identity::RateBucketRepo) (`rate_buckets`),
//! [`SessionRepo`](atrium_identity::SessionRepo) (`sessions`), [`CodeRepo`](atrium_identity::CodeRepo)
//! (`codes`), [`AccountRepo`](atrium_identity::AccountRepo) (`accounts`) and
//! [`ChatTicketRepo`](atrium_identity::ChatTicketRepo) (`tickets`), all on [`IdentityStore`].
//! Each write stores its audit record in the same transaction.
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::{login_failures, partners, tenants, users};
use crate::standing::standing_of;
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
pub(crate) use sessions::revoke_user_sessions;
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
    /// `party_rows` are what [`load_user`] joins: the tenant's partner id and status (tenant
    /// users) and the status of the user's partner (its own, or its tenant's).
    fn into_credentials(self, party_rows: PartyRows) -> Result<UserCredentials> {
        let (tenant_partner, tenant_status, partner_status) = party_rows;
        let party = match (self.party_type.as_str(), self.partner_id, self.tenant_id) {
            ("platform", _, _) => Party::Platform,
            ("partner", Some(partner_id), _) => Party::Partner { partner_id },
            ("tenant", _, Some(tenant_id)) => Party::Tenant { tenant_id, partner_id: tenant_partner },
            (other, _, _) => return Err(Error::internal(format!("user {} has an inconsistent party ({other})", self.id))),
        };
        let status = UserStatus::parse(&self.status).ok_or_else(|| Error::internal(format!("user {} has unknown status", self.id)))?;
        let standing = standing_of(party.party_type(), tenant_status.as_deref(), partner_status.as_deref());
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
        .or(users::party_type.eq("partner").and(partners::id.nullable().eq(users::partner_id)));
    let query = users::table
        .left_join(tenants::table)
        .left_join(partners::table.on(partner_of_user))
        .select((UserRow::as_select(), (tenants::partner_id.nullable(), tenants::status.nullable(), partners::status.nullable())))
        .into_boxed();
    let query = match filter {
        UserFilter::Id(id) => query.filter(users::id.eq(id)),
        UserFilter::Login(login) => query.filter(users::username.eq(login).or(users::phone.eq(login)).or(users::email.eq(login))),
        UserFilter::ChatIdentity(key) => query.filter(users::chat_identity.eq(key)),
    };
    let row: Option<(UserRow, PartyRows)> = query.first(conn).optional().map_err(db_error)?;
    row.map(|(u, party_rows)| u.into_credentials(party_rows)).transpose()
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
