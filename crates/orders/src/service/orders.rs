//! The order use cases: create, read and list orders in the caller's scope, pay them (through
//! the pay platform or offline) and refund them through the money ledger, keep each order's
//! projection of what the ledger holds ([`OrderService::sync`]), and close orders left unpaid
//! past their expiry.
//!
//! The ledger owns every movement of an order's money; an order keeps its own state (status,
//! items, expiry) and a projection of the ledger's: what was paid and how, its refunds, a
//! discrepancy; so reading orders reads the orders' own tables only. Every write of it is
//! conditional on the state it was read in ([`OrderRepo::update_order`]), so a caller, a
//! ledger event and the expiry job racing each other cannot move an order twice, backwards,
//! or to an older view of the ledger.
use crate::api::*;
use crate::config::OrderSettings;
use crate::events;
use crate::lifecycle::{OrderAction, OrderStatus};
use crate::model::*;
use crate::ports::{Charge, LedgerPayment, OfflineCharge, OrderLedger, OrderMoney, OrderRepo, PaymentState, RefundCharge};
use crate::text::Openid;
use atrium_kernel::Reason;
use atrium_kernel::failpoint;
use atrium_kernel::pay::ShareView;
use atrium_kernel::secret::nonce;
use atrium_kernel::{
    Actor, AuditRecord, Clock, Effects, Error, FieldError, Id, Money, Page, Party, PaymentMethod, RefundStatus, RequestKey, Result,
    Timestamp,
};
use std::collections::HashMap;
use std::sync::Arc;

/// How often a conditional write is tried before giving up on an order that keeps changing.
const WRITE_ATTEMPTS: usize = 3;
/// How often a new order number is drawn when the drawn one is taken.
const NUMBER_ATTEMPTS: usize = 3;
/// Random characters of an order number, after its date.
const ORDER_NO_RANDOM: usize = 16;
/// Characters of a refund number after its order's number: derived from the request's
/// `Idempotency-Key`, or random without one.
const REFUND_NO_SUFFIX: usize = 10;

/// What a [`OrderService::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventOutcome {
    /// The order's projection moved to what the ledger holds.
    Applied,
    /// The order already showed what the ledger holds: nothing changed.
    Stale,
    /// No such order of that tenant here; logged.
    Unknown,
}

/// The orders' use cases over their ports: create, read and list orders, pay and refund them
/// through the ledger, bring them up to what the ledger holds ([`sync`](Self::sync)) and
/// close the expired ones ([`expire_due`](Self::expire_due)).
pub struct OrderService {
    repo: Arc<dyn OrderRepo>,
    ledger: Arc<dyn OrderLedger>,
    clock: Arc<dyn Clock>,
    settings: OrderSettings,
}

impl OrderService {
    /// A service over its storage, the ledger, a clock and its settings.
    pub fn new(repo: Arc<dyn OrderRepo>, ledger: Arc<dyn OrderLedger>, clock: Arc<dyn Clock>, settings: OrderSettings) -> Self {
        OrderService { repo, ledger, clock, settings }
    }

