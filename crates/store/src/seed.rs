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
        let (_, tenants) = seed_tenants(conn, 1, tenants)?;
        add_employees(conn, tenants, per_tenant)?;
        Ok(tenants)
    })?;
    analyze(db)?;
    Ok(range)
}

/// Adds `per_tenant` active employees to each tenant with an id in `first..=last` (none for
/// 0): what [`seed_org`] gives its tenants, for tenants seeded otherwise.
pub fn seed_employees(db: &Db, first: i64, last: i64, per_tenant: i64) -> Result<(), Error> {
    db.write_blocking(move |conn| add_employees(conn, (first, last), per_tenant))?;
    analyze(db)
}

/// `SELECT n` for n in 1..=`count` (no rows for 0 or less), as a subquery of the backend's.
fn series(conn: &DbConn, count: i64) -> String {
    match conn {
        DbConn::Pg(_) => format!("SELECT g AS n FROM generate_series(1, {count}) g"),
        DbConn::Sqlite(_) => {
            format!("WITH RECURSIVE s(n) AS (SELECT 1 WHERE {count} >= 1 UNION ALL SELECT n + 1 FROM s WHERE n < {count}) SELECT n FROM s")
        }
    }
}

/// The first and the last id of rows added.
type IdRange = (i64, i64);

/// `partners` new partners and `tenants` new tenants spread over them in turn (tenant n to
/// partner (n − 1) mod `partners`). Returns the id ranges of the partners and the tenants.
fn seed_tenants(conn: &mut DbConn, partners: i64, tenants: i64) -> Result<(IdRange, IdRange), Error> {
    if partners < 1 {
        return Err(Error::internal("seeding tenants needs at least one partner"));
    }
    let now = "2026-01-01 00:00:00";
    let name = if partners == 1 { "'Seed partner'".to_owned() } else { "'Seed partner ' || n".to_owned() };
    let first_partner = max_id(conn, "partners")? + 1;
    diesel::sql_query(format!(
        "INSERT INTO partners (name, status, created_at, updated_at) SELECT {name}, 'active', '{now}', '{now}' FROM ({}) q",
        series(conn, partners)
    ))
    .execute(conn)
    .map_err(db_error)?;
    let last_partner = max_id(conn, "partners")?;
    if last_partner - first_partner + 1 != partners {
        return Err(Error::internal("the seeded partners' ids are not consecutive (another writer?)"));
    }
    let first: i64 = max_id(conn, "tenants")? + 1;
    diesel::sql_query(format!(
        "INSERT INTO tenants (partner_id, name, status, created_at, updated_at) \
         SELECT {first_partner} + (n - 1) % {partners}, 'Seed tenant ' || n, 'active', '{now}', '{now}' FROM ({}) q",
        series(conn, tenants)
    ))
    .execute(conn)
    .map_err(db_error)?;
    let last: i64 = max_id(conn, "tenants")?;
    fresh_statistics(conn, "tenants")?;
    Ok(((first_partner, last_partner), (first, last)))
}

fn add_employees(conn: &mut DbConn, (first, last): (i64, i64), per_tenant: i64) -> Result<(), Error> {
    if per_tenant < 1 || last < first {
        return Ok(());
    }
    let now = "2026-01-01 00:00:00";
    let people = match conn {
        DbConn::Pg(_) => format!("SELECT t.id AS tid, g AS n FROM seeded t CROSS JOIN generate_series(1, {per_tenant}) g"),
        DbConn::Sqlite(_) => format!(
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {per_tenant}) \
             SELECT t.id AS tid, s.n AS n FROM seeded t CROSS JOIN s"
        ),
    };
    let (pg_cast, concat_no, phone) = match conn {
        DbConn::Pg(_) => ("::timestamp", "'E' || lpad(n::text, 6, '0')", "'+86139' || lpad(((tid * 1000 + n) % 100000000)::text, 8, '0')"),
        DbConn::Sqlite(_) => ("", "'E' || substr('000000' || n, -6)", "'+86139' || substr('00000000' || (tid * 1000 + n), -8)"),
    };
    diesel::sql_query(format!(
        "WITH seeded AS (SELECT id FROM tenants WHERE id BETWEEN {first} AND {last}) \
         INSERT INTO employees (tenant_id, employee_no, name, phone, department, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at) \
         SELECT tid, {concat_no}, 'Worker ' || n, {phone}, \
                CASE n % 4 WHEN 0 THEN 'Sales' WHEN 1 THEN 'R&D' WHEN 2 THEN 'Finance' ELSE 'Operations' END, \
                'active', 800000 + (n % 50) * 10000, '0.12', '[]', '{now}'{pg_cast}, '{now}'{pg_cast} FROM ({people}) p"
    ))
    .execute(conn)
    .map_err(db_error)?;
    Ok(())
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

