ALTER TABLE payment_transactions DROP COLUMN sub_mchid;
DROP INDEX payment_configs_sub_mchid_idx;
ALTER TABLE payment_configs DROP COLUMN sub_appid;
ALTER TABLE payment_configs DROP COLUMN sub_mchid;
ALTER TABLE payment_configs DROP COLUMN mode;
DROP TABLE pay_provider;