    /// `POST /orders`: a `pending` order of the caller's tenant (or one in its scope), its
    /// amount given or the sum of its items.
    ///
    /// With the ports doubled (the `mock` feature):
    ///
    /// ```
    /// use atrium_kernel::{Actor, Money, Party, SystemClock};
    /// use atrium_orders::{MockOrderLedger, MockOrderRepo, NewOrder, OrderService, OrderSettings, OrderStatus, OrderTenant, Subject};
    /// use std::sync::Arc;
    ///
    /// let mut repo = MockOrderRepo::new();
    /// repo.expect_tenant().returning(|_, id| Ok(Some(OrderTenant { id, partner_id: None })));
    /// repo.expect_insert_order().returning(|order, _effects| Ok(atrium_orders::Order { id: 1, ..order }));
    /// // Creating an order never reaches the ledger.
    /// let service = OrderService::new(Arc::new(repo), Arc::new(MockOrderLedger::new()), Arc::new(SystemClock), OrderSettings::default());
    ///
    /// let clerk = Actor::new(42, "session", Party::Tenant { tenant_id: 7, partner_id: None }, ["order:create"]);
    /// let input = NewOrder {
    ///     tenant_id: None,
    ///     subject: Subject::parse("Coffee beans")?,
    ///     amount: Some(Money::from_yuan(88)),
    ///     items: None,
    ///     openid: None,
    ///     expires_in: None,
    /// };
    /// let order = tokio::runtime::Runtime::new()?.block_on(service.create(&clerk, input))?;
    /// assert_eq!((order.id, order.tenant_id, order.status), (1, 7, OrderStatus::Pending));
    /// assert_eq!(order.amount, Money::from_fen(8_800));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn create(&self, actor: &Actor, input: NewOrder) -> Result<OrderView> {
        let tenant_id = actor.party.tenant_for_new(input.tenant_id)?;
        let mut errors = Vec::new();
        let priced = self.price(input.amount, input.items, &mut errors);
        let expiry = self.expiry(input.expires_in, &mut errors);
        let (Some((amount, items)), Some(expiry), true) = (priced, expiry, errors.is_empty()) else {
            return Err(Error::Invalid(errors));
        };
        let tenant = self.repo.tenant(actor.party, tenant_id).await?.ok_or_else(|| Error::no_such("tenant_id", "no such tenant"))?;
        let now = self.clock.now();
        let mut order = Order {
            id: 0,
            order_no: String::new(),
            tenant_id: tenant.id,
            partner_id: tenant.partner_id,
            subject: input.subject.into_string(),
            amount,
            paid_amount: Money::ZERO,
            refunded_amount: Money::ZERO,
            status: OrderStatus::Pending,
            items,
            openid: input.openid.map(Openid::into_string),
            payment: None,
            discrepancy: None,
            refunds: Vec::new(),
            expires_at: now + expiry,
            created_by: Some(actor.user_id),
            created_at: now,
            updated_at: now,
        };
        let mut last = None;
        for _ in 0..NUMBER_ATTEMPTS {
            order.order_no = order_no(now);
            let audit = AuditRecord::by(actor, now, "order.create", "order", None)
                .owned_by(tenant.partner_id, Some(tenant.id))
                .change(None, Some(&order_json(&order)));
            match self.repo.insert_order(order.clone(), Effects::audited(audit)).await {
                Ok(stored) => return Ok(OrderView::new(stored)),
                // The drawn number is taken: draw again.
                Err(Error::Conflict(_, why)) => last = Some(why),
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict(Reason::TryAgain, last.unwrap_or_else(|| "no free order number was found; try again".into())))
    }

