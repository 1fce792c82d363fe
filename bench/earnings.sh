#!/usr/bin/env bash
# Partner earnings bench: 1,000,000 shared sub-merchant payments of 1,000 tenants under 50
# partners (seeded through the store: `atrium seed --shared-per-tenant`, each payment with the
# platform's and the partner's share, 5 % partly refunded with their shares' returns, paid
# over 2026), then one partner's statement of a month by day
# (`GET /api/v1/partners/{id}/earnings?from=2026-03-01&to=2026-03-31&group=day`, as the
# platform administrator) and by tenant with wrk, beside /healthz of the same server.
#   bench/earnings.sh              (SQLite)      DB=postgres://…/db bench/earnings.sh   (PostgreSQL, empty db)
#   SEEDED=1 DB=… bench/earnings.sh   reuses a database this script seeded before (no seeding)
#   PERF=1 bench/earnings.sh         profiles the statements' requests (bench/lib.sh)
# Before the load, the month's answer is checked once: code 200 (the envelope's code is the
# HTTP status), 31 rows, and totals equal to the sums read from the tables directly; the
# script fails otherwise, or on any non-2xx answer. Each run's CPU per request is shown (the
# server's; on PostgreSQL its backends' too), and the statement's query alone with its plan
# ($OUT/earnings-plan-<backend>.md). Seeding takes about 80 s on either backend.
# Target: the month by day ≥ 15 % of /healthz's requests per second, on both backends.
source "$(dirname "$0")/lib.sh"
need_wrk
DURATION=${DURATION:-10s}
CONNS=${CONNS:-16}
PARTNERS=${PARTNERS:-50}
TENANTS=${TENANTS:-1000}
PER_TENANT=${PER_TENANT:-1000}
TARGET=${TARGET:-15}
DB=${DB:-sqlite://$OUT/earnings-bench.db}
backend=sqlite
case "$DB" in postgres*) backend=postgres ;; esac
[ "$backend" = sqlite ] && ! command -v sqlite3 >/dev/null && apt-get update -qq && apt-get install -y -qq sqlite3 >/dev/null
# sql QUERY → its rows, columns separated by a space, read from the database directly.
sql() {
  if [ "$backend" = sqlite ]; then sqlite3 -separator ' ' "${DB#sqlite://}" "$1"; else psql -qAt -F ' ' "$DB" -c "$1"; fi
}
build_release
if [ "${SEEDED:-0}" != 1 ]; then
  [ "$backend" = sqlite ] && rm -f "$OUT"/earnings-bench.db*
  rm -f "$OUT/bench.secrets.json"
  atrium_cli "$DB" migrate >/dev/null
  atrium_cli "$DB" seed --partners "$PARTNERS" --tenants "$TENANTS" --employees-per-tenant 0 --shared-per-tenant "$PER_TENANT" \
    | tee "$OUT/earnings-seed.txt"
  [ "$backend" = postgres ] && psql -q "$DB" -c "VACUUM ANALYZE"
fi
# A database seeded before has its administrator: no first-start password for start_server
# to find (its grep fails), which is not an error here.
start_server "$DB" ATRIUM_BCRYPT_COST=10 || [ "${SEEDED:-0}" = 1 ]
trap stop_server EXIT
curl -sf "$BASE/healthz" >/dev/null || { echo "the server did not start: $OUT/server.log" >&2; exit 1; }
if [ -n "$ADMIN_PASSWORD" ]; then
  ADMIN=$(login admin "$ADMIN_PASSWORD")
else
  # A database seeded before (SEEDED=1): its first start printed the password; another
  # administrator of the bench's own instead (made once, kept for the next run).
  ATRIUM_ADMIN_PASSWORD=earnings-bench-1 atrium_cli "$DB" admin create --username earnings_bench >/dev/null 2>&1 || true
  ADMIN=$(login earnings_bench earnings-bench-1)
fi
# The middle one of the seeded partners: its 20 tenants' payments lie among every other's.
PID=$(sql "SELECT (MIN(partner_id) + MAX(partner_id)) / 2 FROM share_plans WHERE receiver_name LIKE 'Seed agency %'")
[ -n "$PID" ] || { echo "no seeded partner found" >&2; exit 1; }
FROM=2026-03-01 TO=2026-03-31
MONTH="$BASE/api/v1/partners/$PID/earnings?from=$FROM&to=$TO"

