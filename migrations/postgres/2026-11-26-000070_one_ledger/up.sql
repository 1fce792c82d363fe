-- One ledger: the payments tables hold every movement of money, orders' included. An order's
-- payment is a ledger transaction linked to the order (order_id), paid on the platform or
-- recorded offline (method); an order's refunds are refunds of that transaction, so
-- order_refunds goes. The order keeps what it learns of its money (status, paid_amount,
-- refunded_amount, the payment's facts) as a projection the ledger's events keep current.

ALTER TABLE payment_transactions ADD COLUMN order_id BIGINT;
ALTER TABLE payment_transactions ADD COLUMN method TEXT NOT NULL DEFAULT 'wechat_jsapi' CHECK (method IN ('wechat_jsapi', 'offline'));
ALTER TABLE payment_transactions ADD COLUMN reference TEXT;
ALTER TABLE payment_transactions ADD COLUMN paid_by BIGINT;
-- What the platform reported that does not match the transaction (another amount or
-- currency): such a transaction is not paid.
ALTER TABLE payment_transactions ADD COLUMN discrepancy TEXT;
ALTER TABLE payment_refunds ADD COLUMN order_id BIGINT;
ALTER TABLE orders ADD COLUMN discrepancy TEXT;

-- An order's platform transaction carries the order's number.
UPDATE payment_transactions SET order_id = (
    SELECT o.id FROM orders o WHERE o.tenant_id = payment_transactions.tenant_id AND o.order_no = payment_transactions.out_trade_no
);

-- Offline payments become the ledger's, unless the order has a live platform transaction
-- already (it was paid twice; that one stays the order's payment).
INSERT INTO payment_transactions (tenant_id, out_trade_no, description, amount, openid, trade_state, payer_total,
                                  success_time, expires_at, created_at, updated_at, order_id, method, reference, paid_by)
SELECT o.tenant_id, o.order_no || '-offline', o.subject, o.paid_amount, '', 'SUCCESS', o.paid_amount,
       COALESCE(o.paid_at, o.updated_at), o.expires_at, COALESCE(o.paid_at, o.updated_at), o.updated_at, o.id, 'offline',
       o.pay_reference, o.paid_by
FROM orders o
WHERE o.pay_method = 'offline' AND o.paid_amount > 0
  AND NOT EXISTS (SELECT 1 FROM payment_transactions t
                  WHERE t.tenant_id = o.tenant_id AND t.order_id = o.id AND t.trade_state NOT IN ('CLOSED', 'REVOKED'));

UPDATE payment_refunds SET order_id = (SELECT t.order_id FROM payment_transactions t WHERE t.id = payment_refunds.payment_id);

-- Order refunds the ledger does not hold yet (an offline payment's, or one that never reached
-- it) become refunds of the order's paid transaction.
INSERT INTO payment_refunds (tenant_id, payment_id, out_trade_no, out_refund_no, amount, status, reason, succeeded_at,
                             created_at, updated_at, order_id)
SELECT r.tenant_id, t.id, t.out_trade_no, r.out_refund_no, r.amount, r.status, r.reason,
       CASE WHEN r.status = 'succeeded' THEN r.settled_at END, r.created_at, r.updated_at, r.order_id
FROM order_refunds r
JOIN payment_transactions t ON t.id = (
    SELECT MAX(t2.id) FROM payment_transactions t2
    WHERE t2.tenant_id = r.tenant_id AND t2.order_id = r.order_id AND t2.trade_state IN ('SUCCESS', 'REFUND'))
WHERE NOT EXISTS (SELECT 1 FROM payment_refunds p WHERE p.tenant_id = r.tenant_id AND p.out_refund_no = r.out_refund_no);

DROP TABLE order_refunds;

-- One way to pay an order at a time: at most one live transaction per order, whatever races.
CREATE UNIQUE INDEX payment_transactions_live_order_idx ON payment_transactions(tenant_id, order_id)
    WHERE order_id IS NOT NULL AND trade_state NOT IN ('CLOSED', 'REVOKED');
CREATE INDEX payment_transactions_order_idx ON payment_transactions(tenant_id, order_id, id);
-- An order's refunds, read with every order shown (by order id alone).
CREATE INDEX payment_refunds_order_idx ON payment_refunds(order_id, id);
-- The sweep's and the metrics' questions: refunds still processing by age, and the
-- (rare) transactions holding a discrepancy.
CREATE INDEX payment_refunds_processing_idx ON payment_refunds(created_at) WHERE status = 'processing';
CREATE INDEX payment_transactions_discrepancy_idx ON payment_transactions(id) WHERE discrepancy IS NOT NULL;
-- The sweep passes over what a job already gave up on.
CREATE INDEX jobs_failed_idx ON jobs(kind, dedupe_key) WHERE status = 'failed';
