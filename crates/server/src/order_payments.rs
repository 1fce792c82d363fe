//! Where orders meet payments. Orders pays through its own port, [`OrderPayments`], which
//! [`PaymentsForOrders`] implements over the mini-program payments service; and the
//! payments service tells orders of every settled payment and refund through
//! [`OrdersObserver`], whichever path settled it (a notification, a query, a job). Neither
//! domain depends on the other.
use async_trait::async_trait;
use atrium_kernel::{Error, Id, Job, JobHandler, JobOutcome, Result};
use atrium_orders::{self as orders, OrderPayments, OrderService, PaymentState, Prepay, PrepayRequest, RefundOrder, RefundState};
use atrium_payments as pay;
use std::sync::{Arc, OnceLock};

/// [`OrderPayments`] over the payments service: an order's number is its `out_trade_no`, and
/// its refunds' numbers their `out_refund_no`s.
pub struct PaymentsForOrders(pub Arc<pay::PaymentService>);

fn parsed<T>(field: &str, r: std::result::Result<T, String>) -> Result<T> {
    r.map_err(|m| Error::invalid(field, m))
}

fn payment_state(state: pay::TradeState, transaction_id: Option<String>, success_time: Option<atrium_kernel::Timestamp>) -> PaymentState {
    use pay::TradeState as T;
    match state {
        T::Success | T::Refund => match (transaction_id, success_time) {
            (Some(transaction_id), Some(paid_at)) => PaymentState::Paid { transaction_id, paid_at },
            // Paid but not yet described: ask again later.
            _ => PaymentState::Unpaid,
        },
        T::Closed | T::Revoked => PaymentState::Closed,
        T::PayError => PaymentState::Failed,
        T::NotPay | T::UserPaying => PaymentState::Unpaid,
    }
}

fn refund_state(
    status: pay::RefundStatus,
    succeeded_at: Option<atrium_kernel::Timestamp>,
    updated_at: atrium_kernel::Timestamp,
) -> RefundState {
    match status {
        pay::RefundStatus::Processing => RefundState::Processing,
        pay::RefundStatus::Succeeded => RefundState::Succeeded { at: succeeded_at.unwrap_or(updated_at) },
        pay::RefundStatus::Failed => RefundState::Failed,
        pay::RefundStatus::Closed => RefundState::Closed,
    }
}

#[async_trait]
impl OrderPayments for PaymentsForOrders {
    async fn prepay(&self, tenant_id: Id, r: PrepayRequest) -> Result<Prepay> {
        let input = pay::UnifiedOrderRequest {
            tenant_id: None,
            description: parsed("subject", pay::Description::parse(&r.description))?,
            amount: r.amount,
            openid: parsed("openid", pay::Openid::parse(&r.openid))?,
            out_trade_no: Some(parsed("order_no", pay::OutTradeNo::parse(&r.out_trade_no))?),
            attach: None,
            time_expire: Some(r.expires_at),
        };
        let view = self.0.unified_order_for(tenant_id, input).await?;
        let p = view.pay_params;
        Ok(Prepay {
            prepay_id: view.prepay_id,
            pay_params: orders::PayParams {
                app_id: p.app_id,
                time_stamp: p.time_stamp,
                nonce_str: p.nonce_str,
                package: p.package,
                sign_type: p.sign_type,
                pay_sign: p.pay_sign,
            },
        })
    }

    async fn query(&self, tenant_id: Id, out_trade_no: String) -> Result<PaymentState> {
        let input = pay::QueryRequest { tenant_id: None, out_trade_no: parsed("order_no", pay::OutTradeNo::parse(&out_trade_no))? };
        let tx = self.0.query_for(tenant_id, input).await?;
        Ok(payment_state(tx.trade_state, tx.transaction_id, tx.success_time))
    }

