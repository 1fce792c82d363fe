//! Service tests against mocked ports, one file per use case. The repository mock keeps its
//! orders in memory and writes them as the store does (conditional updates, the refund
//! reservation's rules), so races and limits can be tested here.
use crate::config::OrderSettings;
use crate::lifecycle::{OrderStatus, RefundStatus};
use crate::model::*;
use crate::ports::{MockOrderPayments, MockOrderRepo};
use crate::service::OrderService;
use atrium_kernel::{Actor, AuditRecord, Error, FixedClock, Id, Money, Page, Party, Timestamp};
use chrono::{Duration, TimeZone, Utc};
use std::sync::{Arc, Mutex};

mod create;
mod events;
mod pay;
mod refund;

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

/// A stored order of `TENANT` for 1000 fen, created a minute ago, expiring in half an hour.
fn order(id: Id, status: OrderStatus) -> Order {
    let created = now() - Duration::minutes(1);
    let mut o = Order {
        id,
        order_no: format!("20260401ORDER{id:04}"),
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
        refunds: Vec::new(),
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
        });
    }
    if status.is_paid() {
        o.paid_amount = o.amount;
    }
    o
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
        });
    }
    o
}

fn refund(order: &Order, no: &str, amount: i64, status: RefundStatus) -> Refund {
    Refund {
        id: 0,
        order_id: order.id,
        tenant_id: order.tenant_id,
        out_refund_no: no.into(),
        amount: Money::from_fen(amount),
        status,
        reason: None,
        settled_at: status.is_final().then(now),
        created_at: now() - Duration::hours(1),
        updated_at: now() - Duration::hours(1),
    }
}

/// The fields an error names.
fn fields_of(e: &Error) -> Vec<String> {
    match e {
        Error::Invalid(fields) | Error::Blocked(fields) => fields.iter().map(|f| f.field.clone()).collect(),
        Error::NoSuch(f) => vec![f.field.clone()],
        _ => vec![],
    }
}

/// The repository's state: orders (with their refunds) and the audit records written.
#[derive(Clone, Default)]
struct Db {
    orders: Arc<Mutex<Vec<Order>>>,
    audits: Arc<Mutex<Vec<AuditRecord>>>,
}

impl Db {
    fn with(orders: Vec<Order>) -> Db {
        let db = Db::default();
        *db.orders.lock().unwrap() = orders;
        db
    }

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

