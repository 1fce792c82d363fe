-- Statements of shared money read sums kept per tenant and China Standard Time day, instead of
-- walking every payment of the period. One row per (tenant, day the payment succeeded on,
-- role, partner): role '' holds the paid sub-merchant payments' own sums (paid, refunded),
-- role 'platform' / 'partner' the shares' sums, by the partner the share was paid to (0: none).
-- The triggers below keep it in the same transaction as every change to a payment, refund or
-- share, by taking out what the old row counted and adding what the new one counts. Kept in
-- key order (WITHOUT ROWID): a tenant's days are read together, not row by row.
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
    PRIMARY KEY (tenant_id, day, role, partner_id)
) WITHOUT ROWID;
CREATE INDEX payment_earning_days_day_idx ON payment_earning_days(day, role);

-- What is there already (before the triggers, which count from now on).
INSERT INTO payment_earning_days (tenant_id, day, role, partner_id, paid, refunded)
SELECT t.tenant_id, date(t.success_time, '+8 hours'), '', 0, SUM(t.amount),
       SUM(COALESCE((SELECT SUM(r.amount) FROM payment_refunds r WHERE r.payment_id = t.id AND r.status = 'succeeded'), 0))
FROM payment_transactions t
WHERE t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL AND t.success_time IS NOT NULL
GROUP BY t.tenant_id, date(t.success_time, '+8 hours');
INSERT INTO payment_earning_days (tenant_id, day, role, partner_id, shared, returned, pending, failed)
SELECT s.tenant_id, date(t.success_time, '+8 hours'), s.role, COALESCE(s.partner_id, 0),
       SUM(CASE WHEN s.status IN ('succeeded', 'returned') THEN s.amount - s.withheld ELSE 0 END), SUM(s.returned),
       SUM(CASE WHEN s.status IN ('pending', 'processing') THEN s.amount - s.withheld ELSE 0 END),
       SUM(CASE WHEN s.status = 'closed' THEN s.amount - s.withheld ELSE 0 END)
FROM payment_shares s JOIN payment_transactions t ON t.id = s.payment_id
WHERE t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL AND t.success_time IS NOT NULL
GROUP BY s.tenant_id, date(t.success_time, '+8 hours'), s.role, COALESCE(s.partner_id, 0);

-- A payment counts when it is a sub-merchant's, paid as reported.
CREATE TRIGGER payment_transactions_earning_insert AFTER INSERT ON payment_transactions BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT NEW.tenant_id, d, '', 0 FROM (SELECT date(NEW.success_time, '+8 hours') AS d) WHERE d IS NOT NULL AND ((NEW.amount) <> 0) AND NEW.sub_mchid IS NOT NULL AND NEW.trade_state IN ('SUCCESS', 'REFUND') AND NEW.discrepancy IS NULL;
    UPDATE payment_earning_days SET paid = paid + (NEW.amount)
        WHERE tenant_id = NEW.tenant_id AND day = date(NEW.success_time, '+8 hours') AND role = '' AND partner_id = 0 AND NEW.sub_mchid IS NOT NULL AND NEW.trade_state IN ('SUCCESS', 'REFUND') AND NEW.discrepancy IS NULL;
END;
CREATE TRIGGER payment_transactions_earning_update AFTER UPDATE ON payment_transactions WHEN OLD.amount <> NEW.amount OR OLD.tenant_id <> NEW.tenant_id OR OLD.trade_state IS NOT NEW.trade_state OR OLD.sub_mchid IS NOT NEW.sub_mchid OR OLD.discrepancy IS NOT NEW.discrepancy OR OLD.success_time IS NOT NEW.success_time BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT OLD.tenant_id, d, '', 0 FROM (SELECT date(OLD.success_time, '+8 hours') AS d) WHERE d IS NOT NULL AND ((OLD.amount) <> 0) AND OLD.sub_mchid IS NOT NULL AND OLD.trade_state IN ('SUCCESS', 'REFUND') AND OLD.discrepancy IS NULL;
    UPDATE payment_earning_days SET paid = paid - (OLD.amount)
        WHERE tenant_id = OLD.tenant_id AND day = date(OLD.success_time, '+8 hours') AND role = '' AND partner_id = 0 AND OLD.sub_mchid IS NOT NULL AND OLD.trade_state IN ('SUCCESS', 'REFUND') AND OLD.discrepancy IS NULL;
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT NEW.tenant_id, d, '', 0 FROM (SELECT date(NEW.success_time, '+8 hours') AS d) WHERE d IS NOT NULL AND ((NEW.amount) <> 0) AND NEW.sub_mchid IS NOT NULL AND NEW.trade_state IN ('SUCCESS', 'REFUND') AND NEW.discrepancy IS NULL;
    UPDATE payment_earning_days SET paid = paid + (NEW.amount)
        WHERE tenant_id = NEW.tenant_id AND day = date(NEW.success_time, '+8 hours') AND role = '' AND partner_id = 0 AND NEW.sub_mchid IS NOT NULL AND NEW.trade_state IN ('SUCCESS', 'REFUND') AND NEW.discrepancy IS NULL;
