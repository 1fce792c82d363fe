-- List paths at a million employees: a covering index for the department (and status) filter,
-- and a per-tenant employee count kept by triggers, so an unfiltered list's total is a sum over
-- tenants instead of a scan over employees.
CREATE INDEX employees_tenant_dept_idx ON employees(tenant_id, department, status, id);

ALTER TABLE tenants ADD COLUMN employee_count BIGINT NOT NULL DEFAULT 0;
UPDATE tenants SET employee_count = (SELECT count(*) FROM employees e WHERE e.tenant_id = tenants.id);

CREATE TRIGGER employees_count_insert AFTER INSERT ON employees
BEGIN UPDATE tenants SET employee_count = employee_count + 1 WHERE id = NEW.tenant_id; END;
CREATE TRIGGER employees_count_delete AFTER DELETE ON employees
BEGIN UPDATE tenants SET employee_count = employee_count - 1 WHERE id = OLD.tenant_id; END;
CREATE TRIGGER employees_count_move AFTER UPDATE OF tenant_id ON employees WHEN NEW.tenant_id <> OLD.tenant_id
BEGIN
    UPDATE tenants SET employee_count = employee_count - 1 WHERE id = OLD.tenant_id;
    UPDATE tenants SET employee_count = employee_count + 1 WHERE id = NEW.tenant_id;
END;

-- Statistics for the new index, so the planner keeps (tenant_id, id) for unfiltered pages.
ANALYZE employees;
