-- Reconciliation of shares: a share whose record on the pay platform differs from ours keeps
-- what differs, as a payment does, until a person resolves it. The day's reconciliation reads
-- the shares and returns that changed that day, per tenant.
ALTER TABLE payment_shares ADD COLUMN discrepancy TEXT;
CREATE INDEX payment_shares_discrepancy_idx ON payment_shares(id) WHERE discrepancy IS NOT NULL;
CREATE INDEX payment_shares_changed_idx ON payment_shares(tenant_id, updated_at);
CREATE INDEX payment_share_returns_changed_idx ON payment_share_returns(tenant_id, updated_at);
