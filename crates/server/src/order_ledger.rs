//! Where orders meet the ledger. Orders pay and refund through the kernel's
//! [`OrderLedger`](atrium_kernel::pay::OrderLedger), which the payments ledger implements
//! itself (the server hands the one service to orders); and the ledger tells orders of every
//! change of an order's money through a durable `ledger.order_changed` event written with the
//! change, which [`LedgerEvents`] runs as the orders' `sync` (reading what the ledger holds
//! now). Neither domain depends on the other, and neither calls back into a request of the
//! other's.
use async_trait::async_trait;
use atrium_kernel::{Job, JobHandler, JobOutcome, Result};
use atrium_orders::OrderService;
use atrium_payments as pay;
use std::sync::Arc;

/// The waits between tries of an event whose sync failed (the database was unavailable): soon
/// at first, an order's answer should not lag, then every half hour.
const EVENT_BACKOFF: [chrono::Duration; 5] = [
    chrono::Duration::seconds(1),
    chrono::Duration::seconds(5),
    chrono::Duration::seconds(30),
    chrono::Duration::minutes(5),
    chrono::Duration::minutes(30),
];
/// Tries before an event is kept as failed: about a day on [`EVENT_BACKOFF`].
const EVENT_ATTEMPTS: i32 = 50;

/// Runs the ledger's `ledger.order_changed` events as the orders' `sync`.
pub struct LedgerEvents {
    pub orders: Arc<OrderService>,
}

#[async_trait]
impl JobHandler for LedgerEvents {
    fn kinds(&self) -> Vec<String> {
        vec![pay::ORDER_CHANGED.into()]
    }

    async fn run(&self, job: &Job) -> JobOutcome {
        let Some(tenant_id) = job.tenant_id else {
            return JobOutcome::Failed("a ledger event without a tenant".into());
        };
        let event: pay::OrderChanged = match serde_json::from_value(job.payload.clone()) {
            Ok(e) => e,
            Err(e) => return JobOutcome::Failed(format!("unreadable ledger event: {e}")),
        };
        match self.orders.sync(tenant_id, event.order_id).await {
            Ok(_) => JobOutcome::Done,
            Err(e) => match atrium_kernel::jobs::backoff(job.attempts, &EVENT_BACKOFF, EVENT_ATTEMPTS) {
                Some(wait) => JobOutcome::Retry { at: chrono::Utc::now() + wait, reason: e.to_string() },
                None => JobOutcome::Failed(format!("given up after {} tries: {e}", job.attempts)),
            },
        }
    }
}

/// `order.expire`: closes pending and unpaid orders past their expiry (and their platform
/// orders), every `every_secs` (a minute by default), a batch at a time.
pub struct OrderExpiry {
    pub orders: Arc<OrderService>,
    pub jobs: Arc<dyn atrium_kernel::JobStore>,
    pub every_secs: i64,
}

pub const EXPIRE: &str = "order.expire";
const EXPIRE_BATCH: u32 = 200;

impl OrderExpiry {
    /// Queues the next sweep (once across instances: its time is its key).
    pub async fn schedule(&self) -> Result<()> {
        atrium_kernel::jobs::schedule_every(self.jobs.as_ref(), EXPIRE, self.every_secs, chrono::Utc::now()).await
    }
}

#[async_trait]
impl JobHandler for OrderExpiry {
    fn kinds(&self) -> Vec<String> {
        vec![EXPIRE.into()]
    }

    async fn run(&self, _job: &Job) -> JobOutcome {
        let now = chrono::Utc::now();
        loop {
            match self.orders.expire_due(now, EXPIRE_BATCH).await {
                Ok(n) if n >= EXPIRE_BATCH as usize => continue,
                Ok(_) => break,
                Err(e) => return JobOutcome::Retry { at: now + chrono::Duration::minutes(1), reason: e.to_string() },
            }
        }
        match self.schedule().await {
            Ok(()) => JobOutcome::Done,
            Err(e) => JobOutcome::Retry { at: now + chrono::Duration::minutes(1), reason: e.to_string() },
        }
    }
}
