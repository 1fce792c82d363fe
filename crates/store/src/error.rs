//! The one place where driver errors become domain errors.
use atrium_kernel::Error;
use atrium_kernel::Reason;
use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// Maps a Diesel error: unique violations become `Conflict`, a missing row `NotFound`,
/// everything else an opaque internal error carrying the cause for the log.
pub fn db_error(e: DieselError) -> Error {
    match e {
        DieselError::NotFound => Error::NotFound("record"),
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            Error::Conflict(Reason::Duplicate, unique_message(info.message(), info.constraint_name()))
        }
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _) => {
            Error::Conflict(Reason::InUse, "the record is referenced by, or refers to, a record that does not allow this change".into())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, _) | DieselError::BrokenTransactionManager => {
            log::warn!("database connection lost");
            unavailable()
        }
        DieselError::DatabaseError(_, ref info) if cannot_serve_now(info.message()) => {
            log::warn!("the database cannot serve now: {}", info.message());
            unavailable()
        }
        other => Error::Internal(anyhow::Error::new(other).context("database error")),
    }
}

/// Whether a driver's message says the database is busy or going away rather than that the
/// statement is wrong: SQLite's file held by another process past the busy timeout, a
/// PostgreSQL server shutting down, starting up or ending the session. The same statement
/// may succeed a moment later.
pub fn cannot_serve_now(message: &str) -> bool {
    const TRANSIENT: [&str; 7] = [
        "database is locked",
        "database table is locked",
        "database schema is locked",
        "the database system is starting up",
        "the database system is shutting down",
        "terminating connection due to administrator command",
        "server closed the connection unexpectedly",
    ];
    TRANSIENT.iter().any(|t| message.contains(t))
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
    fn a_database_busy_or_going_away_is_unavailable_not_internal() {
        struct Info(&'static str);
        impl diesel::result::DatabaseErrorInformation for Info {
            fn message(&self) -> &str {
                self.0
            }
            fn details(&self) -> Option<&str> {
                None
            }
            fn hint(&self) -> Option<&str> {
                None
            }
            fn table_name(&self) -> Option<&str> {
                None
            }
            fn column_name(&self) -> Option<&str> {
                None
            }
            fn constraint_name(&self) -> Option<&str> {
                None
            }
            fn statement_position(&self) -> Option<i32> {
                None
            }
        }
        let err = |m: &'static str| db_error(DieselError::DatabaseError(DatabaseErrorKind::Unknown, Box::new(Info(m))));
        assert!(matches!(err("database is locked"), Error::Unavailable { retry_after_secs: 5, .. }));
        assert!(matches!(err("FATAL: the database system is shutting down"), Error::Unavailable { .. }));
        assert!(matches!(err("no such column: x"), Error::Internal(_)));
    }

    #[test]
    fn names_the_column_of_a_sqlite_unique_violation() {
        assert_eq!(unique_message("UNIQUE constraint failed: users.username", None), "username already exists");
    }

    #[test]
    fn names_the_column_of_a_postgres_unique_violation() {
        assert_eq!(unique_message("duplicate key value", Some("users_chat_identity_key")), "chat identity already exists");
    }
}
