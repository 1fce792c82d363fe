ALTER TABLE payment_refunds DROP COLUMN requested_by;
