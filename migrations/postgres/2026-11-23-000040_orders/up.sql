-- Orders: what a tenant sells, its lines, how it was paid and what was refunded. Every table
-- carries tenant_id; money is BIGINT fen; timestamps are UTC.

-- The payment's fields (pay_method … paid_by) are null until a payment is started.
-- out_trade_no is the number the pay platform knows the order by (its order_no).
CREATE TABLE orders (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    order_no TEXT NOT NULL,
    subject TEXT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    paid_amount BIGINT NOT NULL DEFAULT 0 CHECK (paid_amount >= 0),
    refunded_amount BIGINT NOT NULL DEFAULT 0 CHECK (refunded_amount >= 0 AND refunded_amount <= paid_amount),
    status TEXT NOT NULL CHECK (status IN ('pending', 'paying', 'paid', 'partially_refunded', 'refunded', 'closed')),
    openid TEXT,
    out_trade_no TEXT NOT NULL,
    pay_method TEXT CHECK (pay_method IN ('wechat_jsapi', 'offline')),
    transaction_id TEXT,
    paid_at TIMESTAMP,
    pay_reference TEXT,
    paid_by BIGINT,
    expires_at TIMESTAMP NOT NULL,
    created_by BIGINT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, order_no)
);
CREATE INDEX orders_out_trade_no_idx ON orders(tenant_id, out_trade_no);
-- A tenant's list, newest first, optionally by status; the time range within a tenant.
CREATE INDEX orders_tenant_status_idx ON orders(tenant_id, status, id);
CREATE INDEX orders_tenant_created_idx ON orders(tenant_id, created_at);
-- Across tenants (platform lists): by status, by creation time.
CREATE INDEX orders_status_idx ON orders(status, id);
CREATE INDEX orders_created_idx ON orders(created_at);
-- Unpaid orders past their expiry, for the expiry job.
CREATE INDEX orders_due_idx ON orders(status, expires_at);

CREATE TABLE order_items (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    order_id BIGINT NOT NULL REFERENCES orders(id) ON DELETE CASCADE,
    line_no INTEGER NOT NULL,
    name TEXT NOT NULL,
    quantity BIGINT NOT NULL CHECK (quantity >= 1),
    unit_price BIGINT NOT NULL CHECK (unit_price >= 0),
    UNIQUE (order_id, line_no)
);

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
