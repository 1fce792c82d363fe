//! Service tests against doubles of the ports, one file per use case. The repository mock
//! keeps its orders in memory and writes them as the store does (conditional updates against
//! the state read), so races can be tested here; the ledger is a small in-memory fake that
//! keeps each order's money, records every call, and can be told to fail or to let something
//! happen just before it answers.
use crate::config::OrderSettings;
use crate::lifecycle::OrderStatus;
use crate::model::*;
use crate::ports::*;
use crate::service::OrderService;
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::{Actor, AuditRecord, Error, Event, FixedClock, Id, Money, Page, Party, PayParams, RefundStatus, Result, Timestamp};
use chrono::{Duration, TimeZone, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

mod create;
mod expiry;
mod pay;
mod refund;
mod sync;

const TENANT: Id = 3;
const PARTNER: Id = 9;
/// A tenant of another partner.
const OTHER_TENANT: Id = 4;
const OTHER_PARTNER: Id = 8;
const USER: Id = 10;

fn now() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 4, 1, 4, 0, 0).single().expect("valid")
}

fn tenant_actor() -> Actor {
    Actor::new(USER, "s", Party::Tenant { tenant_id: TENANT, partner_id: Some(PARTNER) }, ["order:*"])
}

fn other_tenant_actor() -> Actor {
    Actor::new(20, "s", Party::Tenant { tenant_id: OTHER_TENANT, partner_id: Some(OTHER_PARTNER) }, ["order:*"])
}

fn partner_actor(partner_id: Id) -> Actor {
    Actor::new(30, "s", Party::Partner { partner_id }, ["order:*"])
}

fn platform_actor() -> Actor {
    Actor::new(1, "s", Party::Platform, ["*"])
}

fn partner_of(tenant_id: Id) -> Option<Id> {
    match tenant_id {
        TENANT => Some(PARTNER),
        OTHER_TENANT => Some(OTHER_PARTNER),
        _ => None,
    }
}

fn order_no_of(id: Id) -> String {
    format!("20260401ORDER{id:04}")
}

/// A stored order of `TENANT` for 1000 fen, created a minute ago, expiring in half an hour,
/// showing a platform payment as its status implies.
fn order(id: Id, status: OrderStatus) -> Order {
    let created = now() - Duration::minutes(1);
    let mut o = Order {
        id,
        order_no: order_no_of(id),
        tenant_id: TENANT,
        partner_id: Some(PARTNER),
        subject: "Coffee beans".into(),
        amount: Money::from_fen(1000),
        paid_amount: Money::ZERO,
        refunded_amount: Money::ZERO,
        status,
        items: vec![OrderItem { name: "Beans 500 g".into(), quantity: 2, unit_price: Money::from_fen(500) }],
        openid: Some("o-ann".into()),
        payment: None,
        discrepancy: None,
        refunds: vec![],
        expires_at: created + Duration::minutes(30),
        created_by: Some(USER),
        created_at: created,
        updated_at: created,
    };
    if status != OrderStatus::Pending && status != OrderStatus::Closed {
        o.payment = Some(Payment {
            method: PaymentMethod::WechatJsapi,
            out_trade_no: Some(o.order_no.clone()),
            transaction_id: status.is_paid().then(|| "4200000001".into()),
            paid_at: status.is_paid().then(|| now() - Duration::days(1)),
            reference: None,
            paid_by: None,
            sub_merchant: false,
        });
    }
    if status.is_paid() {
        o.paid_amount = o.amount;
    }
    o
}

/// An unpaid order (`pending` or `paying`) whose expiry passed `ago`.
fn expired(id: Id, status: OrderStatus, ago: Duration) -> Order {
    Order { expires_at: now() - ago, ..order(id, status) }
}

/// A paid order of 1000 fen, paid a day ago by `method`.
fn paid(id: Id, method: PaymentMethod) -> Order {
    let mut o = order(id, OrderStatus::Paid);
    if method == PaymentMethod::Offline {
        o.payment = Some(Payment {
            method,
            out_trade_no: None,
            transaction_id: None,
            paid_at: Some(now() - Duration::days(1)),
            reference: Some("BANK-1".into()),
            paid_by: Some(USER),
            sub_merchant: false,
        });
    }
    o
}

