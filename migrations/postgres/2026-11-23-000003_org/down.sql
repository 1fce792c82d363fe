DROP TRIGGER audit_logs_no_change ON audit_logs;
DROP FUNCTION audit_logs_append_only();
DROP TABLE audit_logs;
DROP TABLE employees;
DROP INDEX tenants_status_idx;
ALTER TABLE tenants DROP COLUMN payroll_policy;
ALTER TABLE tenants DROP COLUMN email;
