//! The money ledger over the real store: [`PaymentService`] on a fresh SQLite database
//! (`atrium-store`, migrated as the server migrates it at start-up), recording an order's
//! payment made outside the pay platform and refunding it.
//!
//! Three refunds of 40 yuan of a 100-yuan payment are asked at once: the store reserves each
//! under the transaction's lock against the ledger's one refund rule, so exactly two go
//! through and the third is refused, whatever their order. Every change writes its follow-up
//! job (a `ledger.order_changed` event for the order) in the same database transaction.
//!
//! The pay platform and the key inspection are the crate's `mock` doubles with no
//! expectations: an offline payment and its refunds never reach the platform.
//!
//! Run it with `cargo run -p atrium-payments --example ledger_sqlite`.
use atrium_kernel::pay::{OfflineCharge, OrderLedger, RefundCharge};
use atrium_kernel::{AuditRecord, Clock, Effects, JobStore, Money, Party, PaymentMethod, StrEnum, SystemClock};
use atrium_orders::{Order, OrderItem, OrderRepo, OrderStatus};
use atrium_org::{Tenant, TenantRepo};
use atrium_payments::{MockMerchantKeys, MockPayPlatform, ORDER_CHANGED, PaymentService, PaymentSettings};
use atrium_store::{Db, DbJobStore, FieldCipher, OrdersStore, OrgStore, PaymentStore};
use std::sync::Arc;

/// The key the store encrypts merchant keys and employees' numbers under; the server derives
/// it from `ATRIUM_MASTER_KEY`.
const MASTER_KEY: [u8; 32] = [7; 32];
/// The user recording the payment and asking for the refunds.
const CLERK: i64 = 42;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let db = Db::connect(&url, 4)?;
    let applied = db.migrate()?;
    println!("database     {url} ({applied} migrations applied)");

    let clock = Arc::new(SystemClock);
    let now = clock.now();

    // The records a ledger's order payment refers to: a tenant and its order.
    let org = OrgStore::new(db.clone(), FieldCipher::new(&MASTER_KEY));
    let tenant = org
        .insert_tenant(
            Tenant::draft(None, "Example Trading Co.", now),
            Effects::audited(AuditRecord::system(now, "tenant.create", "tenant", None)),
        )
        .await?;
    let orders = OrdersStore::new(db.clone());
    let order = Order {
        id: 0,
        order_no: format!("{}EXAMPLE0001", now.format("%Y%m%d")),
        tenant_id: tenant.id,
        partner_id: None,
        subject: "Annual membership".into(),
        amount: Money::from_yuan(100),
        paid_amount: Money::ZERO,
        refunded_amount: Money::ZERO,
        status: OrderStatus::Pending,
        items: vec![OrderItem { name: "Annual membership".into(), quantity: 1, unit_price: Money::from_yuan(100) }],
        openid: None,
        payment: None,
        discrepancy: None,
        refunds: vec![],
        expires_at: now + chrono::Duration::minutes(30),
        created_by: Some(CLERK),
        created_at: now,
        updated_at: now,
    };
    let order = orders
        .insert_order(order, Effects::audited(AuditRecord::system(now, "order.create", "order", None).owned_by(None, Some(tenant.id))))
        .await?;
    println!("order        {} of tenant {} ({}): {} fen", order.order_no, tenant.id, tenant.name, order.amount.fen());

    // The ledger, as the server wires it, with the platform's doubles.
    let jobs = Arc::new(DbJobStore::new(db.clone()));
    let ledger = Arc::new(PaymentService::new(
        Arc::new(PaymentStore::new(db.clone(), FieldCipher::new(&MASTER_KEY))),
        Arc::new(MockPayPlatform::new()),
        Arc::new(MockMerchantKeys::new()),
        jobs.clone(),
        clock.clone(),
        PaymentSettings::new("https://atrium.example.com"),
    ));

    // What orders send through the one contract between them and the ledger.
    let charge = OfflineCharge {
        order_id: order.id,
        order_no: order.order_no.clone(),
        description: order.subject.clone(),
        amount: order.amount,
        reference: "BANK-TRANSFER-0042".into(),
        recorded_by: CLERK,
        audit: AuditRecord::system(now, "order.pay", "order", Some(order.id)).owned_by(None, Some(tenant.id)),
    };
    ledger.charge_offline(tenant.id, charge).await?;
    println!("paid         offline, reference BANK-TRANSFER-0042");

    // Three refunds of 40 yuan at once: together they would exceed the 100 yuan paid.
    let tenant_id = tenant.id;
    let asks = ["A", "B", "C"].map(|n| {
        let ledger = ledger.clone();
        let refund = RefundCharge {
            order_id: order.id,
            out_refund_no: format!("{}R{n}", order.order_no),
            amount: Money::from_yuan(40),
            reason: Some("goodwill".into()),
            requested_by: Some(CLERK),
            audit: AuditRecord::system(now, "order.refund", "order", Some(order.id)).owned_by(None, Some(tenant.id)),
        };
        tokio::spawn(async move { (refund.out_refund_no.clone(), ledger.refund_order(tenant_id, refund).await) })
    });
    for ask in asks {
        match ask.await? {
            (no, Ok(refund)) => println!("refund       {no}: {} fen, {}", refund.amount.fen(), refund.status.as_str()),
            (no, Err(e)) => println!("refund       {no}: refused ({}): {e}", e.reason()),
        }
    }

    let money = ledger.money(tenant.id, order.id).await?;
    if let Some(p) = &money.payment {
        let method = if p.method == PaymentMethod::Offline { "offline" } else { "on the pay platform" };
        println!("ledger       payment of {} fen {method}: {:?}", p.amount.fen(), p.state);
    }
    let refunded = Money::checked_sum(money.refunds.iter().map(|r| r.amount))?;
    println!("ledger       {} refunds, {} fen refunded", money.refunds.len(), refunded.fen());
    let events = jobs.depth(ORDER_CHANGED.into(), clock.now()).await?;
    println!("jobs         {events} `{ORDER_CHANGED}` events queued for orders to sync (the payment and each refund)");

    // The order is the ledger's only through those events; here nobody runs them.
    let stored = orders.get_order(Party::Platform, order.id).await?;
    if let Some(o) = stored {
        println!("order        still {} until its events run, refunded {} fen", o.status.as_str(), o.refunded_amount.fen());
    }
    Ok(())
}
