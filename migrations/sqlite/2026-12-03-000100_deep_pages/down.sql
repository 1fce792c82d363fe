DROP TRIGGER employees_gap_insert;
DROP TRIGGER employees_gap_delete;
DROP TABLE employee_gaps;
DROP INDEX tenants_partner_idx;
CREATE INDEX tenants_partner_idx ON tenants(partner_id);
