//! The one place where driver errors become domain errors.
use atrium_kernel::Error;
use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// Maps a Diesel error: unique violations become `Conflict`, a missing row `NotFound`,
/// everything else an opaque internal error carrying the cause for the log.
pub fn db_error(e: DieselError) -> Error {
    match e {
        DieselError::NotFound => Error::NotFound("record"),
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            Error::Conflict(unique_message(info.message(), info.constraint_name()))
        }
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _) => {
            Error::Conflict("the record is referenced by, or refers to, a record that does not allow this change".into())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, _) | DieselError::BrokenTransactionManager => {
            log::warn!("database connection lost");
            unavailable()
        }
        other => Error::Internal(anyhow::Error::new(other).context("database error")),
    }
}

/// The database cannot serve now (down, restarting, or every connection busy past the
/// checkout timeout): a 503 the client may retry, not a 500.
pub fn unavailable() -> Error {
    Error::Unavailable { message: "the service is temporarily unavailable; try again shortly".into(), retry_after_secs: 5 }
}

/// "username already exists", from either backend's wording of a unique violation.
fn unique_message(message: &str, constraint: Option<&str>) -> String {
    // SQLite: "UNIQUE constraint failed: users.username"; PostgreSQL: constraint "users_username_key".
    let column = message
        .strip_prefix("UNIQUE constraint failed: ")
        .and_then(|cols| cols.split(',').next())
        .and_then(|c| c.trim().split('.').nth(1))
        .map(str::to_owned)
        .or_else(|| constraint.and_then(|c| c.strip_suffix("_key")).and_then(|c| c.split_once('_')).map(|(_, col)| col.to_owned()));
    match column {
        Some(col) => format!("{} already exists", col.replace('_', " ")),
        None => "a record with these values already exists".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_column_of_a_sqlite_unique_violation() {
        assert_eq!(unique_message("UNIQUE constraint failed: users.username", None), "username already exists");
    }

    #[test]
    fn names_the_column_of_a_postgres_unique_violation() {
        assert_eq!(unique_message("duplicate key value", Some("users_chat_identity_key")), "chat identity already exists");
    }
}
