DROP TRIGGER tenants_partner_days ON tenants;
DROP TRIGGER payment_earning_days_partner ON payment_earning_days;
DROP FUNCTION tenant_partner_days_move();
DROP FUNCTION earning_day_partner();
DROP FUNCTION partner_day_add(BIGINT, TEXT, BIGINT, BIGINT, BIGINT, BIGINT, BIGINT, BIGINT);
DROP TABLE payment_partner_days;
