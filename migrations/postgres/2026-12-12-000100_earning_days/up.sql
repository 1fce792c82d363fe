-- Statements of shared money read sums kept per tenant and China Standard Time day, instead of
-- walking every payment of the period. One row per (tenant, day the payment succeeded on,
-- role, partner): role '' holds the paid sub-merchant payments' own sums (paid, refunded),
-- role 'platform' / 'partner' the shares' sums, by the partner the share was paid to (0: none).
-- The triggers below keep it in the same transaction as every change to a payment, refund or
-- share, by taking out what the old row counted and adding what the new one counts. The key
-- carries the sums, so a tenant's days are read from the index alone.
CREATE TABLE payment_earning_days (
    tenant_id BIGINT NOT NULL,
    day TEXT NOT NULL,
    role TEXT NOT NULL,
    partner_id BIGINT NOT NULL,
    paid BIGINT NOT NULL DEFAULT 0,
    refunded BIGINT NOT NULL DEFAULT 0,
    shared BIGINT NOT NULL DEFAULT 0,
    returned BIGINT NOT NULL DEFAULT 0,
    pending BIGINT NOT NULL DEFAULT 0,
    failed BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day, role, partner_id) INCLUDE (paid, refunded, shared, returned, pending, failed)
);
CREATE INDEX payment_earning_days_day_idx ON payment_earning_days(day, role);

CREATE FUNCTION earning_day(t TIMESTAMP) RETURNS TEXT LANGUAGE SQL IMMUTABLE AS $$
    SELECT to_char(t + INTERVAL '8 hours', 'YYYY-MM-DD')
$$;

