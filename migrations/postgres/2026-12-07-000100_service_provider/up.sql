-- Service-provider mode: the platform's one service-provider account (its keys encrypted like
-- a merchant's), a tenant's mode and sub-merchant, and the merchant each transaction was
-- placed with (NULL: the tenant's own account), so that payments made before a switch of mode
-- still settle and refund through the account they were made with.
CREATE TABLE pay_provider (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    sp_mchid TEXT NOT NULL,
    sp_appid TEXT NOT NULL,
    sp_name TEXT,
    merchant_serial_no TEXT,
    merchant_cert_not_after TIMESTAMP,
    merchant_private_key_enc TEXT,
    merchant_key_fingerprint TEXT,
    api_v3_key_enc TEXT,
    platform_public_key_id TEXT,
    platform_public_key TEXT,
    platform_key_fingerprint TEXT,
    enabled BOOLEAN NOT NULL DEFAULT FALSE,
    platform_bp INTEGER NOT NULL DEFAULT 0 CHECK (platform_bp BETWEEN 0 AND 10000),
    default_commission_bp INTEGER NOT NULL DEFAULT 0 CHECK (default_commission_bp BETWEEN 0 AND 10000),
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

ALTER TABLE payment_configs ADD COLUMN mode TEXT NOT NULL DEFAULT 'direct';
ALTER TABLE payment_configs ADD COLUMN sub_mchid TEXT;
ALTER TABLE payment_configs ADD COLUMN sub_appid TEXT;
-- One tenant per sub-merchant, kept after a switch back to direct mode (its payments are
-- still that sub-merchant's).
CREATE UNIQUE INDEX payment_configs_sub_mchid_idx ON payment_configs (sub_mchid);

ALTER TABLE payment_transactions ADD COLUMN sub_mchid TEXT;