    /// A repository over this state that behaves as the store does.
    fn repo(&self) -> MockOrderRepo {
        let mut repo = MockOrderRepo::new();
        repo.expect_tenant().returning(|scope, id| {
            let partner_id = partner_of(id);
            Ok((partner_id.is_some() && scope.sees_tenant(id, partner_id)).then_some(OrderTenant { id, partner_id }))
        });

        let (orders, audits) = (self.orders.clone(), self.audits.clone());
        repo.expect_insert_order().returning(move |order, mut audit| {
            let mut orders = orders.lock().unwrap();
            if orders.iter().any(|o| o.tenant_id == order.tenant_id && o.order_no == order.order_no) {
                return Err(Error::conflict("order no already exists"));
            }
            let stored = Order { id: 100 + orders.len() as Id, partner_id: partner_of(order.tenant_id), ..order };
            orders.push(stored.clone());
            audit.target_id = Some(stored.id);
            audits.lock().unwrap().push(audit);
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

        let (orders, audits) = (self.orders.clone(), self.audits.clone());
        repo.expect_update_order().returning(move |order, read_status, audit| {
            let mut orders = orders.lock().unwrap();
            let Some(stored) = orders.iter_mut().find(|o| o.id == order.id && o.tenant_id == order.tenant_id) else {
                return Ok(false);
            };
            if stored.status != read_status {
                return Ok(false);
            }
            stored.status = order.status;
            stored.paid_amount = order.paid_amount;
            stored.openid = order.openid;
            stored.payment = order.payment;
            stored.updated_at = order.updated_at;
            audits.lock().unwrap().push(audit);
            Ok(true)
        });

        let orders = self.orders.clone();
        repo.expect_order_by_out_trade_no().returning(move |tenant_id, no| {
            Ok(orders.lock().unwrap().iter().find(|o| o.tenant_id == tenant_id && o.out_trade_no() == no).cloned())
        });

        let orders = self.orders.clone();
        repo.expect_refund_by_out_refund_no().returning(move |tenant_id, no| {
            Ok(orders
                .lock()
                .unwrap()
                .iter()
                .flat_map(|o| o.refunds.iter())
                .find(|r| r.tenant_id == tenant_id && r.out_refund_no == no)
                .cloned())
        });

        let (orders, audits) = (self.orders.clone(), self.audits.clone());
        repo.expect_reserve_refund().returning(move |refund, max_refunds, audit| {
            let mut orders = orders.lock().unwrap();
            if let Some(r) = orders
                .iter()
                .flat_map(|o| o.refunds.iter())
                .find(|r| r.tenant_id == refund.tenant_id && r.out_refund_no == refund.out_refund_no)
            {
                return Ok(RefundReservation::Existing(r.clone()));
            }
            let Some(order) = orders.iter_mut().find(|o| o.id == refund.order_id && o.tenant_id == refund.tenant_id) else {
                return Err(Error::NotFound("order"));
            };
            if !matches!(order.status, OrderStatus::Paid | OrderStatus::PartiallyRefunded) {
                return Err(Error::conflict("not refundable"));
            }
            if order.refunds.len() >= max_refunds as usize {
                return Ok(RefundReservation::TooManyRefunds);
            }
            let refundable = order.refundable();
            if refund.amount > refundable {
                return Ok(RefundReservation::ExceedsPaid { refundable });
            }
            let stored = Refund { id: 500 + order.refunds.len() as Id, ..refund };
            order.refunds.push(stored.clone());
            settle(order, stored.updated_at);
            audits.lock().unwrap().push(audit);
            Ok(RefundReservation::Reserved { order: Box::new(order.clone()), refund: stored })
        });

        let (orders, audits) = (self.orders.clone(), self.audits.clone());
        repo.expect_update_refund().returning(move |refund, read_status, audit| {
            let mut orders = orders.lock().unwrap();
            let Some(order) = orders.iter_mut().find(|o| o.id == refund.order_id) else {
                return Ok(false);
            };
            let Some(stored) = order.refunds.iter_mut().find(|r| r.out_refund_no == refund.out_refund_no && r.status == read_status) else {
                return Ok(false);
            };
            stored.status = refund.status;
            stored.settled_at = refund.settled_at;
            stored.updated_at = refund.updated_at;
            settle(order, refund.updated_at);
            audits.lock().unwrap().push(audit);
            Ok(true)
        });

        let orders = self.orders.clone();
        repo.expect_due_for_expiry().returning(move |at, limit| {
            let mut due: Vec<Order> =
                orders.lock().unwrap().iter().filter(|o| o.status.is_unpaid() && o.expires_at <= at).cloned().collect();
            due.sort_by_key(|o| (o.expires_at, o.id));
            due.truncate(limit as usize);
            Ok(due)
        });
        repo
    }
}

/// The order's refunded amount and status after its refunds changed, as the store does it.
fn settle(order: &mut Order, at: Timestamp) {
    let succeeded = order.refunds.iter().filter(|r| r.status == RefundStatus::Succeeded).map(|r| r.amount);
    order.refunded_amount = Money::checked_sum(succeeded).expect("small sums");
    order.status = order.status.with_refunded(order.paid_amount, order.refunded_amount);
    order.updated_at = at;
}

fn svc(db: &Db, payments: MockOrderPayments) -> OrderService {
    OrderService::new(Arc::new(db.repo()), Arc::new(payments), Arc::new(FixedClock::new(now())), OrderSettings::default())
}
