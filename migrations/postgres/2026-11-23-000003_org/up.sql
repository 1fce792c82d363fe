-- Org records: tenant contact and payroll policy, employees, and the append-only audit trail.
ALTER TABLE tenants ADD COLUMN email TEXT;
ALTER TABLE tenants ADD COLUMN payroll_policy TEXT;
CREATE INDEX tenants_status_idx ON tenants(status, id);

CREATE TABLE employees (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    employee_no TEXT,
    name TEXT NOT NULL,
    phone TEXT,
    email TEXT,
    id_card_enc TEXT,
    id_card_hash TEXT,
    bank_name TEXT,
    bank_account_enc TEXT,
    department TEXT,
    position TEXT,
    hire_date DATE,
    status TEXT NOT NULL,
    base_salary BIGINT NOT NULL,
    si_base BIGINT,
    housing_fund_rate TEXT NOT NULL,
    special_deductions TEXT NOT NULL DEFAULT '[]',
    openid TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX employees_tenant_idx ON employees(tenant_id, id);
CREATE INDEX employees_tenant_status_idx ON employees(tenant_id, status, id);
CREATE UNIQUE INDEX employees_no_idx ON employees(tenant_id, employee_no);
CREATE UNIQUE INDEX employees_id_card_idx ON employees(tenant_id, id_card_hash);

CREATE TABLE audit_logs (
    id BIGSERIAL PRIMARY KEY,
    at TIMESTAMP NOT NULL,
    actor_user_id BIGINT,
    ip TEXT,
    request_id TEXT,
    action TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id BIGINT,
    partner_id BIGINT,
    tenant_id BIGINT,
    before_json TEXT,
    after_json TEXT
);
CREATE INDEX audit_logs_tenant_idx ON audit_logs(tenant_id, id);
CREATE INDEX audit_logs_partner_idx ON audit_logs(partner_id, id);
CREATE INDEX audit_logs_actor_idx ON audit_logs(actor_user_id, id);
CREATE INDEX audit_logs_target_idx ON audit_logs(target_type, target_id, id);

CREATE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the audit trail is append-only'; END $$;
CREATE TRIGGER audit_logs_no_change BEFORE UPDATE OR DELETE ON audit_logs
FOR EACH ROW EXECUTE FUNCTION audit_logs_append_only();
