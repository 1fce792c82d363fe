//! Repositories of the orders domain, one file per port: today
//! [`OrderRepo`](atrium_orders::OrderRepo) (`repo`), on [`OrdersStore`]. A refund is reserved
//! in one write transaction holding its order's row lock, so concurrent refunds never together
//! exceed what was paid.
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
