-- Partners' share plans: each change is a new version, never rewritten, so a share can name
-- the version it was computed under. A rate left NULL follows the service provider's default
-- (pay_provider.platform_bp, pay_provider.default_commission_bp).
CREATE TABLE share_plans (
    partner_id BIGINT NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
    version BIGINT NOT NULL CHECK (version >= 1),
    commission_bp INTEGER CHECK (commission_bp BETWEEN 0 AND 10000),
    platform_bp INTEGER CHECK (platform_bp BETWEEN 0 AND 10000),
    receiver_type TEXT NOT NULL,
    receiver_account TEXT NOT NULL,
    receiver_name TEXT,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (partner_id, version)
);
