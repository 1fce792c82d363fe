-- Lists that cost the page, not the table.
-- A keyword inside one tenant compares the tenant's names, phones and employee numbers: with
-- them in the tenant's index beside the id, the comparison reads the index, not every row.
DROP INDEX employees_tenant_idx;
CREATE INDEX employees_tenant_idx ON employees(tenant_id, id, name, phone, employee_no);
-- How many employees hold each trigram of the search index: a keyword across tenants is
-- looked up by its rarest trigram, then compared in full.
CREATE VIRTUAL TABLE employees_search_vocab USING fts5vocab(employees_search, 'row');
