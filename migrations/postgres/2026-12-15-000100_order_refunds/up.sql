-- What an order knows of its refunds: the ledger's refunds of it as the order last synced
-- them, beside what it already knows of its payment (status, amounts, `pay_*`). Reading an
-- order, or a page of them, then reads its own tables only. Written by the order's sync (a
-- refund's status only moves from `processing` to a final one); the ledger's
-- `payment_refunds` stays the record of the money. The backfill copies the refunds of today.
CREATE TABLE order_refunds (
    id BIGINT PRIMARY KEY NOT NULL,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    order_id BIGINT NOT NULL REFERENCES orders(id) ON DELETE CASCADE,
    out_refund_no TEXT NOT NULL,
    amount BIGINT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    requested_by BIGINT,
    fail_reason TEXT,
    settled_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX order_refunds_order_idx ON order_refunds(order_id, id);
INSERT INTO order_refunds (id, tenant_id, order_id, out_refund_no, amount, status, reason, requested_by, fail_reason,
                           settled_at, created_at, updated_at)
SELECT r.id, r.tenant_id, r.order_id, r.out_refund_no, r.amount, r.status, r.reason, r.requested_by, r.fail_reason,
       CASE WHEN r.status = 'processing' THEN NULL
            WHEN r.status = 'succeeded' THEN COALESCE(r.succeeded_at, r.updated_at)
            ELSE r.updated_at END,
       r.created_at, r.updated_at
FROM payment_refunds r
JOIN orders o ON o.id = r.order_id AND o.tenant_id = r.tenant_id;
