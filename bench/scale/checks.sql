-- What one run of bench/scale/moneypath.py left in the database, counted from the tables:
--   psql -At -F' ' -v run=LABEL -f bench/scale/checks.sql "$DATABASE_URL"
-- prints "name value" lines. Every flow of the run made one order whose subject is
-- "scale LABEL-N", paid it in full (8800 fen) and refunded it in full, once each.
-- Every count but orders_created and refunded must be 0.
WITH run_orders AS (
    SELECT o.* FROM orders o WHERE o.subject LIKE 'scale ' || :'run' || '-%'
),
-- What the ledger holds of each order: its transactions (any state), the paid ones, its
-- refunds (any state) and the succeeded ones.
ledger AS (
    SELECT o.id,
           o.status,
           o.paid_amount,
           o.refunded_amount,
           (SELECT count(*) FROM payment_transactions t WHERE t.tenant_id = o.tenant_id AND t.order_id = o.id) AS transactions,
           (SELECT COALESCE(sum(t.amount), 0) FROM payment_transactions t
             WHERE t.tenant_id = o.tenant_id AND t.order_id = o.id
               AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS ledger_paid,
           (SELECT count(*) FROM payment_transactions t
             WHERE t.tenant_id = o.tenant_id AND t.order_id = o.id AND t.trade_state NOT IN ('CLOSED', 'REVOKED')) AS live,
           (SELECT count(*) FROM payment_refunds r WHERE r.tenant_id = o.tenant_id AND r.order_id = o.id) AS refunds,
           (SELECT COALESCE(sum(r.amount), 0) FROM payment_refunds r
             WHERE r.tenant_id = o.tenant_id AND r.order_id = o.id AND r.status = 'succeeded') AS ledger_refunded
    FROM run_orders o
),
expected AS (
    SELECT l.*,
           CASE
               WHEN ledger_paid = 0 AND live > 0 THEN 'paying'
               WHEN ledger_paid = 0 THEN NULL -- pending or closed: nothing to compare
               WHEN ledger_refunded = 0 THEN 'paid'
               WHEN ledger_refunded < ledger_paid THEN 'partially_refunded'
               ELSE 'refunded'
           END AS ledger_status
    FROM ledger l
)
SELECT 'orders_created', count(*) FROM run_orders
UNION ALL SELECT 'refunded', count(*) FILTER (WHERE status = 'refunded') FROM run_orders
-- The same Idempotency-Key (one per flow, in the subject) made two orders.
UNION ALL SELECT 'duplicate_orders', COALESCE(sum(n - 1), 0)
    FROM (SELECT count(*) AS n FROM run_orders GROUP BY tenant_id, subject HAVING count(*) > 1) d
-- An order paid through more than one ledger transaction.
UNION ALL SELECT 'duplicate_transactions', COALESCE(sum(transactions - 1) FILTER (WHERE transactions > 1), 0) FROM expected
-- More refunds than the one each flow asked for, under its one Idempotency-Key.
UNION ALL SELECT 'duplicate_refunds', COALESCE(sum(refunds - 1) FILTER (WHERE refunds > 1), 0) FROM expected
-- A payment or refund counted twice (a notification applied twice) or not at all: the order's
-- amounts against the ledger's.
UNION ALL SELECT 'paid_amount_mismatch', count(*) FILTER (WHERE paid_amount <> ledger_paid) FROM expected
UNION ALL SELECT 'refunded_amount_mismatch', count(*) FILTER (WHERE refunded_amount <> ledger_refunded) FROM expected
-- A lost update: the order's status is not what its ledger says.
UNION ALL SELECT 'status_mismatch', count(*) FILTER (WHERE ledger_status IS NOT NULL AND status <> ledger_status) FROM expected
-- Over-refunded (more succeeded refunds than paid), which the refund rule forbids.
UNION ALL SELECT 'over_refunded', count(*) FILTER (WHERE ledger_refunded > ledger_paid) FROM expected
-- Ledger events (ledger.order_changed and the payment jobs) that gave up.
UNION ALL SELECT 'failed_jobs', count(*) FROM jobs WHERE status = 'failed';
