//! The ledger's use cases: transactions and refunds, through the payment routes
//! (`/miniprogram/payment/*`) and for orders (the kernel's [`OrderLedger`], implemented
//! below). Both families end in the same few steps, so a rule holds whichever way the money
//! moves:
//!
//! - a transaction is placed by [`PaymentService::place`]: stored (with the job that settles
//!   it and, for an order, the event that tells it) before the platform is asked, under a
//!   number fixed before the call, so asking again is the same platform order;
//! - a refund is reserved by [`PaymentService::refund_transaction`] under the transaction's
//!   lock against the one [`RefundRule`] (window, count, what is left), with its settle job
//!   and order event in the same database transaction, before the platform is asked.
//!
//! A transaction that pays an order is paid, refunded and closed through the order only: the
//! payment routes answer 409 naming the order, and no other transaction may take an order's
//! number.
use super::payments::{PaymentService, platform_error};
use super::returns::{TakenBack, return_failed};
use crate::api::*;
use crate::lifecycle::TradeState;
use crate::model::*;
use crate::ports::PayPlatformError;
use crate::sharing::ReturnStatus;
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::failpoint;
use atrium_kernel::pay::{Charge, OfflineCharge, OrderLedger, OrderMoney, OrderRefund, OrderShare, RefundCharge};
use atrium_kernel::secret::nonce;
use atrium_kernel::{Actor, AuditRecord, Error, Id, Money, PayParams, PaymentMethod, RefundStatus, RequestKey, Result};
use std::collections::HashSet;

/// The longest a request may take to place an order with the platform (its time-outs and
/// retries, with room to spare): a transaction without a prepay id younger than this may
/// still be placed, so it is not closed under it.
const PLACING_WINDOW: chrono::Duration = chrono::Duration::minutes(2);
/// Characters of a generated `out_trade_no` (the platform allows 6–32).
const TRADE_NO_LEN: usize = 24;
/// Characters of a generated `out_refund_no` (the platform allows up to 64).
const REFUND_NO_LEN: usize = 32;