    /// `GET /orders/{id}`, with its refunds as it last synced them from the ledger (and, for a
    /// payment placed for a sub-merchant, the ledger's shares of it); 404 for an order out of
    /// scope.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<OrderView> {
        let order = self.order(actor, id).await?;
        let shares = self.shares_of(std::slice::from_ref(&order)).await?.remove(&order.id).unwrap_or_default();
        Ok(OrderView::new(order).with_shares(shares))
    }

    /// `GET /orders`: the orders in the caller's scope that match `query`, each with its
    /// refunds (and shares, as [`Self::get`]).
    pub async fn list(&self, actor: &Actor, query: OrderQuery) -> Result<Page<OrderView>> {
        let page = self.repo.list_orders(actor.party, query).await?;
        let mut shares = self.shares_of(&page.items).await?;
        Ok(page.map(|o| {
            let id = o.id;
            OrderView::new(o).with_shares(shares.remove(&id).unwrap_or_default())
        }))
    }

    /// `POST /orders/{id}/pay`. `wechat_jsapi`: asks the ledger to start the order's platform
    /// payment (the order's number is the platform's, so asking again while `paying` resumes
    /// the same payment) and answers what the payer needs. `offline`: has the ledger record the
    /// payment, by whom and with what reference (it closes an open platform payment first).
    /// Either way the order is then synced with the ledger and answered as synced. The ledger's
    /// errors are answered unchanged.
    pub async fn pay(&self, actor: &Actor, id: Id, input: PayOrder) -> Result<OrderPayView> {
        let order = self.order(actor, id).await?;
        let action = match input {
            PayOrder::WechatJsapi { .. } => OrderAction::PayOnline,
            PayOrder::Offline { .. } => OrderAction::PayOffline,
        };
        order.status.after(action)?;
        check_not_expired(&order, self.clock.now())?;
        match input {
            PayOrder::WechatJsapi { openid } => {
                let openid = match (openid, &order.openid) {
                    (Some(o), _) => o.into_string(),
                    (None, Some(o)) => o.clone(),
                    (None, None) => {
                        return Err(Error::blocked(Reason::PayerOpenidMissing, "openid", "is required: the order has no payer's openid"));
                    }
                };
                if order.status == OrderStatus::Paying && order.openid.as_deref() != Some(openid.as_str()) {
                    return Err(Error::conflict(Reason::OtherPayer, "the order is being paid by another payer"));
                }
                let charge = Charge {
                    order_id: order.id,
                    out_trade_no: order.order_no.clone(),
                    description: order.subject.clone(),
                    amount: order.amount,
                    openid,
                    expires_at: order.expires_at,
                    audit: request_audit(actor, "order.pay", &order, serde_json::json!({ "method": "wechat_jsapi" }), self.clock.now()),
                };
                let result = self.ledger.charge(order.tenant_id, charge).await;
                let pay_params = self.checked(&order, result).await?;
                Ok(OrderPayView { order: self.synced(order).await?, pay_params: Some(pay_params) })
            }
            PayOrder::Offline { reference } => {
                let charge = OfflineCharge {
                    order_id: order.id,
                    order_no: order.order_no.clone(),
                    description: order.subject.clone(),
                    amount: order.amount,
                    reference: reference.as_str().to_owned(),
                    recorded_by: actor.user_id,
                    audit: request_audit(
                        actor,
                        "order.pay",
                        &order,
                        serde_json::json!({ "method": "offline", "reference": reference.as_str() }),
                        self.clock.now(),
                    ),
                };
                let result = self.ledger.charge_offline(order.tenant_id, charge).await;
                self.checked(&order, result).await?;
                Ok(OrderPayView { order: self.synced(order).await?, pay_params: None })
            }
        }
    }

    /// `POST /orders/{id}/refund`: asks the ledger to refund (part of) a paid order, which
    /// decides what is left to refund, the refund window and the count limit. The refund's
    /// number is the order's number and characters derived from the request's
    /// `Idempotency-Key` (`key`), so a retry asks the ledger for the same refund, never a
    /// second one; without a key they are random. The order is then synced with the ledger
    /// and answered as synced, with the refund as the ledger returned it. The ledger's errors
    /// are answered unchanged.
    pub async fn refund(&self, actor: &Actor, id: Id, input: NewRefund, key: Option<RequestKey>) -> Result<OrderRefundView> {
        let amount = input.amount.check_input().map_err(|m| Error::invalid("amount", m))?;
        if !amount.is_positive() {
            return Err(Error::invalid("amount", "must be at least 1 fen"));
        }
        let mut order = self.order(actor, id).await?;
        if order.status.after(OrderAction::Refund).is_err() {
            // The order's projection may lag the ledger by a moment (a payment notified just
            // now, its event not yet applied): the ledger decides, so catch up before refusing.
            order = self.caught_up(order).await;
        }
        order.status.after(OrderAction::Refund)?;
        if amount > order.paid_amount {
            return Err(Error::blocked(
                Reason::RefundExceedsPaid,
                "amount",
                format!("must not exceed the order's paid amount, {} fen", order.paid_amount.fen()),
            ));
        }
        let suffix = key.map(|k| k.number(REFUND_NO_SUFFIX)).unwrap_or_else(|| nonce(REFUND_NO_SUFFIX));
        let out_refund_no = format!("{}R{suffix}", order.order_no);
        let reason = input.reason.map(|r| r.into_string()).filter(|r| !r.is_empty());
        let asked = serde_json::json!({ "refund": { "out_refund_no": out_refund_no, "amount": amount, "reason": reason } });
        let charge = RefundCharge {
            order_id: order.id,
            out_refund_no,
            amount,
            reason,
            requested_by: Some(actor.user_id),
            audit: request_audit(actor, "order.refund", &order, asked, self.clock.now()),
        };
        let result = self.ledger.refund(order.tenant_id, charge).await;
        let refund = self.checked(&order, result).await?;
        Ok(OrderRefundView { order: self.synced(order).await?, refund: refund.into() })
    }

    /// Brings the order's projection of its money up to what the ledger holds now: what was
    /// paid and how, what was refunded (succeeded refunds only), a close of an expired unpaid
    /// order, a discrepancy. The server runs it after each of the order's own ledger calls
    /// and for every durable event the ledger writes when an order's money changes; running
    /// it again, or late, changes nothing (`Stale`). An order that is not the tenant's is
    /// logged and answered `Unknown`.
    pub async fn sync(&self, tenant_id: Id, order_id: Id) -> Result<EventOutcome> {
        let (outcome, _) = self.sync_at(tenant_id, order_id, self.clock.now()).await?;
        Ok(outcome)
    }

    /// Closes up to `batch` orders left unpaid past their expiry at `now`: a `pending` one
    /// without a payment at once; any other (a `paying` one) after the ledger closed its
    /// platform payment, by a sync — which closes it, or records the payment that won the
    /// race. Returns how many orders changed. An order whose payment the ledger cannot close
    /// (or whose sync fails) now is logged and left for the next run; a storage failure of
    /// the batch or of a close ends the run.
    pub async fn expire_due(&self, now: Timestamp, batch: u32) -> Result<usize> {
        let mut changed = 0;
        for order in self.repo.due_for_expiry(now, batch).await? {
            if self.expire(order, now).await? {
                changed += 1;
            }
        }
        Ok(changed)
    }

    async fn expire(&self, order: Order, now: Timestamp) -> Result<bool> {
        if order.status == OrderStatus::Pending && order.payment.is_none() {
            let Some(status) = order.status.on_close() else {
                return Ok(false);
            };
            let next = Order { status, updated_at: now, ..order.clone() };
            let effects =
                Effects::audited(system_audit("order.close", &order, &next, now)).with_events(events::of_change(&order, &next, now));
            // A lost race (paid or closed meanwhile) leaves it to whoever won.
            return self.repo.update_order(next, order.state(), effects).await;
        }
        if let Err(e) = self.ledger.close(order.tenant_id, order.id).await {
            log::warn!("order {}: the ledger could not close its payment, retried later: {e}", order.id);
            return Ok(false);
        }
        match self.sync_at(order.tenant_id, order.id, now).await {
            Ok((EventOutcome::Applied, _)) => Ok(true),
            Ok(_) => {
                log::warn!("order {}: its payment was closed, yet the ledger's answer changes nothing", order.id);
                Ok(false)
            }
            Err(e) => {
                log::warn!("order {}: syncing it after its payment was closed failed, retried later: {e}", order.id);
                Ok(false)
            }
        }
    }

    /// [`Self::sync`] as of `now`, with the order as it stands afterwards (`None` when
    /// unknown).
    async fn sync_at(&self, tenant_id: Id, order_id: Id, now: Timestamp) -> Result<(EventOutcome, Option<Order>)> {
        for _ in 0..WRITE_ATTEMPTS {
            let Some(order) = self.repo.get_order(Party::Platform, order_id).await?.filter(|o| o.tenant_id == tenant_id) else {
                log::warn!("sync of unknown order {order_id} of tenant {tenant_id}");
                return Ok((EventOutcome::Unknown, None));
            };
            let money = self.ledger.money(tenant_id, order_id).await?;
            let Some((next, action)) = project(&order, &money, now)? else {
                return Ok((EventOutcome::Stale, Some(order)));
            };
            // A change of the refunds alone is not audited here: the ledger audits each refund.
            // It is an event (`order.refunded`) when a refund succeeded.
            let audit = action.map(|action| system_audit(action, &order, &next, now));
            let effects = Effects::maybe_audited(audit).with_events(events::of_change(&order, &next, now));
            failpoint!("orders.sync");
            if self.repo.update_order(next.clone(), order.state(), effects).await? {
                return Ok((EventOutcome::Applied, Some(next)));
            }
            // Someone else moved the order meanwhile: read both again.
        }
        Err(Error::conflict(Reason::TryAgain, "the order kept changing while it was being synced; try again"))
    }

    /// The ledger's answer to a call for `order`. After an error that leaves the ledger's
    /// state unknown (unavailable), or a refusal of the platform the ledger recorded (a refund
    /// failed because a share could not be taken back first, say), the order is synced
    /// best-effort first, so it shows what the ledger holds; the error is answered unchanged.
    async fn checked<T>(&self, order: &Order, result: Result<T>) -> Result<T> {
        if let Err(Error::Upstream(_) | Error::Unavailable { .. } | Error::PlatformFailed { .. }) = &result
            && let Err(e) = self.sync_at(order.tenant_id, order.id, self.clock.now()).await
        {
            log::warn!("order {}: syncing it after the ledger failed failed too: {e}", order.id);
        }
        result
    }

    /// The order as shown after a ledger call that succeeded, synced. The money moved, so a
    /// failing sync is no error of the request's: it is logged, the order shown as read with
    /// the ledger's refunds of it read now, and the ledger's event syncs it later.
    async fn synced(&self, order: Order) -> Result<OrderView> {
        let order = match self.best_effort_sync(order, "after its ledger call (the ledger's event syncs it later)").await {
            Ok(synced) => synced,
            Err(read) => {
                let refunds = self.ledger.refunds(vec![(read.tenant_id, read.id)]).await?;
                Order { refunds, ..read }
            }
        };
        let shares = self.shares_of(std::slice::from_ref(&order)).await?.remove(&order.id).unwrap_or_default();
        Ok(OrderView::new(order).with_shares(shares))
    }

    /// The ledger's shares of the payments of those of `orders` that may be shared (paid on the
    /// platform), by order; the ledger is not asked when none may be.
    async fn shares_of(&self, orders: &[Order]) -> Result<HashMap<Id, Vec<ShareView>>> {
        let asked: Vec<(Id, Id)> = orders.iter().filter(|o| may_be_shared(o)).map(|o| (o.tenant_id, o.id)).collect();
        let mut shares: HashMap<Id, Vec<ShareView>> = HashMap::new();
        if !asked.is_empty() {
            for s in self.ledger.shares(asked).await? {
                shares.entry(s.order_id).or_default().push(s.share);
            }
        }
        Ok(shares)
    }

    /// The order brought up to what the ledger holds, best-effort: as read when that fails.
    async fn caught_up(&self, order: Order) -> Order {
        self.best_effort_sync(order, "before a refund").await.unwrap_or_else(|read| read)
    }

    /// The order synced with the ledger (as read for an unknown order); `Err` with the order
    /// as read when the sync failed, which is logged saying `when`.
    async fn best_effort_sync(&self, order: Order, when: &str) -> std::result::Result<Order, Order> {
        match self.sync_at(order.tenant_id, order.id, self.clock.now()).await {
            Ok((_, Some(synced))) => Ok(synced),
            Ok((_, None)) => Ok(order),
            Err(e) => {
                log::warn!("order {}: syncing it {when} failed: {e}", order.id);
                Err(order)
            }
        }
    }

    async fn order(&self, actor: &Actor, id: Id) -> Result<Order> {
        self.repo.get_order(actor.party, id).await?.ok_or(Error::NotFound("order"))
    }

    /// The amount and lines of a new order; problems go to `errors`, naming the field.
    fn price(&self, amount: Option<Money>, items: Option<Vec<ItemInput>>, errors: &mut Vec<FieldError>) -> Option<(Money, Vec<OrderItem>)> {
        let amount = match amount.map(Money::check_input) {
            Some(Ok(a)) if a.is_positive() => Some(a),
            Some(Ok(_)) => {
                errors.push(FieldError::new("amount", "must be at least 1 fen"));
                return None;
            }
            Some(Err(m)) => {
                errors.push(FieldError::new("amount", m));
                return None;
            }
            None => None,
        };
        let Some(items) = items else {
            if amount.is_none() {
                errors.push(FieldError::new("amount", "is required without items"));
            }
            return amount.map(|a| (a, Vec::new()));
        };
        if items.is_empty() {
            errors.push(FieldError::new("items", "must hold at least one item (or leave it out and give the amount)"));
            return None;
        }
        if items.len() > self.settings.max_items {
            errors.push(FieldError::new("items", format!("must hold at most {} items", self.settings.max_items)));
            return None;
        }
        let mut lines = Vec::with_capacity(items.len());
        let mut subtotals = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let at = |f: &str| format!("items[{i}].{f}");
            if !(1..=self.settings.max_quantity).contains(&item.quantity) {
                errors.push(FieldError::new(at("quantity"), format!("must be between 1 and {}", self.settings.max_quantity)));
                continue;
            }
            let unit_price = match item.unit_price.check_input() {
                Ok(p) => p,
                Err(m) => {
                    errors.push(FieldError::new(at("unit_price"), m));
                    continue;
                }
            };
            match unit_price.checked_mul(item.quantity) {
                Ok(subtotal) => subtotals.push(subtotal),
                Err(_) => {
                    errors.push(FieldError::new(format!("items[{i}]"), "quantity × unit_price is out of range"));
                    continue;
                }
            }
            lines.push(OrderItem { name: item.name.into_string(), quantity: item.quantity, unit_price });
        }
        if !errors.is_empty() {
            return None;
        }
        let total = match Money::checked_sum(subtotals) {
            Ok(t) if t.is_positive() && t <= Money::MAX_INPUT => t,
            Ok(t) if !t.is_positive() => {
                errors.push(FieldError::new("items", "must add up to at least 1 fen"));
                return None;
            }
            _ => {
                errors.push(FieldError::new("items", format!("must add up to at most {} fen", Money::MAX_INPUT.fen())));
                return None;
            }
        };
        if let Some(a) = amount.filter(|a| *a != total) {
            errors.push(FieldError::new("amount", format!("is {} fen but the items add up to {} fen", a.fen(), total.fen())));
            return None;
        }
        Some((total, lines))
    }

    /// How long a new order can be paid; a problem goes to `errors`.
    fn expiry(&self, expires_in: Option<i64>, errors: &mut Vec<FieldError>) -> Option<chrono::Duration> {
        let Some(secs) = expires_in else {
            return Some(self.settings.default_expiry);
        };
        let (min, max) = (self.settings.min_expiry.num_seconds(), self.settings.max_expiry.num_seconds());
        if (min..=max).contains(&secs) {
            Some(chrono::Duration::seconds(secs))
        } else {
            errors.push(FieldError::new("expires_in", format!("must be between {min} and {max} seconds")));
            None
        }
    }
}