/// The ledger's platform payment of `order` (1000 fen, by o-ann) in `state`.
fn online(order: &Order, state: PaymentState) -> LedgerPayment {
    LedgerPayment {
        method: PaymentMethod::WechatJsapi,
        out_trade_no: Some(order.order_no.clone()),
        amount: order.amount,
        openid: Some("o-ann".into()),
        state,
        reference: None,
        paid_by: None,
        sub_merchant: false,
    }
}

/// The ledger's platform payment of `order`, paid `4200000001` a day ago.
fn online_paid(order: &Order) -> LedgerPayment {
    online(order, PaymentState::Paid { transaction_id: Some("4200000001".into()), paid_at: now() - Duration::days(1) })
}

/// The ledger's offline payment of `order`, paid with `BANK-1` a day ago.
fn offline_paid(order: &Order) -> LedgerPayment {
    LedgerPayment {
        method: PaymentMethod::Offline,
        out_trade_no: None,
        amount: order.amount,
        openid: None,
        state: PaymentState::Paid { transaction_id: None, paid_at: now() - Duration::days(1) },
        reference: Some("BANK-1".into()),
        paid_by: Some(USER),
        sub_merchant: false,
    }
}

fn refund(order: &Order, id: Id, amount: i64, status: RefundStatus) -> OrderRefund {
    OrderRefund {
        id,
        order_id: order.id,
        tenant_id: order.tenant_id,
        out_refund_no: format!("{}R{id:010}", order.order_no),
        amount: Money::from_fen(amount),
        status,
        reason: None,
        requested_by: Some(USER),
        fail_reason: None,
        settled_at: status.is_final().then(now),
        created_at: now() - Duration::hours(1),
        updated_at: now() - Duration::hours(1),
    }
}

fn pay_params(prepay_id: &str) -> PayParams {
    PayParams {
        app_id: "wx_mp".into(),
        time_stamp: "1775016000".into(),
        nonce_str: "n".into(),
        package: format!("prepay_id={prepay_id}"),
        sign_type: "RSA".into(),
        pay_sign: "sig".into(),
    }
}

/// The fields an error names.
fn fields_of(e: &Error) -> Vec<String> {
    match e {
        Error::Invalid(fields) | Error::Blocked(_, fields) => fields.iter().map(|f| f.field.clone()).collect(),
        Error::NoSuch(f) => vec![f.field.clone()],
        _ => vec![],
    }
}

/// The repository's state: orders (their refunds are the ledger's) and the audit records
/// written.
#[derive(Clone, Default)]
struct Db {
    orders: Arc<Mutex<Vec<Order>>>,
    audits: Arc<Mutex<Vec<AuditRecord>>>,
    /// The events written, in order.
    events: Arc<Mutex<Vec<Event>>>,
    /// How many conditional writes were tried, written or not.
    writes: Arc<Mutex<usize>>,
    /// Run at the start of every conditional write: another writer getting there first.
    before_write: Arc<Mutex<Option<Hook>>>,
}

impl Db {
    fn with(orders: Vec<Order>) -> Db {
        let db = Db::default();
        *db.orders.lock().unwrap() = orders;
        db
    }

    /// The order as stored.
    fn order(&self, id: Id) -> Order {
        self.orders.lock().unwrap().iter().find(|o| o.id == id).cloned().expect("stored order")
    }

    fn set(&self, order: Order) {
        let mut orders = self.orders.lock().unwrap();
        if let Some(o) = orders.iter_mut().find(|o| o.id == order.id) {
            *o = order;
        }
    }

    fn actions(&self) -> Vec<String> {
        self.audits.lock().unwrap().iter().map(|a| a.action.clone()).collect()
    }

    fn audits(&self) -> Vec<AuditRecord> {
        self.audits.lock().unwrap().clone()
    }

