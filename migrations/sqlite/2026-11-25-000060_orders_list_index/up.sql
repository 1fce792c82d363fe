-- A tenant's orders by status, newest first, often within a creation range: with
-- created_at in the index, the page and its count read the index, not every order row.
DROP INDEX orders_tenant_status_idx;
CREATE INDEX orders_tenant_status_idx ON orders(tenant_id, status, id, created_at);