/// What [`seed_shares`] added: id ranges, and how many rows of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeededShares {
    /// The new partners' ids, first and last.
    pub partners: (i64, i64),
    /// The new tenants' ids, first and last.
    pub tenants: (i64, i64),
    /// Paid sub-merchant transactions (`payment_transactions`), each with its sharing.
    pub payments: i64,
    /// Shares (`payment_shares`): the platform's and the partner's of each payment.
    pub shares: i64,
    /// Succeeded partial refunds (`payment_refunds`).
    pub refunds: i64,
    /// Succeeded returns of shares before those refunds (`payment_share_returns`).
    pub returns: i64,
}

/// The platform's rate and the partners' commission the seeded payments are shared at, basis
/// points.
pub const SEED_PLATFORM_BP: i64 = 100;
/// See [`SEED_PLATFORM_BP`].
pub const SEED_COMMISSION_BP: i64 = 250;
/// The platform's merchant id, receiver of the seeded platform shares.
pub const SEED_PLATFORM_MCHID: &str = "1900000100";
/// When the seeded payments start: 2026-01-01 00:00 China Standard Time, in UTC. They are
/// spread evenly over the 365 days from then, so the last is paid on 2026-12-31 (CST).
const SHARED_FROM: &str = "2025-12-31 16:00:00";
const YEAR_MINUTES: i64 = 365 * 24 * 60;
/// Shares of the payments of the last day (CST 2026-12-31) are `pending`, of the two days
/// before `processing`; older ones settled.
const PENDING_FROM: &str = "2026-12-30 16:00:00";
const PROCESSING_FROM: &str = "2026-12-28 16:00:00";

/// Adds `partners` partners, each with a share plan (version 1: the platform's 1 % and a 2.5 %
/// commission to merchant `193` + its id in 7 digits), and `tenants` tenants spread over them
/// in turn, each a sub-merchant (`19` + its id in 8 digits) with `per_tenant` payments by
/// WeChat Pay, shared as the sharing job shares them. Written set-based, a million payments in
/// a few minutes on either backend.
///
/// A tenant's payment n (1, 2, …) is paid at minute `(n − 1) × step + tenant id mod step` of
/// 2026 in China Standard Time, `step` = 525,600 / `per_tenant` (so a tenant's payments spread
/// evenly over the year, ids in the order they were paid, as a live ledger's are), for
/// 100 + (37 n + 11 × tenant id) mod 20,000 fen. Each has a sharing (base = amount, 1 % and
/// 2.5 %) and a share per role, none of 0 fen (`PS` + payment id the request). Shares of the
/// last day are `pending`, of the two days before `processing`, the partner's of payments
/// with an id of 50 mod 97 (1 %) `closed` (`ACCOUNT_ABNORMAL`), the rest `succeeded` (the rest of
/// those payments unfrozen). Payment n ≡ 7 (mod 20) of each tenant (5 %), paid before the last
/// three days, is refunded 30 % a day later (`REFUND`, a succeeded refund): each share gave
/// back floor(share × refund / amount) first (its `returned`, and a succeeded return `PR` +
/// share id + `-1` when more than 0).
pub fn seed_shares(db: &Db, partners: i64, tenants: i64, per_tenant: i64) -> Result<SeededShares, Error> {
    let seeded = db.write_blocking(move |conn| {
        let (partner_ids, tenant_ids) = seed_tenants(conn, partners, tenants)?;
        // PostgreSQL runs the statement sums' triggers row by row (minutes for a million
        // payments): they are off while the new tenants' payments go in, in this transaction,
        // and the new tenants' and partners' sums are then written in one go.
        let pg = matches!(conn, DbConn::Pg(_));
        if pg {
            sum_triggers(conn, "DISABLE")?;
        }
        let seeded = add_shared_payments(conn, partner_ids, tenant_ids, per_tenant)?;
        if pg {
            sum_new_tenants(conn, &seeded)?;
            sum_triggers(conn, "ENABLE")?;
        }
        Ok(seeded)
    })?;
    analyze(db)?;
    Ok(seeded)
}

