//! Repositories of the mini-program domain, one file per port: today
//! [`PaymentRepo`](atrium_miniprogram::PaymentRepo) (`payments`), on [`MiniprogramStore`].
//! The merchant private key and the APIv3 key are encrypted at rest with the store's
//! [`FieldCipher`].
use crate::crypto::FieldCipher;
use crate::db::Db;

mod payments;

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