# The month's statement once, against the same sums read from the tables: March 2026 in China
# Standard Time is [2026-02-28 16:00, 2026-03-31 16:00) UTC.
curl -s "$MONTH&group=day" -H "authorization: Bearer $ADMIN" > "$OUT/earnings-month.json"
rows=$(jq -r 'if .code == 200 then (.data.rows | length) else "code \(.code): \(.message // "")" end' "$OUT/earnings-month.json" 2>/dev/null || echo "not JSON")
[ "$rows" = 31 ] || { echo "partner $PID's month by day: expected code 200 with 31 rows, got: $rows" >&2; head -c 600 "$OUT/earnings-month.json" >&2; exit 1; }
got=$(jq -r '.data.totals | "\(.paid) \(.refunded) \(.shared) \(.returned) \(.pending) \(.failed)"' "$OUT/earnings-month.json")
want=$(sql "SELECT SUM(t.amount), \
    SUM(COALESCE((SELECT SUM(r.amount) FROM payment_refunds r WHERE r.payment_id = t.id AND r.status = 'succeeded'), 0)), \
    SUM(CASE WHEN s.status IN ('succeeded', 'returned') THEN s.amount - s.withheld ELSE 0 END), SUM(COALESCE(s.returned, 0)), \
    SUM(CASE WHEN s.status IN ('pending', 'processing') THEN s.amount - s.withheld ELSE 0 END), \
    SUM(CASE WHEN s.status = 'closed' THEN s.amount - s.withheld ELSE 0 END) \
  FROM payment_transactions t JOIN tenants tn ON tn.id = t.tenant_id \
  LEFT JOIN payment_shares s ON s.payment_id = t.id AND s.role = 'partner' \
  WHERE tn.partner_id = $PID AND t.sub_mchid IS NOT NULL AND t.trade_state IN ('SUCCESS', 'REFUND') AND t.discrepancy IS NULL \
    AND t.success_time >= '2026-02-28 16:00:00' AND t.success_time < '2026-03-31 16:00:00'")
[ "$got" = "$want" ] || { echo "partner $PID's month totals (paid refunded shared returned pending failed): answered $got, the tables hold $want" >&2; exit 1; }
echo "partner $PID, $FROM to $TO: 31 days, totals (paid refunded shared returned pending failed, fen) $got — as the tables hold"
GROUPINGS=(day)
tenant_rows=$(curl -s "$MONTH&group=tenant" -H "authorization: Bearer $ADMIN" | jq -r 'if .code == 200 then (.data.rows | length) else "code \(.code)" end' 2>/dev/null || true)
if [ "$tenant_rows" = $(( TENANTS / PARTNERS )) ]; then GROUPINGS+=(tenant); else echo "group=tenant answered $tenant_rows rows: not measured" >&2; fi

run() { wrk_run "$1" "$2" -t2 -c"$CONNS" -d"$DURATION" -H "Authorization: Bearer $ADMIN"; }
# The CPU a run cost, per request: the server's (on SQLite the database's work is in it), and on
# PostgreSQL its backends' (the server's pool connections, new ones counted from 0).
declare -A TICKS_BEFORE
backends() { [ "$backend" = postgres ] && psql -qAt "$DB" -c "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"; true; }
cpu_mark() {
  TICKS_BEFORE=([server]=$(cpu_ticks "$SERVER_PID"))
  for p in $(backends); do TICKS_BEFORE[$p]=$(cpu_ticks "$p" 2>/dev/null || echo 0); done
}
# cpu_report NAME: NAME_cpu, ms of server CPU (and of database CPU) per request of NAME's wrk run.
cpu_report() {
  local name=$1 hz requests server db=0 p now
  hz=$(getconf CLK_TCK)
  requests=$(awk '/requests in/ {print $1}' "$OUT/$name.wrk")
  server=$(( $(cpu_ticks "$SERVER_PID") - ${TICKS_BEFORE[server]} ))
  for p in $(backends); do now=$(cpu_ticks "$p" 2>/dev/null || echo 0); db=$(( db + now - ${TICKS_BEFORE[$p]:-0} )); done
  awk -v n="$name" -v s="$server" -v d="$db" -v r="$requests" -v hz="$hz" -v pg="$([ "$backend" = postgres ] && echo 1)" 'BEGIN {
    printf "%-28s %10.2f ms of server CPU per request", n "_cpu", 1000 * s / hz / r
    if (pg) printf ", %.2f ms of PostgreSQL CPU", 1000 * d / hz / r
    printf " (%d requests)\n", r }'
}
echo "backend: $backend; $PARTNERS partners, $TENANTS tenants x $PER_TENANT shared payments; wrk -t2 -c$CONNS -d$DURATION"
{
  wrk_run healthz "$BASE/healthz" -t2 -c"$CONNS" -d"$DURATION"
  for g in "${GROUPINGS[@]}"; do
    perf_start "earnings-month-$g"
    cpu_mark
    run "earnings_month_$g" "$MONTH&group=$g"
    cpu_report "earnings_month_$g"
    perf_stop
  done
} | tee "$OUT/earnings-summary.txt"

