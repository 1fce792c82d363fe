//! [`IdempotencyStore`] over the `idempotency_keys` table: one row per (caller, route, key),
//! in progress while `status` is NULL, completed with the response to replay.
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::idempotency_keys as ik;
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::{Claim, Error, IdempotencyKey, IdempotencyStore, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;

/// The idempotency records in the database, shared by every instance on it.
#[derive(Clone)]
pub struct DbIdempotencyStore {
    db: Db,
}

impl DbIdempotencyStore {
    pub fn new(db: Db) -> Self {
        DbIdempotencyStore { db }
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = ik)]
struct Record {
    request_hash: Vec<u8>,
    status: Option<i32>,
    response_body: Option<Vec<u8>>,
    #[diesel(deserialize_as = DbTime)]
    claimed_at: NaiveDateTime,
}

/// The row of `key`, as a filter.
macro_rules! row_of {
    ($key:expr) => {
        ik::table.filter(ik::caller.eq(&$key.caller)).filter(ik::route.eq(&$key.route)).filter(ik::idem_key.eq(&$key.key))
    };
}

/// Stores `key` in progress unless a row holds it; whether this call stored it. One statement
/// decides who is first, whichever instance asks.
fn try_insert(conn: &mut DbConn, key: &IdempotencyKey, hash: &[u8], now: Timestamp) -> Result<bool> {
    let values = (
        ik::caller.eq(&key.caller),
        ik::route.eq(&key.route),
        ik::idem_key.eq(&key.key),
        ik::request_hash.eq(hash),
        ik::claimed_at.eq(to_db(now)),
        ik::created_at.eq(to_db(now)),
    );
    let inserted = match conn {
        DbConn::Pg(c) => diesel::insert_into(ik::table).values(values).on_conflict_do_nothing().execute(c),
        DbConn::Sqlite(c) => diesel::insert_into(ik::table).values(values).on_conflict_do_nothing().execute(c),
    }
    .map_err(db_error)?;
    Ok(inserted == 1)
}

fn claim(conn: &mut DbConn, key: &IdempotencyKey, hash: &[u8], now: Timestamp, stale_after_secs: i64) -> Result<Claim> {
    // A second round only after losing a race: the row went (released) between the insert and
    // the read, or another claimer took a stale row over first.
    for _ in 0..3 {
        if try_insert(conn, key, hash, now)? {
            return Ok(Claim::New);
        }
        let Some(found) = row_of!(key).select(Record::as_select()).first(conn).optional().map_err(db_error)? else {
            continue;
        };
        if found.request_hash != hash {
            return Ok(Claim::Mismatch);
        }
        if let Some(status) = found.status {
            let status = u16::try_from(status).map_err(|_| Error::internal("stored idempotent status is out of range"))?;
            return Ok(Claim::Replay { status, body: found.response_body.unwrap_or_default() });
        }
        if from_db(found.claimed_at) + chrono::Duration::seconds(stale_after_secs) > now {
            return Ok(Claim::InProgress);
        }
        // Its claimer crashed (or is far too slow): take the key over, unless another claimer
        // just did.
        let taken = diesel::update(row_of!(key).filter(ik::status.is_null()).filter(ik::claimed_at.eq(found.claimed_at)))
            .set(ik::claimed_at.eq(to_db(now)))
            .execute(conn)
            .map_err(db_error)?;
        if taken == 1 {
            return Ok(Claim::New);
        }
    }
    Ok(Claim::InProgress)
}

#[async_trait]
impl IdempotencyStore for DbIdempotencyStore {
    async fn claim(&self, key: &IdempotencyKey, request_hash: Vec<u8>, now: Timestamp, stale_after_secs: i64) -> Result<Claim> {
        let key = key.clone();
        self.db.write(move |conn| claim(conn, &key, &request_hash, now, stale_after_secs)).await
    }

    async fn complete(&self, key: &IdempotencyKey, status: u16, body: Vec<u8>, now: Timestamp) -> Result<()> {
        let key = key.clone();
        self.db
            .write(move |conn| {
                let n = diesel::update(row_of!(key).filter(ik::status.is_null()))
                    .set((ik::status.eq(Some(i32::from(status))), ik::response_body.eq(Some(body)), ik::completed_at.eq(Some(to_db(now)))))
                    .execute(conn)
                    .map_err(db_error)?;
                if n == 0 {
                    log::warn!("idempotency key of {} on {} was no longer in progress when its request completed", key.caller, key.route);
                }
                Ok(())
            })
            .await
    }

    async fn release(&self, key: &IdempotencyKey) -> Result<()> {
        let key = key.clone();
        self.db
            .write(move |conn| {
                diesel::delete(row_of!(key).filter(ik::status.is_null())).execute(conn).map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn reopen(&self, key: &IdempotencyKey) -> Result<()> {
        let key = key.clone();
        self.db
            .write(move |conn| {
                // Claimed "long ago": the next claim with the same body takes it over at once.
                let long_ago = to_db(chrono::DateTime::UNIX_EPOCH);
                diesel::update(row_of!(key).filter(ik::status.is_null()))
                    .set(ik::claimed_at.eq(long_ago))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn purge(&self, before: Timestamp) -> Result<u64> {
        self.db
            .write(move |conn| {
                let n = diesel::delete(ik::table.filter(ik::created_at.lt(to_db(before)))).execute(conn).map_err(db_error)?;
                Ok(n as u64)
            })
            .await
    }
}
