//! The order use cases: create, read and list orders in the caller's scope, pay them through
//! the pay platform or offline, refund them; take in what the payments side learns (a payment,
//! a close, a settled refund); close orders left unpaid past their expiry.
//!
//! Every write is a conditional update against the status it was read in (or the refund
//! reservation, which locks the order), so a caller, a notification and the expiry job racing
//! each other cannot move an order twice or backwards.
use crate::api::*;
use crate::config::OrderSettings;
use crate::lifecycle::{OrderAction, OrderStatus, RefundStatus};
use crate::model::*;
use crate::ports::{OrderPayments, OrderRepo, PaymentState, PrepayRequest, RefundOrder, RefundState};
use crate::text::Openid;
use atrium_kernel::{Actor, AuditRecord, Clock, Error, FieldError, Id, Money, Page, Result, Timestamp};
use std::sync::Arc;

/// How often a conditional write is tried before giving up on a record that keeps changing.
const WRITE_ATTEMPTS: usize = 3;
/// How often a new order number is drawn when the drawn one is taken.
const NUMBER_ATTEMPTS: usize = 3;
/// Random characters of an order number, after its date.
const ORDER_NO_RANDOM: usize = 16;
/// Random characters of a refund number, after its order's number.
const REFUND_NO_RANDOM: usize = 10;

/// What an event from the payments side did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventOutcome {
    /// The order or refund moved forward.
    Applied,
    /// The report repeats what is known, or would move a record backwards: nothing changed.
    Stale,
    /// No such order or refund here; logged.
    Unknown,
}

pub struct OrderService {
    repo: Arc<dyn OrderRepo>,
    payments: Arc<dyn OrderPayments>,
    clock: Arc<dyn Clock>,
    settings: OrderSettings,
}

impl OrderService {
    pub fn new(repo: Arc<dyn OrderRepo>, payments: Arc<dyn OrderPayments>, clock: Arc<dyn Clock>, settings: OrderSettings) -> Self {
        OrderService { repo, payments, clock, settings }
    }

