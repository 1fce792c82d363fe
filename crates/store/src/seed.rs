//! Bulk seeding for benchmarks and demos: many tenants with many employees, written by the
//! database itself (`generate_series` / a recursive CTE) so a million rows take seconds.
use crate::db::{Db, DbConn};
use crate::error::db_error;
use atrium_kernel::Error;
use diesel::RunQueryDsl;

/// Adds `tenants` tenants (under one new partner) with `per_tenant` active employees each.
/// Returns the id range of the new tenants.
pub fn seed_org(db: &Db, tenants: i64, per_tenant: i64) -> Result<(i64, i64), Error> {
    let range = db.write_blocking(move |conn| {
        let now = "2026-01-01 00:00:00";
        let (series_tenants, series_people) = match conn {
            DbConn::Pg(_) => (
                format!("SELECT g AS n FROM generate_series(1, {tenants}) g"),
                format!("SELECT t.id AS tid, g AS n FROM seeded t CROSS JOIN generate_series(1, {per_tenant}) g"),
            ),
            DbConn::Sqlite(_) => (
                format!("WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {tenants}) SELECT n FROM s"),
                format!(
                    "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {per_tenant}) \
                     SELECT t.id AS tid, s.n AS n FROM seeded t CROSS JOIN s"
                ),
            ),
        };
        diesel::sql_query(format!("INSERT INTO partners (name, status, created_at, updated_at) VALUES ('Seed partner', 'active', '{now}', '{now}')"))
            .execute(conn)
            .map_err(db_error)?;
        let first: i64 = max_id(conn, "tenants")? + 1;
        diesel::sql_query(format!(
            "INSERT INTO tenants (partner_id, name, status, created_at, updated_at) \
             SELECT (SELECT MAX(id) FROM partners), 'Seed tenant ' || n, 'active', '{now}', '{now}' FROM ({series_tenants}) q"
        ))
        .execute(conn)
        .map_err(db_error)?;
        let last: i64 = max_id(conn, "tenants")?;
        let (pg_cast, concat_no, phone) = match conn {
            DbConn::Pg(_) => ("::timestamp", "'E' || lpad(n::text, 6, '0')", "'+86139' || lpad(((tid * 1000 + n) % 100000000)::text, 8, '0')"),
            DbConn::Sqlite(_) => ("", "'E' || substr('000000' || n, -6)", "'+86139' || substr('00000000' || (tid * 1000 + n), -8)"),
        };
        diesel::sql_query(format!(
            "WITH seeded AS (SELECT id FROM tenants WHERE id BETWEEN {first} AND {last}) \
             INSERT INTO employees (tenant_id, employee_no, name, phone, department, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at) \
             SELECT tid, {concat_no}, 'Worker ' || n, {phone}, \
                    CASE n % 4 WHEN 0 THEN 'Sales' WHEN 1 THEN 'R&D' WHEN 2 THEN 'Finance' ELSE 'Operations' END, \
                    'active', 800000 + (n % 50) * 10000, '0.12', '[]', '{now}'{pg_cast}, '{now}'{pg_cast} FROM ({series_people}) p"
        ))
        .execute(conn)
        .map_err(db_error)?;
        Ok((first, last))
    })?;
    analyze(db)?;
    Ok(range)
}

/// Refreshes the planner's statistics after a bulk insert.
/// `ANALYZE table` on PostgreSQL, inside the seeding transaction (SQLite plans these without).
fn fresh_statistics(conn: &mut DbConn, table: &str) -> Result<(), Error> {
    if let DbConn::Pg(_) = conn {
        diesel::sql_query(format!("ANALYZE {table}")).execute(conn).map_err(db_error)?;
    }
    Ok(())
}

fn analyze(db: &Db) -> Result<(), Error> {
    db.write_blocking(|conn| diesel::sql_query("ANALYZE").execute(conn).map(drop).map_err(db_error))
}