/// The order once it shows what the ledger holds of its money (`money`) at `now`, with the
/// audit action of the change; `None` when it shows it already. The projected fields
/// (status, paid and refunded amounts, openid, payment, discrepancy) and the refunds decide;
/// a change of the refunds alone has no action (the ledger audits each refund).
///
/// - No payment in the ledger: unchanged.
/// - Paid: paid in full, refunded the sum of the succeeded refunds, the status following
///   them — even for a closed order, since the money was taken; no discrepancy.
/// - Unpaid: a `pending` order becomes `paying` with the payment started; others unchanged.
/// - Closed: an unpaid order past its expiry is closed; others unchanged (a close may precede
///   an offline payment of the same order).
/// - Discrepancy: shown, the status unchanged (never paid).
///
/// `Conflict` only when the ledger's refunds do not add up to an amount.
pub(crate) fn project(order: &Order, money: &OrderMoney, now: Timestamp) -> Result<Option<(Order, Option<&'static str>)>> {
    let Some(ledger) = &money.payment else {
        return Ok(None);
    };
    let mut next = Order { refunds: money.refunds.clone(), ..order.clone() };
    let action = match &ledger.state {
        PaymentState::Paid { transaction_id, paid_at } => {
            let succeeded = money.refunds.iter().filter(|r| r.status == RefundStatus::Succeeded).map(|r| r.amount);
            let refunded = Money::checked_sum(succeeded).map_err(|_| {
                Error::conflict(Reason::Discrepancy, format!("the ledger's refunds of order {} do not add up to an amount", order.id))
            })?;
            next.paid_amount = ledger.amount;
            next.refunded_amount = refunded;
            next.status = OrderStatus::Paid.with_refunded(ledger.amount, refunded);
            next.payment = Some(payment_of(ledger, transaction_id.clone(), Some(*paid_at)));
            next.openid = ledger.openid.clone().or(next.openid);
            next.discrepancy = None;
            let payment_known = order.status.is_paid()
                && order.paid_amount == next.paid_amount
                && order.payment == next.payment
                && order.openid == next.openid
                && order.discrepancy.is_none();
            if payment_known { Some("order.refund_settled") } else { Some("order.paid") }
        }
        PaymentState::Unpaid if order.status == OrderStatus::Pending => {
            next.status = OrderStatus::Paying;
            next.payment = Some(payment_of(ledger, None, None));
            next.openid = ledger.openid.clone().or(next.openid);
            Some("order.paying")
        }
        PaymentState::Closed if order.status.is_unpaid() && order.expires_at <= now => {
            next.status = OrderStatus::Closed;
            Some("order.close")
        }
        PaymentState::Discrepancy(why) => {
            next.discrepancy = Some(why.clone());
            Some("order.discrepancy")
        }
        PaymentState::Unpaid | PaymentState::Closed => None,
    };
    let projected = next.status != order.status
        || next.paid_amount != order.paid_amount
        || next.refunded_amount != order.refunded_amount
        || next.openid != order.openid
        || next.payment != order.payment
        || next.discrepancy != order.discrepancy;
    let changed = projected || next.refunds != order.refunds;
    Ok(changed.then_some((Order { updated_at: now, ..next }, action.filter(|_| projected))))
}

