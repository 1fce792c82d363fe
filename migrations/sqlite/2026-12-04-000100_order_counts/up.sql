-- The total of a tenant's orders of one status in a date range: counted by searching the
-- range in this index, instead of comparing the date of every entry of the status. The page
-- itself keeps reading orders_tenant_status_idx, which holds the entries in id order.
CREATE INDEX orders_tenant_status_created_idx ON orders(tenant_id, status, created_at);
-- A database that holds statistics of the other indexes (ANALYZE) also needs them of this
-- one, or the planner takes it for the page too and sorts the page's rows.
ANALYZE orders;
