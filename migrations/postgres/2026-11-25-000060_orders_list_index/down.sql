DROP INDEX orders_tenant_status_idx;
CREATE INDEX orders_tenant_status_idx ON orders(tenant_id, status, id);
