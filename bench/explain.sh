#!/usr/bin/env bash
# The plan of each list query at a million rows, on one backend: a database seeded with 1,000
# tenants of 1,000 employees and 1,000 orders each, then each query the store sends for the
# benches' lists (the page, and the count bounded at 1,000 records past it), with its plan and
# how long it takes in the database alone. Writes markdown to $OUT/explain-<backend>.md.
#   bench/explain.sh                          SQLite (the sqlite3 shell reads the plan)
#   DB=postgres://…/empty_db bench/explain.sh PostgreSQL (EXPLAIN ANALYZE)
# The queries are written out here as the store builds them (crates/store/src/org/employees.rs,
# crates/store/src/orders/repo.rs); the columns of the page are abbreviated to `*`. A keyword's
# page is read in two steps, its ids and then those rows by id; the second is not shown.
source "$(dirname "$0")/lib.sh"
DB=${DB:-sqlite://$OUT/explain-bench.db}
REPEAT=${REPEAT:-50}
backend=sqlite
case "$DB" in postgres*) backend=postgres ;; esac
md="$OUT/explain-$backend.md"
[ "$backend" = sqlite ] && ! command -v sqlite3 >/dev/null && apt-get update -qq && apt-get install -y -qq sqlite3 >/dev/null
# SEEDED=1: DB already holds the seed (run again without seeding).
if [ "${SEEDED:-0}" != 1 ]; then
  [ "$backend" = sqlite ] && rm -f "$OUT"/explain-bench.db*
  build_release
  atrium_cli "$DB" migrate >/dev/null
  atrium_cli "$DB" seed --tenants 1000 --employees-per-tenant 1000 --orders-per-tenant 1000 >/dev/null
  if [ "$backend" = postgres ]; then psql -q "$DB" -c "VACUUM ANALYZE"; fi
