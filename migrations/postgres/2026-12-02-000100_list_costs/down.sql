DROP INDEX employees_tenant_idx;
CREATE INDEX employees_tenant_idx ON employees(tenant_id, id);
