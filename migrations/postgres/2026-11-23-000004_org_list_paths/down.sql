DROP TRIGGER employees_count_move ON employees;
DROP TRIGGER employees_count_insert_delete ON employees;
DROP FUNCTION employees_count();
ALTER TABLE tenants DROP COLUMN employee_count;
DROP INDEX employees_tenant_dept_idx;
