//! [`OrderRepo`]: orders with their items and refunds. Status changes are conditional updates
//! against the status read; a refund reservation and a refund's settlement are write
//! transactions that lock the order's row first, so refunds of one order never together
//! exceed what was paid and the order's refunded amount always sums its succeeded refunds.
use super::OrdersStore;
use crate::audit_log::{audit_created, write_audit};
use crate::db::{DbConn, MultiBackend, first_for_update};
use crate::error::db_error;
use crate::org::{like_pattern, lower, nothing, page, parse_enum, searchable, total};
use crate::schema::{order_items, order_refunds, orders, tenants};
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::StrEnum;
use atrium_kernel::{AuditRecord, Error, Id, Money, Page, Party, Result, SortOrder, Timestamp};
use atrium_orders::{
    Order, OrderItem, OrderQuery, OrderRepo, OrderSort, OrderStatus, OrderTenant, Payment, PaymentMethod, Refund, RefundReservation,
    RefundStatus,
};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use std::collections::HashMap;

/// Ids per `IN (…)` list, well under both backends' bind-parameter limits.
const IN_LIST: usize = 500;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = orders, treat_none_as_null = true)]
struct OrderRow {
    #[diesel(skip_insertion)]
    id: i64,
    tenant_id: i64,
    order_no: String,
    subject: String,
    amount: i64,
    paid_amount: i64,
    refunded_amount: i64,
    status: String,
    openid: Option<String>,
    out_trade_no: String,
    pay_method: Option<String>,
    transaction_id: Option<String>,
    paid_at: Option<NaiveDateTime>,
    pay_reference: Option<String>,
    paid_by: Option<i64>,
    expires_at: NaiveDateTime,
    created_by: Option<i64>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

fn order_row(o: &Order) -> OrderRow {
    let p = o.payment.as_ref();
    OrderRow {
        id: o.id,
        tenant_id: o.tenant_id,
        order_no: o.order_no.clone(),
        subject: o.subject.clone(),
        amount: o.amount.fen(),
        paid_amount: o.paid_amount.fen(),
        refunded_amount: o.refunded_amount.fen(),
        status: o.status.as_str().to_owned(),
        openid: o.openid.clone(),
        out_trade_no: o.out_trade_no().to_owned(),
        pay_method: p.map(|p| p.method.as_str().to_owned()),
        transaction_id: p.and_then(|p| p.transaction_id.clone()),
        paid_at: p.and_then(|p| p.paid_at).map(to_db),
        pay_reference: p.and_then(|p| p.reference.clone()),
        paid_by: p.and_then(|p| p.paid_by),
        expires_at: to_db(o.expires_at),
        created_by: o.created_by,
        created_at: to_db(o.created_at),
        updated_at: to_db(o.updated_at),
    }
}

fn order_from_row(r: OrderRow, partner_id: Option<Id>, items: Vec<OrderItem>, refunds: Vec<Refund>) -> Result<Order> {
    let method = r.pay_method.as_deref().map(|m| parse_enum(m, PaymentMethod::parse, "payment method")).transpose()?;
    let payment = method.map(|method| Payment {
        method,
        out_trade_no: (method == PaymentMethod::WechatJsapi).then(|| r.out_trade_no.clone()),
        transaction_id: r.transaction_id,
        paid_at: r.paid_at.map(from_db),
        reference: r.pay_reference,
        paid_by: r.paid_by,
    });
    Ok(Order {
        id: r.id,
        order_no: r.order_no,
        tenant_id: r.tenant_id,
        partner_id,
        subject: r.subject,
        amount: Money::from_fen(r.amount),
        paid_amount: Money::from_fen(r.paid_amount),
        refunded_amount: Money::from_fen(r.refunded_amount),
        status: parse_enum(&r.status, OrderStatus::parse, "order status")?,
        items,
        openid: r.openid,
        payment,
        refunds,
        expires_at: from_db(r.expires_at),
        created_by: r.created_by,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = order_items)]
struct ItemRow {
    order_id: i64,
    name: String,
    quantity: i64,
    unit_price: i64,
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = order_refunds, treat_none_as_null = true)]
struct RefundRow {
    #[diesel(skip_insertion)]
    id: i64,
    tenant_id: i64,
    order_id: i64,
    out_refund_no: String,
    amount: i64,
    status: String,
    reason: Option<String>,
    settled_at: Option<NaiveDateTime>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

fn refund_row(r: &Refund) -> RefundRow {
    RefundRow {
        id: r.id,
        tenant_id: r.tenant_id,
        order_id: r.order_id,
        out_refund_no: r.out_refund_no.clone(),
        amount: r.amount.fen(),
        status: r.status.as_str().to_owned(),
        reason: r.reason.clone(),
        settled_at: r.settled_at.map(to_db),
        created_at: to_db(r.created_at),
        updated_at: to_db(r.updated_at),
    }
}

fn refund_from_row(r: RefundRow) -> Result<Refund> {
    Ok(Refund {
        id: r.id,
        order_id: r.order_id,
        tenant_id: r.tenant_id,
        out_refund_no: r.out_refund_no,
        amount: Money::from_fen(r.amount),
        status: parse_enum(&r.status, RefundStatus::parse, "refund status")?,
        reason: r.reason,
        settled_at: r.settled_at.map(from_db),
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

/// Orders joined with their tenants (for the partner), as a boxed query.
type Scoped = diesel::dsl::IntoBoxed<'static, diesel::dsl::InnerJoin<orders::table, tenants::table>, MultiBackend>;

/// Orders visible to `scope`: a partner's reach goes through its tenants.
fn scoped(scope: Party) -> Scoped {
    let q = orders::table.inner_join(tenants::table).into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(tenants::partner_id.eq(partner_id)),
        Party::Tenant { tenant_id, .. } => q.filter(orders::tenant_id.eq(tenant_id)),
    }
}

fn filtered(scope: Party, q: &OrderQuery) -> Scoped {
    let mut query = scoped(scope);
    if let Some(s) = q.status {
        query = query.filter(orders::status.eq(s.as_str()));
    }
    if let Some(t) = q.tenant_id {
        query = query.filter(orders::tenant_id.eq(t));
    }
    if let Some(p) = q.partner_id {
        query = query.filter(tenants::partner_id.eq(p));
    }
    if let Some(from) = q.created_from {
        query = query.filter(orders::created_at.ge(to_db(from)));
    }
    if let Some(to) = q.created_to {
        query = query.filter(orders::created_at.lt(to_db(to)));
    }
    if q.list.keyword.as_deref().is_some_and(|k| !searchable(k)) {
        query = query.filter(nothing());
    } else if let Some(k) = &q.list.keyword {
        let p = like_pattern(k);
        query = query.filter(
            lower(orders::order_no.nullable()).like(p.clone()).escape('\\').or(lower(orders::subject.nullable()).like(p).escape('\\')),
        );
    }
    query
}

/// The orders of `rows` with their items and refunds, in the order of `rows`.
fn assemble(conn: &mut DbConn, rows: Vec<(OrderRow, Option<Id>)>) -> Result<Vec<Order>> {
    let ids: Vec<Id> = rows.iter().map(|(r, _)| r.id).collect();
    let mut items: HashMap<Id, Vec<OrderItem>> = HashMap::new();
    let mut refunds: HashMap<Id, Vec<Refund>> = HashMap::new();
    for chunk in ids.chunks(IN_LIST) {
        let item_rows: Vec<ItemRow> = order_items::table
            .filter(order_items::order_id.eq_any(chunk))
            .order((order_items::order_id.asc(), order_items::line_no.asc()))
            .select(ItemRow::as_select())
            .load(conn)
            .map_err(db_error)?;
        for i in item_rows {
            items.entry(i.order_id).or_default().push(OrderItem {
                name: i.name,
                quantity: i.quantity,
                unit_price: Money::from_fen(i.unit_price),
            });
        }
        let refund_rows: Vec<RefundRow> = order_refunds::table
            .filter(order_refunds::order_id.eq_any(chunk))
            .order(order_refunds::id.asc())
            .select(RefundRow::as_select())
            .load(conn)
            .map_err(db_error)?;
        for r in refund_rows {
            refunds.entry(r.order_id).or_default().push(refund_from_row(r)?);
        }
    }
    rows.into_iter()
        .map(|(r, partner_id)| {
            let id = r.id;
            order_from_row(r, partner_id, items.remove(&id).unwrap_or_default(), refunds.remove(&id).unwrap_or_default())
        })
        .collect()
}

fn one(conn: &mut DbConn, row: Option<(OrderRow, Option<Id>)>) -> Result<Option<Order>> {
    match row {
        Some(row) => Ok(assemble(conn, vec![row])?.pop()),
        None => Ok(None),
    }
}

/// The tenant's order `id`, whatever the caller's scope.
fn order_of_tenant(conn: &mut DbConn, tenant_id: Id, id: Id) -> Result<Option<Order>> {
    let row = orders::table
        .inner_join(tenants::table)
        .filter(orders::id.eq(id))
        .filter(orders::tenant_id.eq(tenant_id))
        .select((OrderRow::as_select(), tenants::partner_id))
        .first(conn)
        .optional()
        .map_err(db_error)?;
    one(conn, row)
}

fn refund_by_number(conn: &mut DbConn, tenant_id: Id, out_refund_no: &str) -> Result<Option<Refund>> {
    let row: Option<RefundRow> = order_refunds::table
        .filter(order_refunds::tenant_id.eq(tenant_id))
        .filter(order_refunds::out_refund_no.eq(out_refund_no))
        .select(RefundRow::as_select())
        .first(conn)
        .optional()
        .map_err(db_error)?;
    row.map(refund_from_row).transpose()
}

/// The tenant's order `order_id`, locked until the end of the write transaction (see
/// [`first_for_update!`]): its paid amount and status.
fn lock_order(conn: &mut DbConn, tenant_id: Id, order_id: Id) -> Result<Option<(Money, OrderStatus)>> {
    let locked: Option<(i64, String)> = first_for_update!(
        conn,
        orders::table.filter(orders::id.eq(order_id)).filter(orders::tenant_id.eq(tenant_id)).select((orders::paid_amount, orders::status))
    )
    .map_err(db_error)?;
    locked.map(|(paid, status)| Ok((Money::from_fen(paid), parse_enum(&status, OrderStatus::parse, "order status")?))).transpose()
}

/// Sums the order's succeeded refunds into its `refunded_amount` and sets its status to
/// match; the caller holds the order's lock.
fn settle_order(conn: &mut DbConn, order_id: Id, paid: Money, status: OrderStatus, at: Timestamp) -> Result<()> {
    let succeeded: Vec<i64> = order_refunds::table
        .filter(order_refunds::order_id.eq(order_id))
        .filter(order_refunds::status.eq(RefundStatus::Succeeded.as_str()))
        .select(order_refunds::amount)
        .load(conn)
        .map_err(db_error)?;
    let refunded = Money::checked_sum(succeeded.into_iter().map(Money::from_fen))
        .map_err(|_| Error::internal(format!("the refunds of order {order_id} overflow")))?;
    diesel::update(orders::table.find(order_id))
        .set((
            orders::refunded_amount.eq(refunded.fen()),
            orders::status.eq(status.with_refunded(paid, refunded).as_str()),
            orders::updated_at.eq(to_db(at)),
        ))
        .execute(conn)
        .map_err(db_error)?;
    Ok(())
}

fn reserve(conn: &mut DbConn, refund: Refund, max_refunds: u32, audit: &AuditRecord) -> Result<RefundReservation> {
    // The lock first: from here on no other write of this order runs.
    let locked = lock_order(conn, refund.tenant_id, refund.order_id)?;
    if let Some(existing) = refund_by_number(conn, refund.tenant_id, &refund.out_refund_no)? {
        return Ok(RefundReservation::Existing(existing));
    }
    let Some((paid, status)) = locked else {
        return Err(Error::NotFound("order"));
    };
    if !matches!(status, OrderStatus::Paid | OrderStatus::PartiallyRefunded) {
        return Err(Error::conflict(format!("only a paid order can be refunded; this one is {}", status.as_str())));
    }
    let refunds: Vec<(i64, String)> = order_refunds::table
        .filter(order_refunds::order_id.eq(refund.order_id))
        .select((order_refunds::amount, order_refunds::status))
        .load(conn)
        .map_err(db_error)?;
    if refunds.len() >= max_refunds as usize {
        return Ok(RefundReservation::TooManyRefunds);
    }
    let mut held = Money::ZERO;
    for (amount, status) in &refunds {
        if parse_enum(status, RefundStatus::parse, "refund status")?.holds_amount() {
            held = held.checked_add(Money::from_fen(*amount)).map_err(|_| Error::internal("refund amounts overflow"))?;
        }
    }
    let refundable = paid.checked_sub(held).unwrap_or(Money::ZERO).max(Money::ZERO);
    if refund.amount > refundable {
        return Ok(RefundReservation::ExceedsPaid { refundable });
    }
    let id: i64 =
        diesel::insert_into(order_refunds::table).values(refund_row(&refund)).returning(order_refunds::id).get_result(conn).map_err(
            |e| match db_error(e) {
                Error::Conflict(_) => Error::conflict(format!("out_refund_no {} is already used", refund.out_refund_no)),
                other => other,
            },
        )?;
    settle_order(conn, refund.order_id, paid, status, refund.updated_at)?;
    write_audit(conn, audit)?;
    let order = order_of_tenant(conn, refund.tenant_id, refund.order_id)?.ok_or(Error::NotFound("order"))?;
    Ok(RefundReservation::Reserved { order: Box::new(order), refund: Refund { id, ..refund } })
}

fn update_refund(conn: &mut DbConn, refund: &Refund, read_status: RefundStatus, audit: &AuditRecord) -> Result<bool> {
    // The order's lock first, so settlements of two of its refunds sum one after the other.
    let Some((paid, status)) = lock_order(conn, refund.tenant_id, refund.order_id)? else {
        return Ok(false);
    };
    let n = diesel::update(
        order_refunds::table
            .filter(order_refunds::tenant_id.eq(refund.tenant_id))
            .filter(order_refunds::order_id.eq(refund.order_id))
            .filter(order_refunds::out_refund_no.eq(&refund.out_refund_no))
            .filter(order_refunds::status.eq(read_status.as_str())),
    )
    .set((
        order_refunds::status.eq(refund.status.as_str()),
        order_refunds::settled_at.eq(refund.settled_at.map(to_db)),
        order_refunds::updated_at.eq(to_db(refund.updated_at)),
    ))
    .execute(conn)
    .map_err(db_error)?;
    if n == 0 {
        return Ok(false);
    }
    settle_order(conn, refund.order_id, paid, status, refund.updated_at)?;
    write_audit(conn, audit)?;
    Ok(true)
}

#[async_trait]
impl OrderRepo for OrdersStore {
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<OrderTenant>> {
        self.db
            .run(move |conn| {
                let found: Option<(i64, Option<i64>)> = crate::org::tenants::scoped(scope)
                    .filter(tenants::id.eq(tenant_id))
                    .select((tenants::id, tenants::partner_id))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                Ok(found.map(|(id, partner_id)| OrderTenant { id, partner_id }))
            })
            .await
    }

    async fn insert_order(&self, order: Order, audit: AuditRecord) -> Result<Order> {
        self.db
            .write(move |conn| {
                let id: i64 =
                    diesel::insert_into(orders::table).values(order_row(&order)).returning(orders::id).get_result(conn).map_err(|e| {
                        match db_error(e) {
                            Error::Conflict(_) => Error::conflict(format!("order_no {} is already used", order.order_no)),
                            other => other,
                        }
                    })?;
                for (line_no, item) in order.items.iter().enumerate() {
                    let line_no = i32::try_from(line_no).map_err(|_| Error::internal("too many order lines"))?;
                    diesel::insert_into(order_items::table)
                        .values((
                            order_items::tenant_id.eq(order.tenant_id),
                            order_items::order_id.eq(id),
                            order_items::line_no.eq(line_no),
                            order_items::name.eq(&item.name),
                            order_items::quantity.eq(item.quantity),
                            order_items::unit_price.eq(item.unit_price.fen()),
                        ))
                        .execute(conn)
                        .map_err(db_error)?;
                }
                let partner_id: Option<Id> =
                    tenants::table.find(order.tenant_id).select(tenants::partner_id).first(conn).map_err(db_error)?;
                audit_created(conn, audit, id)?;
                Ok(Order { id, partner_id, ..order })
            })
            .await
    }

    async fn get_order(&self, scope: Party, id: Id) -> Result<Option<Order>> {
        self.db
            .run(move |conn| {
                let row = scoped(scope)
                    .filter(orders::id.eq(id))
                    .select((OrderRow::as_select(), tenants::partner_id))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                one(conn, row)
            })
            .await
    }

    async fn list_orders(&self, scope: Party, q: OrderQuery) -> Result<Page<Order>> {
        self.db
            .run(move |conn| {
                let mut query = filtered(scope, &q).select((OrderRow::as_select(), tenants::partner_id));
                query = match q.list.sort.unwrap_or((OrderSort::Id, SortOrder::Desc)) {
                    (OrderSort::Amount, SortOrder::Asc) => query.order((orders::amount.asc(), orders::id.asc())),
                    (OrderSort::Amount, SortOrder::Desc) => query.order((orders::amount.desc(), orders::id.desc())),
                    (OrderSort::ExpiresAt, SortOrder::Asc) => query.order((orders::expires_at.asc(), orders::id.asc())),
                    (OrderSort::ExpiresAt, SortOrder::Desc) => query.order((orders::expires_at.desc(), orders::id.desc())),
                    (OrderSort::Id | OrderSort::CreatedAt, SortOrder::Asc) => query.order(orders::id.asc()),
                    (OrderSort::Id | OrderSort::CreatedAt, SortOrder::Desc) => query.order(orders::id.desc()),
                };
                let rows: Vec<(OrderRow, Option<Id>)> =
                    query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), || filtered(scope, &q).count().get_result(conn).map_err(db_error))?;
                Ok(page(assemble(conn, rows)?, total, q.list.page))
            })
            .await
    }

    async fn update_order(&self, order: Order, read_status: OrderStatus, audit: AuditRecord) -> Result<bool> {
        self.db
            .write(move |conn| {
                let p = order.payment.as_ref();
                let n = diesel::update(
                    orders::table
                        .filter(orders::id.eq(order.id))
                        .filter(orders::tenant_id.eq(order.tenant_id))
                        .filter(orders::status.eq(read_status.as_str())),
                )
                .set((
                    orders::status.eq(order.status.as_str()),
                    orders::paid_amount.eq(order.paid_amount.fen()),
                    orders::openid.eq(&order.openid),
                    orders::pay_method.eq(p.map(|p| p.method.as_str())),
                    orders::transaction_id.eq(p.and_then(|p| p.transaction_id.as_deref())),
                    orders::paid_at.eq(p.and_then(|p| p.paid_at).map(to_db)),
                    orders::pay_reference.eq(p.and_then(|p| p.reference.as_deref())),
                    orders::paid_by.eq(p.and_then(|p| p.paid_by)),
                    orders::updated_at.eq(to_db(order.updated_at)),
                ))
                .execute(conn)
                .map_err(db_error)?;
                if n == 0 {
                    return Ok(false);
                }
                write_audit(conn, &audit)?;
                Ok(true)
            })
            .await
    }

    async fn order_by_out_trade_no(&self, tenant_id: Id, out_trade_no: String) -> Result<Option<Order>> {
        self.db
            .run(move |conn| {
                let row = orders::table
                    .inner_join(tenants::table)
                    .filter(orders::tenant_id.eq(tenant_id))
                    .filter(orders::out_trade_no.eq(&out_trade_no))
                    .select((OrderRow::as_select(), tenants::partner_id))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                one(conn, row)
            })
            .await
    }

    async fn refund_by_out_refund_no(&self, tenant_id: Id, out_refund_no: String) -> Result<Option<Refund>> {
        self.db.run(move |conn| refund_by_number(conn, tenant_id, &out_refund_no)).await
    }

    async fn reserve_refund(&self, refund: Refund, max_refunds: u32, audit: AuditRecord) -> Result<RefundReservation> {
        self.db.write(move |conn| reserve(conn, refund, max_refunds, &audit)).await
    }

    async fn update_refund(&self, refund: Refund, read_status: RefundStatus, audit: AuditRecord) -> Result<bool> {
        self.db.write(move |conn| update_refund(conn, &refund, read_status, &audit)).await
    }

    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Order>> {
        self.db
            .run(move |conn| {
                let rows: Vec<(OrderRow, Option<Id>)> = orders::table
                    .inner_join(tenants::table)
                    .filter(orders::status.eq_any([OrderStatus::Pending.as_str(), OrderStatus::Paying.as_str()]))
                    .filter(orders::expires_at.le(to_db(now)))
                    .order((orders::expires_at.asc(), orders::id.asc()))
                    .limit(i64::from(limit))
                    .select((OrderRow::as_select(), tenants::partner_id))
                    .load(conn)
                    .map_err(db_error)?;
                assemble(conn, rows)
            })
            .await
    }
}
