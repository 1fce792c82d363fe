//! [`OrderRepo`]: orders with their items and what they know of their money: the payment (on
//! the order's row) and the ledger's refunds of it (`order_refunds`), both as the order last
//! synced them through the ledger's port; the ledger's own tables are never read here. What
//! an order knows of its money is written by conditional updates against what was read, and a
//! refund's status only moves out of processing, so an older view of the ledger never
//! overwrites a newer one.
use super::OrdersStore;
use crate::db::{DbConn, MultiBackend, on_backend};
use crate::error::db_error;
use crate::ids_in::{IN_LIST, ids_in};
use crate::org::tenants::ids_of_partner;
use crate::org::{count_up_to, like_pattern, lower, nothing, page, parse_enum, searchable, total};
use crate::outbox;
use crate::schema::{order_items, order_refunds, orders, payment_transactions, tenants};
use crate::static_sql::{StaticSql, sql_per_backend, static_sql};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Effects, Error, Id, Money, Page, Party, Result, SortOrder, Timestamp};
use atrium_orders::{
    Order, OrderItem, OrderQuery, OrderRefund, OrderRepo, OrderSort, OrderState, OrderStatus, OrderTenant, Payment, PaymentMethod,
    RefundStatus,
};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use std::collections::HashMap;

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
    #[diesel(deserialize_as = DbTimeOpt)]
    paid_at: Option<NaiveDateTime>,
    pay_reference: Option<String>,
    paid_by: Option<i64>,
    #[diesel(deserialize_as = DbTime)]
    expires_at: NaiveDateTime,
    created_by: Option<i64>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
    discrepancy: Option<String>,
    pay_sub_merchant: bool,
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
        discrepancy: o.discrepancy.clone(),
        pay_sub_merchant: p.is_some_and(|p| p.sub_merchant),
    }
}

