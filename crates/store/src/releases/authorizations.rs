//! [`AuthorizationRepo`]: tenants' authorisations (refresh tokens encrypted), authorisation
//! attempts, the verify ticket (encrypted) and the pushed events already processed.
use super::{ReleaseStore, from_json_text, json_text, unique_or};
use crate::audit_log::write_audit;
use crate::crypto::FieldCipher;
use crate::db::on_backend;
use crate::error::db_error;
use crate::org::parse_enum;
use crate::org::tenants::in_scope;
use crate::outbox;
use crate::schema::{mp_authorization_attempts, mp_authorizations, mp_events, mp_verify_ticket};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::StrEnum;
use atrium_kernel::{AuditRecord, Effects, Error, Id, Party, Result, Timestamp};
use atrium_miniprogram::{
    Authorization, AuthorizationAttempt, AuthorizationRepo, AuthorizationStatus, PurgedRecords, ReleaseTenant, Secret, VerifyTicket,
};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::upsert::excluded;

/// The verify ticket's one row.
const TICKET_ROW: i32 = 1;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = mp_authorizations, primary_key(tenant_id), treat_none_as_null = true)]
struct AuthorizationRow {
    tenant_id: i64,
    status: String,
    authorizer_appid: String,
    refresh_token_enc: String,
    nickname: Option<String>,
    user_name: Option<String>,
    func_info: String,
    #[diesel(deserialize_as = DbTime)]
    authorized_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    revoked_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

fn authorization_row(a: &Authorization, cipher: &FieldCipher) -> Result<AuthorizationRow> {
    if a.status == AuthorizationStatus::None {
        // `none` is the absence of a record, never a stored status.
        return Err(Error::internal("an authorisation is stored as authorized or revoked, never none"));
    }
    Ok(AuthorizationRow {
        tenant_id: a.tenant_id,
        status: a.status.as_str().to_owned(),
        authorizer_appid: a.authorizer_appid.clone(),
        refresh_token_enc: cipher.encrypt(a.refresh_token.expose())?,
        nickname: a.nickname.clone(),
        user_name: a.user_name.clone(),
        func_info: json_text(&a.func_info)?,
        authorized_at: to_db(a.authorized_at),
        revoked_at: a.revoked_at.map(to_db),
        updated_at: to_db(a.updated_at),
    })
}

fn authorization_from_row(r: AuthorizationRow, cipher: &FieldCipher) -> Result<Authorization> {
    Ok(Authorization {
        tenant_id: r.tenant_id,
        status: parse_enum(&r.status, AuthorizationStatus::parse, "authorisation status")?,
        authorizer_appid: r.authorizer_appid,
        refresh_token: Secret::new(cipher.decrypt(&r.refresh_token_enc)?),
        nickname: r.nickname,
        user_name: r.user_name,
        func_info: from_json_text(&r.func_info, "func_info")?,
        authorized_at: from_db(r.authorized_at),
        revoked_at: r.revoked_at.map(from_db),
        updated_at: from_db(r.updated_at),
    })
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_authorization_attempts)]
struct AttemptRow {
    state_hash: String,
    tenant_id: i64,
    pre_auth_code: String,
    created_by: i64,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    expires_at: NaiveDateTime,
}

fn attempt_row(a: &AuthorizationAttempt) -> AttemptRow {
    AttemptRow {
        state_hash: a.state_hash.clone(),
        tenant_id: a.tenant_id,
        pre_auth_code: a.pre_auth_code.clone(),
        created_by: a.created_by,
        created_at: to_db(a.created_at),
        expires_at: to_db(a.expires_at),
    }
}

fn attempt_from_row(r: AttemptRow) -> AuthorizationAttempt {
    AuthorizationAttempt {
        state_hash: r.state_hash,
        tenant_id: r.tenant_id,
        pre_auth_code: r.pre_auth_code,
        created_by: r.created_by,
        created_at: from_db(r.created_at),
        expires_at: from_db(r.expires_at),
    }
}

#[async_trait]
impl AuthorizationRepo for ReleaseStore {
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<ReleaseTenant>> {
        self.db.run(move |conn| Ok(in_scope(conn, scope, tenant_id)?.map(|(id, partner_id)| ReleaseTenant { id, partner_id }))).await
    }

