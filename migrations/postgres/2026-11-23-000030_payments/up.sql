-- Payments (one merchant account per tenant, its transactions, refunds and the pay
-- platform's notifications), idempotency records of POST requests, and the durable job queue.
-- Every payments table carries tenant_id; money is BIGINT fen; timestamps are UTC.

-- The merchant private key and the APIv3 key are stored encrypted (AES-256-GCM under a key
-- derived from the master key, `v1:` + base64); everything else here is public.
CREATE TABLE payment_configs (
    tenant_id BIGINT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    mchid TEXT NOT NULL,
    appid TEXT NOT NULL,
    merchant_serial_no TEXT,
    merchant_cert_not_after TIMESTAMP,
    merchant_private_key_enc TEXT,
    merchant_key_fingerprint TEXT,
    api_v3_key_enc TEXT,
    platform_public_key_id TEXT,
    platform_public_key TEXT,
    platform_key_fingerprint TEXT,
    enabled BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

CREATE TABLE payment_transactions (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    out_trade_no TEXT NOT NULL,
    description TEXT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    openid TEXT NOT NULL,
    attach TEXT,
    prepay_id TEXT,
    trade_state TEXT NOT NULL,
    transaction_id TEXT,
    payer_total BIGINT,
    success_time TIMESTAMP,
    expires_at TIMESTAMP NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, out_trade_no)
);
CREATE INDEX payment_transactions_paid_idx ON payment_transactions(tenant_id, success_time);
-- Unpaid transactions past their expiry, for the settling job.
CREATE INDEX payment_transactions_state_idx ON payment_transactions(trade_state, expires_at);

-- A refund belongs to one transaction (payment_id); out_trade_no is kept beside it as the
-- platform names it.
CREATE TABLE payment_refunds (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    payment_id BIGINT NOT NULL REFERENCES payment_transactions(id),
    out_trade_no TEXT NOT NULL,
    out_refund_no TEXT NOT NULL,
    refund_id TEXT,
    amount BIGINT NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL CHECK (status IN ('processing', 'succeeded', 'failed', 'closed')),
    reason TEXT,
    succeeded_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, out_refund_no)
);
CREATE INDEX payment_refunds_payment_idx ON payment_refunds(payment_id, status);
CREATE INDEX payment_refunds_succeeded_idx ON payment_refunds(tenant_id, succeeded_at);

-- Notification event ids already processed: the same event twice changes nothing.
CREATE TABLE payment_notifications (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    received_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, event_id)
);

-- One row per (caller, route, Idempotency-Key): in progress while status is NULL (claimed_at
-- says since when), completed with the response to replay.
CREATE TABLE idempotency_keys (
    caller TEXT NOT NULL,
    route TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    request_hash BYTEA NOT NULL,
    status INTEGER,
    response_body BYTEA,
    claimed_at TIMESTAMP NOT NULL,
    completed_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (caller, route, idem_key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys(created_at);

-- Durable jobs. A pending job is due at run_at and free when locked_until is NULL or past;
-- claiming it leases it until locked_until. Done jobs are deleted; failed ones are kept.
CREATE TABLE jobs (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL,
    tenant_id BIGINT REFERENCES tenants(id) ON DELETE CASCADE,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed')),
    dedupe_key TEXT,
    run_at TIMESTAMP NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    locked_until TIMESTAMP,
    last_error TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX jobs_due_idx ON jobs(kind, run_at) WHERE status = 'pending';
CREATE UNIQUE INDEX jobs_dedupe_idx ON jobs(kind, dedupe_key) WHERE status = 'pending' AND dedupe_key IS NOT NULL;
CREATE INDEX jobs_tenant_idx ON jobs(tenant_id);