    /// The types of the events written, in order.
    fn event_kinds(&self) -> Vec<&'static str> {
        self.events.lock().unwrap().iter().map(|e| e.kind).collect()
    }

    /// The events written, each as its type and data.
    fn events(&self) -> Vec<(&'static str, serde_json::Value)> {
        self.events.lock().unwrap().iter().map(|e| (e.kind, e.data.clone())).collect()
    }

    fn before_write(&self, hook: impl FnMut() + Send + 'static) {
        *self.before_write.lock().unwrap() = Some(Box::new(hook));
    }

    fn writes(&self) -> usize {
        *self.writes.lock().unwrap()
    }

    /// A repository over this state that behaves as the store does.
    fn repo(&self) -> MockOrderRepo {
        let mut repo = MockOrderRepo::new();
        repo.expect_tenant().returning(|scope, id| {
            let partner_id = partner_of(id);
            Ok((partner_id.is_some() && scope.sees_tenant(id, partner_id)).then_some(OrderTenant { id, partner_id }))
        });

        let (orders, audits, events) = (self.orders.clone(), self.audits.clone(), self.events.clone());
        repo.expect_insert_order().returning(move |order, effects| {
            let mut orders = orders.lock().unwrap();
            if orders.iter().any(|o| o.tenant_id == order.tenant_id && o.order_no == order.order_no) {
                return Err(Error::conflict(Reason::Duplicate, "order no already exists"));
            }
            let stored = Order { id: 100 + orders.len() as Id, partner_id: partner_of(order.tenant_id), ..order };
            orders.push(stored.clone());
            let effects = effects.created(stored.id);
            audits.lock().unwrap().extend(effects.audit);
            events.lock().unwrap().extend(effects.events);
            Ok(stored)
        });

        let orders = self.orders.clone();
        repo.expect_get_order().returning(move |scope, id| {
            Ok(orders.lock().unwrap().iter().find(|o| o.id == id && scope.sees_tenant(o.tenant_id, o.partner_id)).cloned())
        });

        let orders = self.orders.clone();
        repo.expect_list_orders().returning(move |scope, q| {
            let items: Vec<Order> = orders
                .lock()
                .unwrap()
                .iter()
                .filter(|o| scope.sees_tenant(o.tenant_id, o.partner_id))
                .filter(|o| q.status.is_none_or(|s| o.status == s))
                .cloned()
                .collect();
            let total = items.len() as i64;
            Ok(Page::new(items, total, q.list.page))
        });

        let (orders, audits, events, writes, before) =
            (self.orders.clone(), self.audits.clone(), self.events.clone(), self.writes.clone(), self.before_write.clone());
        repo.expect_update_order().returning(move |order, read, effects| {
            *writes.lock().unwrap() += 1;
            if let Some(hook) = before.lock().unwrap().as_mut() {
                hook();
            }
            let mut orders = orders.lock().unwrap();
            let Some(stored) = orders.iter_mut().find(|o| o.id == order.id && o.tenant_id == order.tenant_id) else {
                return Ok(false);
            };
            if stored.state() != read {
                return Ok(false);
            }
            stored.status = order.status;
            stored.paid_amount = order.paid_amount;
            stored.refunded_amount = order.refunded_amount;
            stored.openid = order.openid;
            stored.payment = order.payment;
            stored.discrepancy = order.discrepancy;
            stored.updated_at = order.updated_at;
            // As the store does: a refund not stored yet is added, a stored one changes only
            // while processing or in its own status.
            for r in order.refunds {
                match stored.refunds.iter_mut().find(|s| s.id == r.id) {
                    None => stored.refunds.push(r),
                    Some(s) if s.status == RefundStatus::Processing || s.status == r.status => *s = r,
                    Some(_) => {}
                }
            }
            audits.lock().unwrap().extend(effects.audit);
            events.lock().unwrap().extend(effects.events);
            Ok(true)
        });

        let orders = self.orders.clone();
        repo.expect_due_for_expiry().returning(move |at, limit| {
            let mut due: Vec<Order> = orders
                .lock()
                .unwrap()
                .iter()
                .filter(|o| o.status.is_unpaid() && o.expires_at <= at && o.discrepancy.is_none())
                .cloned()
                .collect();
            due.sort_by_key(|o| (o.expires_at, o.id));
            due.truncate(limit as usize);
            Ok(due)
        });
        repo
    }
}

/// A call the ledger received, with the tenant it acted for.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Charge(Id, Charge),
    Offline(Id, OfflineCharge),
    Refund(Id, RefundCharge),
    Close(Id, Id),
    Money(Id, Id),
    Refunds(Vec<(Id, Id)>),
    Shares(Vec<(Id, Id)>),
}

type Hook = Box<dyn FnMut() + Send>;
/// How a call of the fake ledger fails.
type Failure = fn() -> Error;

