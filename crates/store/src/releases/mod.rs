//! Repositories of the mini-program domain, one file per port:
//! [`AuthorizationRepo`](atrium_miniprogram::AuthorizationRepo) (`authorizations`: tenants'
//! authorisations with their refresh tokens encrypted, authorisation attempts, the verify ticket
//! encrypted, pushed events already processed) and
//! [`ReleaseTaskRepo`](atrium_miniprogram::ReleaseTaskRepo) (`tasks`: upload, audit and release
//! tasks) on [`ReleaseStore`]; and [`PackageStore`](atrium_miniprogram::PackageStore) on
//! [`PackageDir`] (`packages`), which keeps each package as a file in one directory, and on
//! [`PackageDb`] (`package_db`), which keeps its content in the database.
//!
//! The rules the ports state are kept by the database, so they hold across instances: the app
//! id is unique across tenants, a version once per tenant, and a partial unique index lets a
//! tenant have one running (`auditing` | `delayed`) audit at most. Task changes and the ticket
//! are conditional writes against the state read, so racing writers never move a record back;
//! a release and the audit it releases are recorded in one transaction.
use crate::crypto::FieldCipher;
use crate::db::Db;
use crate::error::db_error;
use atrium_kernel::Reason;
use atrium_kernel::{Error, Result};
use diesel::result::{DatabaseErrorKind, Error as DieselError};

mod authorizations;
mod campaigns;
mod package_db;
mod packages;
mod tasks;

pub use campaigns::CampaignStore;
pub use package_db::PackageDb;
pub use packages::PackageDir;

/// The code-release repositories over the database; implements `AuthorizationRepo` and
/// `ReleaseTaskRepo`.
#[derive(Clone)]
pub struct ReleaseStore {
    db: Db,
    cipher: FieldCipher,
}

impl ReleaseStore {
    /// `cipher` is the one built from the master key (`FieldCipher::new`), as for the org
    /// store.
    pub fn new(db: Db, cipher: FieldCipher) -> Self {
        ReleaseStore { db, cipher }
    }
}

/// A unique violation as `Conflict` with `message`; any other error as [`db_error`] maps it (a
/// missing tenant, a foreign key, is a `Conflict` of its own wording there).
fn unique_or(e: DieselError, message: impl FnOnce() -> String) -> Error {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => Error::Conflict(Reason::Duplicate, message()),
        other => db_error(other),
    }
}

fn json_text<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(anyhow::Error::new(e).context("cannot serialise a JSON column")))
}

fn from_json_text<T: serde::de::DeserializeOwned>(raw: &str, what: &str) -> Result<T> {
    serde_json::from_str(raw).map_err(|e| Error::Internal(anyhow::Error::new(e).context(format!("stored {what} is not valid JSON"))))
}

fn to_i64(n: u64, what: &str) -> Result<i64> {
    i64::try_from(n).map_err(|_| Error::internal(format!("{what} {n} does not fit a BIGINT")))
}

fn to_u64(n: i64, what: &str) -> Result<u64> {
    u64::try_from(n).map_err(|_| Error::internal(format!("stored {what} {n} is negative")))
}
