//! Profit sharing for [`PaymentRepo`](atrium_payments::PaymentRepo): a transaction's sharing
//! (written once, `INSERT … ON CONFLICT DO NOTHING`, so two runners beginning it store one) and
//! its shares, changed only by conditional updates on the status and number they were read
//! with.
use crate::db::{DbConn, MultiBackend, first_for_update, on_backend};
use crate::error::db_error;
use crate::ids_in::{IN_LIST, ids_in};
use crate::org::tenants::ids_of_partner;
use crate::org::{count_up_to, page, parse_enum, total};
use crate::outbox;
use crate::payments::refunds_of;
use crate::schema::{payment_share_returns, payment_shares, payment_sharings, payment_transactions};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use atrium_kernel::{Error, Id, Money, Page, Party, Reason, RefundStatus, Result, StrEnum, Timestamp};
use atrium_payments::{
    Effects, NewDiscrepancy, Rates, Receiver, ReceiverType, ReturnStatus, Share, ShareQuery, ShareReturn, ShareRole, ShareStatus, Sharing,
};
use chrono::NaiveDateTime;
use diesel::prelude::*;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = payment_sharings)]
struct SharingRow {
    payment_id: i64,
    tenant_id: i64,
    base: i64,
    platform_bp: i32,
    commission_bp: i32,
    #[diesel(deserialize_as = DbTimeOpt)]
    unfrozen_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = payment_shares)]
pub(crate) struct ShareRow {
    id: i64,
    tenant_id: i64,
    payment_id: i64,
    out_trade_no: String,
    partner_id: Option<i64>,
    role: String,
    receiver_type: String,
    receiver_account: String,
    receiver_name: Option<String>,
    amount: i64,
    status: String,
    fail_reason: Option<String>,
    out_order_no: String,
    retries: i32,
    plan_version: Option<i64>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    settled_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
    returned: i64,
    withheld: i64,
    discrepancy: Option<String>,
}

#[derive(Insertable)]
#[diesel(table_name = payment_shares)]
struct NewShareRow<'a> {
    tenant_id: i64,
    payment_id: i64,
    out_trade_no: &'a str,
    partner_id: Option<i64>,
    role: &'static str,
    receiver_type: &'static str,
    receiver_account: &'a str,
    receiver_name: Option<&'a str>,
    amount: i64,
    status: &'static str,
    fail_reason: Option<&'a str>,
    out_order_no: &'a str,
    retries: i32,
    plan_version: Option<i64>,
    created_at: NaiveDateTime,
    settled_at: Option<NaiveDateTime>,
    updated_at: NaiveDateTime,
    returned: i64,
    withheld: i64,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = payment_share_returns)]
pub(crate) struct ReturnRow {
    id: i64,
    tenant_id: i64,
    payment_id: i64,
    share_id: i64,
    out_refund_no: String,
    part: i64,
    amount: i64,
    status: String,
    out_return_no: String,
    return_id: Option<String>,
    fail_reason: Option<String>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    settled_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

#[derive(Insertable)]
#[diesel(table_name = payment_share_returns)]
struct NewReturnRow<'a> {
    tenant_id: i64,
    payment_id: i64,
    share_id: i64,
    out_refund_no: &'a str,
    part: i64,
    amount: i64,
    status: &'static str,
    out_return_no: &'a str,
    return_id: Option<&'a str>,
    fail_reason: Option<&'a str>,
    created_at: NaiveDateTime,
    settled_at: Option<NaiveDateTime>,
    updated_at: NaiveDateTime,
}

pub(crate) fn return_from_row(r: ReturnRow) -> Result<ShareReturn> {
    Ok(ShareReturn {
        id: r.id,
        tenant_id: r.tenant_id,
        payment_id: r.payment_id,
        share_id: r.share_id,
        out_refund_no: r.out_refund_no,
        part: Money::from_fen(r.part),
        amount: Money::from_fen(r.amount),
        status: parse_enum(&r.status, ReturnStatus::parse, "return status")?,
        out_return_no: r.out_return_no,
        return_id: r.return_id,
        fail_reason: r.fail_reason,
        created_at: from_db(r.created_at),
        settled_at: r.settled_at.map(from_db),
        updated_at: from_db(r.updated_at),
    })
}