/// Adds `per_tenant` orders to each tenant with an id in `first..=last`, each with one line.
/// A fifth are `pending` (expiring in 2099, so the expiry job leaves them), two fifths `paid`
/// offline, a fifth `partially_refunded` by an offline refund that succeeded, and a fifth
/// `closed`; they were created a minute apart from 2026-01-01. The paid ones' payments and
/// refunds are the ledger's (`payment_transactions`, `payment_refunds`). Returns how many
/// orders were added.
pub fn seed_orders(db: &Db, first: i64, last: i64, per_tenant: i64) -> Result<i64, Error> {
    let added = db.write_blocking(move |conn| {
        let before = count(conn, "orders")?;
        let newer_than = max_id(conn, "orders")?;
        let (series, created, ts) = match conn {
            DbConn::Pg(_) => (
                format!(
                    "SELECT t.id AS tid, g AS n FROM tenants t CROSS JOIN generate_series(1, {per_tenant}) g WHERE t.id BETWEEN {first} AND {last}"
                ),
                "(TIMESTAMP '2026-01-01 00:00:00' + n * INTERVAL '1 minute')",
                "::timestamp",
            ),
            DbConn::Sqlite(_) => (
                format!(
                    "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {per_tenant}) \
                     SELECT t.id AS tid, s.n AS n FROM tenants t CROSS JOIN s WHERE t.id BETWEEN {first} AND {last}"
                ),
                "datetime('2026-01-01 00:00:00', '+' || n || ' minutes')",
                "",
            ),
        };
        // n % 5: 0 pending, 1 and 2 paid, 3 partially refunded, 4 closed.
        diesel::sql_query(format!(
            "INSERT INTO orders (tenant_id, order_no, subject, amount, paid_amount, refunded_amount, status, openid, out_trade_no, \
                                 pay_method, paid_at, pay_reference, expires_at, created_at, updated_at) \
             SELECT tid, 'SEED' || tid || '-' || n, 'Seed order ' || n, 1000 + (n % 100) * 100, \
                    CASE WHEN n % 5 IN (1, 2, 3) THEN 1000 + (n % 100) * 100 ELSE 0 END, \
                    CASE WHEN n % 5 = 3 THEN 500 ELSE 0 END, \
                    CASE n % 5 WHEN 0 THEN 'pending' WHEN 3 THEN 'partially_refunded' WHEN 4 THEN 'closed' ELSE 'paid' END, \
                    'o_seed_' || n, 'SEED' || tid || '-' || n, \
                    CASE WHEN n % 5 IN (1, 2, 3) THEN 'offline' END, CASE WHEN n % 5 IN (1, 2, 3) THEN {created} END, \
                    CASE WHEN n % 5 IN (1, 2, 3) THEN 'seed' END, \
                    CASE WHEN n % 5 = 0 THEN '2099-01-01 00:00:00'{ts} ELSE {created} END, {created}, {created} \
             FROM ({series}) q"
        ))
        .execute(conn)
        .map_err(db_error)?;
        // PostgreSQL plans the statements below by the tables' statistics: without a fresh look
        // at the orders just added it expects one, and joins them to their payments badly.
        fresh_statistics(conn, "orders")?;
        // The orders this call added (ids past the largest before it): their lines and money.
        let range = format!("o.id > {newer_than} AND o.tenant_id BETWEEN {first} AND {last}");
        diesel::sql_query(format!(
            "INSERT INTO order_items (tenant_id, order_id, line_no, name, quantity, unit_price) \
             SELECT o.tenant_id, o.id, 1, 'Seed item', 1, o.amount FROM orders o WHERE {range}"
        ))
        .execute(conn)
        .map_err(db_error)?;
        // The ledger holds the money: each paid order's offline payment is a transaction of the
        // order (numbered as the ledger numbers offline payments), its refund a refund of it.
        diesel::sql_query(format!(
            "INSERT INTO payment_transactions (tenant_id, out_trade_no, description, amount, openid, trade_state, payer_total, \
                                               success_time, expires_at, created_at, updated_at, order_id, method, reference) \
             SELECT o.tenant_id, o.order_no || ':offline', o.subject, o.paid_amount, '', 'SUCCESS', o.paid_amount, \
                    o.paid_at, o.paid_at, o.paid_at, o.paid_at, o.id, 'offline', o.pay_reference \
             FROM orders o WHERE {range} AND o.pay_method = 'offline'"
        ))
        .execute(conn)
        .map_err(db_error)?;
        fresh_statistics(conn, "payment_transactions")?;
        diesel::sql_query(format!(
            "INSERT INTO payment_refunds (tenant_id, payment_id, out_trade_no, out_refund_no, amount, status, reason, succeeded_at, \
                                          created_at, updated_at, order_id) \
             SELECT o.tenant_id, t.id, t.out_trade_no, 'R' || o.order_no, 500, 'succeeded', 'seed', o.created_at, o.created_at, \
                    o.created_at, o.id \
             FROM orders o JOIN payment_transactions t ON t.tenant_id = o.tenant_id AND t.order_id = o.id \
             WHERE {range} AND o.status = 'partially_refunded'"
        ))
        .execute(conn)
        .map_err(db_error)?;
        Ok(count(conn, "orders")? - before)
    })?;
    analyze(db)?;
    Ok(added)
}

fn count(conn: &mut DbConn, table: &str) -> Result<i64, Error> {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let rows: Vec<Count> = diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}")).load(conn).map_err(db_error)?;
    Ok(rows.first().map(|r| r.n).unwrap_or(0))
}

fn max_id(conn: &mut DbConn, table: &str) -> Result<i64, Error> {
    #[derive(diesel::QueryableByName)]
    struct MaxId {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
    }
    let rows: Vec<MaxId> = diesel::sql_query(format!("SELECT COALESCE(MAX(id), 0) AS id FROM {table}")).load(conn).map_err(db_error)?;
    Ok(rows.first().map(|r| r.id).unwrap_or(0))
}
