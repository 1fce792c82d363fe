DROP TABLE jobs;
DROP TABLE idempotency_keys;
DROP TABLE payment_notifications;
DROP TABLE payment_refunds;
DROP TABLE payment_transactions;
DROP TABLE payment_configs;
