-- Keyword search over employees without scanning them: trigram indexes (pg_trgm) on the
-- expressions the keyword filter compares with LIKE. pg_trgm ships with PostgreSQL's contrib;
-- where it cannot be installed (no contrib, no privilege) search keeps working as a scan and
-- the migration says so. An operator can install it later and run this file's index part.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm unavailable (%): employee keyword search will scan', SQLERRM;
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX employees_name_trgm_idx ON employees USING gin (lower(name) gin_trgm_ops);
        CREATE INDEX employees_phone_trgm_idx ON employees USING gin (phone gin_trgm_ops);
        CREATE INDEX employees_no_trgm_idx ON employees USING gin (lower(employee_no) gin_trgm_ops);
    END IF;
END
$$;
