DROP TRIGGER employees_count_move;
DROP TRIGGER employees_count_delete;
DROP TRIGGER employees_count_insert;
ALTER TABLE tenants DROP COLUMN employee_count;
DROP INDEX employees_tenant_dept_idx;