impl PaymentService {
    /// `POST /miniprogram/payment/unified-order`: places a JSAPI order and returns what the
    /// mini-program needs to pay it. The same `out_trade_no` again with the same details
    /// returns the same prepay (no second platform order); a number that was paid or closed,
    /// that names different details, or that is an order's, is a 409. Without an
    /// `out_trade_no`, one is derived from the request's `Idempotency-Key` (`key`), so a
    /// retry is the same platform order, or drawn at random.
    pub async fn unified_order(&self, actor: &Actor, input: UnifiedOrderRequest, key: Option<&RequestKey>) -> Result<UnifiedOrderView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        if !input.amount.is_positive() {
            return Err(Error::invalid("amount", "must be at least 1 fen"));
        }
        let now = self.clock.now();
        let expires_at = match input.time_expire {
            None => now + self.settings.default_expiry,
            Some(t) if t <= now => return Err(Error::invalid("time_expire", "must be in the future")),
            Some(t) if t > now + self.settings.max_expiry => {
                return Err(Error::invalid("time_expire", format!("must be at most {} days ahead", self.settings.max_expiry.num_days())));
            }
            Some(t) => t,
        };
        let out_trade_no = match (input.out_trade_no, key) {
            (Some(no), _) => no.into_string(),
            (None, Some(key)) => key.number(TRADE_NO_LEN),
            (None, None) => nonce(TRADE_NO_LEN),
        };
        let wanted = Transaction {
            attach: input.attach.map(Attach::into_string).filter(|a| !a.is_empty()),
            ..Transaction::unpaid(
                tenant.id,
                out_trade_no,
                input.description.into_string(),
                input.amount,
                input.openid.into_string(),
                expires_at,
                now,
            )
        };
        let audit = AuditRecord::by(actor, now, "payment.unified_order", "payment_transaction", None)
            .owned_by(tenant.partner_id, Some(tenant.id))
            .with_after(
                serde_json::json!({"out_trade_no": wanted.out_trade_no, "amount": wanted.amount, "description": wanted.description}),
            );
        let (tx, pay_params) = self.place(wanted, Some(audit)).await?;
        Ok(UnifiedOrderView { out_trade_no: tx.out_trade_no, prepay_id: tx.prepay_id.unwrap_or_default(), pay_params })
    }

    /// Starts or resumes the platform payment of an order ([`OrderLedger::charge`]): the
    /// order's number is the platform's, so asking again is the same platform order.
    pub async fn charge_order(&self, tenant_id: Id, charge: Charge) -> Result<PayParams> {
        let now = self.clock.now();
        if charge.expires_at <= now {
            return Err(Error::conflict(Reason::OrderExpired, "the order has expired; create a new one"));
        }
        let wanted = Transaction {
            order_id: Some(charge.order_id),
            ..Transaction::unpaid(tenant_id, charge.out_trade_no, charge.description, charge.amount, charge.openid, charge.expires_at, now)
        };
        Ok(self.place(wanted, Some(charge.audit)).await?.1)
    }

    /// Places `wanted` with the platform, or resumes it when its number is already stored
    /// for the same details: stored first (with its settle job, and its order's event), then
    /// asked of the platform, then the prepay kept.
    async fn place(&self, wanted: Transaction, audit: Option<AuditRecord>) -> Result<(Transaction, PayParams)> {
        let tenant_id = wanted.tenant_id;
        let current = self.account(tenant_id, true).await?;
        let no = wanted.out_trade_no.clone();
        let tx = match self.repo.get_transaction(tenant_id, no.clone()).await? {
            Some(existing) => {
                if existing.order_id != wanted.order_id {
                    return Err(belongs_to_order(&existing).unwrap_or_else(|| {
                        Error::conflict(
                            Reason::WrongRoute,
                            format!("out_trade_no {no} is a transaction of the payment routes, not this order's"),
                        )
                    }));
                }
                if existing.method == PaymentMethod::Offline || existing.is_paid() {
                    return Err(Error::conflict(Reason::AlreadyPaid, format!("out_trade_no {no} is already paid")));
                }
                if existing.discrepancy.is_some() {
                    return Err(Error::conflict(
                        Reason::Discrepancy,
                        format!("out_trade_no {no} has a payment discrepancy to resolve first; see the transaction"),
                    ));
                }
                if existing.trade_state.is_closed() {
                    return Err(Error::conflict(Reason::State, format!("out_trade_no {no} is closed; a new payment needs a new number")));
                }
                let same = existing.description == wanted.description
                    && existing.amount == wanted.amount
                    && existing.openid == wanted.openid
                    && existing.attach == wanted.attach;
                if !same {
                    return Err(match existing.order_id {
                        Some(_) if existing.openid != wanted.openid => {
                            Error::conflict(Reason::OtherPayer, "the order is being paid by another payer")
                        }
                        _ => Error::conflict(Reason::Duplicate, format!("out_trade_no {no} was already used for a different order")),
                    });
                }
                if let Some(prepay_id) = existing.prepay_id.clone() {
                    let account = self.account_for(&existing, &current).await?;
                    let pay_params = self.platform.pay_params(&account, &prepay_id).map_err(platform_error)?;
                    return Ok((existing, pay_params));
                }
                existing
            }
            None => {
                let effects = Effects {
                    jobs: [Some(self.settle_transaction_job(tenant_id, &no, wanted.expires_at)), self.order_event(&wanted)]
                        .into_iter()
                        .flatten()
                        .collect(),
                    audit,
                    events: Vec::new(),
                };
                // Placed, and settled, with the tenant's current merchant: a later switch of
                // mode does not move it.
                let wanted = Transaction { sub_mchid: current.sub_merchant.as_ref().map(|s| s.sub_mchid.clone()), ..wanted };
                self.repo.insert_transaction(wanted, effects).await?
            }
        };
        // A transaction stored before a switch of mode is resumed with the merchant it was
        // stored for.
        let account = self.account_for(&tx, &current).await?;
        failpoint!("ledger.pay.stored");
        let order = JsapiOrder {
            out_trade_no: tx.out_trade_no.clone(),
            description: tx.description.clone(),
            amount: tx.amount,
            openid: tx.openid.clone(),
            attach: tx.attach.clone(),
            time_expire: tx.expires_at,
            notify_url: self.settings.notify_url(tenant_id),
        };
        let prepay_id = self.platform.jsapi_order(&account, &order).await.map_err(platform_error)?;
        failpoint!("ledger.pay.placed");
        let stored = self
            .save_transaction(tenant_id, &no, |t| {
                if t.prepay_id.is_some() {
                    return false;
                }
                t.prepay_id = Some(prepay_id.clone());
                true
            })
            .await?;
        if stored.trade_state.is_closed() {
            // Closed while it was being placed: what was placed must not be payable.
            let closed = self.close_transaction(&stored).await?;
            if !closed.is_paid() {
                return Err(Error::conflict(Reason::State, format!("out_trade_no {no} was closed while it was being placed")));
            }
        }
        let prepay_id = stored.prepay_id.clone().unwrap_or(prepay_id);
        let pay_params = self.platform.pay_params(&account, &prepay_id).map_err(platform_error)?;
        Ok((stored, pay_params))
    }

    /// Records an order's payment made outside the platform. The order's open platform
    /// payment is closed there first; one paid meanwhile, or one that cannot be closed now,
    /// is a 409. Two payments of one order racing: the database lets one live transaction
    /// per order, so exactly one wins.
    pub async fn charge_order_offline(&self, tenant_id: Id, charge: OfflineCharge) -> Result<()> {
        if let Some(tx) = self.repo.order_transaction(tenant_id, charge.order_id).await? {
            if tx.method == PaymentMethod::Offline && tx.is_paid() {
                // A retry of the same record is no second payment.
                return if tx.reference.as_deref() == Some(charge.reference.as_str()) {
                    Ok(())
                } else {
                    Err(Error::conflict(Reason::AlreadyPaid, "the order is already paid offline"))
                };
            }
            if tx.is_paid() {
                return Err(Error::conflict(Reason::AlreadyPaid, "the order is already paid on the pay platform"));
            }
            if tx.discrepancy.is_some() {
                return Err(Error::conflict(Reason::Discrepancy, "the order's platform payment has a discrepancy to resolve first"));
            }
            if !tx.trade_state.is_closed() {
                // A platform order still being placed by a request in flight could be placed
                // after a close that found nothing to close: wait until no request can be.
                if tx.prepay_id.is_none() && self.clock.now() < tx.created_at + PLACING_WINDOW {
                    return Err(Error::conflict(
                        Reason::TryAgain,
                        format!(
                            "a platform payment of this order is being started; try again in {} seconds, or pay online",
                            PLACING_WINDOW.num_seconds()
                        ),
                    ));
                }
                let closed = self.close_transaction(&tx).await?;
                if closed.is_paid() {
                    return Err(Error::conflict(Reason::AlreadyPaid, "the order was paid on the pay platform meanwhile"));
                }
                if !closed.trade_state.is_closed() {
                    return Err(Error::conflict(Reason::TryAgain, "the order's platform payment could not be closed; try again"));
                }
            }
        }
        let now = self.clock.now();
        // Never sent to the platform; its number is kept apart from the order's own, where
        // the payment routes cannot reach.
        let no = offline_trade_no(&charge.order_no);
        let tx = Transaction {
            order_id: Some(charge.order_id),
            method: PaymentMethod::Offline,
            reference: Some(charge.reference),
            paid_by: Some(charge.recorded_by),
            trade_state: TradeState::Success,
            payer_total: Some(charge.amount),
            success_time: Some(now),
            ..Transaction::unpaid(tenant_id, no, charge.description, charge.amount, String::new(), now, now)
        };
        let effects = Effects { jobs: self.order_event(&tx).into_iter().collect(), audit: Some(charge.audit), events: Vec::new() };
        match self.repo.insert_transaction(tx, effects).await {
            Ok(_) => Ok(()),
            Err(Error::Conflict(..)) => Err(Error::conflict(Reason::State, "the order is already being paid another way; reload it")),
            Err(e) => Err(e),
        }
    }

    /// `POST /miniprogram/payment/query`: asks the pay platform and keeps what it reports
    /// (forward only); a sub-merchant's payment is shown with its shares.
    pub async fn query(&self, actor: &Actor, input: QueryRequest) -> Result<TransactionView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        let out_trade_no = input.out_trade_no.into_string();
        let tx = self.transaction(tenant.id, &out_trade_no).await?;
        if tx.method == PaymentMethod::Offline {
            return Ok(tx.into());
        }
        let account = self.account_of(&tx).await?;
        let report = self.platform.query_order(&account, &out_trade_no).await.map_err(platform_error)?;
        let tx = self.apply_transaction_report(tenant.id, &report).await?;
        // Only a sub-merchant's payment is ever shared.
        let shares = match tx.sub_mchid {
            Some(_) => self.repo.sharing(tx.id).await?.map(|(_, shares)| shares).unwrap_or_default(),
            None => Vec::new(),
        };
        Ok(TransactionView::with_shares(tx, shares))
    }

    /// `POST /miniprogram/payment/close`: closes an unpaid transaction. A paid one is a 409,
    /// also when the platform says it was paid meanwhile (which is then recorded); so is an
    /// order's (closed through the order).
    pub async fn close(&self, actor: &Actor, input: CloseRequest) -> Result<CloseView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        let out_trade_no = input.out_trade_no.into_string();
        let tx = self.transaction(tenant.id, &out_trade_no).await?;
        if let Some(e) = belongs_to_order(&tx) {
            return Err(e);
        }
        if tx.is_paid() {
            return Err(Error::conflict(Reason::AlreadyPaid, "the transaction is paid; refund it instead"));
        }
        if tx.trade_state.is_closed() {
            // Already closed: answered as it stands, without asking the platform again.
            return Ok(CloseView { out_trade_no, trade_state: tx.trade_state });
        }
        let tx = self.close_transaction(&tx).await?;
        if tx.is_paid() {
            return Err(Error::conflict(Reason::AlreadyPaid, "the transaction was paid meanwhile; refund it instead"));
        }
        if !tx.trade_state.is_closed() {
            return Err(Error::conflict(Reason::TryAgain, "the transaction could not be closed; try again"));
        }
        Ok(CloseView { out_trade_no, trade_state: tx.trade_state })
    }

    /// Closes an order's open platform payment, if any (the orders' expiry): once this
    /// answers `Ok`, nothing can pay it any more, or it was paid meanwhile and is recorded.
    pub async fn close_order(&self, tenant_id: Id, order_id: Id) -> Result<()> {
        match self.repo.order_transaction(tenant_id, order_id).await? {
            Some(tx) if !tx.is_paid() && !tx.trade_state.is_closed() && tx.discrepancy.is_none() => {
                let tx = self.close_transaction(&tx).await?;
                if tx.is_paid() || tx.trade_state.is_closed() {
                    Ok(())
                } else {
                    Err(Error::Upstream(format!("the platform order {} is still open after a close", tx.out_trade_no)))
                }
            }
            _ => Ok(()),
        }
    }

    /// Closes `tx` on the platform and here, unless the platform says it was paid (which is
    /// then recorded). Returns the transaction as stored after.
    pub(super) async fn close_transaction(&self, tx: &Transaction) -> Result<Transaction> {
        let tenant_id = tx.tenant_id;
        let account = self.account_of(tx).await?;
        match self.platform.close_order(&account, &tx.out_trade_no).await {
            Ok(()) => {}
            // Never placed with the platform: nothing there can be paid.
            Err(PayPlatformError::Refused { code, .. }) if code == "ORDER_NOT_EXIST" => {}
            Err(PayPlatformError::Refused { code, .. }) if code == "ORDERPAID" => {
                let report = self.platform.query_order(&account, &tx.out_trade_no).await.map_err(platform_error)?;
                return self.apply_transaction_report(tenant_id, &report).await;
            }
            Err(e) => return Err(platform_error(e)),
        }
        self.apply_transaction_report(tenant_id, &closed_report(&tx.out_trade_no)).await
    }

    /// `POST /miniprogram/payment/refund`: refunds (part of) a paid transaction of the payment
    /// routes (an order's is refunded through the order: 409). Without an `out_refund_no`,
    /// one is derived from the request's `Idempotency-Key` (`key`), so a retry is the same
    /// refund, or drawn at random. The same `out_refund_no` again is the same refund.
    pub async fn refund(&self, actor: &Actor, input: RefundRequest, key: Option<&RequestKey>) -> Result<RefundView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        if !input.amount.is_positive() {
            return Err(Error::invalid("amount", "must be at least 1 fen"));
        }
        let tx = self.transaction(tenant.id, input.out_trade_no.as_str()).await?;
        if let Some(e) = belongs_to_order(&tx) {
            return Err(e);
        }
        let out_refund_no = match (input.out_refund_no, key) {
            (Some(no), _) => no.into_string(),
            (None, Some(key)) => key.number(REFUND_NO_LEN),
            (None, None) => nonce(REFUND_NO_LEN),
        };
        let reason = input.reason.map(RefundReason::into_string).filter(|r| !r.is_empty());
        let audit = AuditRecord::by(actor, self.clock.now(), "payment.refund", "payment_transaction", Some(tx.id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .with_after(serde_json::json!({"out_trade_no": tx.out_trade_no, "out_refund_no": out_refund_no, "amount": input.amount, "reason": reason}));
        let asked = Asked { out_refund_no, amount: input.amount, reason, requested_by: Some(actor.user_id), audit: Some(audit) };
        Ok(self.refund_transaction(&tx, asked).await?.into())
    }

    /// Refunds (part of) an order's payment ([`OrderLedger::refund`]).
    pub async fn refund_order(&self, tenant_id: Id, refund: RefundCharge) -> Result<Refund> {
        let tx = match self.repo.order_transaction(tenant_id, refund.order_id).await? {
            Some(tx) if tx.is_paid() => tx,
            _ => return Err(Error::conflict(Reason::State, "the order's payment is not paid; nothing can be refunded")),
        };
        let asked = Asked {
            out_refund_no: refund.out_refund_no,
            amount: refund.amount,
            reason: refund.reason,
            requested_by: refund.requested_by,
            audit: Some(refund.audit),
        };
        self.refund_transaction(&tx, asked).await
    }

    /// The one way money goes back: reserves the refund under the transaction's lock against
    /// the [`RefundRule`] (with its settle job and its order's event in the same database
    /// transaction), then asks the platform — or, for an offline payment, records it
    /// succeeded at once. A number already stored is the same refund: while it may not have
    /// reached the platform it is asked again under that number (which the platform treats
    /// as the same refund), otherwise answered as it stands.
    pub(super) async fn refund_transaction(&self, tx: &Transaction, asked: Asked) -> Result<Refund> {
        let Asked { out_refund_no, amount, reason, requested_by, audit } = asked;
        let tenant_id = tx.tenant_id;
        if !amount.is_positive() {
            return Err(Error::invalid("amount", "must be at least 1 fen"));
        }
        if amount > tx.amount {
            return Err(Error::invalid("amount", format!("must not exceed the payment's {} fen", tx.amount.fen())));
        }
        let now = self.clock.now();
        let offline = tx.method == PaymentMethod::Offline;
        let wanted = Refund {
            id: 0,
            tenant_id,
            out_trade_no: tx.out_trade_no.clone(),
            order_id: tx.order_id,
            out_refund_no: out_refund_no.clone(),
            refund_id: None,
            amount,
            status: if offline { RefundStatus::Succeeded } else { RefundStatus::Processing },
            reason,
            requested_by,
            fail_reason: None,
            succeeded_at: offline.then_some(now),
            created_at: now,
            updated_at: now,
        };
        let mut effects = Effects { jobs: self.order_refund_event(&wanted).into_iter().collect(), audit, events: Vec::new() };
        if !offline {
            effects.jobs.push(self.settle_refund_job(tenant_id, &out_refund_no));
        }
        let rule = RefundRule { window: self.settings.refund_window, max_refunds: self.settings.max_refunds };
        let refund = match self.repo.reserve_refund(wanted, rule, effects).await? {
            RefundReservation::Reserved(r) => r,
            RefundReservation::Existing(r) => {
                if r.out_trade_no != tx.out_trade_no || r.amount != amount {
                    return Err(Error::conflict(
                        Reason::Duplicate,
                        format!("out_refund_no {out_refund_no} already names a different refund"),
                    ));
                }
                if let (RefundStatus::Failed, Some(why)) = (r.status, &r.fail_reason) {
                    // Failed because a share could not be taken back: answered as at first.
                    let returns = self.repo.returns_of(tenant_id, r.out_refund_no.clone()).await?;
                    let share_id = returns.iter().find(|x| x.status == ReturnStatus::Failed).map(|x| x.share_id);
                    return Err(return_failed(&r.out_refund_no, share_id, why));
                }
                if r.status.is_final() || r.refund_id.is_some() || offline {
                    return Ok(r);
                }
                r
            }
            RefundReservation::Refused(why) => return Err(refusal(why)),
        };
        if offline {
            return Ok(refund);
        }
        failpoint!("ledger.refund.reserved");
        // A shared payment's receivers give their parts back first.
        match self.take_back(tx, &refund).await? {
            TakenBack::Done => {}
            // The refund's settle job carries on once the platform finished the returns.
            TakenBack::Waiting(_) => return Ok(refund),
            TakenBack::Unreachable(e) => return Err(platform_error(e)),
            TakenBack::Failed(e) => return Err(e),
        }
        let account = self.account_of(tx).await?;
        let order = RefundOrder {
            out_trade_no: tx.out_trade_no.clone(),
            out_refund_no: out_refund_no.clone(),
            reason: refund.reason.clone(),
            amount: refund.amount,
            total: tx.amount,
            notify_url: self.settings.notify_url(tenant_id),
        };
        match self.platform.refund(&account, &order).await {
            Ok(report) => {
                failpoint!("ledger.refund.sent");
                self.apply_refund_report(tenant_id, &out_refund_no, &report).await
            }
            // It may have been accepted: it stays processing until a query settles it (its
            // settle job is queued), and a retry asks again under the same number.
            Err(e @ PayPlatformError::Unavailable(_)) => Err(platform_error(e)),
            Err(e) => {
                let failed = PlatformRefund {
                    out_refund_no: out_refund_no.clone(),
                    out_trade_no: Some(tx.out_trade_no.clone()),
                    refund_id: None,
                    status: RefundStatus::Failed,
                    amount: None,
                    success_time: None,
                    sub_mchid: None,
                };
                self.apply_refund_report(tenant_id, &out_refund_no, &failed).await?;
                Err(platform_error(e))
            }
        }
    }

    /// What the ledger holds of an order's money ([`OrderLedger::money`]): its live (or
    /// latest) transaction and that transaction's refunds, oldest first.
    pub async fn order_money(&self, tenant_id: Id, order_id: Id) -> Result<OrderMoney> {
        let Some(tx) = self.repo.order_transaction(tenant_id, order_id).await? else {
            return Ok(OrderMoney::default());
        };
        let refunds = self.repo.refunds_of(tenant_id, tx.out_trade_no.clone()).await?;
        Ok(OrderMoney { payment: Some(tx.as_order_payment()), refunds: refunds.iter().filter_map(Refund::as_order_refund).collect() })
    }

    /// The refunds of several orders, each named `(tenant_id, order_id)`
    /// ([`OrderLedger::refunds`]), oldest first; a refund whose tenant is not its order's as
    /// named is left out.
    pub async fn order_refunds(&self, orders: Vec<(Id, Id)>) -> Result<Vec<OrderRefund>> {
        if orders.is_empty() {
            return Ok(Vec::new());
        }
        let named: HashSet<(Id, Id)> = orders.iter().copied().collect();
        let refunds = self.repo.refunds_of_orders(orders.into_iter().map(|(_, order_id)| order_id).collect()).await?;
        Ok(refunds.iter().filter_map(Refund::as_order_refund).filter(|r| named.contains(&(r.tenant_id, r.order_id))).collect())
    }
}

