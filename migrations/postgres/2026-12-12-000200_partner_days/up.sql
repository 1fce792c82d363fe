-- A partner's statement by day reads one row per day: the sums of payment_earning_days over the
-- partner's tenants now (their payments' own sums and the commission paid to this partner),
-- kept by a trigger on payment_earning_days and moved when a tenant changes partner.
CREATE TABLE payment_partner_days (
    partner_id BIGINT NOT NULL,
    day TEXT NOT NULL,
    paid BIGINT NOT NULL DEFAULT 0,
    refunded BIGINT NOT NULL DEFAULT 0,
    shared BIGINT NOT NULL DEFAULT 0,
    returned BIGINT NOT NULL DEFAULT 0,
    pending BIGINT NOT NULL DEFAULT 0,
    failed BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (partner_id, day) INCLUDE (paid, refunded, shared, returned, pending, failed)
);

-- Adds the deltas to a partner's day (made when missing).
CREATE FUNCTION partner_day_add(p_partner BIGINT, p_day TEXT, d_paid BIGINT, d_refunded BIGINT, d_shared BIGINT, d_returned BIGINT,
                                d_pending BIGINT, d_failed BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    IF p_partner IS NULL OR (d_paid = 0 AND d_refunded = 0 AND d_shared = 0 AND d_returned = 0 AND d_pending = 0 AND d_failed = 0) THEN
        RETURN;
    END IF;
    INSERT INTO payment_partner_days (partner_id, day) VALUES (p_partner, p_day) ON CONFLICT DO NOTHING;
    UPDATE payment_partner_days
    SET paid = paid + d_paid, refunded = refunded + d_refunded, shared = shared + d_shared, returned = returned + d_returned,
        pending = pending + d_pending, failed = failed + d_failed
    WHERE partner_id = p_partner AND day = p_day;
END
$$;

-- A tenant's day counts toward its partner now: its payments' own sums, and the commission
-- paid to that partner.
CREATE FUNCTION earning_day_partner() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
    p BIGINT;
BEGIN
    SELECT partner_id INTO p FROM tenants WHERE id = NEW.tenant_id;
    IF p IS NULL OR NOT (NEW.role = '' OR (NEW.role = 'partner' AND NEW.partner_id = p)) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        PERFORM partner_day_add(p, NEW.day, NEW.paid, NEW.refunded, NEW.shared, NEW.returned, NEW.pending, NEW.failed);
    ELSE
        PERFORM partner_day_add(p, NEW.day, NEW.paid - OLD.paid, NEW.refunded - OLD.refunded, NEW.shared - OLD.shared,
                                NEW.returned - OLD.returned, NEW.pending - OLD.pending, NEW.failed - OLD.failed);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER payment_earning_days_partner AFTER INSERT OR UPDATE ON payment_earning_days
    FOR EACH ROW EXECUTE FUNCTION earning_day_partner();

-- A tenant moved to another partner takes its days along.
CREATE FUNCTION tenant_partner_days_move() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
    d RECORD;
BEGIN
    IF OLD.partner_id IS NOT DISTINCT FROM NEW.partner_id THEN
        RETURN NULL;
    END IF;
    FOR d IN SELECT day, SUM(paid) AS paid, SUM(refunded) AS refunded, SUM(shared) AS shared, SUM(returned) AS returned,
                    SUM(pending) AS pending, SUM(failed) AS failed
             FROM payment_earning_days
             WHERE tenant_id = OLD.id AND (role = '' OR (role = 'partner' AND partner_id = OLD.partner_id)) GROUP BY day LOOP
        PERFORM partner_day_add(OLD.partner_id, d.day, -d.paid::BIGINT, -d.refunded::BIGINT, -d.shared::BIGINT, -d.returned::BIGINT,
                                -d.pending::BIGINT, -d.failed::BIGINT);
    END LOOP;
    FOR d IN SELECT day, SUM(paid) AS paid, SUM(refunded) AS refunded, SUM(shared) AS shared, SUM(returned) AS returned,
                    SUM(pending) AS pending, SUM(failed) AS failed
             FROM payment_earning_days
             WHERE tenant_id = NEW.id AND (role = '' OR (role = 'partner' AND partner_id = NEW.partner_id)) GROUP BY day LOOP
        PERFORM partner_day_add(NEW.partner_id, d.day, d.paid::BIGINT, d.refunded::BIGINT, d.shared::BIGINT, d.returned::BIGINT,
                                d.pending::BIGINT, d.failed::BIGINT);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER tenants_partner_days AFTER UPDATE OF partner_id ON tenants
    FOR EACH ROW EXECUTE FUNCTION tenant_partner_days_move();

-- What is there already.
INSERT INTO payment_partner_days (partner_id, day, paid, refunded, shared, returned, pending, failed)
SELECT t.partner_id, e.day, SUM(e.paid), SUM(e.refunded), SUM(e.shared), SUM(e.returned), SUM(e.pending), SUM(e.failed)
FROM payment_earning_days e JOIN tenants t ON t.id = e.tenant_id
WHERE t.partner_id IS NOT NULL AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = t.partner_id))
GROUP BY t.partner_id, e.day;
