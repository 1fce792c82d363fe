CREATE TABLE order_refunds (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    order_id BIGINT NOT NULL REFERENCES orders(id),
    out_refund_no TEXT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL CHECK (status IN ('processing', 'succeeded', 'failed', 'closed')),
    reason TEXT,
    settled_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, out_refund_no)
);
CREATE INDEX order_refunds_order_idx ON order_refunds(order_id, status);
INSERT INTO order_refunds (tenant_id, order_id, out_refund_no, amount, status, reason, settled_at, created_at, updated_at)
SELECT tenant_id, order_id, out_refund_no, amount, status, reason,
       CASE WHEN status = 'processing' THEN NULL ELSE COALESCE(succeeded_at, updated_at) END, created_at, updated_at
FROM payment_refunds WHERE order_id IS NOT NULL;
DELETE FROM payment_refunds WHERE payment_id IN (SELECT id FROM payment_transactions WHERE method = 'offline');
DELETE FROM payment_transactions WHERE method = 'offline';

DROP INDEX jobs_failed_idx;
DROP INDEX payment_transactions_discrepancy_idx;
DROP INDEX payment_refunds_processing_idx;
DROP INDEX payment_refunds_order_idx;
DROP INDEX payment_transactions_order_idx;
DROP INDEX payment_transactions_live_order_idx;
ALTER TABLE orders DROP COLUMN discrepancy;
ALTER TABLE payment_refunds DROP COLUMN order_id;
ALTER TABLE payment_transactions DROP COLUMN discrepancy;
ALTER TABLE payment_transactions DROP COLUMN paid_by;
ALTER TABLE payment_transactions DROP COLUMN reference;
ALTER TABLE payment_transactions DROP COLUMN method;
ALTER TABLE payment_transactions DROP COLUMN order_id;