# The statement's query in the database alone: its plan and mean time over REPEAT runs, written
# out here as crates/store/src/earnings.rs builds it (a partner's month by day: the day sums
# kept for the partner), to
# $OUT/earnings-plan-<backend>.md.
REPEAT=${REPEAT:-20}
statement="SELECT day, CAST(0 AS BIGINT) AS tenant_id, paid, refunded, shared, returned, pending, failed FROM payment_partner_days \
WHERE partner_id = $PID AND day >= '$FROM' AND day <= '$TO' \
AND (paid <> 0 OR refunded <> 0 OR shared <> 0 OR returned <> 0 OR pending <> 0 OR failed <> 0)"
# Timed wrapped in one sum of every column, so that nothing of it can be left out (counting its
# rows lets either database drop the shares' join and the sums).
all="SELECT SUM(paid) + SUM(refunded) + SUM(shared) + SUM(returned) + SUM(pending) + SUM(failed) + COUNT(day) FROM ($statement) q"
if [ "$backend" = sqlite ]; then
  plan=$(sqlite3 "${DB#sqlite://}" "EXPLAIN QUERY PLAN $statement")
  # With the server's page cache and memory map (crates/store/src/db.rs), after one run to warm them.
  ms=$( { echo "PRAGMA cache_size = -16000; PRAGMA mmap_size = 268435456;"; echo "$all;"; echo ".timer on"; for _ in $(seq "$REPEAT"); do echo "$all;"; done; } \
    | sqlite3 "${DB#sqlite://}" | awk '/^Run Time/ {s += $4; n++} END {printf "%.2f ms", 1000 * s / n}')
else
  # EXPLAIN ANALYZE's own counting triples this query's time here: the plan is shown with it,
  # the time is psql's (planning and the round trip included, as the store's call has them:
  # Diesel prepares raw SQL anew for each call), after one run to warm up.
  plan=$(psql -qAt "$DB" -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) $statement")
  ms=$( { echo "$all;"; echo '\timing on'; for _ in $(seq "$REPEAT"); do echo "$all;"; done; } | psql -qAt "$DB" \
    | awk '/^Time:/ {s += $2; n++} END {printf "%.2f ms", s / n}')
fi
printf '**Partner %s, March 2026 by day, in the database alone** — %s\n\n```sql\n%s\n```\n```\n%s\n```\n' \
  "$PID" "$ms" "$statement" "$plan" > "$OUT/earnings-plan-$backend.md"
echo "the statement's query alone: $ms (plan in $OUT/earnings-plan-$backend.md)"
awk -v target="$TARGET" '/^healthz/ {h=$2; next} !/req\/s/ {next}
  {r = 100*$2/h; printf "%-28s %5.1f %% of healthz (p99 %s ms)%s\n", $1, r, $5, ($1 == "earnings_month_day" ? (r >= target ? "  target met" : "  TARGET MISSED (" target " %)") : "")}' \
  "$OUT/earnings-summary.txt"
# Every request answered 2xx (a 401 or 500 is fast, and would flatter the figures).
awk '/req\/s/ && $NF != 0 {bad=1; print "non-2xx answers in " $1 ": " $NF > "/dev/stderr"} END {exit bad}' "$OUT/earnings-summary.txt"