fn bp(v: i32) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::internal(format!("payment_sharings holds a negative rate {v}")))
}

fn sharing_from_row(r: SharingRow) -> Result<Sharing> {
    Ok(Sharing {
        payment_id: r.payment_id,
        tenant_id: r.tenant_id,
        base: Money::from_fen(r.base),
        rates: Rates { platform_bp: bp(r.platform_bp)?, commission_bp: bp(r.commission_bp)? },
        unfrozen_at: r.unfrozen_at.map(from_db),
        created_at: from_db(r.created_at),
    })
}

pub(crate) fn share_from_row(r: ShareRow) -> Result<Share> {
    Ok(Share {
        id: r.id,
        tenant_id: r.tenant_id,
        payment_id: r.payment_id,
        out_trade_no: r.out_trade_no,
        partner_id: r.partner_id,
        role: parse_enum(&r.role, ShareRole::parse, "share role")?,
        receiver: Receiver {
            kind: parse_enum(&r.receiver_type, ReceiverType::parse, "receiver type")?,
            account: r.receiver_account,
            name: r.receiver_name,
        },
        amount: Money::from_fen(r.amount),
        returned: Money::from_fen(r.returned),
        withheld: Money::from_fen(r.withheld),
        status: parse_enum(&r.status, ShareStatus::parse, "share status")?,
        fail_reason: r.fail_reason,
        out_order_no: r.out_order_no,
        retries: r.retries,
        plan_version: r.plan_version,
        created_at: from_db(r.created_at),
        settled_at: r.settled_at.map(from_db),
        updated_at: from_db(r.updated_at),
        discrepancy: r.discrepancy,
    })
}

fn new_share_row(s: &Share) -> NewShareRow<'_> {
    NewShareRow {
        tenant_id: s.tenant_id,
        payment_id: s.payment_id,
        out_trade_no: &s.out_trade_no,
        partner_id: s.partner_id,
        role: s.role.as_str(),
        receiver_type: s.receiver.kind.as_str(),
        receiver_account: &s.receiver.account,
        receiver_name: s.receiver.name.as_deref(),
        amount: s.amount.fen(),
        status: s.status.as_str(),
        fail_reason: s.fail_reason.as_deref(),
        out_order_no: &s.out_order_no,
        retries: s.retries,
        plan_version: s.plan_version,
        created_at: to_db(s.created_at),
        settled_at: s.settled_at.map(to_db),
        updated_at: to_db(s.updated_at),
        returned: s.returned.fen(),
        withheld: s.withheld.fen(),
    }
}

fn rows(rows: Vec<ShareRow>) -> Result<Vec<Share>> {
    rows.into_iter().map(share_from_row).collect()
}

