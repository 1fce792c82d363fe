//! [`LoginRepo`]: accounts by login identifier, and per-identifier failure counts and locks.
use super::{IdentityStore, UserFilter, load_user};
use crate::audit_log::write_audit;
use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::login_failures;
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_identity::{LoginLookup, LoginRepo, UserCredentials};
use atrium_kernel::{AuditRecord, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;

/// The count `INSERT … RETURNING failures` gives back.
#[derive(QueryableByName)]
struct FailureCount {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    failures: i32,
}

#[async_trait]
impl LoginRepo for IdentityStore {
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
            .write(move |conn| {
                diesel::delete(login_failures::table.find(&login)).execute(conn).map_err(db_error)?;
                Ok(())
            })
            .await
    }
}
