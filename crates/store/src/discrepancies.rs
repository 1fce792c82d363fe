//! Discrepancies for [`PaymentRepo`](atrium_payments::PaymentRepo): recorded with the write
//! that marks their transaction or share (at most one open per payment, or per share of it:
//! a partial unique index, and `ON CONFLICT DO NOTHING`), and resolved in one write that
//! locks what it changes, checks it is as read, and changes it.
use crate::db::{DbConn, MultiBackend, first_for_update, on_backend};
use crate::error::db_error;
use crate::org::tenants::ids_of_partner;
use crate::org::{count_up_to, page, parse_enum, total};
use crate::outbox;
use crate::payments::{TxRow, insert_refund_row, tx_from_row};
use crate::schema::{payment_discrepancies, payment_share_returns, payment_shares, payment_transactions};
use crate::shares::{ReturnRow, ShareRow, return_from_row, share_from_row};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use atrium_kernel::{Id, Page, Party, Result, StrEnum};
use atrium_payments::{Discrepancy, DiscrepancyQuery, NewDiscrepancy, Resolution};
use chrono::NaiveDateTime;
use diesel::prelude::*;

#[derive(Queryable, Selectable)]
#[diesel(table_name = payment_discrepancies)]
struct DiscrepancyRow {
    id: i64,
    tenant_id: i64,
    kind: String,
    payment_id: i64,
    out_trade_no: String,
    share_id: Option<i64>,
    return_id: Option<i64>,
    description: String,
    status: String,
    action: Option<String>,
    note: Option<String>,
    resolved_by: Option<i64>,
    out_refund_no: Option<String>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    resolved_at: Option<NaiveDateTime>,
}

#[derive(Insertable)]
#[diesel(table_name = payment_discrepancies)]
struct NewRow<'a> {
    tenant_id: i64,
    kind: &'static str,
    payment_id: i64,
    out_trade_no: &'a str,
    share_id: Option<i64>,
    return_id: Option<i64>,
    description: &'a str,
    status: &'static str,
    created_at: NaiveDateTime,
}

fn from_row(r: DiscrepancyRow) -> Result<Discrepancy> {
    Ok(Discrepancy {
        id: r.id,
        tenant_id: r.tenant_id,
        kind: parse_enum(&r.kind, |s| s.parse().ok(), "discrepancy kind")?,
        payment_id: r.payment_id,
        out_trade_no: r.out_trade_no,
        share_id: r.share_id,
        return_id: r.return_id,
        description: r.description,
        status: parse_enum(&r.status, |s| s.parse().ok(), "discrepancy status")?,
        action: r.action.map(|a| parse_enum(&a, |s| s.parse().ok(), "resolution")).transpose()?,
        note: r.note,
        resolved_by: r.resolved_by,
        out_refund_no: r.out_refund_no,
        created_at: from_db(r.created_at),
        resolved_at: r.resolved_at.map(from_db),
    })
}

/// Records `found`, in the caller's write transaction, unless one is open for its payment (or
/// its share) already.
pub(crate) fn record(conn: &mut DbConn, found: &NewDiscrepancy) -> Result<()> {
    let row = NewRow {
        tenant_id: found.tenant_id,
        kind: found.kind.into(),
        payment_id: found.payment_id,
        out_trade_no: &found.out_trade_no,
        share_id: found.share_id,
        return_id: found.return_id,
        description: &found.description,
        status: "open",
        created_at: to_db(found.at),
    };
    on_backend!(conn, |c| diesel::insert_into(payment_discrepancies::table).values(&row).on_conflict_do_nothing().execute(c))
        .map_err(db_error)?;
    Ok(())
}

type Scoped = payment_discrepancies::BoxedQuery<'static, MultiBackend>;

fn scoped(scope: Party) -> Scoped {
    let q = payment_discrepancies::table.into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(payment_discrepancies::tenant_id.eq_any(ids_of_partner(partner_id))),
        Party::Tenant { tenant_id, .. } => q.filter(payment_discrepancies::tenant_id.eq(tenant_id)),
    }
}

