//! Repositories of the mini-program domain, one file per port:
//! [`PaymentRepo`](atrium_miniprogram::PaymentRepo) (`payments`), on [`MiniprogramStore`], and
//! [`ReleaseRepo`](atrium_miniprogram::ReleaseRepo) (`releases`), on [`ReleaseStore`]. The
//! merchant private key, the APIv3 key, authorizer refresh tokens and the verify ticket are
//! encrypted at rest with the store's [`FieldCipher`].
use crate::crypto::FieldCipher;
use crate::db::Db;
use std::path::PathBuf;

mod payments;
mod releases;

/// The mini-program repositories over the database; implements every mini-program port.
#[derive(Clone)]
pub struct MiniprogramStore {
    db: Db,
    cipher: FieldCipher,
}

impl MiniprogramStore {
    /// `cipher` is the one built from the master key (`FieldCipher::new`), as for the org store.
    pub fn new(db: Db, cipher: FieldCipher) -> Self {
        MiniprogramStore { db, cipher }
    }
}

/// The code-release repository: rows in the database, and code packages as files in one
/// directory, each named by its content hash.
#[derive(Clone)]
pub struct ReleaseStore {
    db: Db,
    cipher: FieldCipher,
    package_dir: PathBuf,
}

impl ReleaseStore {
    /// `cipher` is the one built from the master key, as for [`MiniprogramStore`].
    /// `package_dir` is where kept packages live (`<sha256>.zip`); it is created when the first
    /// package arrives, and the uploader must be able to read it.
    pub fn new(db: Db, cipher: FieldCipher, package_dir: PathBuf) -> Self {
        ReleaseStore { db, cipher, package_dir }
    }
}
