-- Deep pages that do not step over the rows before them.
--
-- The platform's employee total is a sum of the tenants' counters: with the counter in the
-- partner index, the sum reads that narrow index instead of every tenant row.
DROP INDEX tenants_partner_idx;
CREATE INDEX tenants_partner_idx ON tenants(partner_id, employee_count);

-- SQLite hands out employee ids 1, 2, 3, … (AUTOINCREMENT: never reused, and a rolled-back
-- insert gives its number back), so every id up to the largest is an employee or a deleted
-- one. With the deleted ids kept here, where page k of every employee in id order starts is
-- arithmetic plus a count of deleted ids, not a walk over k pages of rows (the store's
-- `id_at_offset`, which checks that the ids are still laid out so before it relies on them).
CREATE TABLE employee_gaps (id INTEGER PRIMARY KEY);
-- Every number handed out so far (the sequence, which remembers deleted newest ids too) that
-- is not an employee.
WITH RECURSIVE
    handed(n) AS (SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'employees'), 0),
                             coalesce((SELECT max(id) FROM employees), 0))),
    n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < (SELECT n FROM handed))
INSERT INTO employee_gaps (id)
SELECT i FROM n WHERE i <= (SELECT n FROM handed) AND NOT EXISTS (SELECT 1 FROM employees WHERE id = n.i);

CREATE TRIGGER employees_gap_delete AFTER DELETE ON employees
BEGIN INSERT OR IGNORE INTO employee_gaps (id) VALUES (OLD.id); END;
-- Only an insert with an explicit id could fill a gap; it is no longer one then.
CREATE TRIGGER employees_gap_insert AFTER INSERT ON employees
BEGIN DELETE FROM employee_gaps WHERE id = NEW.id; END;