/// The transaction's sharing and its shares, oldest first.
pub(crate) fn sharing_of(conn: &mut DbConn, payment_id: Id) -> Result<Option<(Sharing, Vec<Share>)>> {
    let Some(row) = payment_sharings::table.find(payment_id).select(SharingRow::as_select()).first(conn).optional().map_err(db_error)?
    else {
        return Ok(None);
    };
    let shares = payment_shares::table
        .filter(payment_shares::payment_id.eq(payment_id))
        .order(payment_shares::id.asc())
        .select(ShareRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    Ok(Some((sharing_from_row(row)?, rows(shares)?)))
}

/// Stores the sharing and its shares unless the transaction's sharing is there already, with
/// the transaction locked (so no refund is reserved meanwhile: a refund's reservation locks it
/// too); refused (`TryAgain`) while a refund of it is processing or when its refunds no longer
/// leave `sharing.base`.
pub(crate) fn begin(conn: &mut DbConn, sharing: &Sharing, shares: &[Share]) -> Result<(Sharing, Vec<Share>)> {
    let amount: Option<i64> = first_for_update!(
        conn,
        payment_transactions::table.filter(payment_transactions::id.eq(sharing.payment_id)).select(payment_transactions::amount)
    )
    .map_err(db_error)?;
    let amount = amount.ok_or(Error::NotFound("transaction"))?;
    if let Some(begun) = sharing_of(conn, sharing.payment_id)? {
        return Ok(begun);
    }
    let refunds = refunds_of(conn, sharing.payment_id)?;
    if refunds.iter().any(|r| r.status == RefundStatus::Processing) {
        return Err(Error::conflict(Reason::TryAgain, "a refund of the payment is processing"));
    }
    let refunded: i64 = refunds.iter().filter(|r| r.status == RefundStatus::Succeeded).map(|r| r.amount.fen()).sum();
    if amount - refunded != sharing.base.fen() {
        return Err(Error::conflict(Reason::TryAgain, "the payment's refunds changed since its base was read"));
    }
    let bp = |v: u32| i32::try_from(v).map_err(|_| Error::invalid("basis_points", "must be at most 10000"));
    let row = SharingRow {
        payment_id: sharing.payment_id,
        tenant_id: sharing.tenant_id,
        base: sharing.base.fen(),
        platform_bp: bp(sharing.rates.platform_bp)?,
        commission_bp: bp(sharing.rates.commission_bp)?,
        unfrozen_at: sharing.unfrozen_at.map(to_db),
        created_at: to_db(sharing.created_at),
    };
    let inserted = on_backend!(conn, |c| diesel::insert_into(payment_sharings::table)
        .values(&row)
        .on_conflict(payment_sharings::payment_id)
        .do_nothing()
        .execute(c))
    .map_err(db_error)?;
    if inserted == 1 {
        // One row at a time: the multi-backend connection has no batch insert (two rows at most).
        for share in shares {
            diesel::insert_into(payment_shares::table).values(new_share_row(share)).execute(conn).map_err(db_error)?;
        }
    }
    sharing_of(conn, sharing.payment_id)?.ok_or_else(|| Error::internal("a sharing just stored is not there"))
}

/// Writes each share where its status and number are still as read; the effects only if one
/// was written.
pub(crate) fn update(conn: &mut DbConn, shares: &[Share], read: &[(ShareStatus, String)], effects: &Effects) -> Result<u64> {
    if shares.len() != read.len() {
        return Err(Error::internal("update_shares: a read state is needed for each share"));
    }
    let mut written = 0;
    for (s, (status, no)) in shares.iter().zip(read) {
        written += diesel::update(
            payment_shares::table
                .filter(payment_shares::id.eq(s.id))
                .filter(payment_shares::status.eq(status.as_str()))
                .filter(payment_shares::out_order_no.eq(no)),
        )
        .set((
            payment_shares::status.eq(s.status.as_str()),
            payment_shares::fail_reason.eq(s.fail_reason.as_deref()),
            payment_shares::out_order_no.eq(&s.out_order_no),
            payment_shares::retries.eq(s.retries),
            payment_shares::settled_at.eq(s.settled_at.map(to_db)),
            payment_shares::updated_at.eq(to_db(s.updated_at)),
        ))
        .execute(conn)
        .map_err(db_error)? as u64;
    }
    if written > 0 {
        outbox::write(conn, effects)?;
    }
    Ok(written)
}

pub(crate) fn set_unfrozen(conn: &mut DbConn, payment_id: Id, at: Timestamp) -> Result<()> {
    diesel::update(payment_sharings::table.find(payment_id).filter(payment_sharings::unfrozen_at.is_null()))
        .set(payment_sharings::unfrozen_at.eq(to_db(at)))
        .execute(conn)
        .map_err(db_error)
        .map(drop)
}

type Scoped = payment_shares::BoxedQuery<'static, MultiBackend>;

fn scoped(scope: Party) -> Scoped {
    let q = payment_shares::table.into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(payment_shares::tenant_id.eq_any(ids_of_partner(partner_id))),
        Party::Tenant { tenant_id, .. } => q.filter(payment_shares::tenant_id.eq(tenant_id)),
    }
}

