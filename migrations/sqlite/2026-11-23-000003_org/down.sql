DROP TRIGGER audit_logs_no_delete;
DROP TRIGGER audit_logs_no_update;
DROP TABLE audit_logs;
DROP TABLE employees;
DROP INDEX tenants_status_idx;
ALTER TABLE tenants DROP COLUMN payroll_policy;
ALTER TABLE tenants DROP COLUMN email;
