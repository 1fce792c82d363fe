//! Statements of shared money ([`atrium_payments::EarningsSums`]).
//!
//! A statement reads `payment_earning_days`: sums per tenant, China Standard Time day the
//! payment succeeded on, role and partner, kept by triggers (migration
//! `2026-12-12-000100_earning_days`) in the same transaction as every change to a payment,
//! refund or share. A partner's month is then its tenants' thirty-odd rows each, whatever the
//! number of payments. [`from_ledger`] sums the same from the payments themselves, one by one;
//! the store's tests hold the two equal.
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::time::to_db;
use atrium_kernel::{Error, Id, Money, Result, Timestamp};
use atrium_payments::{Earner, EarningsGroup, EarningsKey, EarningsRow, EarningsSums};
use chrono::NaiveDate;

/// The statement's rows (see [`atrium_payments::PaymentRepo::earnings`]) from the sums kept by
/// day, `from` and `to` inclusive.
pub(crate) fn earnings(
    conn: &mut DbConn,
    earner: Earner,
    from: NaiveDate,
    to: NaiveDate,
    group: EarningsGroup,
) -> Result<Vec<EarningsRow>> {
    let key = match group {
        EarningsGroup::Day => "day AS day, CAST(0 AS BIGINT) AS tenant_id",
        EarningsGroup::Tenant => "'' AS day, tenant_id AS tenant_id",
    };
    let by = match group {
        EarningsGroup::Day => "day",
        EarningsGroup::Tenant => "tenant_id",
    };
    if let (Earner::Partner(partner_id), EarningsGroup::Day) = (earner, group) {
        return partner_days(conn, partner_id, from, to);
    }
    let whose = match earner {
        Earner::Partner(_) => {
            "tenant_id IN (SELECT id FROM tenants WHERE partner_id = ?) AND (role = '' OR (role = 'partner' AND partner_id = ?))"
        }
        Earner::Platform => "role IN ('', 'platform')",
    };
    let sql = format!(
        "SELECT {key}, CAST(SUM(paid) AS BIGINT) AS paid, CAST(SUM(refunded) AS BIGINT) AS refunded, \
                CAST(SUM(shared) AS BIGINT) AS shared, CAST(SUM(returned) AS BIGINT) AS returned, \
                CAST(SUM(pending) AS BIGINT) AS pending, CAST(SUM(failed) AS BIGINT) AS failed \
         FROM payment_earning_days WHERE {whose} AND day >= ? AND day <= ? \
         GROUP BY {by} HAVING SUM(paid) <> 0 OR SUM(refunded) <> 0 OR SUM(shared) <> 0 OR SUM(returned) <> 0 \
                             OR SUM(pending) <> 0 OR SUM(failed) <> 0"
    );
    let sql = if matches!(conn, DbConn::Pg(_)) { numbered(&sql) } else { sql };
    let mut query = diesel::sql_query(sql).into_boxed::<MultiBackend>();
    if let Earner::Partner(partner_id) = earner {
        query = query.bind::<BigInt, _>(partner_id).bind::<BigInt, _>(partner_id);
    }
    let day = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
    query = query.bind::<Text, _>(day(from)).bind::<Text, _>(day(to));
    let rows: Vec<Row> = query.load(conn).map_err(db_error)?;
    rows.into_iter().map(|r| row(r, group)).collect()
}

use diesel::RunQueryDsl;
use diesel::sql_types::{BigInt, Text, Timestamp as SqlTimestamp};

/// One row as the query answers it: the day (`YYYY-MM-DD`) or the tenant, and the sums.
#[derive(diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    day: String,
    #[diesel(sql_type = BigInt)]
    tenant_id: i64,
    #[diesel(sql_type = BigInt)]
    paid: i64,
    #[diesel(sql_type = BigInt)]
    refunded: i64,
    #[diesel(sql_type = BigInt)]
    shared: i64,
    #[diesel(sql_type = BigInt)]
    returned: i64,
    #[diesel(sql_type = BigInt)]
    pending: i64,
    #[diesel(sql_type = BigInt)]
    failed: i64,
}

