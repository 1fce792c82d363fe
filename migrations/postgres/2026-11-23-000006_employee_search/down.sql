DROP INDEX IF EXISTS employees_no_trgm_idx;
DROP INDEX IF EXISTS employees_phone_trgm_idx;
DROP INDEX IF EXISTS employees_name_trgm_idx;
