DROP TABLE payment_share_returns;
ALTER TABLE payment_refunds DROP COLUMN fail_reason;
ALTER TABLE payment_shares DROP COLUMN withheld;
ALTER TABLE payment_shares DROP COLUMN returned;
