-- Supplementary sheets cannot stay once a period may have only one sheet: they go, items first.
DROP INDEX payroll_sheets_regular_period_idx;
DELETE FROM payroll_items WHERE sheet_id IN (SELECT id FROM payroll_sheets WHERE kind = 'supplementary');
DELETE FROM payroll_sheets WHERE kind = 'supplementary';
ALTER TABLE payroll_sheets DROP COLUMN ytd_basis;
ALTER TABLE payroll_sheets DROP COLUMN kind;
CREATE UNIQUE INDEX payroll_sheets_period_idx ON payroll_sheets(tenant_id, period);