/// Whether the ledger may hold shares of `order`'s payment: a paid one made on the platform
/// for a sub-merchant (only those are shared; a direct merchant's or an offline one never
/// is), so reading a direct merchant's orders asks nothing of the ledger.
fn may_be_shared(order: &Order) -> bool {
    order.status.is_paid() && order.payment.as_ref().is_some_and(|p| p.method == PaymentMethod::WechatJsapi && p.sub_merchant)
}

/// The order's payment as the ledger's `payment` says.
fn payment_of(payment: &LedgerPayment, transaction_id: Option<String>, paid_at: Option<Timestamp>) -> Payment {
    Payment {
        method: payment.method,
        out_trade_no: payment.out_trade_no.clone(),
        transaction_id,
        paid_at,
        reference: payment.reference.clone(),
        paid_by: payment.paid_by,
        sub_merchant: payment.sub_merchant,
    }
}

/// 409 for an unpaid order past its expiry (the expiry job closes it soon).
fn check_not_expired(order: &Order, now: Timestamp) -> Result<()> {
    if order.expires_at <= now {
        return Err(Error::conflict(
            Reason::OrderExpired,
            format!("the order expired at {}; create a new one", order.expires_at.to_rfc3339()),
        ));
    }
    Ok(())
}

/// The order's own record as its audit entries show it: the refunds are the ledger's, with
/// audit entries of their own.
fn order_json(order: &Order) -> serde_json::Value {
    let mut json = serde_json::to_value(OrderView::new(order.clone())).unwrap_or_default();
    if let Some(fields) = json.as_object_mut() {
        fields.remove("refunds");
    }
    json
}

