-- Deep pages that do not step over the rows before them.
--
-- The platform's employee total is a sum of the tenants' counters: with the counter in the
-- partner index, the sum can read that narrow index instead of every tenant row.
--
-- (SQLite also keeps the ids of deleted employees here, to find where a deep page starts
-- without walking to it. PostgreSQL's sequences skip the numbers of rolled-back inserts, so
-- its ids are not laid out densely enough for that; its deep pages keep OFFSET.)
DROP INDEX tenants_partner_idx;
CREATE INDEX tenants_partner_idx ON tenants(partner_id) INCLUDE (employee_count);
