-- PostgreSQL keeps its per-tenant employee count per statement from here on and leaves room
-- on payroll item pages for in-place updates; SQLite's row triggers cost nothing comparable
-- (no row versions) and it has no fill factor, so it changes nothing. This migration keeps
-- the two backends' migration lists alike.
SELECT 1;