/// What a refund request asks of [`PaymentService::refund_transaction`].
pub(super) struct Asked {
    pub(super) out_refund_no: String,
    pub(super) amount: Money,
    pub(super) reason: Option<String>,
    pub(super) requested_by: Option<Id>,
    /// Written with the refund's reservation; `None` for a refund stored already (the excess
    /// of a resolved discrepancy, audited with its resolution).
    pub(super) audit: Option<AuditRecord>,
}

/// The ledger as orders reach it: the one contract between them ([`atrium_kernel::pay`]).
#[async_trait]
impl OrderLedger for PaymentService {
    async fn charge(&self, tenant_id: Id, charge: Charge) -> Result<PayParams> {
        self.charge_order(tenant_id, charge).await
    }

    async fn charge_offline(&self, tenant_id: Id, charge: OfflineCharge) -> Result<()> {
        self.charge_order_offline(tenant_id, charge).await
    }

    async fn refund(&self, tenant_id: Id, refund: RefundCharge) -> Result<OrderRefund> {
        let refund = self.refund_order(tenant_id, refund).await?;
        refund.as_order_refund().ok_or_else(|| Error::internal("an order's refund without its order"))
    }

    async fn close(&self, tenant_id: Id, order_id: Id) -> Result<()> {
        self.close_order(tenant_id, order_id).await
    }