/// The statement's rows summed from the ledger itself, payment by payment, over payments that
/// succeeded in `[from, to)`: what the sums kept by day must always equal (the store's tests
/// compare them).
pub(crate) fn from_ledger(
    conn: &mut DbConn,
    earner: Earner,
    from: Timestamp,
    to: Timestamp,
    group: EarningsGroup,
) -> Result<Vec<EarningsRow>> {
    let pg = matches!(conn, DbConn::Pg(_));
    // The day a payment succeeded on, China Standard Time (UTC+8, no daylight saving).
    let day =
        if pg { "to_char(t.success_time + INTERVAL '8 hours', 'YYYY-MM-DD')" } else { "strftime('%Y-%m-%d', t.success_time, '+8 hours')" };
    let (key, empty) = match group {
        EarningsGroup::Day => (day, "CAST(0 AS BIGINT)"),
        EarningsGroup::Tenant => ("t.tenant_id", "''"),
    };
    let (role, partner_share, partner_tenants) = match earner {
        Earner::Partner(_) => ("partner", " AND s.partner_id = ?", " AND t.tenant_id IN (SELECT id FROM tenants WHERE partner_id = ?)"),
        Earner::Platform => ("platform", "", ""),
    };
    // What a share paid its receiver: its amount less what was withheld for refunds before a
    // retry (a share's withheld is 0 unless it was retried after a refund).
    let sql = format!(
        "SELECT {day_out} AS day, {tenant_out} AS tenant_id, \
                CAST(SUM(x.amount) AS BIGINT) AS paid, CAST(SUM(x.refunded) AS BIGINT) AS refunded, \
                CAST(SUM(x.shared) AS BIGINT) AS shared, CAST(SUM(x.returned) AS BIGINT) AS returned, \
                CAST(SUM(x.pending) AS BIGINT) AS pending, CAST(SUM(x.failed) AS BIGINT) AS failed \
         FROM (SELECT {key} AS k, t.amount, \
                      COALESCE((SELECT SUM(r.amount) FROM payment_refunds r WHERE r.payment_id = t.id AND r.status = 'succeeded'), 0) AS refunded, \
                      CASE WHEN s.status IN ('succeeded', 'returned') THEN s.amount - s.withheld ELSE 0 END AS shared, \
                      COALESCE(s.returned, 0) AS returned, \
                      CASE WHEN s.status IN ('pending', 'processing') THEN s.amount - s.withheld ELSE 0 END AS pending, \
                      CASE WHEN s.status = 'closed' THEN s.amount - s.withheld ELSE 0 END AS failed \
               FROM payment_transactions t \
               LEFT JOIN payment_shares s ON s.payment_id = t.id AND s.role = '{role}'{partner_share} \
               WHERE t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL \
                 AND t.success_time >= ? AND t.success_time < ?{partner_tenants}) x \
         GROUP BY x.k",
        day_out = if group == EarningsGroup::Day { "x.k" } else { empty },
        tenant_out = if group == EarningsGroup::Tenant { "x.k" } else { empty },
    );
    let sql = if pg { numbered(&sql) } else { sql };
    let mut query = diesel::sql_query(sql).into_boxed::<MultiBackend>();
    if let Earner::Partner(partner_id) = earner {
        query = query.bind::<BigInt, _>(partner_id);
    }
    query = query.bind::<SqlTimestamp, _>(to_db(from)).bind::<SqlTimestamp, _>(to_db(to));
    if let Earner::Partner(partner_id) = earner {
        query = query.bind::<BigInt, _>(partner_id);
    }
    let rows: Vec<Row> = query.load(conn).map_err(db_error)?;
    rows.into_iter().map(|r| row(r, group)).collect()
}

/// A partner's statement by day from `payment_partner_days`: one row a day.
fn partner_days(conn: &mut DbConn, partner_id: Id, from: NaiveDate, to: NaiveDate) -> Result<Vec<EarningsRow>> {
    let sql = "SELECT day, CAST(0 AS BIGINT) AS tenant_id, paid, refunded, shared, returned, pending, failed FROM payment_partner_days \
               WHERE partner_id = ? AND day >= ? AND day <= ? \
                 AND (paid <> 0 OR refunded <> 0 OR shared <> 0 OR returned <> 0 OR pending <> 0 OR failed <> 0)";
    let sql = if matches!(conn, DbConn::Pg(_)) { numbered(sql) } else { sql.to_owned() };
    let day = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
    let rows: Vec<Row> = diesel::sql_query(sql)
        .into_boxed::<MultiBackend>()
        .bind::<BigInt, _>(partner_id)
        .bind::<Text, _>(day(from))
        .bind::<Text, _>(day(to))
        .load(conn)
        .map_err(db_error)?;
    rows.into_iter().map(|r| row(r, EarningsGroup::Day)).collect()
}

fn row(r: Row, group: EarningsGroup) -> Result<EarningsRow> {
    let key = match group {
        EarningsGroup::Day => EarningsKey::Day(
            NaiveDate::parse_from_str(&r.day, "%Y-%m-%d")
                .map_err(|e| Error::Internal(anyhow::anyhow!("a statement day {:?}: {e}", r.day)))?,
        ),
        EarningsGroup::Tenant => EarningsKey::Tenant(r.tenant_id as Id),
    };
    let fen = Money::from_fen;
    Ok(EarningsRow {
        key,
        sums: EarningsSums {
            paid: fen(r.paid),
            refunded: fen(r.refunded),
            shared: fen(r.shared),
            returned: fen(r.returned),
            pending: fen(r.pending),
            failed: fen(r.failed),
        },
    })
}

/// `sql` with its `?` placeholders numbered `$1`, `$2`, … for PostgreSQL (the text holds no
/// other `?`).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}
