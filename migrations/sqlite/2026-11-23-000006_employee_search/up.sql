-- Keyword search over employees without scanning them: a trigram full-text index of the
-- natural fields (name, phone, employee number), kept in step with the table by triggers.
-- A keyword of three or more characters is a phrase match on it (a case-insensitive
-- substring, like the LIKE it replaces); shorter keywords still use LIKE.
CREATE VIRTUAL TABLE employees_search USING fts5(
    name, phone, employee_no,
    content = 'employees', content_rowid = 'id', tokenize = 'trigram'
);
INSERT INTO employees_search(employees_search) VALUES ('rebuild');

CREATE TRIGGER employees_search_insert AFTER INSERT ON employees BEGIN
    INSERT INTO employees_search(rowid, name, phone, employee_no) VALUES (new.id, new.name, new.phone, new.employee_no);
END;
CREATE TRIGGER employees_search_delete AFTER DELETE ON employees BEGIN
    INSERT INTO employees_search(employees_search, rowid, name, phone, employee_no)
    VALUES ('delete', old.id, old.name, old.phone, old.employee_no);
END;
CREATE TRIGGER employees_search_update AFTER UPDATE OF name, phone, employee_no ON employees BEGIN
    INSERT INTO employees_search(employees_search, rowid, name, phone, employee_no)
    VALUES ('delete', old.id, old.name, old.phone, old.employee_no);
    INSERT INTO employees_search(rowid, name, phone, employee_no) VALUES (new.id, new.name, new.phone, new.employee_no);
END;