END;
CREATE TRIGGER payment_transactions_earning_delete AFTER DELETE ON payment_transactions BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT OLD.tenant_id, d, '', 0 FROM (SELECT date(OLD.success_time, '+8 hours') AS d) WHERE d IS NOT NULL AND ((OLD.amount) <> 0) AND OLD.sub_mchid IS NOT NULL AND OLD.trade_state IN ('SUCCESS', 'REFUND') AND OLD.discrepancy IS NULL;
    UPDATE payment_earning_days SET paid = paid - (OLD.amount)
        WHERE tenant_id = OLD.tenant_id AND day = date(OLD.success_time, '+8 hours') AND role = '' AND partner_id = 0 AND OLD.sub_mchid IS NOT NULL AND OLD.trade_state IN ('SUCCESS', 'REFUND') AND OLD.discrepancy IS NULL;
END;

-- A refund counts once succeeded, on its payment's day.
CREATE TRIGGER payment_refunds_earning_insert AFTER INSERT ON payment_refunds WHEN NEW.status = 'succeeded' BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT NEW.tenant_id, d, '', 0 FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((NEW.amount) <> 0) AND 1;
    UPDATE payment_earning_days SET refunded = refunded + (NEW.amount)
        WHERE tenant_id = NEW.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = '' AND partner_id = 0 AND 1;
END;
CREATE TRIGGER payment_refunds_earning_update AFTER UPDATE ON payment_refunds WHEN OLD.status <> NEW.status OR OLD.amount <> NEW.amount OR OLD.payment_id <> NEW.payment_id BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT OLD.tenant_id, d, '', 0 FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((OLD.amount) <> 0) AND OLD.status = 'succeeded';
    UPDATE payment_earning_days SET refunded = refunded - (OLD.amount)
        WHERE tenant_id = OLD.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = '' AND partner_id = 0 AND OLD.status = 'succeeded';
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT NEW.tenant_id, d, '', 0 FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((NEW.amount) <> 0) AND NEW.status = 'succeeded';
    UPDATE payment_earning_days SET refunded = refunded + (NEW.amount)
        WHERE tenant_id = NEW.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = '' AND partner_id = 0 AND NEW.status = 'succeeded';
END;
CREATE TRIGGER payment_refunds_earning_delete AFTER DELETE ON payment_refunds WHEN OLD.status = 'succeeded' BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT OLD.tenant_id, d, '', 0 FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((OLD.amount) <> 0) AND 1;
    UPDATE payment_earning_days SET refunded = refunded - (OLD.amount)
        WHERE tenant_id = OLD.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = '' AND partner_id = 0 AND 1;
END;

-- A share counts by where it stands: what it paid (amount less withheld) as shared, pending
-- or failed, and what came back as returned.
CREATE TRIGGER payment_shares_earning_insert AFTER INSERT ON payment_shares BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT NEW.tenant_id, d, NEW.role, COALESCE(NEW.partner_id, 0) FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((CASE WHEN NEW.status IN ('succeeded', 'returned') THEN NEW.amount - NEW.withheld ELSE 0 END) <> 0 OR (NEW.returned) <> 0 OR (CASE WHEN NEW.status IN ('pending', 'processing') THEN NEW.amount - NEW.withheld ELSE 0 END) <> 0 OR (CASE WHEN NEW.status = 'closed' THEN NEW.amount - NEW.withheld ELSE 0 END) <> 0) AND 1;
    UPDATE payment_earning_days SET shared = shared + (CASE WHEN NEW.status IN ('succeeded', 'returned') THEN NEW.amount - NEW.withheld ELSE 0 END), returned = returned + (NEW.returned), pending = pending + (CASE WHEN NEW.status IN ('pending', 'processing') THEN NEW.amount - NEW.withheld ELSE 0 END), failed = failed + (CASE WHEN NEW.status = 'closed' THEN NEW.amount - NEW.withheld ELSE 0 END)
        WHERE tenant_id = NEW.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = NEW.role AND partner_id = COALESCE(NEW.partner_id, 0) AND 1;
