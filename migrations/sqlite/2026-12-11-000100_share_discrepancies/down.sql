DROP INDEX payment_share_returns_changed_idx;
DROP INDEX payment_shares_changed_idx;
DROP INDEX payment_shares_discrepancy_idx;
ALTER TABLE payment_shares DROP COLUMN discrepancy;