/// An order's change the system made on what the ledger holds (no actor).
fn system_audit(action: &str, before: &Order, after: &Order, at: Timestamp) -> AuditRecord {
    AuditRecord::system(at, action, "order", Some(before.id))
        .owned_by(before.partner_id, Some(before.tenant_id))
        .change(Some(&order_json(before)), Some(&order_json(after)))
}

/// A new order number: the day (UTC) and random characters, 24 of `[0-9A-Za-z_-]`, so it
/// is also a valid platform `out_trade_no`.
fn order_no(now: Timestamp) -> String {
    format!("{}{}", now.format("%Y%m%d"), nonce(ORDER_NO_RANDOM))
}

/// The audit record of a caller's request about an order's money (to pay, to refund), which
/// the ledger writes together with the money's movement.
fn request_audit(actor: &Actor, action: &str, order: &Order, asked: serde_json::Value, at: Timestamp) -> AuditRecord {
    AuditRecord::by(actor, at, action, "order", Some(order.id)).owned_by(order.partner_id, Some(order.tenant_id)).with_after(asked)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn an_order_number_is_a_valid_platform_number() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let no = order_no(now);
        assert_eq!(no.len(), 24);
        assert!(no.starts_with("20270115"), "{no}");
        assert!(no.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{no}");
        assert_ne!(no, order_no(now));
    }
}
