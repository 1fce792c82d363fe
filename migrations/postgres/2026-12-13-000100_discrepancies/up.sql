-- Discrepancies get an id of their own, so that a person can resolve one through the API
-- (refund what the platform took in excess, or accept the platform's record). A row is
-- written with the discrepancy it records (the transaction's or the share's `discrepancy`
-- column, which stays the mark that blocks refunds and retries) and is kept, resolved, with
-- who resolved it, how and why. At most one is open per payment, or per share of it.
CREATE TABLE payment_discrepancies (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    kind TEXT NOT NULL CHECK (kind IN ('amount', 'paid_twice', 'share', 'return')),
    payment_id BIGINT NOT NULL REFERENCES payment_transactions(id),
    out_trade_no TEXT NOT NULL,
    share_id BIGINT REFERENCES payment_shares(id),
    return_id BIGINT REFERENCES payment_share_returns(id),
    description TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
    action TEXT CHECK (action IN ('refund_excess', 'accept')),
    note TEXT,
    resolved_by BIGINT,
    out_refund_no TEXT,
    created_at TIMESTAMP NOT NULL,
    resolved_at TIMESTAMP,
    CHECK ((status = 'open') = (action IS NULL))
);
CREATE UNIQUE INDEX payment_discrepancies_open_idx ON payment_discrepancies(payment_id, COALESCE(share_id, 0)) WHERE status = 'open';
CREATE INDEX payment_discrepancies_tenant_idx ON payment_discrepancies(tenant_id, id);

-- What is open today.
INSERT INTO payment_discrepancies (tenant_id, kind, payment_id, out_trade_no, description, status, created_at)
SELECT tenant_id, CASE WHEN trade_state IN ('CLOSED', 'REVOKED') THEN 'paid_twice' ELSE 'amount' END,
       id, out_trade_no, discrepancy, 'open', updated_at
FROM payment_transactions WHERE discrepancy IS NOT NULL ORDER BY id;
INSERT INTO payment_discrepancies (tenant_id, kind, payment_id, out_trade_no, share_id, description, status, created_at)
SELECT tenant_id, 'share', payment_id, out_trade_no, id, discrepancy, 'open', updated_at
FROM payment_shares WHERE discrepancy IS NOT NULL ORDER BY id;
