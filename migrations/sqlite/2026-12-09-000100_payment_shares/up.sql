-- Profit sharing of sub-merchants' payments. A transaction's sharing is fixed once, when it
-- begins (its base and rates), and holds one share per receiver; a share's amount never
-- changes, its status only moves on (a retry sends it again under a new out_order_no).
CREATE TABLE payment_sharings (
    payment_id BIGINT PRIMARY KEY REFERENCES payment_transactions(id),
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    base BIGINT NOT NULL CHECK (base >= 0),
    platform_bp INTEGER NOT NULL CHECK (platform_bp BETWEEN 0 AND 10000),
    commission_bp INTEGER NOT NULL CHECK (commission_bp BETWEEN 0 AND 10000),
    unfrozen_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE payment_shares (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    payment_id BIGINT NOT NULL REFERENCES payment_sharings(payment_id),
    out_trade_no TEXT NOT NULL,
    partner_id BIGINT,
    role TEXT NOT NULL CHECK (role IN ('platform', 'partner')),
    receiver_type TEXT NOT NULL,
    receiver_account TEXT NOT NULL,
    receiver_name TEXT,
    amount BIGINT NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'succeeded', 'closed', 'returned')),
    fail_reason TEXT,
    out_order_no TEXT NOT NULL,
    retries INTEGER NOT NULL DEFAULT 0,
    plan_version BIGINT,
    created_at TIMESTAMP NOT NULL,
    settled_at TIMESTAMP,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (payment_id, role)
);
CREATE INDEX payment_shares_tenant_idx ON payment_shares(tenant_id, id);
CREATE INDEX payment_shares_order_no_idx ON payment_shares(tenant_id, out_order_no);
CREATE INDEX payment_shares_status_idx ON payment_shares(status, id);
CREATE INDEX payment_shares_partner_idx ON payment_shares(partner_id, id);

-- Sub-merchant payments paid before this release are shared too: their sharing jobs are queued
-- now, due at once (a payment paid from now on gets its own with the write that records it).
INSERT INTO jobs (kind, tenant_id, payload, status, dedupe_key, run_at, attempts, created_at, updated_at)
SELECT 'payment.share', tenant_id, '{"out_trade_no":"' || out_trade_no || '"}', 'pending', tenant_id || ':' || out_trade_no,
       CURRENT_TIMESTAMP, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP
FROM payment_transactions
WHERE sub_mchid IS NOT NULL AND method <> 'offline' AND trade_state IN ('SUCCESS', 'REFUND') AND discrepancy IS NULL;
