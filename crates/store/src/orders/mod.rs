//! Repositories of the orders domain, one file per port: today
//! [`OrderRepo`](atrium_orders::OrderRepo) (`repo`), on [`OrdersStore`]. An order's money
//! (its transactions and refunds) is the payments ledger's, in the payments store.
use crate::db::Db;

mod repo;

/// The orders repositories over the database; implements every orders port.
#[derive(Clone)]
pub struct OrdersStore {
    db: Db,
}

impl OrdersStore {
    pub fn new(db: Db) -> Self {
        OrdersStore { db }
    }
}
