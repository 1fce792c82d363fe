//! [`SessionRepo`]: sessions, rotating refresh tokens and the principal of a session.
use super::{IdentityStore, UserFilter, load_user};
use crate::audit_log::write_audit;
use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::{refresh_tokens, sessions};
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_identity::{NewRefreshToken, NewSession, Principal, RefreshOutcome, SessionRecord, SessionRepo};
use atrium_kernel::{AuditRecord, Party, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;

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

/// Revokes every live session of a user (password set or reset, user disabled).
pub(crate) fn revoke_user_sessions(conn: &mut DbConn, user_id: atrium_kernel::Id, reason: &str, at: Timestamp) -> Result<()> {
    diesel::update(sessions::table.filter(sessions::user_id.eq(user_id)).filter(sessions::revoked_at.is_null()))
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

#[async_trait]
impl SessionRepo for IdentityStore {
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
                let (roles, permissions) = super::users::roles_of(conn, &[session.user_id])?.remove(&session.user_id).unwrap_or_default();
                Ok(Some(Principal { session, user: creds.user, standing: creds.standing, roles, permissions }))
            })
            .await
    }
}
