//! Sliding-window event counts in `rate_events`, shared by every instance on the database.
use atrium_kernel::{Result, Timestamp};
use atrium_miniprogram::{Spent, Window};
use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::rate_events;
use crate::time::{from_db, to_db};

/// Records one event of `bucket` at `at`, pruning its events before `since`; returns how many
/// it holds since `since`, the new one included.
pub(crate) fn hit(conn: &mut DbConn, bucket: &str, at: Timestamp, since: Timestamp) -> Result<i64> {
    diesel::delete(rate_events::table.filter(rate_events::bucket.eq(bucket)).filter(rate_events::created_at.lt(to_db(since))))
        .execute(conn)
        .map_err(db_error)?;
    diesel::insert_into(rate_events::table)
        .values((rate_events::bucket.eq(bucket), rate_events::created_at.eq(to_db(at))))
        .execute(conn)
        .map_err(db_error)?;
    rate_events::table
        .filter(rate_events::bucket.eq(bucket))
        .filter(rate_events::created_at.ge(to_db(since)))
        .count()
        .get_result(conn)
        .map_err(db_error)
}

/// Locks `bucket` until the end of the write transaction: on PostgreSQL an advisory lock on
/// its name, so two spends of one bucket at once count one after the other; on SQLite the
/// `BEGIN IMMEDIATE` of every write already holds the database's one write lock.
fn lock_bucket(conn: &mut DbConn, bucket: &str) -> Result<()> {
    crate::db::advisory_xact_lock(conn, &format!("rate-bucket:{bucket}"))
}

/// Records one spend of `bucket` at `at` if, in each window, the bucket holds fewer events
/// than the window's limit since `at` minus its period (events older than the longest window
/// pruned); otherwise records nothing and names the first full window and how long until its
/// oldest event leaves it. Run inside a write transaction.
pub(crate) fn spend(conn: &mut DbConn, bucket: &str, at: Timestamp, windows: &[Window]) -> Result<Spent> {
    lock_bucket(conn, bucket)?;
    if let Some(longest) = windows.iter().map(|w| w.period).max() {
        diesel::delete(rate_events::table.filter(rate_events::bucket.eq(bucket)).filter(rate_events::created_at.lt(to_db(at - longest))))
            .execute(conn)
            .map_err(db_error)?;
    }
    for w in windows {
        let since = at - w.period;
        let (n, oldest) = count(conn, bucket, since)?;
        if n >= i64::from(w.limit) {
            // The oldest of the window's events leaves it `period` after it happened; a window
            // of limit 0 never opens, and says so in a period.
            let retry_after = oldest.map_or(w.period, |o| o + w.period - at);
            return Ok(Spent::Refused { window: *w, retry_after });
        }
    }
    diesel::insert_into(rate_events::table)
        .values((rate_events::bucket.eq(bucket), rate_events::created_at.eq(to_db(at))))
        .execute(conn)
        .map_err(db_error)?;
    Ok(Spent::Recorded)
}

/// Takes back one event of `bucket` recorded at `at`.
pub(crate) fn give_back(conn: &mut DbConn, bucket: &str, at: Timestamp) -> Result<()> {
    let one: Option<i64> = rate_events::table
        .filter(rate_events::bucket.eq(bucket))
        .filter(rate_events::created_at.eq(to_db(at)))
        .select(rate_events::id)
        .first(conn)
        .optional()
        .map_err(db_error)?;
    if let Some(id) = one {
        diesel::delete(rate_events::table.find(id)).execute(conn).map_err(db_error)?;
    }
    Ok(())
}

/// How many events `bucket` holds since `since`, and the oldest of them.
pub(crate) fn count(conn: &mut DbConn, bucket: &str, since: Timestamp) -> Result<(i64, Option<Timestamp>)> {
    let q = rate_events::table.filter(rate_events::bucket.eq(bucket)).filter(rate_events::created_at.ge(to_db(since)));
    let n: i64 = q.count().get_result(conn).map_err(db_error)?;
    let oldest: Option<NaiveDateTime> = q.select(diesel::dsl::min(rate_events::created_at)).first(conn).map_err(db_error)?;
    Ok((n, oldest.map(from_db)))
}