    async fn get_authorization(&self, tenant_id: Id) -> Result<Option<Authorization>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<AuthorizationRow> = mp_authorizations::table
                    .find(tenant_id)
                    .select(AuthorizationRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(|r| authorization_from_row(r, &cipher)).transpose()
            })
            .await
    }

    async fn authorized_in_scope(
        &self,
        scope: Party,
        partner_id: Option<Id>,
        after_tenant_id: Id,
        limit: u32,
    ) -> Result<Vec<Authorization>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                use crate::schema::tenants;
                let mut q = mp_authorizations::table
                    .inner_join(tenants::table.on(tenants::id.eq(mp_authorizations::tenant_id)))
                    .filter(mp_authorizations::status.eq(AuthorizationStatus::Authorized.as_str()))
                    .filter(mp_authorizations::tenant_id.gt(after_tenant_id))
                    .into_boxed();
                match scope {
                    Party::Platform => {}
                    Party::Partner { partner_id } => q = q.filter(tenants::partner_id.eq(partner_id)),
                    Party::Tenant { tenant_id, .. } => q = q.filter(tenants::id.eq(tenant_id)),
                }
                if let Some(p) = partner_id {
                    q = q.filter(tenants::partner_id.eq(p));
                }
                let rows: Vec<AuthorizationRow> = q
                    .order(mp_authorizations::tenant_id)
                    .limit(i64::from(limit))
                    .select(AuthorizationRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                rows.into_iter().map(|r| authorization_from_row(r, &cipher)).collect()
            })
            .await
    }

    async fn authorization_by_appid(&self, authorizer_appid: String) -> Result<Option<Authorization>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<AuthorizationRow> = mp_authorizations::table
                    .filter(mp_authorizations::authorizer_appid.eq(&authorizer_appid))
                    .select(AuthorizationRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(|r| authorization_from_row(r, &cipher)).transpose()
            })
            .await
    }

    async fn save_authorization(&self, authorization: Authorization, effects: Effects) -> Result<Authorization> {
        let row = authorization_row(&authorization, &self.cipher)?;
        self.db
            .write(move |conn| {
                // The upsert's target is the tenant; a clash on the app id is another tenant's
                // row and fails the statement, and with it the transaction and its audit entry.
                on_backend!(conn, |c| diesel::insert_into(mp_authorizations::table)
                    .values(&row)
                    .on_conflict(mp_authorizations::tenant_id)
                    .do_update()
                    .set(&row)
                    .execute(c))
                .map_err(|e| unique_or(e, || format!("the mini-program {} is authorised for another tenant", row.authorizer_appid)))?;
                outbox::write(conn, &effects)?;
                Ok(authorization)
            })
            .await
    }

    async fn record_audit(&self, audit: AuditRecord) -> Result<()> {
        self.db.write(move |conn| write_audit(conn, &audit)).await
    }

    async fn insert_authorization_attempt(&self, attempt: AuthorizationAttempt) -> Result<()> {
        self.db
            .write(move |conn| {
                diesel::insert_into(mp_authorization_attempts::table)
                    .values(attempt_row(&attempt))
                    .execute(conn)
                    .map_err(|e| unique_or(e, || "this authorisation state is already in use".into()))?;
                Ok(())
            })
            .await
    }

    async fn take_authorization_attempt(&self, state_hash: String) -> Result<Option<AuthorizationAttempt>> {
        self.db
            .write(move |conn| {
                // One statement deletes and returns: of two callers with the same state, the
                // second finds the row gone (PostgreSQL re-checks it after the first commits).
                let row: Option<AttemptRow> = on_backend!(conn, |c| diesel::delete(mp_authorization_attempts::table.find(&state_hash))
                    .returning(AttemptRow::as_returning())
                    .get_result(c)
                    .optional())
                .map_err(db_error)?;
                Ok(row.map(attempt_from_row))
            })
            .await
    }

    async fn authorization_attempt_by_code(&self, pre_auth_code: String) -> Result<Option<AuthorizationAttempt>> {
        self.db
            .run(move |conn| {
                let row: Option<AttemptRow> = mp_authorization_attempts::table
                    .filter(mp_authorization_attempts::pre_auth_code.eq(&pre_auth_code))
                    .order(mp_authorization_attempts::created_at.desc())
                    .select(AttemptRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                Ok(row.map(attempt_from_row))
            })
            .await
    }

    async fn verify_ticket(&self) -> Result<Option<VerifyTicket>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<(String, NaiveDateTime)> = mp_verify_ticket::table
                    .find(TICKET_ROW)
                    .select((mp_verify_ticket::ticket_enc, mp_verify_ticket::created_at))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(|(enc, at)| Ok(VerifyTicket { ticket: Secret::new(cipher.decrypt(&enc)?), created_at: from_db(at) })).transpose()
            })
            .await
    }

    async fn save_verify_ticket(&self, ticket: VerifyTicket) -> Result<bool> {
        let enc = self.cipher.encrypt(ticket.ticket.expose())?;
        let at = to_db(ticket.created_at);
        self.db
            .write(move |conn| {
                // `filter` of an upsert is the `WHERE` of its `DO UPDATE`.
                use diesel::query_dsl::methods::FilterDsl as _;
                // Inserted, or replacing the stored ticket only when that one is older: one
                // statement, so two pushes racing cannot leave the older ticket behind.
                let n = on_backend!(conn, |c| diesel::insert_into(mp_verify_ticket::table)
                    .values((
                        mp_verify_ticket::id.eq(TICKET_ROW),
                        mp_verify_ticket::ticket_enc.eq(&enc),
                        mp_verify_ticket::created_at.eq(at),
                    ))
                    .on_conflict(mp_verify_ticket::id)
                    .do_update()
                    .set((
                        mp_verify_ticket::ticket_enc.eq(excluded(mp_verify_ticket::ticket_enc)),
                        mp_verify_ticket::created_at.eq(excluded(mp_verify_ticket::created_at)),
                    ))
                    .filter(mp_verify_ticket::created_at.lt(at))
                    .execute(c))
                .map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn event_seen(&self, event_id: String) -> Result<bool> {
        self.db
            .run(move |conn| {
                let n: i64 = mp_events::table.filter(mp_events::event_id.eq(&event_id)).count().get_result(conn).map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn record_event(&self, event_id: String, kind: String, at: Timestamp) -> Result<()> {
        self.db
            .write(move |conn| {
                let values = (mp_events::event_id.eq(&event_id), mp_events::kind.eq(&kind), mp_events::received_at.eq(to_db(at)));
                on_backend!(conn, |c| diesel::insert_into(mp_events::table)
                    .values(values)
                    .on_conflict(mp_events::event_id)
                    .do_nothing()
                    .execute(c))
                .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn purge_authorization_records(
        &self,
        attempts_expired_before: Timestamp,
        events_before: Timestamp,
        batch: u32,
    ) -> Result<PurgedRecords> {
        let (attempts_before, events_before, limit) = (to_db(attempts_expired_before), to_db(events_before), i64::from(batch));
        self.db
            .write(move |conn| {
                // Each delete takes at most `limit` rows, by primary key, found through the
                // index on the time (and the time checked again, in the delete itself); rows
                // another purge removed in between are just not counted.
                let expired: Vec<String> = mp_authorization_attempts::table
                    .filter(mp_authorization_attempts::expires_at.lt(attempts_before))
                    .select(mp_authorization_attempts::state_hash)
                    .limit(limit)
                    .load(conn)
                    .map_err(db_error)?;
                let attempts = diesel::delete(
                    mp_authorization_attempts::table
                        .filter(mp_authorization_attempts::state_hash.eq_any(&expired))
                        .filter(mp_authorization_attempts::expires_at.lt(attempts_before)),
                )
                .execute(conn)
                .map_err(db_error)?;
                let old: Vec<String> = mp_events::table
                    .filter(mp_events::received_at.lt(events_before))
                    .select(mp_events::event_id)
                    .limit(limit)
                    .load(conn)
                    .map_err(db_error)?;
                let events = diesel::delete(
                    mp_events::table.filter(mp_events::event_id.eq_any(&old)).filter(mp_events::received_at.lt(events_before)),
                )
                .execute(conn)
                .map_err(db_error)?;
                Ok(PurgedRecords { attempts: attempts as u64, events: events as u64 })
            })
            .await
    }
}
