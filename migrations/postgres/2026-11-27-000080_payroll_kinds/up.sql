-- Supplementary payroll sheets: besides a period's one regular sheet, any number of
-- supplementary ones paying arrears, corrections or an extra bonus for that period once its
-- regular sheet is approved or sent. The period stays unique for regular sheets only.
ALTER TABLE payroll_sheets ADD COLUMN kind TEXT NOT NULL DEFAULT 'regular' CHECK (kind IN ('regular', 'supplementary'));
-- How many approved or sent sheets the year-to-date figures of the sheet's last calculation
-- summed; approval refuses the sheet when that number has changed since (NULL: not calculated).
ALTER TABLE payroll_sheets ADD COLUMN ytd_basis BIGINT;
DROP INDEX payroll_sheets_period_idx;
CREATE UNIQUE INDEX payroll_sheets_regular_period_idx ON payroll_sheets(tenant_id, period) WHERE kind = 'regular';
