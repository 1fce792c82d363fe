//! An order's life through [`OrderService`], its ports doubled with the crate's `mock`
//! feature: what a service embedding the orders domain starts from, and how its tests can
//! stand in for storage and the money ledger.
//!
//! The repository double keeps orders in memory and writes them the way the store does (a
//! conditional update over the state read); the ledger double keeps one order's money and
//! applies the ledger's one refund rule (never more than what is left of what was paid). The
//! order is created, paid offline, refunded in part, then refused a refund of more than is
//! left.
//!
//! Run it with `cargo run -p atrium-orders --example order_service`.
use atrium_kernel::{Actor, Error, Id, Money, Name, Party, PaymentMethod, Reason, RefundStatus, StrEnum, SystemClock};
use atrium_orders::{
    ItemInput, LedgerPayment, MockOrderLedger, MockOrderRepo, NewOrder, NewRefund, Order, OrderMoney, OrderRefund, OrderService,
    OrderSettings, OrderTenant, OrderView, PayOrder, PaymentReference, PaymentState, RefundReason, Subject,
};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The tenant selling, and the user acting for it.
const TENANT: Id = 7;
const CLERK: Id = 42;

/// A lock that shrugs off a poisoned mutex: the doubles hold plain data.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Storage of orders, in memory, with the store's conditional update.
fn order_repo(table: Arc<Mutex<Vec<Order>>>) -> MockOrderRepo {
    let mut repo = MockOrderRepo::new();
    repo.expect_tenant().returning(|_scope, id| Ok((id == TENANT).then_some(OrderTenant { id, partner_id: None })));
    let rows = table.clone();
    repo.expect_insert_order().returning(move |mut order, _audit| {
        let mut rows = lock(&rows);
        order.id = Id::try_from(rows.len()).unwrap_or(Id::MAX) + 1;
        rows.push(order.clone());
        Ok(order)
    });
    let rows = table.clone();
    repo.expect_get_order().returning(move |_scope, id| Ok(lock(&rows).iter().find(|o| o.id == id).cloned()));
    repo.expect_update_order().returning(move |order, read, _audit| {
        // Written only over the state it was read in, so racing writers cannot both move it.
        let mut rows = lock(&table);
        match rows.iter_mut().find(|o| o.id == order.id) {
            Some(stored) if stored.state() == read => {
                *stored = Order { items: stored.items.clone(), ..order };
                Ok(true)
            }
            _ => Ok(false),
        }
    });
    repo
}

/// The money ledger of one order, in memory: offline payments and their refunds.
fn ledger(book: Arc<Mutex<OrderMoney>>) -> MockOrderLedger {
    let mut ledger = MockOrderLedger::new();
    let money = book.clone();
    ledger.expect_charge_offline().returning(move |_tenant, charge| {
        let mut money = lock(&money);
        if money.payment.is_some() {
            return Err(Error::conflict(Reason::AlreadyPaid, "the order is already paid"));
        }
        money.payment = Some(LedgerPayment {
            method: PaymentMethod::Offline,
            out_trade_no: None,
            amount: charge.amount,
            openid: None,
            state: PaymentState::Paid { transaction_id: None, paid_at: chrono::Utc::now() },
            reference: Some(charge.reference),
            paid_by: Some(charge.recorded_by),
            sub_merchant: false,
        });
        Ok(())
    });
    let money = book.clone();
    ledger.expect_refund().returning(move |tenant_id, charge| {
        let mut money = lock(&money);
        let paid = money.payment.as_ref().map_or(Money::ZERO, |p| p.amount);
        let held = money.refunds.iter().filter(|r| r.status.holds_amount()).map(|r| r.amount);
        let refunded = Money::checked_sum(held).map_err(|_| Error::internal("the refunds do not add up"))?;
        let left = paid.checked_sub(refunded).map_err(|_| Error::internal("more refunded than paid"))?;
        if charge.amount > left {
            return Err(Error::conflict(Reason::RefundExceedsPaid, format!("only {} fen are left to refund", left.fen())));
        }
        let now = chrono::Utc::now();
        // An offline payment's refund succeeds at once: the money goes back outside the platform.
        let refund = OrderRefund {
            id: Id::try_from(money.refunds.len()).unwrap_or(Id::MAX) + 1,
            order_id: charge.order_id,
            tenant_id,
            out_refund_no: charge.out_refund_no,
            amount: charge.amount,
            status: RefundStatus::Succeeded,
            reason: charge.reason,
            requested_by: charge.requested_by,
            fail_reason: None,
            settled_at: Some(now),
            created_at: now,
            updated_at: now,
        };
        money.refunds.push(refund.clone());
        Ok(refund)
    });
    let money = book.clone();
    ledger.expect_money().returning(move |_tenant, _order| Ok(lock(&money).clone()));
    ledger.expect_refunds().returning(move |_orders| Ok(lock(&book).refunds.clone()));
    // A direct merchant's payments are not shared.
    ledger.expect_shares().returning(|_orders| Ok(Vec::new()));
    ledger
}

fn show(step: &str, order: &OrderView) {
    println!(
        "{step:<22} order {} ({}): {} — amount {} fen, paid {} fen, refunded {} fen",
        order.id,
        order.order_no,
        order.status.as_str(),
        order.amount.fen(),
        order.paid_amount.fen(),
        order.refunded_amount.fen()
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = OrderService::new(
        Arc::new(order_repo(Arc::default())),
        Arc::new(ledger(Arc::default())),
        Arc::new(SystemClock),
        OrderSettings::default(),
    );
    let clerk = Actor::new(CLERK, "example-session", Party::Tenant { tenant_id: TENANT, partner_id: None }, ["order:*"]);

    // Two bags of beans at 44 yuan and a grinder at 199 yuan: the amount is the items' sum.
    let new = NewOrder {
        tenant_id: None,
        subject: Subject::parse("Coffee beans and a grinder")?,
        amount: None,
        items: Some(vec![
            ItemInput { name: Name::parse("Coffee beans 500 g")?, quantity: 2, unit_price: Money::from_yuan(44) },
            ItemInput { name: Name::parse("Hand grinder")?, quantity: 1, unit_price: Money::from_yuan(199) },
        ]),
        openid: None,
        expires_in: Some(1800),
    };
    let order = service.create(&clerk, new).await?;
    show("created", &order);
    for item in &order.items {
        println!("{:<22}   {} × {} at {} fen", "", item.quantity, item.name, item.unit_price.fen());
    }

    let paid = service.pay(&clerk, order.id, PayOrder::Offline { reference: PaymentReference::parse("BANK-20260401-0042")? }).await?;
    show("paid offline", &paid.order);

    let refund = NewRefund { amount: Money::from_yuan(44), reason: Some(RefundReason::parse("One bag arrived damaged")?) };
    let refunded = service.refund(&clerk, order.id, refund, None).await?;
    show("refunded in part", &refunded.order);
    println!(
        "{:<22}   refund {}: {} fen, {}",
        "",
        refunded.refund.out_refund_no,
        refunded.refund.amount.fen(),
        refunded.refund.status.as_str()
    );

    // The ledger decides what is left to refund; orders answer its refusal unchanged.
    let too_much = NewRefund { amount: Money::from_yuan(250), reason: None };
    match service.refund(&clerk, order.id, too_much, None).await {
        Err(e) => println!("{:<22} refused ({}): {e}", "refund of 250 yuan", e.reason()),
        Ok(r) => println!("{:<22} unexpectedly accepted: {}", "refund of 250 yuan", r.refund.out_refund_no),
    }

    let order = service.get(&clerk, order.id).await?;
    show("as it stands", &order);
    Ok(())
}
