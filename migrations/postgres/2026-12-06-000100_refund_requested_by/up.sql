-- Who asked for a refund: the user of the payment route or of the order's refund; NULL when
-- the system did, and for the refunds made before this column.
ALTER TABLE payment_refunds ADD COLUMN requested_by BIGINT;
