-- The bank accounts a payroll sheet pays, kept when it is approved: the bank file pays these,
-- whatever the employee records say later (an account changed after approval is not paid
-- until a sheet with it is approved). The number is copied encrypted, as the employee record
-- holds it. Sheets approved before this keep accounts_kept false, and their bank files read
-- the employee records as before.
CREATE TABLE payroll_sheet_accounts (
    sheet_id BIGINT NOT NULL REFERENCES payroll_sheets(id) ON DELETE CASCADE,
    employee_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    bank_name TEXT,
    bank_account_enc TEXT NOT NULL,
    PRIMARY KEY (sheet_id, employee_id)
);
ALTER TABLE payroll_sheets ADD COLUMN accounts_kept BOOLEAN NOT NULL DEFAULT FALSE;