fn order_from_row(r: OrderRow, partner_id: Option<Id>, items: Vec<OrderItem>, refunds: Vec<OrderRefund>) -> Result<Order> {
    let method = r.pay_method.as_deref().map(|m| parse_enum(m, PaymentMethod::parse, "payment method")).transpose()?;
    let payment = method.map(|method| Payment {
        method,
        out_trade_no: (method == PaymentMethod::WechatJsapi).then(|| r.out_trade_no.clone()),
        transaction_id: r.transaction_id,
        paid_at: r.paid_at.map(from_db),
        reference: r.pay_reference,
        paid_by: r.paid_by,
        sub_merchant: r.pay_sub_merchant,
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
        discrepancy: r.discrepancy,
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

/// What an order knows of one of its refunds (`order_refunds`).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = order_refunds, treat_none_as_null = true)]
struct RefundRow {
    id: i64,
    tenant_id: i64,
    order_id: i64,
    out_refund_no: String,
    amount: i64,
    status: String,
    reason: Option<String>,
    requested_by: Option<i64>,
    fail_reason: Option<String>,
    #[diesel(deserialize_as = DbTimeOpt)]
    settled_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

fn refund_row(r: &OrderRefund) -> RefundRow {
    RefundRow {
        id: r.id,
        tenant_id: r.tenant_id,
        order_id: r.order_id,
        out_refund_no: r.out_refund_no.clone(),
        amount: r.amount.fen(),
        status: r.status.as_str().to_owned(),
        reason: r.reason.clone(),
        requested_by: r.requested_by,
        fail_reason: r.fail_reason.clone(),
        settled_at: r.settled_at.map(to_db),
        created_at: to_db(r.created_at),
        updated_at: to_db(r.updated_at),
    }
}

fn refund_from_row(r: RefundRow) -> Result<OrderRefund> {
    Ok(OrderRefund {
        id: r.id,
        order_id: r.order_id,
        tenant_id: r.tenant_id,
        out_refund_no: r.out_refund_no,
        amount: Money::from_fen(r.amount),
        status: parse_enum(&r.status, RefundStatus::parse, "refund status")?,
        reason: r.reason,
        requested_by: r.requested_by,
        fail_reason: r.fail_reason,
        settled_at: r.settled_at.map(from_db),
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

/// Writes what `order` knows of its refunds: each one not stored yet is added, and a stored
/// one is changed only while it is stored processing or in the status it has now (when the
/// ledger filled in when it settled), so a final status is never taken back or replaced by an
/// older view of the ledger. None is removed (the ledger never removes a refund).
fn write_refunds(conn: &mut DbConn, order: &Order) -> Result<()> {
    for r in order.refunds.iter().filter(|r| r.order_id == order.id && r.tenant_id == order.tenant_id) {
        let row = refund_row(r);
        on_backend!(conn, |c| diesel::insert_into(order_refunds::table)
            .values(&row)
            .on_conflict(order_refunds::id)
            .do_nothing()
            .execute(c))
        .map_err(db_error)?;
        diesel::update(
            order_refunds::table
                .filter(order_refunds::id.eq(r.id))
                .filter(order_refunds::order_id.eq(order.id))
                .filter(order_refunds::status.eq_any([RefundStatus::Processing.as_str(), r.status.as_str()])),
        )
        .set((
            order_refunds::status.eq(&row.status),
            order_refunds::fail_reason.eq(&row.fail_reason),
            order_refunds::settled_at.eq(row.settled_at),
            order_refunds::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
        .map_err(db_error)?;
    }
    Ok(())
}

/// Orders as a boxed query. A partner's reach goes through its tenants by their ids
/// (`tenant_id IN (SELECT id FROM tenants WHERE partner_id = ?)`), so no list joins `tenants`
/// row by row (see [`partner_of_tenant`]).
type Scoped = orders::BoxedQuery<'static, MultiBackend>;

/// Orders visible to `scope`.
fn scoped(scope: Party) -> Scoped {
    let q = orders::table.into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(orders::tenant_id.eq_any(ids_of_partner(partner_id))),
        Party::Tenant { tenant_id, .. } => q.filter(orders::tenant_id.eq(tenant_id)),
    }
}

/// The partner of an order's tenant, for an order or a page's rows: a subquery in the columns, so
/// the count, which shares the page's filters, joins nothing, and SQLite looks a partner up
/// only for the rows the page returns (PostgreSQL also for the rows it skips, as a join would).
fn partner_of_tenant() -> StaticSql<diesel::sql_types::Nullable<diesel::sql_types::BigInt>> {
    static_sql("(SELECT tenants.partner_id FROM tenants WHERE tenants.id = orders.tenant_id)")
}

/// What a [`filtered`] query reads: the page's rows, or the list's total.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    Page,
    Count,
}

fn filtered(scope: Party, q: &OrderQuery, read: Read) -> Scoped {
    let mut query = scoped(scope);
    if let Some(s) = q.status {
        query = query.filter(orders::status.eq(s.as_str()));
    }
    if let Some(t) = q.tenant_id {
        query = query.filter(orders::tenant_id.eq(t));
    }
    if let Some(p) = q.partner_id {
        query = query.filter(orders::tenant_id.eq_any(ids_of_partner(p)));
    }
    // With a status, a page reads an index of (tenant and) status in id order, and the date
    // range is checked on each entry. SQLite's columns of type TIMESTAMP have NUMERIC
    // affinity, so comparing one with the bound text first tries to read that text as a
    // number, on every entry; `+created_at` (no affinity, and no index) compares the texts at
    // once. One tenant's count searches the range in orders_tenant_status_created_idx
    // instead, and without a status the range may be what the index is searched by, so both
    // keep the plain column.
    let one_tenant = matches!(scope, Party::Tenant { .. }) || q.tenant_id.is_some();
    let created_at = match q.status {
        Some(_) if read == Read::Page || !one_tenant => {
            sql_per_backend::<diesel::sql_types::Timestamp>("orders.created_at", "+orders.created_at")
        }
        _ => static_sql("orders.created_at"),
    };
    if let Some(from) = q.created_from {
        query = query.filter(created_at.ge(to_db(from)));
    }
    if let Some(to) = q.created_to {
        query = query.filter(created_at.lt(to_db(to)));
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
    let mut refunds: HashMap<Id, Vec<OrderRefund>> = HashMap::new();
    // Only a paid order (its paid amount set, for good) has refunds: unpaid ones read none.
    let paid: Vec<Id> = rows.iter().filter(|(r, _)| r.paid_amount > 0).map(|(r, _)| r.id).collect();
    for chunk in paid.chunks(IN_LIST) {
        let refund_rows: Vec<RefundRow> = order_refunds::table
            .filter(ids_in(conn, order_refunds::order_id, chunk))
            .order(order_refunds::id.asc())
            .select(RefundRow::as_select())
            .load(conn)
            .map_err(db_error)?;
        for r in refund_rows {
            refunds.entry(r.order_id).or_default().push(refund_from_row(r)?);
        }
    }
    for chunk in ids.chunks(IN_LIST) {
        let item_rows: Vec<ItemRow> = order_items::table
            .filter(ids_in(conn, order_items::order_id, chunk))
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

    async fn insert_order(&self, order: Order, effects: Effects) -> Result<Order> {
        self.db
            .write(move |conn| {
                // An order's number is also its platform number: none of the ledger's may have it.
                crate::payments::lock_number(conn, order.tenant_id, &order.order_no)?;
                let taken: i64 = payment_transactions::table
                    .filter(payment_transactions::tenant_id.eq(order.tenant_id))
                    .filter(payment_transactions::out_trade_no.eq(&order.order_no))
                    .count()
                    .get_result(conn)
                    .map_err(db_error)?;
                if taken > 0 {
                    return Err(Error::conflict(
                        Reason::WrongRoute,
                        format!("order_no {} is a payment transaction's number", order.order_no),
                    ));
                }
                let id: i64 =
                    diesel::insert_into(orders::table).values(order_row(&order)).returning(orders::id).get_result(conn).map_err(|e| {
                        match db_error(e) {
                            Error::Conflict(..) => {
                                Error::conflict(Reason::Duplicate, format!("order_no {} is already used", order.order_no))
                            }
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
                outbox::write_created(conn, effects, id)?;
                Ok(Order { id, partner_id, ..order })
            })
            .await
    }

    async fn get_order(&self, scope: Party, id: Id) -> Result<Option<Order>> {
        self.db
            .run(move |conn| {
                let row = scoped(scope)
                    .filter(orders::id.eq(id))
                    .select((OrderRow::as_select(), partner_of_tenant()))
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
                let mut query = filtered(scope, &q, Read::Page).select((OrderRow::as_select(), partner_of_tenant()));
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
                let total =
                    total(q.list.page, rows.len(), |n| count_up_to(filtered(scope, &q, Read::Count).select(orders::id).limit(n), conn))?;
                Ok(page(assemble(conn, rows)?, total, q.list.page))
            })
            .await
    }

    async fn update_order(&self, order: Order, read: OrderState, effects: Effects) -> Result<bool> {
        self.db
            .write(move |conn| {
                let p = order.payment.as_ref();
                let target = orders::table
                    .filter(orders::id.eq(order.id))
                    .filter(orders::tenant_id.eq(order.tenant_id))
                    .filter(orders::status.eq(read.status.as_str()))
                    .filter(orders::paid_amount.eq(read.paid_amount.fen()))
                    .filter(orders::refunded_amount.eq(read.refunded_amount.fen()));
                let changes = (
                    orders::status.eq(order.status.as_str()),
                    orders::paid_amount.eq(order.paid_amount.fen()),
                    orders::refunded_amount.eq(order.refunded_amount.fen()),
                    orders::openid.eq(&order.openid),
                    orders::pay_method.eq(p.map(|p| p.method.as_str())),
                    orders::transaction_id.eq(p.and_then(|p| p.transaction_id.as_deref())),
                    orders::paid_at.eq(p.and_then(|p| p.paid_at).map(to_db)),
                    orders::pay_reference.eq(p.and_then(|p| p.reference.as_deref())),
                    orders::paid_by.eq(p.and_then(|p| p.paid_by)),
                    orders::pay_sub_merchant.eq(p.is_some_and(|p| p.sub_merchant)),
                    orders::discrepancy.eq(&order.discrepancy),
                    orders::updated_at.eq(to_db(order.updated_at)),
                );
                let n = if read.discrepancy {
                    diesel::update(target.filter(orders::discrepancy.is_not_null())).set(changes).execute(conn)
                } else {
                    diesel::update(target.filter(orders::discrepancy.is_null())).set(changes).execute(conn)
                }
                .map_err(db_error)?;
                if n == 0 {
                    return Ok(false);
                }
                write_refunds(conn, &order)?;
                outbox::write(conn, &effects)?;
                Ok(true)
            })
            .await
    }

    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Order>> {
        self.db
            .run(move |conn| {
                let rows: Vec<(OrderRow, Option<Id>)> = orders::table
                    .inner_join(tenants::table)
                    .filter(orders::status.eq_any([OrderStatus::Pending.as_str(), OrderStatus::Paying.as_str()]))
                    .filter(orders::expires_at.le(to_db(now)))
                    .filter(orders::discrepancy.is_null())
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
