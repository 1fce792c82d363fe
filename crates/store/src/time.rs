use crate::db::{MultiBackend, MultiRawValue};
use atrium_kernel::Timestamp;
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::pg::Pg;
use diesel::sql_types::{Nullable, Timestamp as SqlTimestamp};
use diesel::sqlite::{Sqlite, SqliteType};

/// Timestamps are stored as UTC `TIMESTAMP` on both backends.
pub(crate) fn to_db(t: Timestamp) -> NaiveDateTime {
    t.naive_utc()
}

pub(crate) fn from_db(t: NaiveDateTime) -> Timestamp {
    t.and_utc()
}

/// A `TIMESTAMP` read the quick way. The row structs of this crate read their timestamps
/// through it, with `#[diesel(deserialize_as = DbTime)]` on a `NaiveDateTime` field, on the
/// pool's connection or a backend's own.
///
/// SQLite keeps a timestamp as text, and Diesel reads it by trying up to 18 `strftime`
/// layouts, each parsed from its format string on every value; on a page of orders that was
/// 5 % of the server's time. What this store writes (`2026-01-31 23:59:59.123456`, or without
/// the fraction) is read directly here; anything else goes to Diesel's reader as before, as
/// does every PostgreSQL value (a binary count of microseconds).
#[derive(Debug, Clone, Copy, FromSqlRow)]
pub(crate) struct DbTime(NaiveDateTime);

impl From<DbTime> for NaiveDateTime {
    fn from(t: DbTime) -> Self {
        t.0
    }
}

impl FromSql<SqlTimestamp, Sqlite> for DbTime {
    fn from_sql(mut value: <Sqlite as Backend>::RawValue<'_>) -> deserialize::Result<Self> {
        if value.value_type() == Some(SqliteType::Text)
            && let Some(t) = parse_stored(value.read_text())
        {
            return Ok(DbTime(t));
        }
        <NaiveDateTime as FromSql<SqlTimestamp, Sqlite>>::from_sql(value).map(DbTime)
    }
}

impl FromSql<SqlTimestamp, Pg> for DbTime {
    fn from_sql(value: <Pg as Backend>::RawValue<'_>) -> deserialize::Result<Self> {
        <NaiveDateTime as FromSql<SqlTimestamp, Pg>>::from_sql(value).map(DbTime)
    }
}

impl FromSql<SqlTimestamp, MultiBackend> for DbTime {
    fn from_sql(bytes: MultiRawValue<'_>) -> deserialize::Result<Self> {
        bytes.from_sql::<DbTime, SqlTimestamp>()
    }
}

/// [`DbTime`] for a nullable column: `#[diesel(deserialize_as = DbTimeOpt)]` on an
/// `Option<NaiveDateTime>` field.
#[derive(Debug, Clone, Copy, FromSqlRow)]
pub(crate) struct DbTimeOpt(Option<NaiveDateTime>);

impl From<DbTimeOpt> for Option<NaiveDateTime> {
    fn from(t: DbTimeOpt) -> Self {
        t.0
    }
}

impl<DB: Backend> FromSql<Nullable<SqlTimestamp>, DB> for DbTimeOpt
where
    DbTime: FromSql<SqlTimestamp, DB>,
{
    fn from_sql(bytes: DB::RawValue<'_>) -> deserialize::Result<Self> {
        DbTime::from_sql(bytes).map(|t| DbTimeOpt(Some(t.0)))
    }

    fn from_nullable_sql(bytes: Option<DB::RawValue<'_>>) -> deserialize::Result<Self> {
        bytes.map_or(Ok(DbTimeOpt(None)), Self::from_sql)
    }
}

/// `YYYY-MM-DD HH:MM:SS` with an optional fraction of 1 to 9 digits, the layout this store
/// writes; `None` for any other text (or an impossible date or time).
fn parse_stored(text: &str) -> Option<NaiveDateTime> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, &c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')))
    };
    let nanos = match &b[19..] {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => num(20, b.len())? * 10u32.pow(9 - digits.len() as u32),
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(num(0, 4)? as i32, num(5, 7)?, num(8, 10)?)?;
    let time = NaiveTime::from_hms_nano_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, nanos)?;
    Some(NaiveDateTime::new(date, time))
}

#[cfg(test)]
mod tests {
    use super::parse_stored;
    use chrono::NaiveDateTime;

    /// What Diesel's own reader makes of the text, for comparing.
    fn diesel_reads(text: &str) -> Option<NaiveDateTime> {
        NaiveDateTime::parse_from_str(text, "%F %T%.f").ok()
    }

    #[test]
    fn the_stored_layout_reads_as_diesel_reads_it() {
        for text in [
            "2026-01-31 23:59:59",
            "2026-01-31 23:59:59.1",
            "2026-01-31 23:59:59.123456",
            "2026-01-31 23:59:59.123456789",
            "2024-02-29 00:00:00.000001",
            "0001-01-01 00:00:00",
            "9999-12-31 23:59:59.999999",
        ] {
            assert_eq!(parse_stored(text), diesel_reads(text), "{text}");
            assert!(parse_stored(text).is_some(), "{text}");
        }
    }

    #[test]
    fn any_other_text_is_left_to_diesel() {
        for text in [
            "",
            "2026-01-31",
            "2026-01-31T23:59:59",
            "2026-01-31 23:59:59Z",
            "2026-01-31 23:59:59+08:00",
            "2026-01-31 23:59:59.",
            "2026-01-31 23:59:59.1234567890",
            "2026-01-31 23:59",
            "2026-02-30 00:00:00",
            "2026-01-31 24:00:00",
            "2026-01-31 23:60:00",
            "2026-1-31 23:59:59",
            "+026-01-31 23:59:59",
            "2026-01-31 23:59:5x",
            "2460676.5",
        ] {
            assert_eq!(parse_stored(text), None, "{text}");
        }
    }
}
