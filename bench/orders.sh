#!/usr/bin/env bash
# Issue 13 bench: 1,000,000 orders across 1,000 tenants (seeded through the store), then order
# creation with an Idempotency-Key, order detail and filtered list pages with wrk, each beside
# /healthz of the same server.
#   bench/orders.sh              (SQLite)      DB=postgres://…/db bench/orders.sh   (PostgreSQL, empty db)
# Targets on SQLite: create ≥ 2,000/s with p99 ≤ 25 ms at 16 connections; detail ≥ 35 % and a
# filtered list page ≥ 15 % of /healthz.
source "$(dirname "$0")/lib.sh"
need_wrk
DURATION=${DURATION:-10s}
CONNS=${CONNS:-16}
TENANTS=${TENANTS:-1000}
PER_TENANT=${PER_TENANT:-1000}
DB=${DB:-sqlite://$OUT/orders-bench.db}
LUA=$(cd "$(dirname "$0")/lua" && pwd)
rm -f "$OUT"/orders-bench.db* "$OUT/bench.secrets.json"
build_release
atrium_cli "$DB" migrate >/dev/null
atrium_cli "$DB" seed --tenants "$TENANTS" --employees-per-tenant 0 --orders-per-tenant "$PER_TENANT"
case "$DB" in postgres*) psql -q "$DB" -c "VACUUM ANALYZE" ;; esac
start_server "$DB" ATRIUM_BCRYPT_COST=10
trap stop_server EXIT
ADMIN=$(login admin "$ADMIN_PASSWORD")
T=$(( TENANTS / 2 ))
# A tenant administrator of one seeded tenant (built-in role 3, tenant_admin).
curl -sf "$BASE/api/v1/users" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
  -d "{\"username\":\"benchtenant\",\"password\":\"bench-pass-1\",\"name\":\"Bench\",\"tenant_id\":$T,\"role_ids\":[3]}" >/dev/null
TENANT=$(login benchtenant bench-pass-1)
ORDER=$(curl -sf "$BASE/api/v1/orders?status=partially_refunded&page_size=1" -H "authorization: Bearer $TENANT" | jq -r '.data.items[0].id')
[ "$ORDER" != null ] || { echo "no seeded order found" >&2; exit 1; }

run() { wrk_run "$1" "$2" -t2 -c"$CONNS" -d"$DURATION" -H "Authorization: Bearer $3"; }
CREATE_BODY='{"subject":"Bench order","items":[{"name":"Beans 500 g","quantity":2,"unit_price":4400}],"openid":"o_bench"}'
echo "backend: ${DB%%:*}; $TENANTS tenants x $PER_TENANT orders; wrk -t2 -c$CONNS -d$DURATION"
{
  wrk_run healthz "$BASE/healthz" -t2 -c"$CONNS" -d"$DURATION"
  run order_detail "$BASE/api/v1/orders/$ORDER" "$TENANT"
  perf_start orders-list
  run tenant_list_filtered "$BASE/api/v1/orders?status=paid&created_from=2026-01-01T05:00:00Z&sort=-created_at&page=2" "$TENANT"
  perf_stop
  run tenant_list_keyword "$BASE/api/v1/orders?keyword=seed%20order%2099" "$TENANT"
  run platform_list_filtered "$BASE/api/v1/orders?status=paid&tenant_id=$T&page=3" "$ADMIN"
  run platform_list_status "$BASE/api/v1/orders?status=closed&page=2" "$ADMIN"
  perf_start orders-create
  BODY="$CREATE_BODY" TOKEN="$TENANT" wrk_run create_idempotent "$BASE/api/v1/orders" \
    -t2 -c"$CONNS" -d"$DURATION" -s "$LUA/idempotent_post.lua"
  perf_stop
} | tee "$OUT/orders-summary.txt"
awk '/^healthz/ {h=$2} {printf "%-28s %5.1f %% of healthz\n", $1, 100*$2/h}' "$OUT/orders-summary.txt"