    /// `POST /orders`: a `pending` order of the caller's tenant (or one in its scope), its
    /// amount given or the sum of its items.
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
            match self.repo.insert_order(order.clone(), audit).await {
                Ok(stored) => return Ok(stored.into()),
                // The drawn number is taken: draw again.
                Err(Error::Conflict(why)) => last = Some(why),
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict(last.unwrap_or_else(|| "no free order number was found; try again".into())))
    }

    /// `GET /orders/{id}`; 404 for an order out of scope.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<OrderView> {
        Ok(self.order(actor, id).await?.into())
    }

    /// `GET /orders`: the orders in the caller's scope that match `query`.
    pub async fn list(&self, actor: &Actor, query: OrderQuery) -> Result<Page<OrderView>> {
        Ok(self.repo.list_orders(actor.party, query).await?.map(OrderView::from))
    }

    /// `POST /orders/{id}/pay`. `wechat_jsapi`: prepares the platform payment (the order's
    /// number is the platform's, so asking again while `paying` answers the same prepay) and
    /// moves a `pending` order to `paying`. `offline`: records the payment at once, by whom
    /// and with what reference; a `paying` order's platform order is closed first.
    pub async fn pay(&self, actor: &Actor, id: Id, input: PayOrder) -> Result<OrderPayView> {
        let order = self.order(actor, id).await?;
        match input {
            PayOrder::WechatJsapi { openid } => self.pay_online(actor, order, openid).await,
            PayOrder::Offline { reference } => self.pay_offline(actor, order, reference).await,
        }
    }

    /// `POST /orders/{id}/refund`: refunds (part of) a paid order, at most what is left, at
    /// most `max_refunds` times and within the refund window. The amount is reserved before the
    /// platform is asked, so concurrent refunds cannot exceed the payment; a refund the
    /// platform refuses gives its amount back. An offline-paid order is refunded outside the
    /// platform: the refund succeeds at once.
    pub async fn refund(&self, actor: &Actor, id: Id, input: NewRefund) -> Result<OrderRefundView> {
        let amount = input.amount.check_input().map_err(|m| Error::invalid("amount", m))?;
        if !amount.is_positive() {
            return Err(Error::invalid("amount", "must be at least 1 fen"));
        }
        let order = self.order(actor, id).await?;
        order.status.after(OrderAction::Refund)?;
        if amount > order.paid_amount {
            return Err(Error::invalid("amount", format!("must not exceed the order's paid amount, {} fen", order.paid_amount.fen())));
        }
        let now = self.clock.now();
        let paid_at = order.payment.as_ref().and_then(|p| p.paid_at).unwrap_or(order.updated_at);
        if now - paid_at > self.settings.refund_window {
            return Err(Error::conflict(format!(
                "refunds are possible for {} days after the payment",
                self.settings.refund_window.num_days()
            )));
        }
        let offline = order.payment.as_ref().is_some_and(|p| p.method == PaymentMethod::Offline);
        let wanted = Refund {
            id: 0,
            order_id: order.id,
            tenant_id: order.tenant_id,
            out_refund_no: format!("{}R{}", order.order_no, nonce(REFUND_NO_RANDOM)),
            amount,
            status: if offline { RefundStatus::Succeeded } else { RefundStatus::Processing },
            reason: input.reason.map(|r| r.into_string()).filter(|r| !r.is_empty()),
            settled_at: offline.then_some(now),
            created_at: now,
            updated_at: now,
        };
        let audit = AuditRecord::by(actor, now, "order.refund", "order", Some(order.id))
            .owned_by(order.partner_id, Some(order.tenant_id))
            .with_after(serde_json::json!({ "refund": new_refund_json(&wanted) }));
        let (stored, refund) = match self.repo.reserve_refund(wanted, self.settings.max_refunds, audit).await? {
            RefundReservation::Reserved { order, refund } => (*order, refund),
            // A drawn refund number that is taken: nothing was written.
            RefundReservation::Existing(_) => return Err(Error::conflict("the refund number drawn is taken; try again")),
            RefundReservation::ExceedsPaid { refundable } => {
                return Err(Error::conflict(format!("only {} fen are left to refund", refundable.fen())));
            }
            RefundReservation::TooManyRefunds => {
                return Err(Error::conflict(format!("this order already has {} refunds, the most allowed", self.settings.max_refunds)));
            }
        };
        if offline {
            return Ok(OrderRefundView { order: stored.into(), refund: refund.into() });
        }
        let request = RefundOrder {
            out_trade_no: stored.out_trade_no().to_owned(),
            out_refund_no: refund.out_refund_no.clone(),
            amount: refund.amount,
            total: stored.paid_amount,
            reason: refund.reason.clone(),
        };
        match self.payments.refund(stored.tenant_id, request).await {
            Ok(RefundState::Processing) => Ok(OrderRefundView { order: stored.into(), refund: refund.into() }),
            Ok(settled) => {
                self.apply_refund_state(stored.tenant_id, &refund.out_refund_no, &settled).await?;
                self.refund_view(actor, stored.id, refund.id).await
            }
            // It may have been accepted: it stays processing until the payments side settles it.
            Err(e @ (Error::Upstream(_) | Error::Unavailable { .. } | Error::Internal(_))) => Err(e),
            // Refused: nothing will be paid back, so the amount is free again.
            Err(refused) => {
                if let Err(e) = self.apply_refund_state(stored.tenant_id, &refund.out_refund_no, &RefundState::Failed).await {
                    log::error!("refund {} of order {}: recording the refusal failed: {e}", refund.out_refund_no, stored.id);
                }
                Err(refused)
            }
        }
    }

    /// The payments side learned the state of the order's platform payment `out_trade_no`
    /// (a notification, a query): applied forward only, so repeats and late reports change
    /// nothing. An unknown number is logged and answered `Unknown`.
    pub async fn payment_changed(&self, tenant_id: Id, out_trade_no: &str, state: PaymentState) -> Result<EventOutcome> {
        for _ in 0..WRITE_ATTEMPTS {
            let Some(order) = self.repo.order_by_out_trade_no(tenant_id, out_trade_no.to_owned()).await? else {
                log::warn!("payment report for unknown out_trade_no {out_trade_no} of tenant {tenant_id}");
                return Ok(EventOutcome::Unknown);
            };
            let now = self.clock.now();
            let Some((next, action)) = self.reported(&order, &state, now) else {
                return Ok(EventOutcome::Stale);
            };
            let audit = system_audit(action, &order, &next, now);
            if self.repo.update_order(next, order.status, audit).await? {
                return Ok(EventOutcome::Applied);
            }
        }
        Err(Error::conflict("the order kept changing while it was being updated; try again"))
    }

    /// The payments side learned the state of refund `out_refund_no`: a processing refund
    /// settles once (a failed or closed one gives its amount back); anything else changes
    /// nothing. An unknown number is logged and answered `Unknown`.
    pub async fn refund_changed(&self, tenant_id: Id, out_refund_no: &str, state: RefundState) -> Result<EventOutcome> {
        self.apply_refund_state(tenant_id, out_refund_no, &state).await
    }

    /// Asks the payments side for the payment of `out_trade_no` and applies the answer (for a
    /// job settling an order whose report went missing).
    pub async fn reconcile_payment(&self, tenant_id: Id, out_trade_no: &str) -> Result<EventOutcome> {
        let state = self.payments.query(tenant_id, out_trade_no.to_owned()).await?;
        self.payment_changed(tenant_id, out_trade_no, state).await
    }

    /// Asks the payments side for refund `out_refund_no` and applies the answer.
    pub async fn reconcile_refund(&self, tenant_id: Id, out_refund_no: &str) -> Result<EventOutcome> {
        let state = self.payments.query_refund(tenant_id, out_refund_no.to_owned()).await?;
        self.refund_changed(tenant_id, out_refund_no, state).await
    }

    /// Closes up to `batch` orders left unpaid past their expiry at `now`: a `pending` one at
    /// once; a `paying` one after closing its platform order — or, when the platform says it
    /// was paid meanwhile, records the payment instead. Returns how many orders changed. An
    /// order whose platform order cannot be closed now is logged and left for the next run;
    /// a storage failure ends the run.
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
        let next = match order.status {
            OrderStatus::Pending => order.closed(now).map(|o| (o, "order.close")),
            OrderStatus::Paying => match self.payments.close(order.tenant_id, order.out_trade_no().to_owned()).await {
                Ok(state @ PaymentState::Paid { .. }) => self.reported(&order, &state, now),
                Ok(PaymentState::Closed) => order.closed(now).map(|o| (o, "order.close")),
                Ok(PaymentState::Unpaid | PaymentState::Failed) => {
                    log::warn!("order {}: the platform order {} is still open after a close", order.id, order.out_trade_no());
                    None
                }
                Err(e) => {
                    log::warn!("order {}: closing the platform order {} failed, retried later: {e}", order.id, order.out_trade_no());
                    None
                }
            },
            _ => None,
        };
        let Some((next, action)) = next else {
            return Ok(false);
        };
        let audit = system_audit(action, &order, &next, now);
        // A lost race (paid or closed meanwhile) leaves it to whoever won.
        self.repo.update_order(next, order.status, audit).await
    }

    async fn pay_online(&self, actor: &Actor, order: Order, openid: Option<Openid>) -> Result<OrderPayView> {
        order.status.after(OrderAction::PayOnline)?;
        let now = self.clock.now();
        check_not_expired(&order, now)?;
        let openid = match (openid, &order.openid) {
            (Some(o), _) => o.into_string(),
            (None, Some(o)) => o.clone(),
            (None, None) => return Err(Error::invalid("openid", "is required: the order has no payer's openid")),
        };
        if order.status == OrderStatus::Paying && order.openid.as_deref() != Some(openid.as_str()) {
            return Err(Error::conflict("the order is being paid by another payer"));
        }
        let request = PrepayRequest {
            out_trade_no: order.out_trade_no().to_owned(),
            description: order.subject.clone(),
            amount: order.amount,
            openid: openid.clone(),
            expires_at: order.expires_at,
        };
        // The platform order first: if it cannot be placed, the order stays as it was.
        let prepay = self.payments.prepay(order.tenant_id, request).await?;
        let order = self.start_payment(actor, order, openid, now).await?;
        Ok(OrderPayView { order: order.into(), pay_params: Some(prepay.pay_params) })
    }

    /// Moves the order from `pending` to `paying`, or finds that a racing request or report
    /// moved it already.
    async fn start_payment(&self, actor: &Actor, mut order: Order, openid: String, now: Timestamp) -> Result<Order> {
        for _ in 0..WRITE_ATTEMPTS {
            match order.status {
                OrderStatus::Pending => {}
                // Another pay request, or the payment report, came first.
                OrderStatus::Paying | OrderStatus::Paid | OrderStatus::PartiallyRefunded | OrderStatus::Refunded => return Ok(order),
                OrderStatus::Closed => return Err(Error::conflict("the order was closed meanwhile; create a new one")),
            }
            let next = Order {
                status: OrderStatus::Paying,
                openid: Some(openid.clone()),
                payment: Some(Payment {
                    method: PaymentMethod::WechatJsapi,
                    out_trade_no: Some(order.out_trade_no().to_owned()),
                    transaction_id: None,
                    paid_at: None,
                    reference: None,
                    paid_by: None,
                }),
                updated_at: now,
                ..order.clone()
            };
            let audit = actor_audit(actor, "order.pay", &order, &next, now);
            if self.repo.update_order(next.clone(), OrderStatus::Pending, audit).await? {
                return Ok(next);
            }
            order = self.order(actor, order.id).await?;
        }
        Err(Error::conflict("the order kept changing while it was being updated; try again"))
    }

    async fn pay_offline(&self, actor: &Actor, order: Order, reference: PaymentReference) -> Result<OrderPayView> {
        order.status.after(OrderAction::PayOffline)?;
        let now = self.clock.now();
        check_not_expired(&order, now)?;
        if order.status == OrderStatus::Paying {
            // The payer may be paying on the platform right now: close that order first.
            match self.payments.close(order.tenant_id, order.out_trade_no().to_owned()).await? {
                PaymentState::Closed => {}
                state @ PaymentState::Paid { .. } => {
                    if let Some((paid, action)) = self.reported(&order, &state, now) {
                        let audit = system_audit(action, &order, &paid, now);
                        self.repo.update_order(paid, order.status, audit).await?;
                    }
                    return Err(Error::conflict("the order was paid on the pay platform meanwhile"));
                }
                PaymentState::Unpaid | PaymentState::Failed => {
                    return Err(Error::conflict("the order's platform payment could not be closed; try again"));
                }
            }
        }
        let next = Order {
            status: OrderStatus::Paid,
            paid_amount: order.amount,
            payment: Some(Payment {
                method: PaymentMethod::Offline,
                out_trade_no: None,
                transaction_id: None,
                paid_at: Some(now),
                reference: Some(reference.into_string()),
                paid_by: Some(actor.user_id),
            }),
            updated_at: now,
            ..order.clone()
        };
        let audit = actor_audit(actor, "order.pay", &order, &next, now);
        if !self.repo.update_order(next.clone(), order.status, audit).await? {
            return Err(Error::conflict("the order changed meanwhile; reload it and try again"));
        }
        Ok(OrderPayView { order: next.into(), pay_params: None })
    }

    /// The order after a report of its platform payment, with the audit action, or `None`
    /// when the report changes nothing.
    fn reported(&self, order: &Order, state: &PaymentState, now: Timestamp) -> Option<(Order, &'static str)> {
        match state {
            PaymentState::Paid { transaction_id, paid_at } => {
                if order.status.is_paid() && order.payment.as_ref().is_some_and(|p| p.method == PaymentMethod::Offline) {
                    log::error!(
                        "order {} of tenant {} was paid offline and the pay platform reports payment {transaction_id} too: \
                         one of them must be refunded",
                        order.id,
                        order.tenant_id
                    );
                }
                order.paid_online(transaction_id.clone(), *paid_at, now).map(|o| (o, "order.paid"))
            }
            PaymentState::Closed => order.closed(now).map(|o| (o, "order.close")),
            PaymentState::Unpaid | PaymentState::Failed => None,
        }
    }

    /// Settles a processing refund as `state` reports, once; see [`Self::refund_changed`].
    async fn apply_refund_state(&self, tenant_id: Id, out_refund_no: &str, state: &RefundState) -> Result<EventOutcome> {
        for _ in 0..WRITE_ATTEMPTS {
            let Some(refund) = self.repo.refund_by_out_refund_no(tenant_id, out_refund_no.to_owned()).await? else {
                log::warn!("refund report for unknown out_refund_no {out_refund_no} of tenant {tenant_id}");
                return Ok(EventOutcome::Unknown);
            };
            let Some(status) = refund.status.advance(state.status()) else {
                return Ok(EventOutcome::Stale);
            };
            let now = self.clock.now();
            let settled_at = match state {
                RefundState::Succeeded { at } => *at,
                _ => now,
            };
            let next = Refund { status, settled_at: Some(settled_at), updated_at: now, ..refund.clone() };
            let audit = AuditRecord::system(now, "order.refund_settled", "order", Some(refund.order_id))
                .owned_by(None, Some(tenant_id))
                .change(Some(&refund_json(&refund)), Some(&refund_json(&next)));
            if self.repo.update_refund(next, refund.status, audit).await? {
                return Ok(EventOutcome::Applied);
            }
        }
        Err(Error::conflict("the refund kept changing while it was being updated; try again"))
    }

    async fn refund_view(&self, actor: &Actor, order_id: Id, refund_id: Id) -> Result<OrderRefundView> {
        let order = self.order(actor, order_id).await?;
        let refund = order.refunds.iter().find(|r| r.id == refund_id).cloned().ok_or(Error::NotFound("refund"))?;
        Ok(OrderRefundView { order: order.into(), refund: refund.into() })
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

/// 409 for an unpaid order past its expiry (the expiry job closes it soon).
fn check_not_expired(order: &Order, now: Timestamp) -> Result<()> {
    if order.expires_at <= now {
        return Err(Error::conflict(format!("the order expired at {}; create a new one", order.expires_at.to_rfc3339())));
    }
    Ok(())
}

fn audit_json<T: serde::Serialize>(record: &T) -> serde_json::Value {
    serde_json::to_value(record).unwrap_or_default()
}

fn order_json(order: &Order) -> serde_json::Value {
    audit_json(&OrderView::from(order.clone()))
}

/// A refund about to be reserved: no id yet.
fn new_refund_json(refund: &Refund) -> serde_json::Value {
    let mut view = audit_json(&RefundView::from(refund.clone()));
    if let Some(map) = view.as_object_mut() {
        map.remove("id");
    }
    view
}

fn refund_json(refund: &Refund) -> serde_json::Value {
    let mut view = audit_json(&RefundView::from(refund.clone()));
    if let Some(map) = view.as_object_mut() {
        map.insert("settled_at".into(), audit_json(&refund.settled_at));
    }
    serde_json::json!({ "refund": view })
}

/// An order's change by a caller.
fn actor_audit(actor: &Actor, action: &str, before: &Order, after: &Order, at: Timestamp) -> AuditRecord {
    AuditRecord::by(actor, at, action, "order", Some(before.id))
        .owned_by(before.partner_id, Some(before.tenant_id))
        .change(Some(&order_json(before)), Some(&order_json(after)))
}

/// An order's change the system made on what the payments side reported (no actor).
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

/// `len` random characters of `[0-9A-Za-z_-]`.
fn nonce(len: usize) -> String {
    let mut s = atrium_kernel::secret::random_token(len);
    s.truncate(len);
    s
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