    async fn money(&self, tenant_id: Id, order_id: Id) -> Result<OrderMoney> {
        self.order_money(tenant_id, order_id).await
    }

    async fn refunds(&self, orders: Vec<(Id, Id)>) -> Result<Vec<OrderRefund>> {
        self.order_refunds(orders).await
    }

    async fn shares(&self, orders: Vec<(Id, Id)>) -> Result<Vec<OrderShare>> {
        if orders.is_empty() {
            return Ok(Vec::new());
        }
        let named: HashSet<(Id, Id)> = orders.iter().copied().collect();
        let shares = self.repo.shares_of_orders(orders.into_iter().map(|(_, order_id)| order_id).collect()).await?;
        Ok(shares
            .into_iter()
            .filter(|(order_id, s)| named.contains(&(s.tenant_id, *order_id)))
            .map(|(order_id, s)| OrderShare { order_id, share: s.into() })
            .collect())
    }
}

/// 409 naming the order a transaction pays, if it pays one.
fn belongs_to_order(tx: &Transaction) -> Option<Error> {
    tx.order_id.map(|order_id| {
        Error::conflict(
            Reason::WrongRoute,
            format!(
                "out_trade_no {} belongs to order {order_id}; pay, refund and close it through /api/v1/orders/{order_id}",
                tx.out_trade_no
            ),
        )
    })
}