/// An in-memory money ledger, keeping the rules orders rely on: one platform payment per
/// order (resumed, not doubled), one of two payments wins, a refund number names one refund,
/// never more refunded than paid, an offline payment's refund succeeds at once.
#[derive(Clone, Default)]
struct Ledger {
    money: Arc<Mutex<HashMap<(Id, Id), OrderMoney>>>,
    calls: Arc<Mutex<Vec<Call>>>,
    /// Calls (`"charge"`, `"offline"`, `"refund"`, `"close"`, `"money"`, `"refunds"`) that
    /// fail, and how.
    failures: Arc<Mutex<HashMap<&'static str, Failure>>>,
    /// Run before every answer of `money`: something happening meanwhile.
    before_money: Arc<Mutex<Option<Hook>>>,
}

impl Ledger {
    /// `TENANT`'s order `order_id` holds `payment` and `refunds`.
    fn set(&self, order_id: Id, payment: Option<LedgerPayment>, refunds: Vec<OrderRefund>) {
        self.money.lock().unwrap().insert((TENANT, order_id), OrderMoney { payment, refunds });
    }

    /// The ledger holding `payment` of `order`, no refunds.
    fn holding(order: &Order, payment: LedgerPayment) -> Ledger {
        let ledger = Ledger::default();
        ledger.set(order.id, Some(payment), Vec::new());
        ledger
    }

    fn state(&self, order_id: Id) -> OrderMoney {
        self.money.lock().unwrap().get(&(TENANT, order_id)).cloned().unwrap_or_default()
    }

    /// Refund `out_refund_no` of `TENANT`'s order settles as `status`.
    fn settle(&self, order_id: Id, out_refund_no: &str, status: RefundStatus) {
        let mut money = self.money.lock().unwrap();
        let refund = money.get_mut(&(TENANT, order_id)).and_then(|m| m.refunds.iter_mut().find(|r| r.out_refund_no == out_refund_no));
        if let Some(r) = refund {
            r.status = status;
            r.settled_at = Some(now());
        }
    }

    fn fail(&self, call: &'static str, error: Failure) {
        self.failures.lock().unwrap().insert(call, error);
    }

    fn before_money(&self, hook: impl FnMut() + Send + 'static) {
        *self.before_money.lock().unwrap() = Some(Box::new(hook));
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The calls other than reads of the money.
    fn actions(&self) -> Vec<Call> {
        self.calls().into_iter().filter(|c| !matches!(c, Call::Money(..) | Call::Refunds(..) | Call::Shares(..))).collect()
    }

    fn enter(&self, call: Call, name: &'static str) -> Result<()> {
        self.calls.lock().unwrap().push(call);
        match self.failures.lock().unwrap().get(name) {
            Some(error) => Err(error()),
            None => Ok(()),
        }
    }
}

#[async_trait]
impl OrderLedger for Ledger {
    async fn charge(&self, tenant_id: Id, charge: Charge) -> Result<PayParams> {
        self.enter(Call::Charge(tenant_id, charge.clone()), "charge")?;
        let mut money = self.money.lock().unwrap();
        let entry = money.entry((tenant_id, charge.order_id)).or_default();
        match &entry.payment {
            None => {
                entry.payment = Some(LedgerPayment {
                    method: PaymentMethod::WechatJsapi,
                    out_trade_no: Some(charge.out_trade_no.clone()),
                    amount: charge.amount,
                    openid: Some(charge.openid.clone()),
                    state: PaymentState::Unpaid,
                    reference: None,
                    paid_by: None,
                    sub_merchant: false,
                });
            }
            Some(p) if p.state == PaymentState::Unpaid && p.method == PaymentMethod::WechatJsapi => {
                if p.openid.as_deref() != Some(charge.openid.as_str()) {
                    return Err(Error::conflict(Reason::OtherPayer, "the order is being paid by another payer"));
                }
            }
            Some(_) => return Err(Error::conflict(Reason::State, "the order's payment is no longer open")),
        }
        Ok(pay_params(&format!("wx_prepay_{}", charge.out_trade_no)))
    }

    async fn charge_offline(&self, tenant_id: Id, charge: OfflineCharge) -> Result<()> {
        self.enter(Call::Offline(tenant_id, charge.clone()), "offline")?;
        let mut money = self.money.lock().unwrap();
        let entry = money.entry((tenant_id, charge.order_id)).or_default();
        if entry.payment.as_ref().is_some_and(|p| matches!(p.state, PaymentState::Paid { .. })) {
            return Err(Error::conflict(Reason::AlreadyPaid, "the order is already paid"));
        }
        entry.payment = Some(LedgerPayment {
            method: PaymentMethod::Offline,
            out_trade_no: None,
            amount: charge.amount,
            openid: None,
            state: PaymentState::Paid { transaction_id: None, paid_at: now() },
            reference: Some(charge.reference),
            paid_by: Some(charge.recorded_by),
            sub_merchant: false,
        });
        Ok(())
    }

