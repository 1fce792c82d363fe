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
    PRIMARY KEY (partner_id, day)
) WITHOUT ROWID;

-- A tenant's day counts toward its partner now: its payments' own sums, and the commission
-- paid to that partner. (A row of payment_earning_days is made with zeros, then updated.)
CREATE TRIGGER payment_earning_days_partner_insert AFTER INSERT ON payment_earning_days WHEN (NEW.role = '' OR (NEW.role = 'partner' AND NEW.partner_id = (SELECT partner_id FROM tenants WHERE id = NEW.tenant_id))) BEGIN
    INSERT OR IGNORE INTO payment_partner_days (partner_id, day) SELECT partner_id, NEW.day FROM tenants WHERE id = NEW.tenant_id AND partner_id IS NOT NULL;
    UPDATE payment_partner_days SET paid = paid + NEW.paid, refunded = refunded + NEW.refunded, shared = shared + NEW.shared, returned = returned + NEW.returned, pending = pending + NEW.pending, failed = failed + NEW.failed
        WHERE partner_id = (SELECT partner_id FROM tenants WHERE id = NEW.tenant_id) AND day = NEW.day;
END;
CREATE TRIGGER payment_earning_days_partner_update AFTER UPDATE ON payment_earning_days WHEN (NEW.role = '' OR (NEW.role = 'partner' AND NEW.partner_id = (SELECT partner_id FROM tenants WHERE id = NEW.tenant_id))) BEGIN
    INSERT OR IGNORE INTO payment_partner_days (partner_id, day) SELECT partner_id, NEW.day FROM tenants WHERE id = NEW.tenant_id AND partner_id IS NOT NULL;
    UPDATE payment_partner_days SET paid = paid + (NEW.paid - OLD.paid), refunded = refunded + (NEW.refunded - OLD.refunded), shared = shared + (NEW.shared - OLD.shared), returned = returned + (NEW.returned - OLD.returned), pending = pending + (NEW.pending - OLD.pending), failed = failed + (NEW.failed - OLD.failed)
        WHERE partner_id = (SELECT partner_id FROM tenants WHERE id = NEW.tenant_id) AND day = NEW.day;
END;

-- A tenant moved to another partner takes its days along.
CREATE TRIGGER tenants_partner_days AFTER UPDATE OF partner_id ON tenants WHEN OLD.partner_id IS NOT NEW.partner_id BEGIN
    UPDATE payment_partner_days SET
        paid = paid - (SELECT COALESCE(SUM(e.paid), 0) FROM payment_earning_days e WHERE e.tenant_id = OLD.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = OLD.partner_id))),
        refunded = refunded - (SELECT COALESCE(SUM(e.refunded), 0) FROM payment_earning_days e WHERE e.tenant_id = OLD.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = OLD.partner_id))),
        shared = shared - (SELECT COALESCE(SUM(e.shared), 0) FROM payment_earning_days e WHERE e.tenant_id = OLD.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = OLD.partner_id))),
        returned = returned - (SELECT COALESCE(SUM(e.returned), 0) FROM payment_earning_days e WHERE e.tenant_id = OLD.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = OLD.partner_id))),
        pending = pending - (SELECT COALESCE(SUM(e.pending), 0) FROM payment_earning_days e WHERE e.tenant_id = OLD.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = OLD.partner_id))),
        failed = failed - (SELECT COALESCE(SUM(e.failed), 0) FROM payment_earning_days e WHERE e.tenant_id = OLD.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = OLD.partner_id)))
    WHERE partner_id = OLD.partner_id AND day IN (SELECT day FROM payment_earning_days WHERE tenant_id = OLD.id);
    INSERT OR IGNORE INTO payment_partner_days (partner_id, day)
        SELECT DISTINCT NEW.partner_id, day FROM payment_earning_days WHERE tenant_id = NEW.id AND NEW.partner_id IS NOT NULL;
    UPDATE payment_partner_days SET
        paid = paid + (SELECT COALESCE(SUM(e.paid), 0) FROM payment_earning_days e WHERE e.tenant_id = NEW.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = NEW.partner_id))),
        refunded = refunded + (SELECT COALESCE(SUM(e.refunded), 0) FROM payment_earning_days e WHERE e.tenant_id = NEW.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = NEW.partner_id))),
        shared = shared + (SELECT COALESCE(SUM(e.shared), 0) FROM payment_earning_days e WHERE e.tenant_id = NEW.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = NEW.partner_id))),
        returned = returned + (SELECT COALESCE(SUM(e.returned), 0) FROM payment_earning_days e WHERE e.tenant_id = NEW.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = NEW.partner_id))),
        pending = pending + (SELECT COALESCE(SUM(e.pending), 0) FROM payment_earning_days e WHERE e.tenant_id = NEW.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = NEW.partner_id))),
        failed = failed + (SELECT COALESCE(SUM(e.failed), 0) FROM payment_earning_days e WHERE e.tenant_id = NEW.id AND e.day = payment_partner_days.day AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = NEW.partner_id)))
    WHERE partner_id = NEW.partner_id AND day IN (SELECT day FROM payment_earning_days WHERE tenant_id = NEW.id);
END;

-- What is there already.
INSERT INTO payment_partner_days (partner_id, day, paid, refunded, shared, returned, pending, failed)
SELECT t.partner_id, e.day, SUM(e.paid), SUM(e.refunded), SUM(e.shared), SUM(e.returned), SUM(e.pending), SUM(e.failed)
FROM payment_earning_days e JOIN tenants t ON t.id = e.tenant_id
WHERE t.partner_id IS NOT NULL AND (e.role = '' OR (e.role = 'partner' AND e.partner_id = t.partner_id))
GROUP BY t.partner_id, e.day;
