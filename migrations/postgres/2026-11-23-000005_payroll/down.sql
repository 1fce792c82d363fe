DROP TABLE payroll_items;
DROP TABLE payroll_sheets;
