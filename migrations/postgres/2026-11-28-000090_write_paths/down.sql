ALTER TABLE payroll_items RESET (fillfactor);
DROP TRIGGER employees_count_delete ON employees;
DROP TRIGGER employees_count_insert ON employees;
DROP FUNCTION employees_count_deleted();
DROP FUNCTION employees_count_inserted();
CREATE TRIGGER employees_count_insert_delete AFTER INSERT OR DELETE ON employees
FOR EACH ROW EXECUTE FUNCTION employees_count();