fn filtered(scope: Party, q: &DiscrepancyQuery) -> Scoped {
    let mut query = scoped(scope);
    if let Some(t) = q.tenant_id {
        query = query.filter(payment_discrepancies::tenant_id.eq(t));
    }
    if let Some(s) = q.status {
        query = query.filter(payment_discrepancies::status.eq(<&'static str>::from(s)));
    }
    if let Some(k) = q.kind {
        query = query.filter(payment_discrepancies::kind.eq(<&'static str>::from(k)));
    }
    if let Some(no) = &q.out_trade_no {
        query = query.filter(payment_discrepancies::out_trade_no.eq(no.clone()));
    }
    query
}

pub(crate) fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<Discrepancy>> {
    let row = scoped(scope)
        .filter(payment_discrepancies::id.eq(id))
        .select(DiscrepancyRow::as_select())
        .first(conn)
        .optional()
        .map_err(db_error)?;
    row.map(from_row).transpose()
}

pub(crate) fn list(conn: &mut DbConn, scope: Party, q: &DiscrepancyQuery) -> Result<Page<Discrepancy>> {
    let found: Vec<DiscrepancyRow> = filtered(scope, q)
        .order(payment_discrepancies::id.desc())
        .offset(q.page.offset())
        .limit(q.page.limit())
        .select(DiscrepancyRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    let total = total(q.page, found.len(), |n| count_up_to(filtered(scope, q).select(payment_discrepancies::id).limit(n), conn))?;
    Ok(page(found.into_iter().map(from_row).collect::<Result<Vec<_>>>()?, total, q.page))
}

pub(crate) fn of_payment(conn: &mut DbConn, payment_id: Id) -> Result<Vec<Discrepancy>> {
    let rows: Vec<DiscrepancyRow> = payment_discrepancies::table
        .filter(payment_discrepancies::payment_id.eq(payment_id))
        .order(payment_discrepancies::id.asc())
        .select(DiscrepancyRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    rows.into_iter().map(from_row).collect()
}

/// Writes `r` (see [`PaymentRepo::resolve_discrepancy`](atrium_payments::PaymentRepo)): every
/// row it changes is read locked first and checked as read; `false`, writing nothing, when one
/// is not.
pub(crate) fn resolve(conn: &mut DbConn, r: &Resolution) -> Result<bool> {
    let d = &r.discrepancy;
    // The rows in the order every other write takes them: transaction, share, return.
    if let Some((tx, read_state)) = &r.payment {
        let stored: Option<TxRow> =
            first_for_update!(conn, payment_transactions::table.filter(payment_transactions::id.eq(tx.id)).select(TxRow::as_select()))
                .map_err(db_error)?;
        let Some(stored) = stored.map(tx_from_row).transpose()? else { return Ok(false) };
        if stored.trade_state != *read_state || stored.discrepancy.is_none() {
            return Ok(false);
        }
    }
    if let Some((read, _)) = &r.share {
        let stored: Option<ShareRow> =
            first_for_update!(conn, payment_shares::table.filter(payment_shares::id.eq(read.id)).select(ShareRow::as_select()))
                .map_err(db_error)?;
        let Some(stored) = stored.map(share_from_row).transpose()? else { return Ok(false) };
        let as_read = (stored.status, &stored.out_order_no, stored.returned) == (read.status, &read.out_order_no, read.returned);
        if !as_read || stored.discrepancy.is_none() {
            return Ok(false);
        }
    }
    if let Some((ret, read_status)) = &r.ret {
        let stored: Option<ReturnRow> = first_for_update!(
            conn,
            payment_share_returns::table.filter(payment_share_returns::id.eq(ret.id)).select(ReturnRow::as_select())
        )
        .map_err(db_error)?;
        let Some(stored) = stored.map(return_from_row).transpose()? else { return Ok(false) };
        if stored.status != *read_status {
            return Ok(false);
        }
    }
    let open: Option<String> = first_for_update!(
        conn,
        payment_discrepancies::table.filter(payment_discrepancies::id.eq(d.id)).select(payment_discrepancies::status)
    )
    .map_err(db_error)?;
    if open.as_deref() != Some("open") {
        return Ok(false);
    }

    diesel::update(payment_discrepancies::table.filter(payment_discrepancies::id.eq(d.id)))
        .set((
            payment_discrepancies::status.eq(<&'static str>::from(d.status)),
            payment_discrepancies::action.eq(d.action.map(<&'static str>::from)),
            payment_discrepancies::note.eq(d.note.as_deref()),
            payment_discrepancies::resolved_by.eq(d.resolved_by),
            payment_discrepancies::out_refund_no.eq(d.out_refund_no.as_deref()),
            payment_discrepancies::resolved_at.eq(d.resolved_at.map(to_db)),
        ))
        .execute(conn)
        .map_err(db_error)?;
    if let Some((tx, _)) = &r.payment {
        diesel::update(payment_transactions::table.filter(payment_transactions::id.eq(tx.id)))
            .set((
                payment_transactions::amount.eq(tx.amount.fen()),
                payment_transactions::trade_state.eq(tx.trade_state.as_str()),
                payment_transactions::transaction_id.eq(tx.transaction_id.as_deref()),
                payment_transactions::payer_total.eq(tx.payer_total.map(|m| m.fen())),
                payment_transactions::success_time.eq(tx.success_time.map(to_db)),
                payment_transactions::discrepancy.eq(None::<String>),
                payment_transactions::updated_at.eq(to_db(tx.updated_at)),
            ))
            .execute(conn)
            .map_err(db_error)?;
        if let Some(refund) = &r.refund {
            insert_refund_row(conn, refund, tx.id)?;
        }
    }
    if let Some((_, after)) = &r.share {
        diesel::update(payment_shares::table.filter(payment_shares::id.eq(after.id)))
            .set((
                payment_shares::amount.eq(after.amount.fen()),
                payment_shares::returned.eq(after.returned.fen()),
                payment_shares::status.eq(after.status.as_str()),
                payment_shares::fail_reason.eq(after.fail_reason.as_deref()),
                payment_shares::settled_at.eq(after.settled_at.map(to_db)),
                payment_shares::discrepancy.eq(None::<String>),
                payment_shares::updated_at.eq(to_db(after.updated_at)),
            ))
            .execute(conn)
            .map_err(db_error)?;
    }
    if let Some((ret, _)) = &r.ret {
        diesel::update(payment_share_returns::table.filter(payment_share_returns::id.eq(ret.id)))
            .set((
                payment_share_returns::status.eq(ret.status.as_str()),
                payment_share_returns::amount.eq(ret.amount.fen()),
                payment_share_returns::return_id.eq(ret.return_id.as_deref()),
                payment_share_returns::fail_reason.eq(ret.fail_reason.as_deref()),
                payment_share_returns::settled_at.eq(ret.settled_at.map(to_db)),
                payment_share_returns::updated_at.eq(to_db(ret.updated_at)),
            ))
            .execute(conn)
            .map_err(db_error)?;
    }
    outbox::write(conn, &r.effects)?;
    Ok(true)
}
