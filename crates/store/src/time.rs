use atrium_kernel::Timestamp;
use chrono::NaiveDateTime;

/// Timestamps are stored as UTC `TIMESTAMP` on both backends.
pub(crate) fn to_db(t: Timestamp) -> NaiveDateTime {
    t.naive_utc()
}

pub(crate) fn from_db(t: NaiveDateTime) -> Timestamp {
    t.and_utc()
}
