DELETE FROM jobs WHERE kind = 'payment.share';
DROP TABLE payment_shares;
DROP TABLE payment_sharings;
