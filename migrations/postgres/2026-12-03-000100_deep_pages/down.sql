DROP INDEX tenants_partner_idx;
CREATE INDEX tenants_partner_idx ON tenants(partner_id);
