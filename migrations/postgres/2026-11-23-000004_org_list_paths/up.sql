-- List paths at a million employees: a covering index for the department (and status) filter,
-- and a per-tenant employee count kept by a trigger, so an unfiltered list's total is a sum over
-- tenants instead of a scan over employees.
CREATE INDEX employees_tenant_dept_idx ON employees(tenant_id, department, status, id);

ALTER TABLE tenants ADD COLUMN employee_count BIGINT NOT NULL DEFAULT 0;
UPDATE tenants SET employee_count = (SELECT count(*) FROM employees e WHERE e.tenant_id = tenants.id);

CREATE FUNCTION employees_count() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE tenants SET employee_count = employee_count - 1 WHERE id = OLD.tenant_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE tenants SET employee_count = employee_count + 1 WHERE id = NEW.tenant_id;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER employees_count_insert_delete AFTER INSERT OR DELETE ON employees
FOR EACH ROW EXECUTE FUNCTION employees_count();
CREATE TRIGGER employees_count_move AFTER UPDATE OF tenant_id ON employees
FOR EACH ROW WHEN (NEW.tenant_id <> OLD.tenant_id) EXECUTE FUNCTION employees_count();
