-- Payroll sheets: one regular sheet per tenant and month, an item per employee with its
-- adjustments, calculated figures and pay-slip delivery outcome.
CREATE TABLE payroll_sheets (
    id BIGSERIAL PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    period TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    employees BIGINT NOT NULL DEFAULT 0,
    total_gross BIGINT NOT NULL DEFAULT 0,
    total_contributions BIGINT NOT NULL DEFAULT 0,
    total_tax BIGINT NOT NULL DEFAULT 0,
    total_net_pay BIGINT NOT NULL DEFAULT 0,
    delivered BIGINT NOT NULL DEFAULT 0,
    failed BIGINT NOT NULL DEFAULT 0,
    created_by BIGINT,
    calculated_by BIGINT,
    calculated_at TIMESTAMP,
    approved_by BIGINT,
    approved_at TIMESTAMP,
    sent_at TIMESTAMP,
    send_started_at TIMESTAMP,
    version BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX payroll_sheets_period_idx ON payroll_sheets(tenant_id, period);
CREATE INDEX payroll_sheets_status_idx ON payroll_sheets(tenant_id, status, period);

-- Figures the year-to-date sums and sheet totals need are columns; the rest of the
-- calculated line is kept as JSON in `line`.
CREATE TABLE payroll_items (
    id BIGSERIAL PRIMARY KEY,
    sheet_id BIGINT NOT NULL REFERENCES payroll_sheets(id),
    employee_id BIGINT NOT NULL REFERENCES employees(id),
    employee_name TEXT NOT NULL,
    employee_no TEXT,
    allowance BIGINT NOT NULL DEFAULT 0,
    overtime BIGINT NOT NULL DEFAULT 0,
    bonus BIGINT NOT NULL DEFAULT 0,
    leave_deduction BIGINT NOT NULL DEFAULT 0,
    other_pre_tax_deduction BIGINT NOT NULL DEFAULT 0,
    after_tax_deduction BIGINT NOT NULL DEFAULT 0,
    annual_bonus BIGINT NOT NULL DEFAULT 0,
    gross BIGINT,
    tax_free_income BIGINT,
    contributions BIGINT,
    special_deduction BIGINT,
    other_deduction BIGINT,
    tax BIGINT,
    annual_bonus_tax BIGINT,
    net_pay BIGINT,
    line TEXT,
    delivery_status TEXT,
    delivery_channel TEXT,
    delivery_error TEXT,
    delivery_attempts INTEGER NOT NULL DEFAULT 0,
    delivered_at TIMESTAMP
);
CREATE UNIQUE INDEX payroll_items_sheet_idx ON payroll_items(sheet_id, employee_id);
CREATE INDEX payroll_items_employee_idx ON payroll_items(employee_id, sheet_id);
