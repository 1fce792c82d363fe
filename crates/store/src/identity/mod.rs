use crate::audit_log::{audit_created, write_audit};
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::{chat_tickets, login_failures, refresh_tokens, roles, sessions, tenants, user_roles, users, verification_codes};
use crate::standing::party_standing;
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_identity::*;
use atrium_kernel::{AuditRecord, Error, Id, Party, PermissionSet, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;

/// Role id of the built-in roles seeded by migration.
const PLATFORM_ADMIN_ROLE: Id = 1;
const TENANT_ADMIN_ROLE: Id = 3;

/// [`IdentityRepo`] over the database.
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

/// The count `INSERT … RETURNING failures` gives back.
#[derive(QueryableByName)]
struct FailureCount {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    failures: i32,
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

enum UserFilter<'a> {
    Id(Id),
    Login(&'a str),
    ChatIdentity(&'a str),
}

fn parse_permissions(raw: &str) -> Result<Vec<String>> {
    serde_json::from_str(raw).map_err(|e| Error::Internal(anyhow::Error::new(e).context("role permissions are not a JSON array")))
}

fn purpose_from_db(s: &str) -> Result<CodePurpose> {
    match s {
        "login" => Ok(CodePurpose::Login),
        "register" => Ok(CodePurpose::Register),
        "reset_password" => Ok(CodePurpose::ResetPassword),
        other => Err(Error::internal(format!("unknown code purpose {other}"))),
    }
}

fn session_record(row: (String, i64, NaiveDateTime, NaiveDateTime, Option<NaiveDateTime>)) -> SessionRecord {
    SessionRecord { id: row.0, user_id: row.1, created_at: from_db(row.2), expires_at: from_db(row.3), revoked_at: row.4.map(from_db) }
}

fn session_columns() -> (sessions::id, sessions::user_id, sessions::created_at, sessions::expires_at, sessions::revoked_at) {
    (sessions::id, sessions::user_id, sessions::created_at, sessions::expires_at, sessions::revoked_at)
}

fn insert_refresh(conn: &mut DbConn, t: &NewRefreshToken, session_id: &str) -> Result<()> {
    diesel::insert_into(refresh_tokens::table)
        .values((
            refresh_tokens::token_hash.eq(&t.token_hash),
            refresh_tokens::session_id.eq(session_id),
            refresh_tokens::created_at.eq(to_db(t.created_at)),
            refresh_tokens::expires_at.eq(to_db(t.expires_at)),
        ))
        .execute(conn)
        .map_err(db_error)?;
    Ok(())
}

fn revoke(conn: &mut DbConn, session_id: &str, reason: &str, at: Timestamp) -> Result<()> {
    diesel::update(sessions::table.filter(sessions::id.eq(session_id)).filter(sessions::revoked_at.is_null()))
        .set((sessions::revoked_at.eq(Some(to_db(at))), sessions::revoke_reason.eq(Some(reason))))
        .execute(conn)
        .map_err(db_error)?;
    Ok(())
}

/// Revokes a session whose refresh token was replayed and records it against its user.
fn revoke_replayed(conn: &mut DbConn, session_id: &str, now: Timestamp, audit: AuditRecord) -> Result<()> {
    revoke(conn, session_id, "refresh token replayed", now)?;
    let user_id: i64 = sessions::table.find(session_id).select(sessions::user_id).first(conn).map_err(db_error)?;
    let party = load_user(conn, UserFilter::Id(user_id))?.map(|c| c.user.party).unwrap_or(Party::Platform);
    let mut audit = audit.acted_by(Some(user_id)).owned_by_party(party);
    audit.target_id = Some(user_id);
    write_audit(conn, &audit)
}

fn ticket_from_row(
    row: (String, String, Option<String>, Option<i64>, NaiveDateTime, NaiveDateTime, Option<NaiveDateTime>),
) -> Result<ChatTicket> {
    Ok(ChatTicket {
        ticket: row.0,
        status: TicketStatus::parse(&row.1).ok_or_else(|| Error::internal("unknown ticket status"))?,
        chat_identity: row.2,
        user_id: row.3,
        created_at: from_db(row.4),
        expires_at: from_db(row.5),
        consumed_at: row.6.map(from_db),
    })
}

#[async_trait]
impl IdentityRepo for IdentityStore {
    async fn find_credentials(&self, login: &str) -> Result<Option<UserCredentials>> {
        let login = login.to_owned();
        self.db.run(move |conn| load_user(conn, UserFilter::Login(&login))).await
    }

    async fn find_login(&self, login: &str) -> Result<LoginLookup> {
        let login = login.to_owned();
        self.db
            .run(move |conn| {
                let failures: Option<(i32, Option<NaiveDateTime>)> = login_failures::table
                    .find(&login)
                    .select((login_failures::failures, login_failures::locked_until))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                let (failures, locked_until) = failures.unwrap_or((0, None));
                let credentials = load_user(conn, UserFilter::Login(&login))?;
                Ok(LoginLookup { credentials, failures, locked_until: locked_until.map(from_db) })
            })
            .await
    }

    async fn record_login_failure(
        &self,
        login: &str,
        at: Timestamp,
        threshold: i32,
        lock_until: Timestamp,
        lock_audit: Option<AuditRecord>,
    ) -> Result<Option<Timestamp>> {
        let login = login.to_owned();
        self.db
            .write(move |conn| {
                // Counts of identifiers nobody has tried for a day are dropped as we go, so
                // made-up names cannot grow the table without bound.
                let stale = to_db(at - chrono::Duration::days(1));
                diesel::delete(
                    login_failures::table
                        .filter(login_failures::updated_at.lt(stale))
                        .filter(login_failures::locked_until.is_null().or(login_failures::locked_until.lt(stale))),
                )
                .execute(conn)
                .map_err(db_error)?;
                // One statement, so concurrent failures on a new identifier all count.
                let sql = match conn {
                    DbConn::Pg(_) => {
                        "INSERT INTO login_failures (login_key, failures, locked_until, updated_at) VALUES ($1, 1, NULL, $2) \
                         ON CONFLICT (login_key) DO UPDATE SET failures = login_failures.failures + 1, updated_at = $2 RETURNING failures"
                    }
                    DbConn::Sqlite(_) => {
                        "INSERT INTO login_failures (login_key, failures, locked_until, updated_at) VALUES (?, 1, NULL, ?) \
                         ON CONFLICT (login_key) DO UPDATE SET failures = login_failures.failures + 1, updated_at = excluded.updated_at \
                         RETURNING failures"
                    }
                };
                let count: FailureCount = diesel::sql_query(sql)
                    .into_boxed::<crate::MultiBackend>()
                    .bind::<diesel::sql_types::Text, _>(login.clone())
                    .bind::<diesel::sql_types::Timestamp, _>(to_db(at))
                    .get_result(conn)
                    .map_err(db_error)?;
                if count.failures < threshold {
                    return Ok(None);
                }
                diesel::update(login_failures::table.find(&login))
                    .set((login_failures::failures.eq(0), login_failures::locked_until.eq(Some(to_db(lock_until)))))
                    .execute(conn)
                    .map_err(db_error)?;
                if let Some(audit) = &lock_audit {
                    write_audit(conn, audit)?;
                }
                Ok(Some(lock_until))
            })
            .await
    }

    async fn clear_login_failures(&self, login: &str) -> Result<()> {
        let login = login.to_owned();
        self.db
            .run(move |conn| {
                diesel::delete(login_failures::table.find(&login)).execute(conn).map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn hit_rate_bucket(&self, bucket: &str, at: Timestamp, since: Timestamp) -> Result<i64> {
        let bucket = bucket.to_owned();
        self.db.write(move |conn| crate::rate::hit(conn, &bucket, at, since)).await
    }

    async fn rate_bucket(&self, bucket: &str, since: Timestamp) -> Result<(i64, Option<Timestamp>)> {
        let bucket = bucket.to_owned();
        self.db.run(move |conn| crate::rate::count(conn, &bucket, since)).await
    }

    async fn create_session(&self, session: NewSession, refresh: NewRefreshToken, audit: AuditRecord) -> Result<()> {
        self.db
            .write(move |conn| {
                diesel::insert_into(sessions::table)
                    .values((
                        sessions::id.eq(&session.id),
                        sessions::user_id.eq(session.user_id),
                        sessions::created_at.eq(to_db(session.created_at)),
                        sessions::expires_at.eq(to_db(session.expires_at)),
                        sessions::ip.eq(&session.ip),
                        sessions::user_agent.eq(&session.user_agent),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                insert_refresh(conn, &refresh, &session.id)?;
                write_audit(conn, &audit)
            })
            .await
    }

    async fn rotate_refresh_token(
        &self,
        presented_hash: &str,
        next: NewRefreshToken,
        now: Timestamp,
        replay_audit: AuditRecord,
    ) -> Result<RefreshOutcome> {
        let presented = presented_hash.to_owned();
        self.db
            .write(move |conn| {
                let found: Option<(String, NaiveDateTime, Option<NaiveDateTime>)> = refresh_tokens::table
                    .find(&presented)
                    .select((refresh_tokens::session_id, refresh_tokens::expires_at, refresh_tokens::used_at))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                let Some((session_id, expires_at, used_at)) = found else { return Ok(RefreshOutcome::Rejected) };
                if used_at.is_some() {
                    revoke_replayed(conn, &session_id, now, replay_audit)?;
                    return Ok(RefreshOutcome::Replayed { session_id });
                }
                let session = session_record(sessions::table.find(&session_id).select(session_columns()).first(conn).map_err(db_error)?);
                if from_db(expires_at) <= now || session.revoked_at.is_some() || session.expires_at <= now {
                    return Ok(RefreshOutcome::Rejected);
                }
                let marked = diesel::update(refresh_tokens::table.find(&presented).filter(refresh_tokens::used_at.is_null()))
                    .set(refresh_tokens::used_at.eq(Some(to_db(now))))
                    .execute(conn)
                    .map_err(db_error)?;
                if marked != 1 {
                    revoke_replayed(conn, &session_id, now, replay_audit)?;
                    return Ok(RefreshOutcome::Replayed { session_id });
                }
                let mut next = next;
                next.expires_at = next.expires_at.min(session.expires_at);
                insert_refresh(conn, &next, &session_id)?;
                Ok(RefreshOutcome::Rotated { session })
            })
            .await
    }

    async fn revoke_session(&self, session_id: &str, reason: &str, at: Timestamp, audit: AuditRecord) -> Result<()> {
        let (sid, reason) = (session_id.to_owned(), reason.to_owned());
        self.db
            .write(move |conn| {
                revoke(conn, &sid, &reason, at)?;
                write_audit(conn, &audit)
            })
            .await
    }

    async fn load_principal(&self, session_id: &str) -> Result<Option<Principal>> {
        let sid = session_id.to_owned();
        self.db
            .run(move |conn| {
                let Some(row) = sessions::table.find(&sid).select(session_columns()).first(conn).optional().map_err(db_error)? else {
                    return Ok(None);
                };
                let session = session_record(row);
                let Some(creds) = load_user(conn, UserFilter::Id(session.user_id))? else { return Ok(None) };
                let role_rows: Vec<(i64, String, String, String)> = user_roles::table
                    .inner_join(roles::table)
                    .filter(user_roles::user_id.eq(session.user_id))
                    .select((roles::id, roles::code, roles::name, roles::permissions))
                    .order(roles::id)
                    .load(conn)
                    .map_err(db_error)?;
                let mut perms = Vec::new();
                let mut role_refs = Vec::with_capacity(role_rows.len());
                for (id, code, name, permissions) in role_rows {
                    perms.extend(parse_permissions(&permissions)?);
                    role_refs.push(RoleRef { id, code, name });
                }
                Ok(Some(Principal { session, user: creds.user, roles: role_refs, permissions: PermissionSet::new(perms) }))
            })
            .await
    }

    async fn insert_code(&self, code: NewCode) -> Result<()> {
        self.db
            .write(move |conn| {
                diesel::insert_into(verification_codes::table)
                    .values((
                        verification_codes::target.eq(&code.target),
                        verification_codes::purpose.eq(code.purpose.as_str()),
                        verification_codes::code_hash.eq(&code.code_hash),
                        verification_codes::created_at.eq(to_db(code.created_at)),
                        verification_codes::expires_at.eq(to_db(code.expires_at)),
                        verification_codes::ip.eq(&code.ip),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn latest_code(&self, target: &str, purpose: CodePurpose) -> Result<Option<CodeRecord>> {
        let target = target.to_owned();
        self.db
            .run(move |conn| {
                let row: Option<(i64, String, String, String, i32, NaiveDateTime, NaiveDateTime, Option<NaiveDateTime>)> =
                    verification_codes::table
                        .filter(verification_codes::target.eq(&target))
                        .filter(verification_codes::purpose.eq(purpose.as_str()))
                        .order(verification_codes::id.desc())
                        .select((
                            verification_codes::id,
                            verification_codes::target,
                            verification_codes::purpose,
                            verification_codes::code_hash,
                            verification_codes::attempts,
                            verification_codes::created_at,
                            verification_codes::expires_at,
                            verification_codes::consumed_at,
                        ))
                        .first(conn)
                        .optional()
                        .map_err(db_error)?;
                row.map(|r| {
                    Ok(CodeRecord {
                        id: r.0,
                        target: r.1,
                        purpose: purpose_from_db(&r.2)?,
                        code_hash: r.3,
                        attempts: r.4,
                        created_at: from_db(r.5),
                        expires_at: from_db(r.6),
                        consumed_at: r.7.map(from_db),
                    })
                })
                .transpose()
            })
            .await
    }

    async fn record_code_attempt(&self, code_id: Id, max_attempts: i32, at: Timestamp) -> Result<()> {
        self.db
            .write(move |conn| {
                let attempts: i32 =
                    verification_codes::table.find(code_id).select(verification_codes::attempts).first(conn).map_err(db_error)?;
                let target = verification_codes::table.find(code_id);
                if attempts + 1 >= max_attempts {
                    diesel::update(target)
                        .set((verification_codes::attempts.eq(attempts + 1), verification_codes::consumed_at.eq(Some(to_db(at)))))
                        .execute(conn)
                        .map_err(db_error)?;
                } else {
                    diesel::update(target).set(verification_codes::attempts.eq(attempts + 1)).execute(conn).map_err(db_error)?;
                }
                Ok(())
            })
            .await
    }

    async fn consume_code(&self, code_id: Id, at: Timestamp) -> Result<bool> {
        self.db
            .write(move |conn| {
                let n = diesel::update(verification_codes::table.find(code_id).filter(verification_codes::consumed_at.is_null()))
                    .set(verification_codes::consumed_at.eq(Some(to_db(at))))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(n == 1)
            })
            .await
    }

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
                let user_id: i64 = diesel::insert_into(users::table)
                    .values((
                        users::username.eq(&r.username),
                        users::password_hash.eq(Some(&r.password_hash)),
                        users::name.eq(&r.name),
                        users::phone.eq(&r.phone),
                        users::email.eq(&r.email),
                        users::party_type.eq("tenant"),
                        users::tenant_id.eq(Some(tenant_id)),
                        users::status.eq("active"),
                        users::created_at.eq(at),
                        users::updated_at.eq(at),
                    ))
                    .returning(users::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                diesel::insert_into(user_roles::table)
                    .values((user_roles::user_id.eq(user_id), user_roles::role_id.eq(TENANT_ADMIN_ROLE)))
                    .execute(conn)
                    .map_err(db_error)?;
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
                diesel::update(sessions::table.filter(sessions::user_id.eq(user_id)).filter(sessions::revoked_at.is_null()))
                    .set((sessions::revoked_at.eq(Some(to_db(at))), sessions::revoke_reason.eq(Some("password reset"))))
                    .execute(conn)
                    .map_err(db_error)?;
                write_audit(conn, &audit)
            })
            .await
    }

    async fn create_chat_ticket(&self, t: ChatTicket) -> Result<()> {
        self.db
            .write(move |conn| {
                // Tickets are short-lived: drop those expired a day ago as new ones come.
                let horizon = to_db(t.created_at - chrono::Duration::days(1));
                diesel::delete(chat_tickets::table.filter(chat_tickets::expires_at.lt(horizon))).execute(conn).map_err(db_error)?;
                diesel::insert_into(chat_tickets::table)
                    .values((
                        chat_tickets::ticket.eq(&t.ticket),
                        chat_tickets::status.eq(t.status.as_str()),
                        chat_tickets::created_at.eq(to_db(t.created_at)),
                        chat_tickets::expires_at.eq(to_db(t.expires_at)),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn get_chat_ticket(&self, ticket: &str) -> Result<Option<ChatTicket>> {
        let ticket = ticket.to_owned();
        self.db
            .run(move |conn| {
                let row = chat_tickets::table
                    .find(&ticket)
                    .select((
                        chat_tickets::ticket,
                        chat_tickets::status,
                        chat_tickets::chat_identity,
                        chat_tickets::user_id,
                        chat_tickets::created_at,
                        chat_tickets::expires_at,
                        chat_tickets::consumed_at,
                    ))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(ticket_from_row).transpose()
            })
            .await
    }

    async fn scan_chat_ticket(&self, ticket: &str, status: TicketStatus, chat_identity: &str, user_id: Option<Id>) -> Result<bool> {
        let (ticket, identity) = (ticket.to_owned(), chat_identity.to_owned());
        self.db
            .write(move |conn| {
                let n = diesel::update(chat_tickets::table.find(&ticket).filter(chat_tickets::status.eq(TicketStatus::Pending.as_str())))
                    .set((
                        chat_tickets::status.eq(status.as_str()),
                        chat_tickets::chat_identity.eq(Some(identity)),
                        chat_tickets::user_id.eq(user_id),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(n == 1)
            })
            .await
    }

    async fn consume_chat_ticket(&self, ticket: &str, status: TicketStatus, at: Timestamp) -> Result<bool> {
        let ticket = ticket.to_owned();
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    chat_tickets::table
                        .find(&ticket)
                        .filter(chat_tickets::status.eq(status.as_str()))
                        .filter(chat_tickets::consumed_at.is_null()),
                )
                .set(chat_tickets::consumed_at.eq(Some(to_db(at))))
                .execute(conn)
                .map_err(db_error)?;
                Ok(n == 1)
            })
            .await
    }

    async fn find_user_by_chat_identity(&self, key: &str) -> Result<Option<User>> {
        let key = key.to_owned();
        self.db.run(move |conn| Ok(load_user(conn, UserFilter::ChatIdentity(&key))?.map(|c| c.user))).await
    }

    async fn bind_chat_identity(&self, user_id: Id, key: &str, at: Timestamp, audit: AuditRecord) -> Result<()> {
        let key = key.to_owned();
        self.db
            .write(move |conn| {
                diesel::update(users::table.find(user_id))
                    .set((users::chat_identity.eq(Some(key)), users::updated_at.eq(to_db(at))))
                    .execute(conn)
                    .map_err(|e| match db_error(e) {
                        Error::Conflict(_) => Error::conflict("this messaging-platform account is bound to another user"),
                        other => other,
                    })?;
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
                let user_id: i64 = diesel::insert_into(users::table)
                    .values((
                        users::username.eq(&username),
                        users::password_hash.eq(Some(&hash)),
                        users::name.eq(&name),
                        users::party_type.eq("platform"),
                        users::status.eq("active"),
                        users::created_at.eq(at),
                        users::updated_at.eq(at),
                    ))
                    .returning(users::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                diesel::insert_into(user_roles::table)
                    .values((user_roles::user_id.eq(user_id), user_roles::role_id.eq(PLATFORM_ADMIN_ROLE)))
                    .execute(conn)
                    .map_err(db_error)?;
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
