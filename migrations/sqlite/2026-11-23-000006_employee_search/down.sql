DROP TRIGGER employees_search_update;
DROP TRIGGER employees_search_delete;
DROP TRIGGER employees_search_insert;
DROP TABLE employees_search;
