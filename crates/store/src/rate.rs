//! Sliding-window event counts in `rate_events`, shared by every instance on the database.
use atrium_kernel::{Result, Timestamp};
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

/// How many events `bucket` holds since `since`, and the oldest of them.
pub(crate) fn count(conn: &mut DbConn, bucket: &str, since: Timestamp) -> Result<(i64, Option<Timestamp>)> {
    let q = rate_events::table.filter(rate_events::bucket.eq(bucket)).filter(rate_events::created_at.ge(to_db(since)));
    let n: i64 = q.count().get_result(conn).map_err(db_error)?;
    let oldest: Option<NaiveDateTime> = q.select(diesel::dsl::min(rate_events::created_at)).first(conn).map_err(db_error)?;
    Ok((n, oldest.map(from_db)))
}
