-- PostgreSQL keeps its per-tenant employee count per statement from here on; SQLite's row
-- triggers cost nothing comparable (no row versions), so it keeps them. This migration keeps
-- the two backends' migration lists alike.
SELECT 1;