/// Turns the triggers keeping the statement sums (migrations `…_earning_days`, `…_partner_days`)
/// off or on (PostgreSQL; inside the seeding transaction, so no other writer sees them off).
fn sum_triggers(conn: &mut DbConn, switch: &str) -> Result<(), Error> {
    for (table, trigger) in [
        ("payment_transactions", "payment_transactions_earning"),
        ("payment_refunds", "payment_refunds_earning"),
        ("payment_shares", "payment_shares_earning"),
        ("payment_earning_days", "payment_earning_days_partner"),
    ] {
        diesel::sql_query(format!("ALTER TABLE {table} {switch} TRIGGER {trigger}")).execute(conn).map_err(db_error)?;
    }
    Ok(())
}

/// The statement sums of the tenants and partners just seeded (who had none), as the
/// migrations that made the sums compute them for what was there.
fn sum_new_tenants(conn: &mut DbConn, seeded: &SeededShares) -> Result<(), Error> {
    let ((first, last), (first_partner, last_partner)) = (seeded.tenants, seeded.partners);
    let counted =
        "t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL AND t.success_time IS NOT NULL";
    diesel::sql_query(format!(
        "INSERT INTO payment_earning_days (tenant_id, day, role, partner_id, paid, refunded) \
         SELECT t.tenant_id, earning_day(t.success_time), '', 0, SUM(t.amount), \
                SUM(COALESCE((SELECT SUM(r.amount) FROM payment_refunds r WHERE r.payment_id = t.id AND r.status = 'succeeded'), 0)) \
         FROM payment_transactions t WHERE t.tenant_id BETWEEN {first} AND {last} AND {counted} \
         GROUP BY t.tenant_id, earning_day(t.success_time)"
    ))
    .execute(conn)
    .map_err(db_error)?;
    diesel::sql_query(format!(
        "INSERT INTO payment_earning_days (tenant_id, day, role, partner_id, shared, returned, pending, failed) \
         SELECT s.tenant_id, earning_day(t.success_time), s.role, COALESCE(s.partner_id, 0), \
                SUM(CASE WHEN s.status IN ('succeeded', 'returned') THEN s.amount - s.withheld ELSE 0 END), SUM(s.returned), \
                SUM(CASE WHEN s.status IN ('pending', 'processing') THEN s.amount - s.withheld ELSE 0 END), \
                SUM(CASE WHEN s.status = 'closed' THEN s.amount - s.withheld ELSE 0 END) \
         FROM payment_shares s JOIN payment_transactions t ON t.id = s.payment_id \
         WHERE s.tenant_id BETWEEN {first} AND {last} AND {counted} \
         GROUP BY s.tenant_id, earning_day(t.success_time), s.role, COALESCE(s.partner_id, 0)"
    ))
    .execute(conn)
    .map_err(db_error)?;
    diesel::sql_query(format!(
        "INSERT INTO payment_partner_days (partner_id, day, paid, refunded, shared, returned, pending, failed) \
         SELECT p.partner_id, e.day, SUM(e.paid), SUM(e.refunded), SUM(e.shared), SUM(e.returned), SUM(e.pending), SUM(e.failed) \
         FROM payment_earning_days e JOIN tenants p ON p.id = e.tenant_id \
         WHERE e.tenant_id BETWEEN {first} AND {last} AND p.partner_id BETWEEN {first_partner} AND {last_partner} \
           AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = p.partner_id)) \
         GROUP BY p.partner_id, e.day"
    ))
    .execute(conn)
    .map_err(db_error)?;
    Ok(())
}

/// How the seed writes a few things on each backend.
struct Dialect {
    pg: bool,
}

impl Dialect {
    fn of(conn: &DbConn) -> Dialect {
        Dialect { pg: matches!(conn, DbConn::Pg(_)) }
    }

