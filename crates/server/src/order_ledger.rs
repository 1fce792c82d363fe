//! Where orders meet the ledger. Orders pay and refund through their own port,
//! [`OrderLedger`], which [`LedgerForOrders`] implements over the payments ledger; and the
//! ledger tells orders of every change of an order's money through a durable
//! `ledger.order_changed` event written with the change, which [`LedgerEvents`] runs as the
//! orders' `sync` (reading what the ledger holds now). Neither domain depends on the other,
//! and neither calls back into a request of the other's.
use async_trait::async_trait;
use atrium_kernel::{Id, Job, JobHandler, JobOutcome, PayParams, PaymentMethod, Result};
use atrium_orders::{
    Charge, LedgerPayment, OfflineCharge, OrderLedger, OrderMoney, OrderService, PaymentState, Refund as OrderRefundView, RefundCharge,
};
use atrium_payments as pay;
use std::sync::Arc;

/// [`OrderLedger`] over the payments ledger: an order's number is its `out_trade_no`.
pub struct LedgerForOrders(pub Arc<pay::PaymentService>);

/// An order's view of a ledger refund.
fn refund_view(r: pay::Refund, order_id: Id) -> OrderRefundView {
    let settled_at = match r.status {
        pay::RefundStatus::Processing => None,
        pay::RefundStatus::Succeeded => Some(r.succeeded_at.unwrap_or(r.updated_at)),
        pay::RefundStatus::Failed | pay::RefundStatus::Closed => Some(r.updated_at),
    };
    OrderRefundView {
        id: r.id,
        order_id,
        tenant_id: r.tenant_id,
        out_refund_no: r.out_refund_no,
        amount: r.amount,
        status: r.status,
        reason: r.reason,
        settled_at,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

/// Where a ledger transaction stands, in the orders' words.
fn payment_state(tx: &pay::Transaction) -> PaymentState {
    if let Some(why) = &tx.discrepancy {
        return PaymentState::Discrepancy(why.clone());
    }
    if tx.is_paid() {
        return PaymentState::Paid { transaction_id: tx.transaction_id.clone(), paid_at: tx.success_time.unwrap_or(tx.updated_at) };
    }
    if tx.trade_state.is_closed() { PaymentState::Closed } else { PaymentState::Unpaid }
}

#[async_trait]
impl OrderLedger for LedgerForOrders {
    async fn charge(&self, tenant_id: Id, c: Charge) -> Result<PayParams> {
        let charge = pay::OrderCharge {
            order_id: c.order_id,
            out_trade_no: c.out_trade_no,
            description: c.description,
            amount: c.amount,
            openid: c.openid,
            expires_at: c.expires_at,
            audit: Some(c.audit),
        };
        self.0.charge_order(tenant_id, charge).await
    }

    async fn charge_offline(&self, tenant_id: Id, c: OfflineCharge) -> Result<()> {
        let charge = pay::OfflineOrderCharge {
            order_id: c.order_id,
            order_no: c.order_no,
            description: c.description,
            amount: c.amount,
            reference: c.reference,
            recorded_by: c.recorded_by,
            audit: Some(c.audit),
        };
        self.0.charge_order_offline(tenant_id, charge).await
    }

    async fn refund(&self, tenant_id: Id, r: RefundCharge) -> Result<OrderRefundView> {
        let order_id = r.order_id;
        let refund =
            pay::OrderRefund { order_id, out_refund_no: r.out_refund_no, amount: r.amount, reason: r.reason, audit: Some(r.audit) };
        Ok(refund_view(self.0.refund_order(tenant_id, refund).await?, order_id))
    }

    async fn close(&self, tenant_id: Id, order_id: Id) -> Result<()> {
        self.0.close_order(tenant_id, order_id).await
    }

    async fn money(&self, tenant_id: Id, order_id: Id) -> Result<OrderMoney> {
        let money = self.0.order_money(tenant_id, order_id).await?;
        let payment = money.transaction.map(|tx| LedgerPayment {
            method: tx.method,
            out_trade_no: (tx.method == PaymentMethod::WechatJsapi).then(|| tx.out_trade_no.clone()),
            amount: tx.amount,
            openid: Some(tx.openid.clone()).filter(|o| !o.is_empty()),
            state: payment_state(&tx),
            reference: tx.reference.clone(),
            paid_by: tx.paid_by,
        });
        Ok(OrderMoney { payment, refunds: money.refunds.into_iter().map(|r| refund_view(r, order_id)).collect() })
    }
}

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
