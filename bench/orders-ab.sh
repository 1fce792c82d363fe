#!/usr/bin/env bash
# Two builds of the server alternated on the same seed: order detail and the tenant's filtered
# list page of bench/orders.sh, each with the server's CPU time per request (every thread,
# from /proc/PID/stat) beside /healthz of the same run. For "no slower than before" claims,
# where req/s alone moves with the machine more than with the code.
#   A=/path/to/atrium-before B=/path/to/atrium-after bench/orders-ab.sh
#   A=… B=… DB_A=postgres://…/empty_a DB_B=postgres://…/empty_b bench/orders-ab.sh
# Each build gets its own database (an older build cannot run on a newer schema), seeded once
# with TENANTS × PER_TENANT orders (200 × 500 unless given); ROUNDS rounds (3), DURATION (8s).
: "${A:?A=the first build's binary}" "${B:?B=the second build's binary}"
ATRIUM_BIN=$A # run as given, never built (each round sets the one it runs)
source "$(dirname "$0")/lib.sh"
need_wrk
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
TENANTS=${TENANTS:-200}
PER_TENANT=${PER_TENANT:-500}
HZ=$(getconf CLK_TCK)

# one LABEL BIN DB: one round of the build, seeding its database first when new.
one() {
  local label=$1 bin=$2 db=$3
  local out="$OUT/ab-$label"
  mkdir -p "$out"
  OUT=$out
  ATRIUM_BIN=$bin
  if [ ! -f "$out/seeded" ]; then
    atrium_cli "$db" migrate >/dev/null
    atrium_cli "$db" seed --tenants "$TENANTS" --employees-per-tenant 0 --orders-per-tenant "$PER_TENANT" >/dev/null
    case "$db" in postgres*) psql -q "$db" -c "VACUUM ANALYZE" ;; esac
  fi
  # The administrator's password is printed on the first start only.
  start_server "$db" ATRIUM_BCRYPT_COST=10 || true
  if [ ! -f "$out/seeded" ]; then
    local admin
    admin=$(login admin "$ADMIN_PASSWORD")
    curl -sf "$BASE/api/v1/users" -H "authorization: Bearer $admin" -H 'content-type: application/json' \
      -d "{\"username\":\"benchtenant\",\"password\":\"bench-pass-1\",\"name\":\"Bench\",\"tenant_id\":$(( TENANTS / 2 )),\"role_ids\":[3]}" >/dev/null
    touch "$out/seeded"
  fi
  local tenant order
  tenant=$(login benchtenant bench-pass-1)
  order=$(curl -sf "$BASE/api/v1/orders?status=partially_refunded&page_size=1" -H "authorization: Bearer $tenant" | jq -r '.data.items[0].id')
  measure "$label" healthz "$BASE/healthz"
  measure "$label" order_detail "$BASE/api/v1/orders/$order" -H "Authorization: Bearer $tenant"
  measure "$label" tenant_list_filtered "$BASE/api/v1/orders?status=paid&created_from=2026-01-01T05:00:00Z&sort=-created_at&page=2" \
    -H "Authorization: Bearer $tenant"
  stop_server
}

# measure LABEL NAME URL [wrk args…] → "LABEL NAME req/s CPU-µs-per-request"
measure() {
  local label=$1 name=$2 url=$3; shift 3
  local t0 t1 n
  t0=$(cpu_ticks "$SERVER_PID")
  wrk_run "$name" "$url" -t2 -c16 -d"$DURATION" "$@" > "$OUT/$name.line"
  t1=$(cpu_ticks "$SERVER_PID")
  n=$(awk '/requests in/ {print $1}' "$OUT/$name.wrk")
  awk -v l="$label" -v n="$name" -v r="$(awk '{print $2}' "$OUT/$name.line")" -v t=$(( t1 - t0 )) -v c="$n" -v hz="$HZ" \
    'BEGIN { printf "%-2s %-22s %9.0f req/s  %7.1f us CPU/request\n", l, n, r, 1e6 * t / hz / c }'
}

ROOT_OUT=$OUT
# Rounds alternate which build goes first (A B, B A, …): a run measured right after another
# pays for that run's leftovers (PostgreSQL's checkpoint of its writes, say), and a fixed
# order would count that against the second build.
for round in $(seq "$ROUNDS"); do
  if (( round % 2 )); then order="A B"; else order="B A"; fi
  for label in $order; do
    if [ "$label" = A ]; then bin=$A db=${DB_A:-sqlite://$ROOT_OUT/ab-A.db}; else bin=$B db=${DB_B:-sqlite://$ROOT_OUT/ab-B.db}; fi
    OUT=$ROOT_OUT one "$label" "$bin" "$db"
  done
done | tee "$ROOT_OUT/orders-ab.txt"