    async fn refund(&self, tenant_id: Id, refund: RefundCharge) -> Result<OrderRefund> {
        self.enter(Call::Refund(tenant_id, refund.clone()), "refund")?;
        let mut money = self.money.lock().unwrap();
        let entry = money.entry((tenant_id, refund.order_id)).or_default();
        let Some(payment) = entry.payment.as_ref().filter(|p| matches!(p.state, PaymentState::Paid { .. })) else {
            return Err(Error::conflict(Reason::State, "the order's payment is not paid"));
        };
        if let Some(same) = entry.refunds.iter().find(|r| r.out_refund_no == refund.out_refund_no) {
            return Ok(same.clone());
        }
        let held = Money::checked_sum(entry.refunds.iter().filter(|r| r.status.holds_amount()).map(|r| r.amount)).expect("small sums");
        let left = payment.amount.checked_sub(held).expect("small sums");
        if refund.amount > left {
            return Err(Error::conflict(Reason::RefundExceedsPaid, format!("only {} fen are left to refund", left.fen())));
        }
        let offline = payment.method == PaymentMethod::Offline;
        let stored = OrderRefund {
            id: 500 + entry.refunds.len() as Id,
            order_id: refund.order_id,
            tenant_id,
            out_refund_no: refund.out_refund_no,
            amount: refund.amount,
            status: if offline { RefundStatus::Succeeded } else { RefundStatus::Processing },
            reason: refund.reason,
            requested_by: refund.requested_by,
            fail_reason: None,
            settled_at: offline.then(now),
            created_at: now(),
            updated_at: now(),
        };
        entry.refunds.push(stored.clone());
        Ok(stored)
    }

    async fn close(&self, tenant_id: Id, order_id: Id) -> Result<()> {
        self.enter(Call::Close(tenant_id, order_id), "close")?;
        let mut money = self.money.lock().unwrap();
        if let Some(p) = money.get_mut(&(tenant_id, order_id)).and_then(|m| m.payment.as_mut())
            && p.state == PaymentState::Unpaid
        {
            p.state = PaymentState::Closed;
        }
        Ok(())
    }

    async fn money(&self, tenant_id: Id, order_id: Id) -> Result<OrderMoney> {
        self.enter(Call::Money(tenant_id, order_id), "money")?;
        if let Some(hook) = self.before_money.lock().unwrap().as_mut() {
            hook();
        }
        Ok(self.money.lock().unwrap().get(&(tenant_id, order_id)).cloned().unwrap_or_default())
    }

    async fn refunds(&self, orders: Vec<(Id, Id)>) -> Result<Vec<OrderRefund>> {
        self.enter(Call::Refunds(orders.clone()), "refunds")?;
        let money = self.money.lock().unwrap();
        Ok(orders.iter().flat_map(|key| money.get(key).map(|m| m.refunds.clone()).unwrap_or_default()).collect())
    }

    /// Nothing is shared here; what was asked is kept.
    async fn shares(&self, orders: Vec<(Id, Id)>) -> Result<Vec<OrderShare>> {
        self.enter(Call::Shares(orders), "shares")?;
        Ok(Vec::new())
    }
}

fn svc(db: &Db, ledger: &Ledger) -> OrderService {
    svc_with(db, ledger, OrderSettings::default())
}

fn svc_with(db: &Db, ledger: &Ledger, settings: OrderSettings) -> OrderService {
    OrderService::new(Arc::new(db.repo()), Arc::new(ledger.clone()), Arc::new(FixedClock::new(now())), settings)
}

/// The audit record the call carries for the ledger to write, after checking it records who
/// asked for what of which order.
#[track_caller]
fn requested_audit(call: &Call, action: &str, order_id: Id) -> AuditRecord {
    let audit = match call {
        Call::Charge(_, c) => c.audit.clone(),
        Call::Offline(_, c) => c.audit.clone(),
        Call::Refund(_, c) => c.audit.clone(),
        other => panic!("{other:?} carries no audit record"),
    };
    assert_eq!((audit.action.as_str(), audit.actor_user_id, audit.target_id), (action, Some(USER), Some(order_id)));
    assert_eq!((audit.tenant_id, audit.partner_id), (Some(TENANT), Some(PARTNER)));
    audit
}
