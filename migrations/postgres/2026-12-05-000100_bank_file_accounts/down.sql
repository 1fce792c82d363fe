ALTER TABLE payroll_sheets DROP COLUMN accounts_kept;
DROP TABLE payroll_sheet_accounts;