    /// A timestamp literal.
    fn at(&self, literal: &str) -> String {
        if self.pg { format!("TIMESTAMP '{literal}'") } else { format!("'{literal}'") }
    }

    /// Timestamp expression `ts` plus `minutes` (an integer expression).
    fn plus(&self, ts: &str, minutes: &str) -> String {
        if self.pg { format!("({ts} + ({minutes}) * INTERVAL '1 minute')") } else { format!("datetime({ts}, ({minutes}) || ' minutes')") }
    }

    /// Integer expression `n` as text of at least `width` digits, zeros in front.
    fn pad(&self, n: &str, width: usize) -> String {
        if self.pg { format!("lpad(({n})::text, {width}, '0')") } else { format!("substr('{}' || ({n}), -{width})", "0".repeat(width)) }
    }
}

fn add_shared_payments(
    conn: &mut DbConn,
    (first_partner, last_partner): (i64, i64),
    (first, last): (i64, i64),
    per_tenant: i64,
) -> Result<SeededShares, Error> {
    let d = Dialect::of(conn);
    let mut seeded =
        SeededShares { partners: (first_partner, last_partner), tenants: (first, last), payments: 0, shares: 0, refunds: 0, returns: 0 };
    let plans_at = d.at("2025-12-01 00:00:00");
    diesel::sql_query(format!(
        "INSERT INTO share_plans (partner_id, version, commission_bp, platform_bp, receiver_type, receiver_account, receiver_name, created_at) \
         SELECT id, 1, {SEED_COMMISSION_BP}, {SEED_PLATFORM_BP}, 'MERCHANT_ID', '193' || {}, 'Seed agency ' || id, {plans_at} \
         FROM partners WHERE id BETWEEN {first_partner} AND {last_partner}",
        d.pad("id", 7)
    ))
    .execute(conn)
    .map_err(db_error)?;
    if per_tenant < 1 || last < first {
        return Ok(seeded);
    }
    let step = (YEAR_MINUTES / per_tenant).max(1);
    // Refunded: payment n ≡ 7 (mod 20), paid before the shares still pending or processing.
    let refunded_before = YEAR_MINUTES - 3 * 24 * 60;
    let refund = |amount: &str| format!("(({amount}) * 3 / 10)");
    let start = d.at(SHARED_FROM);
    let numbered = match conn {
        DbConn::Pg(_) => format!(
            "SELECT t.id AS tid, g AS n FROM tenants t CROSS JOIN generate_series(1, {per_tenant}) g WHERE t.id BETWEEN {first} AND {last}"
        ),
        DbConn::Sqlite(_) => format!(
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {per_tenant}) \
             SELECT t.id AS tid, s.n AS n FROM tenants t CROSS JOIN s WHERE t.id BETWEEN {first} AND {last}"
        ),
    };
    let newer_than = max_id(conn, "payment_transactions")?;
    let before = count(conn, "payment_transactions")?;
    // In the order they were paid, as the ledger's ids are: a day's payments of one partner's
    // tenants lie among every other partner's of that day.
    diesel::sql_query(format!(
        "INSERT INTO payment_transactions (tenant_id, out_trade_no, description, amount, openid, prepay_id, trade_state, transaction_id, \
                                           payer_total, success_time, expires_at, created_at, updated_at, method, sub_mchid) \
         SELECT tid, 'SH' || tid || '-' || n, 'Seed shared payment ' || n, amount, 'o_seed_' || (n % 500), 'wx_seed_' || tid || '_' || n, \
                CASE WHEN refunded THEN 'REFUND' ELSE 'SUCCESS' END, '4200' || {tid8} || {n12}, amount, {paid}, {expires}, {created}, \
                CASE WHEN refunded THEN {refunded_at} ELSE {paid} END, 'wechat_jsapi', '19' || {tid8} \
         FROM (SELECT tid, n, m, 100 + (n * 37 + tid * 11) % 20000 AS amount, (n % 20 = 7 AND m < {refunded_before}) AS refunded \
               FROM (SELECT tid, n, (n - 1) * {step} + tid % {step} AS m FROM ({numbered}) q0) q1) q \
         ORDER BY m, tid",
        tid8 = d.pad("tid", 8),
        n12 = d.pad("n", 12),
        paid = d.plus(&start, "m"),
        created = d.plus(&start, "m - 1"),
        expires = d.plus(&start, "m + 119"),
        refunded_at = d.plus(&start, "m + 1440"),
    ))
    .execute(conn)
    .map_err(db_error)?;
    seeded.payments = count(conn, "payment_transactions")? - before;
    fresh_statistics(conn, "payment_transactions")?;
    let mine = format!("t.id > {newer_than} AND t.tenant_id BETWEEN {first} AND {last}");
    let (pending_from, processing_from) = (d.at(PENDING_FROM), d.at(PROCESSING_FROM));
    // By id mod 97, not a divisor of 1,000: a tenant's payments are numbered a whole cycle of
    // tenants apart, and a divisor would close all of a few tenants' shares and none of others'.
    let closed = "t.id % 97 = 50 AND t.trade_state = 'SUCCESS'";
    diesel::sql_query(format!(
        "INSERT INTO payment_sharings (payment_id, tenant_id, base, platform_bp, commission_bp, unfrozen_at, created_at) \
         SELECT t.id, t.tenant_id, t.amount, {SEED_PLATFORM_BP}, {SEED_COMMISSION_BP}, \
                CASE WHEN t.success_time < {processing_from} AND NOT ({closed}) THEN {unfrozen} END, {begun} \
         FROM payment_transactions t WHERE {mine} ORDER BY t.id",
        unfrozen = d.plus("t.success_time", "3"),
        begun = d.plus("t.success_time", "1"),
    ))
    .execute(conn)
    .map_err(db_error)?;
    fresh_statistics(conn, "payment_sharings")?;
    // Both roles' shares of each payment, the platform's first, as the job stores them.
    let shares_before = count(conn, "payment_shares")?;
    diesel::sql_query(format!(
        "INSERT INTO payment_shares (tenant_id, payment_id, out_trade_no, partner_id, role, receiver_type, receiver_account, receiver_name, \
                                     amount, status, fail_reason, out_order_no, retries, plan_version, created_at, settled_at, updated_at, \
                                     returned, withheld) \
         SELECT tenant_id, payment_id, out_trade_no, partner_id, role, 'MERCHANT_ID', account, name, amount, status, \
                CASE WHEN status = 'closed' THEN 'ACCOUNT_ABNORMAL' END, 'PS' || payment_id, 0, 1, created_at, \
                CASE WHEN status = 'succeeded' THEN settled_at END, \
                CASE WHEN returned > 0 THEN refunded_at WHEN status IN ('succeeded', 'closed') THEN settled_at ELSE created_at END, \
                returned, 0 \
         FROM (SELECT s.tenant_id, s.payment_id, t.out_trade_no, tn.partner_id, r.role, r.ord, \
                      CASE WHEN r.ord = 1 THEN '{SEED_PLATFORM_MCHID}' ELSE p.receiver_account END AS account, \
                      CASE WHEN r.ord = 1 THEN 'Seed Platform Ltd' ELSE p.receiver_name END AS name, \
                      s.base * r.bp / 10000 AS amount, \
                      CASE WHEN t.success_time >= {pending_from} THEN 'pending' WHEN t.success_time >= {processing_from} THEN 'processing' \
                           WHEN r.ord = 2 AND {closed} THEN 'closed' ELSE 'succeeded' END AS status, \
                      CASE WHEN t.trade_state = 'REFUND' THEN (s.base * r.bp / 10000) * {refund_amount} / t.amount ELSE 0 END AS returned, \
                      s.created_at, {settled} AS settled_at, t.updated_at AS refunded_at \
               FROM payment_transactions t \
               JOIN payment_sharings s ON s.payment_id = t.id \
               JOIN tenants tn ON tn.id = t.tenant_id \
               JOIN share_plans p ON p.partner_id = tn.partner_id AND p.version = 1 \
               CROSS JOIN (SELECT 'platform' AS role, {SEED_PLATFORM_BP} AS bp, 1 AS ord \
                           UNION ALL SELECT 'partner', {SEED_COMMISSION_BP}, 2) r \
               WHERE {mine}) q \
         WHERE amount > 0 ORDER BY payment_id, ord",
        refund_amount = refund("t.amount"),
        settled = d.plus("t.success_time", "2"),
    ))
    .execute(conn)
    .map_err(db_error)?;
    seeded.shares = count(conn, "payment_shares")? - shares_before;
    fresh_statistics(conn, "payment_shares")?;
    let refunds_before = count(conn, "payment_refunds")?;
    diesel::sql_query(format!(
        "INSERT INTO payment_refunds (tenant_id, payment_id, out_trade_no, out_refund_no, refund_id, amount, status, reason, succeeded_at, \
                                      created_at, updated_at) \
         SELECT t.tenant_id, t.id, t.out_trade_no, 'RF' || t.out_trade_no, '5030' || {refund_no}, {refund_amount}, 'succeeded', \
                'seed partial refund', t.updated_at, {asked}, t.updated_at \
         FROM payment_transactions t WHERE {mine} AND t.trade_state = 'REFUND' ORDER BY t.id",
        refund_no = d.pad("t.id", 16),
        refund_amount = refund("t.amount"),
        asked = d.plus("t.success_time", "1439"),
    ))
    .execute(conn)
    .map_err(db_error)?;
    seeded.refunds = count(conn, "payment_refunds")? - refunds_before;
    fresh_statistics(conn, "payment_refunds")?;
    let returns_before = count(conn, "payment_share_returns")?;
    diesel::sql_query(format!(
        "INSERT INTO payment_share_returns (tenant_id, payment_id, share_id, out_refund_no, part, amount, status, out_return_no, return_id, \
                                            created_at, settled_at, updated_at) \
         SELECT sh.tenant_id, sh.payment_id, sh.id, r.out_refund_no, sh.returned, sh.returned, 'succeeded', 'PR' || sh.id || '-1', \
                '3008' || {return_no}, r.created_at, r.created_at, r.created_at \
         FROM payment_transactions t \
         JOIN payment_refunds r ON r.payment_id = t.id AND r.status = 'succeeded' \
         JOIN payment_shares sh ON sh.payment_id = t.id \
         WHERE {mine} AND t.trade_state = 'REFUND' AND sh.returned > 0 ORDER BY sh.id",
        return_no = d.pad("sh.id", 16),
    ))
    .execute(conn)
    .map_err(db_error)?;
    seeded.returns = count(conn, "payment_share_returns")? - returns_before;
    fresh_statistics(conn, "payment_share_returns")?;
    Ok(seeded)
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use atrium_kernel::Money;
    use atrium_payments::{Earner, EarningsGroup, Rates, Receiver, ReceiverType, ReturnStatus, ShareRole, ShareStatus, split};

    #[derive(diesel::QueryableByName)]
    struct One {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }

    /// The one integer `sql` answers (as `n`).
    fn one(db: &Db, sql: &str) -> i64 {
        let mut conn = db.conn().unwrap();
        let rows: Vec<One> = diesel::sql_query(sql).load(&mut *conn).unwrap();
        rows[0].n
    }

    crate::store_test!(seeded_shares_are_what_the_sharing_job_would_have_stored_and_add_up, |db| {
        let seeded = seed_shares(&db, 2, 3, 400).unwrap();
        let (p, t) = (seeded.partners, seeded.tenants);
        assert_eq!((p.1 - p.0, t.1 - t.0, seeded.payments, seeded.shares), (1, 2, 1200, 2400), "{seeded:?}");
        // 20 of each tenant's 400 are refunded; all shares but the platform's of 100 to 129 fen
        // with 30 % refunded give some back.
        assert_eq!(seeded.refunds, 60, "{seeded:?}");
        assert!(seeded.returns > 60 && seeded.returns <= 120, "{seeded:?}");
        // Tenants go to the partners in turn; each partner has its plan.
        let partner_of = |tenant: i64| one(&db, &format!("SELECT partner_id AS n FROM tenants WHERE id = {tenant}"));
        assert_eq!([partner_of(t.0), partner_of(t.0 + 1), partner_of(t.1)], [p.0, p.1, p.0]);
        assert_eq!(
            one(&db, &format!("SELECT COUNT(*) AS n FROM share_plans WHERE partner_id BETWEEN {} AND {} AND version = 1", p.0, p.1)),
            2
        );
        // Every payment a paid sub-merchant payment of 2026 (CST), ids in the order paid.
        let paid = "sub_mchid IS NOT NULL AND method = 'wechat_jsapi' AND trade_state IN ('SUCCESS', 'REFUND') AND discrepancy IS NULL \
                    AND transaction_id IS NOT NULL AND amount BETWEEN 100 AND 20099 AND payer_total = amount \
                    AND success_time >= '2025-12-31 16:00:00' AND success_time < '2026-12-31 16:00:00'";
        assert_eq!(one(&db, &format!("SELECT COUNT(*) AS n FROM payment_transactions WHERE {paid}")), 1200);
        assert_eq!(
            one(
                &db,
                "SELECT COUNT(*) AS n FROM payment_transactions a JOIN payment_transactions b ON b.id = a.id + 1 WHERE b.success_time < a.success_time"
            ),
            0
        );
        // Each payment's shares: the platform's and the partner's at the seeded rates, the
        // partner's the tenant's, never more than the base.
        let mismatched = one(
            &db,
            "SELECT COUNT(*) AS n FROM payment_shares sh JOIN payment_sharings s ON s.payment_id = sh.payment_id \
             JOIN payment_transactions t ON t.id = sh.payment_id JOIN tenants tn ON tn.id = sh.tenant_id \
             WHERE s.base <> t.amount OR sh.partner_id <> tn.partner_id OR sh.out_order_no <> 'PS' || sh.payment_id \
                OR sh.amount <> s.base * (CASE sh.role WHEN 'platform' THEN 100 ELSE 250 END) / 10000",
        );
        assert_eq!(mismatched, 0);
        assert_eq!(
            one(
                &db,
                "SELECT COUNT(*) AS n FROM payment_sharings s WHERE (SELECT SUM(amount) FROM payment_shares sh WHERE sh.payment_id = s.payment_id) > s.base"
            ),
            0
        );
        // A refunded payment has one succeeded refund of 30 %; each share gave back its part of
        // it, through one succeeded return when more than nothing.
        assert_eq!(
            one(
                &db,
                "SELECT COUNT(*) AS n FROM payment_transactions t JOIN payment_refunds r ON r.payment_id = t.id \
                 WHERE t.trade_state = 'REFUND' AND r.status = 'succeeded' AND r.amount = t.amount * 3 / 10 AND r.succeeded_at > t.success_time"
            ),
            60
        );
        assert_eq!(
            one(
                &db,
                "SELECT COUNT(*) AS n FROM payment_shares sh JOIN payment_transactions t ON t.id = sh.payment_id \
                 WHERE sh.returned <> CASE WHEN t.trade_state = 'REFUND' THEN sh.amount * (t.amount * 3 / 10) / t.amount ELSE 0 END \
                    OR sh.returned <> (SELECT COALESCE(SUM(amount), 0) FROM payment_share_returns x WHERE x.share_id = sh.id AND x.status = 'succeeded')"
            ),
            0
        );
        // Statuses: the last day pending, the two before processing, a few partners' closed.
        let status = |s: &str| one(&db, &format!("SELECT COUNT(*) AS n FROM payment_shares WHERE status = '{s}'"));
        let (pending, processing, closed, succeeded) = (status("pending"), status("processing"), status("closed"), status("succeeded"));
        assert!(pending > 0 && processing > 0 && closed > 0, "{pending} {processing} {closed}");
        // The closed ones are every tenant's few, not all of a few tenants'.
        assert_eq!(one(&db, "SELECT COUNT(DISTINCT tenant_id) AS n FROM payment_shares WHERE status = 'closed'"), 3);
        assert!(closed < 2400 / 50, "{closed}");
        assert_eq!(pending + processing + closed + succeeded, 2400);
        assert_eq!(
            one(
                &db,
                "SELECT COUNT(*) AS n FROM payment_shares sh JOIN payment_transactions t ON t.id = sh.payment_id \
                 WHERE (sh.status = 'pending') <> (t.success_time >= '2026-12-30 16:00:00') \
                    OR (sh.status IN ('pending', 'processing')) <> (t.success_time >= '2026-12-28 16:00:00') \
                    OR (sh.status = 'succeeded') <> (sh.settled_at IS NOT NULL)"
            ),
            0
        );
        // Read back through the store as the sharing job reads them: the amounts are what
        // `split` gives, and the rest is the tenant's.
        let refunded = one(&db, "SELECT MIN(id) AS n FROM payment_transactions WHERE trade_state = 'REFUND'");
        let closed_one = one(&db, "SELECT MIN(payment_id) AS n FROM payment_shares WHERE status = 'closed'");
        let mut conn = db.conn().unwrap();
        for payment in [refunded, closed_one] {
            let (sharing, shares) = crate::shares::sharing_of(&mut conn, payment).unwrap().expect("a sharing");
            let rates = Rates { platform_bp: 100, commission_bp: 250 };
            assert_eq!(sharing.rates, rates);
            let receiver = |account: &str| Receiver { kind: ReceiverType::MerchantId, account: account.into(), name: None };
            let want: Vec<(ShareRole, Money)> = split(sharing.base, rates, &receiver("p"), Some(&receiver("a")))
                .into_iter()
                .map(|(role, _, amount)| (role, amount))
                .collect();
            assert_eq!(shares.iter().map(|s| (s.role, s.amount)).collect::<Vec<_>>(), want);
            let kept = sharing.base.fen() - shares.iter().map(|s| s.amount.fen()).sum::<i64>();
            assert!(kept >= 0 && kept + shares.iter().map(|s| s.amount.fen()).sum::<i64>() == sharing.base.fen());
            assert_eq!(shares[0].receiver.account, SEED_PLATFORM_MCHID);
            assert!(shares[1].receiver.account.starts_with("193") && shares[1].receiver.account.len() == 10, "{:?}", shares[1]);
            let returns = crate::shares::returns_of_payment(&mut conn, payment).unwrap();
            if payment == refunded {
                assert!(shares.iter().all(|s| s.status == ShareStatus::Succeeded && s.settled_at.is_some()), "{shares:?}");
                assert!(shares[1].returned.is_positive(), "{shares:?}");
                assert!(returns.iter().all(|r| r.status == ReturnStatus::Succeeded && r.amount == r.part), "{returns:?}");
                assert_eq!(returns.iter().map(|r| r.amount.fen()).sum::<i64>(), shares.iter().map(|s| s.returned.fen()).sum::<i64>());
            } else {
                assert_eq!(shares[1].status, ShareStatus::Closed);
                assert_eq!(shares[1].fail_reason.as_deref(), Some("ACCOUNT_ABNORMAL"));
                assert!(returns.is_empty() && sharing.unfrozen_at.is_none());
            }
        }
        drop(conn);
        // Seeding again adds other tenants' payments, numbered apart.
        let again = seed_shares(&db, 1, 2, 5).unwrap();
        assert_eq!((again.partners.0, again.tenants.0, again.payments, again.shares), (p.1 + 1, t.1 + 1, 10, 20), "{again:?}");
        assert_eq!(one(&db, "SELECT COUNT(*) AS n FROM payment_sharings"), 1210);
        // The statement sums (written in one go on PostgreSQL, by the triggers on SQLite) are
        // the ledger's, for every earner, by day and by tenant.
        let (from, to) = (chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap(), chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap());
        let (start, end) = (atrium_kernel::china_day(from).0, atrium_kernel::china_day(to).1);
        let mut conn = db.conn().unwrap();
        for earner in [Earner::Platform, Earner::Partner(p.0), Earner::Partner(p.1), Earner::Partner(p.1 + 1)] {
            for group in [EarningsGroup::Day, EarningsGroup::Tenant] {
                let mut kept = crate::earnings::earnings(&mut conn, earner, from, to, group).unwrap();
                let mut summed = crate::earnings::from_ledger(&mut conn, earner, start, end, group).unwrap();
                kept.sort_by_key(|r| r.key);
                summed.sort_by_key(|r| r.key);
                assert!(!kept.is_empty(), "{earner:?} by {group:?}");
                assert_eq!(kept, summed, "{earner:?} by {group:?}");
            }
        }
    });
}
