-- Refunds of shared money: before a refund of a shared payment is sent, each receiver gives
-- its part back (a return). A share keeps what was given back, and what was kept back from a
-- retry for refunds made while it was closed; a refund keeps why it failed when a return did.
ALTER TABLE payment_shares ADD COLUMN returned BIGINT NOT NULL DEFAULT 0 CHECK (returned >= 0);
ALTER TABLE payment_shares ADD COLUMN withheld BIGINT NOT NULL DEFAULT 0 CHECK (withheld >= 0);
ALTER TABLE payment_refunds ADD COLUMN fail_reason TEXT;

CREATE TABLE payment_share_returns (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    payment_id BIGINT NOT NULL REFERENCES payment_sharings(payment_id),
    share_id BIGINT NOT NULL REFERENCES payment_shares(id),
    out_refund_no TEXT NOT NULL,
    part BIGINT NOT NULL CHECK (part > 0),
    amount BIGINT NOT NULL CHECK (amount >= 0 AND amount <= part),
    status TEXT NOT NULL CHECK (status IN ('processing', 'succeeded', 'failed')),
    out_return_no TEXT NOT NULL,
    return_id TEXT,
    fail_reason TEXT,
    created_at TIMESTAMP NOT NULL,
    settled_at TIMESTAMP,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, out_return_no),
    UNIQUE (share_id, out_refund_no)
);
CREATE INDEX payment_share_returns_refund_idx ON payment_share_returns(tenant_id, out_refund_no);
CREATE INDEX payment_share_returns_payment_idx ON payment_share_returns(payment_id, id);