END;
CREATE TRIGGER payment_shares_earning_update AFTER UPDATE ON payment_shares WHEN OLD.status <> NEW.status OR OLD.amount <> NEW.amount OR OLD.withheld <> NEW.withheld OR OLD.returned <> NEW.returned OR OLD.partner_id IS NOT NEW.partner_id OR OLD.payment_id <> NEW.payment_id BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT OLD.tenant_id, d, OLD.role, COALESCE(OLD.partner_id, 0) FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((CASE WHEN OLD.status IN ('succeeded', 'returned') THEN OLD.amount - OLD.withheld ELSE 0 END) <> 0 OR (OLD.returned) <> 0 OR (CASE WHEN OLD.status IN ('pending', 'processing') THEN OLD.amount - OLD.withheld ELSE 0 END) <> 0 OR (CASE WHEN OLD.status = 'closed' THEN OLD.amount - OLD.withheld ELSE 0 END) <> 0) AND 1;
    UPDATE payment_earning_days SET shared = shared - (CASE WHEN OLD.status IN ('succeeded', 'returned') THEN OLD.amount - OLD.withheld ELSE 0 END), returned = returned - (OLD.returned), pending = pending - (CASE WHEN OLD.status IN ('pending', 'processing') THEN OLD.amount - OLD.withheld ELSE 0 END), failed = failed - (CASE WHEN OLD.status = 'closed' THEN OLD.amount - OLD.withheld ELSE 0 END)
        WHERE tenant_id = OLD.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = OLD.role AND partner_id = COALESCE(OLD.partner_id, 0) AND 1;
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT NEW.tenant_id, d, NEW.role, COALESCE(NEW.partner_id, 0) FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((CASE WHEN NEW.status IN ('succeeded', 'returned') THEN NEW.amount - NEW.withheld ELSE 0 END) <> 0 OR (NEW.returned) <> 0 OR (CASE WHEN NEW.status IN ('pending', 'processing') THEN NEW.amount - NEW.withheld ELSE 0 END) <> 0 OR (CASE WHEN NEW.status = 'closed' THEN NEW.amount - NEW.withheld ELSE 0 END) <> 0) AND 1;
    UPDATE payment_earning_days SET shared = shared + (CASE WHEN NEW.status IN ('succeeded', 'returned') THEN NEW.amount - NEW.withheld ELSE 0 END), returned = returned + (NEW.returned), pending = pending + (CASE WHEN NEW.status IN ('pending', 'processing') THEN NEW.amount - NEW.withheld ELSE 0 END), failed = failed + (CASE WHEN NEW.status = 'closed' THEN NEW.amount - NEW.withheld ELSE 0 END)
        WHERE tenant_id = NEW.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = NEW.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = NEW.role AND partner_id = COALESCE(NEW.partner_id, 0) AND 1;
END;
CREATE TRIGGER payment_shares_earning_delete AFTER DELETE ON payment_shares BEGIN
    INSERT OR IGNORE INTO payment_earning_days (tenant_id, day, role, partner_id)
        SELECT OLD.tenant_id, d, OLD.role, COALESCE(OLD.partner_id, 0) FROM (SELECT (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AS d) WHERE d IS NOT NULL AND ((CASE WHEN OLD.status IN ('succeeded', 'returned') THEN OLD.amount - OLD.withheld ELSE 0 END) <> 0 OR (OLD.returned) <> 0 OR (CASE WHEN OLD.status IN ('pending', 'processing') THEN OLD.amount - OLD.withheld ELSE 0 END) <> 0 OR (CASE WHEN OLD.status = 'closed' THEN OLD.amount - OLD.withheld ELSE 0 END) <> 0) AND 1;
    UPDATE payment_earning_days SET shared = shared - (CASE WHEN OLD.status IN ('succeeded', 'returned') THEN OLD.amount - OLD.withheld ELSE 0 END), returned = returned - (OLD.returned), pending = pending - (CASE WHEN OLD.status IN ('pending', 'processing') THEN OLD.amount - OLD.withheld ELSE 0 END), failed = failed - (CASE WHEN OLD.status = 'closed' THEN OLD.amount - OLD.withheld ELSE 0 END)
        WHERE tenant_id = OLD.tenant_id AND day = (SELECT date(t.success_time, '+8 hours') FROM payment_transactions t WHERE t.id = OLD.payment_id AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL) AND role = OLD.role AND partner_id = COALESCE(OLD.partner_id, 0) AND 1;
END;