-- Adds the deltas to a row (made when missing); nothing at all when every delta is 0.
CREATE FUNCTION earning_add(p_tenant BIGINT, p_day TEXT, p_role TEXT, p_partner BIGINT, d_paid BIGINT, d_refunded BIGINT,
                            d_shared BIGINT, d_returned BIGINT, d_pending BIGINT, d_failed BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    IF p_day IS NULL OR (d_paid = 0 AND d_refunded = 0 AND d_shared = 0 AND d_returned = 0 AND d_pending = 0 AND d_failed = 0) THEN
        RETURN;
    END IF;
    INSERT INTO payment_earning_days (tenant_id, day, role, partner_id) VALUES (p_tenant, p_day, p_role, p_partner)
    ON CONFLICT DO NOTHING;
    UPDATE payment_earning_days
    SET paid = paid + d_paid, refunded = refunded + d_refunded, shared = shared + d_shared, returned = returned + d_returned,
        pending = pending + d_pending, failed = failed + d_failed
    WHERE tenant_id = p_tenant AND day = p_day AND role = p_role AND partner_id = p_partner;
END
$$;

-- A payment counts when it is a sub-merchant's, paid as reported.
CREATE FUNCTION earning_payment() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.amount = NEW.amount AND OLD.tenant_id = NEW.tenant_id
       AND OLD.trade_state IS NOT DISTINCT FROM NEW.trade_state AND OLD.sub_mchid IS NOT DISTINCT FROM NEW.sub_mchid
       AND OLD.discrepancy IS NOT DISTINCT FROM NEW.discrepancy AND OLD.success_time IS NOT DISTINCT FROM NEW.success_time THEN
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' AND OLD.sub_mchid IS NOT NULL AND OLD.trade_state IN ('SUCCESS', 'REFUND') AND OLD.discrepancy IS NULL THEN
        PERFORM earning_add(OLD.tenant_id, earning_day(OLD.success_time), '', 0, -OLD.amount, 0, 0, 0, 0, 0);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.sub_mchid IS NOT NULL AND NEW.trade_state IN ('SUCCESS', 'REFUND') AND NEW.discrepancy IS NULL THEN
        PERFORM earning_add(NEW.tenant_id, earning_day(NEW.success_time), '', 0, NEW.amount, 0, 0, 0, 0, 0);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER payment_transactions_earning AFTER INSERT OR UPDATE OR DELETE ON payment_transactions
    FOR EACH ROW EXECUTE FUNCTION earning_payment();

-- The day of the counted payment `id`, or NULL when it does not count.
CREATE FUNCTION earning_day_of(p_id BIGINT) RETURNS TEXT LANGUAGE SQL STABLE AS $$
    SELECT earning_day(success_time) FROM payment_transactions
    WHERE id = p_id AND sub_mchid IS NOT NULL AND trade_state IN ('SUCCESS', 'REFUND') AND discrepancy IS NULL
$$;

-- A refund counts once succeeded, on its payment's day.
CREATE FUNCTION earning_refund() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = NEW.status AND OLD.amount = NEW.amount AND OLD.payment_id = NEW.payment_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' AND OLD.status = 'succeeded' THEN
        PERFORM earning_add(OLD.tenant_id, earning_day_of(OLD.payment_id), '', 0, 0, -OLD.amount, 0, 0, 0, 0);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.status = 'succeeded' THEN
        PERFORM earning_add(NEW.tenant_id, earning_day_of(NEW.payment_id), '', 0, 0, NEW.amount, 0, 0, 0, 0);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER payment_refunds_earning AFTER INSERT OR UPDATE OR DELETE ON payment_refunds
    FOR EACH ROW EXECUTE FUNCTION earning_refund();

-- A share counts by where it stands: what it paid (amount less withheld) as shared, pending
-- or failed, and what came back as returned.
CREATE FUNCTION earning_share() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status = NEW.status AND OLD.amount = NEW.amount AND OLD.withheld = NEW.withheld
       AND OLD.returned = NEW.returned AND OLD.partner_id IS NOT DISTINCT FROM NEW.partner_id AND OLD.payment_id = NEW.payment_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        PERFORM earning_add(OLD.tenant_id, earning_day_of(OLD.payment_id), OLD.role, COALESCE(OLD.partner_id, 0), 0, 0,
            -(CASE WHEN OLD.status IN ('succeeded', 'returned') THEN OLD.amount - OLD.withheld ELSE 0 END), -OLD.returned,
            -(CASE WHEN OLD.status IN ('pending', 'processing') THEN OLD.amount - OLD.withheld ELSE 0 END),
            -(CASE WHEN OLD.status = 'closed' THEN OLD.amount - OLD.withheld ELSE 0 END));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM earning_add(NEW.tenant_id, earning_day_of(NEW.payment_id), NEW.role, COALESCE(NEW.partner_id, 0), 0, 0,
            CASE WHEN NEW.status IN ('succeeded', 'returned') THEN NEW.amount - NEW.withheld ELSE 0 END, NEW.returned,
            CASE WHEN NEW.status IN ('pending', 'processing') THEN NEW.amount - NEW.withheld ELSE 0 END,
            CASE WHEN NEW.status = 'closed' THEN NEW.amount - NEW.withheld ELSE 0 END);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER payment_shares_earning AFTER INSERT OR UPDATE OR DELETE ON payment_shares
    FOR EACH ROW EXECUTE FUNCTION earning_share();

-- What is there already.
INSERT INTO payment_earning_days (tenant_id, day, role, partner_id, paid, refunded)
SELECT t.tenant_id, earning_day(t.success_time), '', 0, SUM(t.amount),
       SUM(COALESCE((SELECT SUM(r.amount) FROM payment_refunds r WHERE r.payment_id = t.id AND r.status = 'succeeded'), 0))
FROM payment_transactions t
WHERE t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL AND t.success_time IS NOT NULL
GROUP BY t.tenant_id, earning_day(t.success_time);
INSERT INTO payment_earning_days (tenant_id, day, role, partner_id, shared, returned, pending, failed)
SELECT s.tenant_id, earning_day(t.success_time), s.role, COALESCE(s.partner_id, 0),
       SUM(CASE WHEN s.status IN ('succeeded', 'returned') THEN s.amount - s.withheld ELSE 0 END), SUM(s.returned),
       SUM(CASE WHEN s.status IN ('pending', 'processing') THEN s.amount - s.withheld ELSE 0 END),
       SUM(CASE WHEN s.status = 'closed' THEN s.amount - s.withheld ELSE 0 END)
FROM payment_shares s JOIN payment_transactions t ON t.id = s.payment_id
WHERE t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL AND t.success_time IS NOT NULL
GROUP BY s.tenant_id, earning_day(t.success_time), s.role, COALESCE(s.partner_id, 0);