/// A refusal of the refund rule as the caller sees it (409).
fn refusal(why: RefundRefusal) -> Error {
    match why {
        RefundRefusal::NotPaid => Error::conflict(Reason::State, "only a paid transaction can be refunded"),
        RefundRefusal::WindowClosed { days } => {
            Error::conflict(Reason::RefundWindowClosed, format!("refunds are possible for {days} days after the payment"))
        }
        RefundRefusal::TooManyRefunds { max } => {
            Error::conflict(Reason::TooManyRefunds, format!("this payment already has {max} refunds, the most allowed"))
        }
        RefundRefusal::ExceedsPaid { refundable } => {
            Error::conflict(Reason::RefundExceedsPaid, format!("only {} fen are left to refund", refundable.fen()))
        }
        RefundRefusal::BeingShared => Error::conflict(
            Reason::TryAgain,
            "the payment is being shared with its receivers; refund it once that settled (usually within a minute)",
        ),
        RefundRefusal::ShareDiscrepancy { share_id } => Error::conflict(
            Reason::Discrepancy,
            format!(
                "share {share_id} of the payment holds a discrepancy with the pay platform's record; \
                 nothing is refunded until it is resolved"
            ),
        ),
        RefundRefusal::NotReturnable { share_id } => Error::conflict(
            Reason::ReturnFailed,
            format!(
                "share {share_id} of the payment went to a person, and the pay platform takes nothing back from a person; \
                 shared money is never refunded from the tenant's rest, so the refund was not sent"
            ),
        ),
    }
}

/// What a close reports: the platform order is closed.
pub(super) fn closed_report(out_trade_no: &str) -> PlatformTransaction {
    PlatformTransaction {
        out_trade_no: out_trade_no.to_owned(),
        trade_state: TradeState::Closed,
        transaction_id: None,
        amount: None,
        currency: None,
        payer_total: None,
        success_time: None,
        sub_mchid: None,
    }
}