fn filtered(scope: Party, q: &ShareQuery) -> Scoped {
    let mut query = scoped(scope);
    if let Some(t) = q.tenant_id {
        query = query.filter(payment_shares::tenant_id.eq(t));
    }
    if let Some(p) = q.partner_id {
        query = query.filter(payment_shares::tenant_id.eq_any(ids_of_partner(p)));
    }
    if let Some(s) = q.status {
        query = query.filter(payment_shares::status.eq(s.as_str()));
    }
    if let Some(no) = &q.out_trade_no {
        query = query.filter(payment_shares::out_trade_no.eq(no.clone()));
    }
    match q.discrepancy {
        Some(true) => query = query.filter(payment_shares::discrepancy.is_not_null()),
        Some(false) => query = query.filter(payment_shares::discrepancy.is_null()),
        None => {}
    }
    query
}

pub(crate) fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<Share>> {
    let row = scoped(scope).filter(payment_shares::id.eq(id)).select(ShareRow::as_select()).first(conn).optional().map_err(db_error)?;
    row.map(share_from_row).transpose()
}

pub(crate) fn list(conn: &mut DbConn, scope: Party, q: &ShareQuery) -> Result<Page<Share>> {
    let found: Vec<ShareRow> = filtered(scope, q)
        .order(payment_shares::id.desc())
        .offset(q.page.offset())
        .limit(q.page.limit())
        .select(ShareRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    let total = total(q.page, found.len(), |n| count_up_to(filtered(scope, q).select(payment_shares::id).limit(n), conn))?;
    Ok(page(rows(found)?, total, q.page))
}

pub(crate) fn in_order(conn: &mut DbConn, tenant_id: Id, out_order_no: &str) -> Result<Vec<Share>> {
    let found = payment_shares::table
        .filter(payment_shares::tenant_id.eq(tenant_id))
        .filter(payment_shares::out_order_no.eq(out_order_no))
        .order(payment_shares::id.asc())
        .select(ShareRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    rows(found)
}

/// Makes a closed share pending again (or `returned`, when refunds took all of it) with the
/// transaction locked: refused while a refund of it is processing; `None` when the share is no
/// longer as read.
pub(crate) fn retry(conn: &mut DbConn, read: &Share, out_order_no: String, at: Timestamp, effects: &Effects) -> Result<Option<Share>> {
    let locked: Option<i64> = first_for_update!(
        conn,
        payment_transactions::table.filter(payment_transactions::id.eq(read.payment_id)).select(payment_transactions::id)
    )
    .map_err(db_error)?;
    locked.ok_or(Error::NotFound("transaction"))?;
    let refunds = refunds_of(conn, read.payment_id)?;
    if refunds.iter().any(|r| r.status == RefundStatus::Processing) {
        return Err(Error::conflict(Reason::TryAgain, "a refund of the payment is processing"));
    }
    let returns = returns_of_payment(conn, read.payment_id)?;
    let retried = read.retried(&returns, &refunds, out_order_no, at);
    let written = diesel::update(
        payment_shares::table
            .filter(payment_shares::id.eq(read.id))
            .filter(payment_shares::status.eq(read.status.as_str()))
            .filter(payment_shares::out_order_no.eq(&read.out_order_no))
            .filter(payment_shares::discrepancy.is_null()),
    )
    .set((
        payment_shares::status.eq(retried.status.as_str()),
        payment_shares::fail_reason.eq(retried.fail_reason.as_deref()),
        payment_shares::out_order_no.eq(&retried.out_order_no),
        payment_shares::retries.eq(retried.retries),
        payment_shares::withheld.eq(retried.withheld.fen()),
        payment_shares::settled_at.eq(retried.settled_at.map(to_db)),
        payment_shares::updated_at.eq(to_db(retried.updated_at)),
    ))
    .execute(conn)
    .map_err(db_error)?;
    if written == 0 {
        return Ok(None);
    }
    outbox::write(conn, effects)?;
    Ok(Some(retried))
}

/// The returns of a transaction's shares, oldest first.
pub(crate) fn returns_of_payment(conn: &mut DbConn, payment_id: Id) -> Result<Vec<ShareReturn>> {
    let found: Vec<ReturnRow> = payment_share_returns::table
        .filter(payment_share_returns::payment_id.eq(payment_id))
        .order(payment_share_returns::id.asc())
        .select(ReturnRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    found.into_iter().map(return_from_row).collect()
}

/// The returns of the tenant's refund `out_refund_no`, oldest first.
pub(crate) fn returns_of_refund(conn: &mut DbConn, tenant_id: Id, out_refund_no: &str) -> Result<Vec<ShareReturn>> {
    let found: Vec<ReturnRow> = payment_share_returns::table
        .filter(payment_share_returns::tenant_id.eq(tenant_id))
        .filter(payment_share_returns::out_refund_no.eq(out_refund_no))
        .order(payment_share_returns::id.asc())
        .select(ReturnRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    found.into_iter().map(return_from_row).collect()
}

/// Stores a planned return (with its refund's reservation).
pub(crate) fn insert_return(conn: &mut DbConn, r: &ShareReturn) -> Result<()> {
    let row = NewReturnRow {
        tenant_id: r.tenant_id,
        payment_id: r.payment_id,
        share_id: r.share_id,
        out_refund_no: &r.out_refund_no,
        part: r.part.fen(),
        amount: r.amount.fen(),
        status: r.status.as_str(),
        out_return_no: &r.out_return_no,
        return_id: r.return_id.as_deref(),
        fail_reason: r.fail_reason.as_deref(),
        created_at: to_db(r.created_at),
        settled_at: r.settled_at.map(to_db),
        updated_at: to_db(r.updated_at),
    };
    diesel::insert_into(payment_share_returns::table).values(row).execute(conn).map_err(db_error).map(drop)
}

/// Writes a return's settlement where its status is still as read; a return newly succeeded
/// adds its amount to its share's `returned`, and a succeeded share left holding nothing is
/// `returned`.
pub(crate) fn settle_return(conn: &mut DbConn, r: &ShareReturn, read: ReturnStatus) -> Result<bool> {
    let written = diesel::update(
        payment_share_returns::table.filter(payment_share_returns::id.eq(r.id)).filter(payment_share_returns::status.eq(read.as_str())),
    )
    .set((
        payment_share_returns::status.eq(r.status.as_str()),
        payment_share_returns::return_id.eq(r.return_id.as_deref()),
        payment_share_returns::fail_reason.eq(r.fail_reason.as_deref()),
        payment_share_returns::settled_at.eq(r.settled_at.map(to_db)),
        payment_share_returns::updated_at.eq(to_db(r.updated_at)),
    ))
    .execute(conn)
    .map_err(db_error)?;
    if written == 0 {
        return Ok(false);
    }
    if read == ReturnStatus::Processing && r.status == ReturnStatus::Succeeded && r.amount.is_positive() {
        // An increment, not a value read before: two refunds' returns of one share may settle
        // at once.
        diesel::update(payment_shares::table.filter(payment_shares::id.eq(r.share_id)))
            .set((
                payment_shares::returned.eq(payment_shares::returned + r.amount.fen()),
                payment_shares::updated_at.eq(to_db(r.updated_at)),
            ))
            .execute(conn)
            .map_err(db_error)?;
        diesel::update(
            payment_shares::table
                .filter(payment_shares::id.eq(r.share_id))
                .filter(payment_shares::status.eq(ShareStatus::Succeeded.as_str()))
                .filter((payment_shares::returned + payment_shares::withheld).ge(payment_shares::amount)),
        )
        .set((payment_shares::status.eq(ShareStatus::Returned.as_str()), payment_shares::settled_at.eq(r.settled_at.map(to_db))))
        .execute(conn)
        .map_err(db_error)?;
    }
    Ok(true)
}

/// The sent shares of `tenant_id`'s payments of which one was sent and created or changed in
/// `[from, to)`: the payments with an id above `after_payment`, in order, at most `payments`
/// of them, each with its every sent share.
pub(crate) fn changed(
    conn: &mut DbConn,
    tenant_id: Id,
    from: Timestamp,
    to: Timestamp,
    after_payment: Id,
    payments: u32,
) -> Result<Vec<Share>> {
    let sent = || payment_shares::status.ne(ShareStatus::Pending.as_str());
    let ids: Vec<Id> = payment_shares::table
        .filter(payment_shares::tenant_id.eq(tenant_id))
        .filter(payment_shares::updated_at.ge(to_db(from)))
        .filter(payment_shares::updated_at.lt(to_db(to)))
        .filter(payment_shares::payment_id.gt(after_payment))
        .filter(sent())
        .select(payment_shares::payment_id)
        .distinct()
        .order(payment_shares::payment_id.asc())
        .limit(i64::from(payments))
        .load(conn)
        .map_err(db_error)?;
    let mut found = Vec::new();
    for chunk in ids.chunks(IN_LIST) {
        let rows: Vec<ShareRow> = payment_shares::table
            .filter(ids_in(conn, payment_shares::payment_id, chunk))
            .filter(sent())
            .order((payment_shares::payment_id.asc(), payment_shares::id.asc()))
            .select(ShareRow::as_select())
            .load(conn)
            .map_err(db_error)?;
        found.extend(rows);
    }
    rows(found)
}

/// The returns of `tenant_id` created or changed in `[from, to)` with an id above `after`, in
/// order, at most `limit`.
pub(crate) fn returns_changed(
    conn: &mut DbConn,
    tenant_id: Id,
    from: Timestamp,
    to: Timestamp,
    after: Id,
    limit: u32,
) -> Result<Vec<ShareReturn>> {
    let found: Vec<ReturnRow> = payment_share_returns::table
        .filter(payment_share_returns::tenant_id.eq(tenant_id))
        .filter(payment_share_returns::updated_at.ge(to_db(from)))
        .filter(payment_share_returns::updated_at.lt(to_db(to)))
        .filter(payment_share_returns::id.gt(after))
        .order(payment_share_returns::id.asc())
        .limit(i64::from(limit))
        .select(ReturnRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    found.into_iter().map(return_from_row).collect()
}

/// Records `why` on share `read.id` where it is still as read (status, number) and holds no
/// discrepancy yet, with the audit record. Returns whether it was recorded.
pub(crate) fn record_discrepancy(conn: &mut DbConn, read: &Share, found: &NewDiscrepancy, effects: &Effects) -> Result<bool> {
    let written = diesel::update(
        payment_shares::table
            .filter(payment_shares::id.eq(read.id))
            .filter(payment_shares::status.eq(read.status.as_str()))
            .filter(payment_shares::out_order_no.eq(&read.out_order_no))
            .filter(payment_shares::discrepancy.is_null()),
    )
    .set((payment_shares::discrepancy.eq(&found.description), payment_shares::updated_at.eq(to_db(found.at))))
    .execute(conn)
    .map_err(db_error)?;
    if written == 0 {
        return Ok(false);
    }
    crate::discrepancies::record(conn, found)?;
    outbox::write(conn, effects)?;
    Ok(true)
}

/// The tenant's return `id`, if any.
pub(crate) fn get_return(conn: &mut DbConn, tenant_id: Id, id: Id) -> Result<Option<ShareReturn>> {
    let row: Option<ReturnRow> = payment_share_returns::table
        .filter(payment_share_returns::tenant_id.eq(tenant_id))
        .filter(payment_share_returns::id.eq(id))
        .select(ReturnRow::as_select())
        .first(conn)
        .optional()
        .map_err(db_error)?;
    row.map(return_from_row).transpose()
}

/// How many shares hold a discrepancy.
pub(crate) fn open_discrepancies(conn: &mut DbConn) -> Result<i64> {
    payment_shares::table.filter(payment_shares::discrepancy.is_not_null()).count().get_result(conn).map_err(db_error)
}

/// The shares of the payments of orders `order_ids`, each with its order, by order and id.
pub(crate) fn of_orders(conn: &mut DbConn, order_ids: &[Id]) -> Result<Vec<(Id, Share)>> {
    let mut found = Vec::new();
    for chunk in order_ids.chunks(IN_LIST) {
        let rows: Vec<(Option<i64>, ShareRow)> = payment_shares::table
            .inner_join(payment_transactions::table.on(payment_transactions::id.eq(payment_shares::payment_id)))
            .filter(ids_in(conn, payment_transactions::order_id, chunk))
            .order((payment_transactions::order_id.asc(), payment_shares::id.asc()))
            .select((payment_transactions::order_id, ShareRow::as_select()))
            .load(conn)
            .map_err(db_error)?;
        for (order_id, row) in rows {
            if let Some(order_id) = order_id {
                found.push((order_id, share_from_row(row)?));
            }
        }
    }
    Ok(found)
}
