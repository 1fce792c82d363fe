DROP TABLE payment_shares;
DROP TABLE payment_sharings;