    async fn close(&self, tenant_id: Id, out_trade_no: String) -> Result<PaymentState> {
        let no = parsed("order_no", pay::OutTradeNo::parse(&out_trade_no))?;
        match self.0.close_for(tenant_id, pay::CloseRequest { tenant_id: None, out_trade_no: no.clone() }).await {
            Ok(_) => Ok(PaymentState::Closed),
            // Never placed with the platform: nothing to close there.
            Err(Error::NotFound(_)) => Ok(PaymentState::Closed),
            // Paid meanwhile (the close recorded it): say so.
            Err(Error::Conflict(_) | Error::Blocked(_)) => {
                let tx = self.0.query_for(tenant_id, pay::QueryRequest { tenant_id: None, out_trade_no: no }).await?;
                match payment_state(tx.trade_state, tx.transaction_id, tx.success_time) {
                    paid @ PaymentState::Paid { .. } => Ok(paid),
                    _ => Err(Error::conflict("the platform order could not be closed; try again")),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn refund(&self, tenant_id: Id, r: RefundOrder) -> Result<RefundState> {
        let reason = match r.reason.as_deref() {
            Some(reason) => Some(parsed("reason", pay::RefundReason::parse(reason))?),
            None => None,
        };
        let input = pay::RefundRequest {
            tenant_id: None,
            out_trade_no: parsed("order_no", pay::OutTradeNo::parse(&r.out_trade_no))?,
            amount: r.amount,
            reason,
            out_refund_no: Some(parsed("out_refund_no", pay::OutRefundNo::parse(&r.out_refund_no))?),
        };
        let view = self.0.refund_for(tenant_id, input).await?;
        Ok(refund_state(view.status, view.succeeded_at, view.created_at))
    }

    async fn query_refund(&self, tenant_id: Id, out_refund_no: String) -> Result<RefundState> {
        match self.0.query_refund_for(tenant_id, &out_refund_no).await {
            Ok(view) => Ok(refund_state(view.status, view.succeeded_at, view.created_at)),
            // The request never reached the payments side: nothing was refunded.
            Err(Error::NotFound(_)) => Ok(RefundState::Failed),
            Err(e) => Err(e),
        }
    }
}

/// Tells orders of payments and refunds the payments service settled. Set once the order
/// service exists (it needs the payments service first).
#[derive(Default)]
pub struct OrdersObserver(OnceLock<Arc<OrderService>>);

impl OrdersObserver {
    pub fn connect(&self, orders: Arc<OrderService>) {
        if self.0.set(orders).is_err() {
            log::warn!("the orders observer was connected twice; keeping the first");
        }
    }
}

#[async_trait]
impl pay::PaymentObserver for OrdersObserver {
    async fn transaction_changed(&self, tx: pay::Transaction) -> Result<()> {
        let Some(orders) = self.0.get() else { return Ok(()) };
        let state = payment_state(tx.trade_state, tx.transaction_id, tx.success_time);
        if state == PaymentState::Unpaid {
            return Ok(());
        }
        orders.payment_changed(tx.tenant_id, &tx.out_trade_no, state).await.map(drop)
    }

    async fn refund_changed(&self, refund: pay::Refund) -> Result<()> {
        let Some(orders) = self.0.get() else { return Ok(()) };
        let state = refund_state(refund.status, refund.succeeded_at, refund.updated_at);
        orders.refund_changed(refund.tenant_id, &refund.out_refund_no, state).await.map(drop)
    }
}

/// `order.expire`: closes pending and unpaid orders past their expiry (and their platform
/// orders), every minute, a batch at a time.
pub struct OrderExpiry {
    pub orders: Arc<OrderService>,
    pub jobs: Arc<dyn atrium_kernel::JobStore>,
}

pub const EXPIRE: &str = "order.expire";
const EXPIRE_BATCH: u32 = 200;

impl OrderExpiry {
    /// Queues the sweep of the next minute (once across instances: the minute is its key).
    pub async fn schedule(&self) -> Result<()> {
        crate::jobs::schedule_every(self.jobs.as_ref(), EXPIRE, 60).await
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