fi
file=${DB#sqlite://}

# The keyword `worker 999` across tenants: on SQLite the store asks the trigram index for its
# two rarest trigrams (`"999" AND " 99"` here), which the search index's vocabulary names.
rarest=$(
  if [ "$backend" = sqlite ]; then
    sqlite3 "$file" "SELECT group_concat('\"' || term || '\"', ' AND ') FROM (SELECT term FROM employees_search_vocab WHERE term IN ('wor','ork','rke','ker','er ','r 9',' 99','999') ORDER BY doc LIMIT 2)"
  fi
)

# query TITLE SQL: the plan and the mean time of REPEAT runs, as markdown.
query() {
  local title=$1 sql=$2 plan ms
  if [ "$backend" = sqlite ]; then
    plan=$(sqlite3 "$file" "EXPLAIN QUERY PLAN $sql")
    # Timed as one count of its rows, so printing them is not timed.
    ms=$( { echo ".timer on"; for _ in $(seq "$REPEAT"); do echo "SELECT count(*) FROM ($sql);"; done; } | sqlite3 "$file" \
      | awk '/^Run Time/ {s += $4; n++} END {printf "%.3f", 1000 * s / n}')
  else
    plan=$(psql -qAt "$DB" -c "EXPLAIN (ANALYZE, COSTS OFF, BUFFERS OFF) $sql" | grep -v '^Planning Time\|^Execution Time')
    ms=$(for _ in $(seq "$REPEAT"); do psql -qAt "$DB" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $sql"; done \
      | awk '/^Execution Time/ {s += $3; n++} END {printf "%.3f", s / n}')
  fi
  printf '**%s** — %s ms\n\n```sql\n%s\n```\n```\n%s\n```\n\n' "$title" "$ms" "$sql" "$plan"
}

if [ "$backend" = sqlite ]; then
  like="name LIKE '%KW%' ESCAPE '\\' OR phone LIKE '%KW%' ESCAPE '\\' OR employee_no LIKE '%KW%' ESCAPE '\\'"
  kw_from="employees_search CROSS JOIN employees ON employees.id = employees_search.rowid"
  kw_all="employees_search MATCH '$rarest' AND (employees.name LIKE '%worker 999%' ESCAPE '\\' OR employees.phone LIKE '%worker 999%' ESCAPE '\\' OR employees.employee_no LIKE '%worker 999%' ESCAPE '\\')"
  kw_order="employees_search.rowid"
  # The store reads these ids (the same SQL as the page's, without the order) and counts them.
  kw_count="SELECT employees.id FROM $kw_from WHERE $kw_all LIMIT 1021"
  kw_tenant="tenant_id = 500 AND (${like//KW/worker 99})"
else
  kw_from="employees"
  kw_all="lower(name) LIKE '%worker 999%' ESCAPE '\\' OR phone LIKE '%worker 999%' ESCAPE '\\' OR lower(employee_no) LIKE '%worker 999%' ESCAPE '\\'"
  kw_order="employees.id"
  kw_count="SELECT COUNT(*) FROM (SELECT employees.id FROM $kw_from WHERE $kw_all LIMIT 1021) AS counted"
  kw_tenant="tenant_id = 500 AND (strpos(lower(name), 'worker 99') > 0 OR strpos(phone, 'worker 99') > 0 OR strpos(lower(employee_no), 'worker 99') > 0)"
fi
closed="orders.status = 'closed'"
partner="(SELECT tenants.partner_id FROM tenants WHERE tenants.id = orders.tenant_id)"
# The tenant's count searches the date range in orders_tenant_status_created_idx; its page reads
# orders_tenant_status_idx in id order and, on SQLite, compares `+created_at` on each entry.
paid="orders.tenant_id = 500 AND orders.status = 'paid' AND orders.created_at >= '2026-01-01 05:00:00'"
paid_page=$paid
[ "$backend" = sqlite ] && paid_page="orders.tenant_id = 500 AND orders.status = 'paid' AND +orders.created_at >= '2026-01-01 05:00:00'"
{
  printf '### %s\n\n' "$([ "$backend" = sqlite ] && echo "SQLite ($(sqlite3 --version | cut -d' ' -f1) shell)" || psql -qAt "$DB" -c 'SHOW server_version' | sed 's/^/PostgreSQL /')"
  query "Employees, platform keyword \`worker 999\`: the page's ids (then the 20 rows by id)" \
    "SELECT employees.id FROM $kw_from WHERE $kw_all ORDER BY $kw_order DESC LIMIT 20 OFFSET 0"
  query "… and its count (1,000 matches, under the bound of 1,020; kept five seconds for the search's pages)" \
    "$kw_count"
  query "Employees, tenant keyword \`worker 99\`: the page's ids (11 matches end the list: no count)" \
    "SELECT employees.id FROM employees WHERE $kw_tenant ORDER BY employees.id DESC LIMIT 20 OFFSET 0"
  if [ "$backend" = sqlite ]; then
    # Where page 500 starts, from the ids: the deleted ones (none here, and at most 5,000 are
    # counted), the largest and smallest id, one guess; then the page from that id on.
    query "Employees, platform, page 500: the deleted ids, counted up to a bound (then \`max(id)\`, \`min(id)\` and one guess)" \
      "SELECT COUNT(*) FROM (SELECT employee_gaps.id FROM employee_gaps WHERE employee_gaps.id >= 1 AND employee_gaps.id <= 1000000 LIMIT 5001) AS counted"
    query "… and the page, from the id it starts at" \
      "SELECT * FROM employees WHERE employees.id <= 990020 ORDER BY employees.id DESC LIMIT 20"
  else
    query "Employees, platform, page 500" \
      "SELECT * FROM employees ORDER BY employees.id DESC LIMIT 20 OFFSET 9980"
  fi
  query "… and its total, from the tenants' counters" \
    "SELECT CAST(SUM(employee_count) AS BIGINT) FROM tenants"
  query "Orders, platform, \`status=closed\`, page 2 (then its items and refunds, by order id)" \
    "SELECT orders.*, $partner FROM orders WHERE $closed ORDER BY orders.id DESC LIMIT 20 OFFSET 20"
  query "… and its count, bounded (200,000 match: the total is 1,040, inexact)" \
    "SELECT COUNT(*) FROM (SELECT orders.id FROM orders WHERE $closed LIMIT 1041) AS counted"
  query "Orders, tenant, \`status=paid\` from a date, page 2" \
    "SELECT orders.*, $partner FROM orders WHERE $paid_page ORDER BY orders.id DESC LIMIT 20 OFFSET 20"
  query "… and its count" \
    "SELECT COUNT(*) FROM (SELECT orders.id FROM orders WHERE $paid LIMIT 1041) AS counted"
} > "$md"
echo "plans in $md"
