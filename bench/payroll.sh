#!/usr/bin/env bash
# Issue 5 bench: POST /payroll-sheets/:id/calculate for a 10,000-employee sheet, end to end
# over HTTP, with a calculated-and-approved January behind it so year-to-date sums are read.
#   bench/payroll.sh            (SQLite)      DB=postgres://…/db bench/payroll.sh   (PostgreSQL, empty db)
# The engine alone: cargo bench -p atrium-payroll
source "$(dirname "$0")/lib.sh"
need_wrk
EMPLOYEES=${EMPLOYEES:-10000}
RUNS=${RUNS:-5}
DB=${DB:-sqlite://$OUT/payroll-bench.db}
rm -f "$OUT"/payroll-bench.db* "$OUT/bench.secrets.json"
build_release
atrium_cli "$DB" migrate >/dev/null
atrium_cli "$DB" seed --tenants 1 --employees-per-tenant "$EMPLOYEES" >/dev/null
start_server "$DB" ATRIUM_BCRYPT_COST=10
trap stop_server EXIT
ADMIN=$(login admin "$ADMIN_PASSWORD")
TENANT=$(curl -sf "$BASE/api/v1/tenants?page_size=1" -H "authorization: Bearer $ADMIN" | jq -r '.data.items[0].id')
api() { curl -sf -X "$1" "$BASE$2" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' ${3:+-d "$3"}; }
# One admin both calculates and approves here, so the bench turns four-eyes off for its tenant.
api PUT "/api/v1/tenants/$TENANT" '{"payroll_policy":{"si_base_floor":716200,"si_base_cap":3581100,"hf_base_floor":716200,"hf_base_cap":3581100,"medical_fixed":300,"pension_rate":"0.08","medical_rate":"0.02","unemployment_rate":"0.005","four_eyes":false}}' >/dev/null

JAN=$(api POST /api/v1/payroll-sheets "{\"tenant_id\":$TENANT,\"period\":\"2026-01\"}" | jq -r .data.id)
api POST "/api/v1/payroll-sheets/$JAN/calculate" >/dev/null
api POST "/api/v1/payroll-sheets/$JAN/approve" >/dev/null
t0=$(date +%s.%N)
FEB=$(api POST /api/v1/payroll-sheets "{\"tenant_id\":$TENANT,\"period\":\"2026-02\"}" | jq -r .data.id)
t1=$(date +%s.%N)
ITEMS=$(api GET "/api/v1/payroll-sheets/$FEB" | jq '.data.items | length')
echo "backend: ${DB%%:*}; sheet $FEB with $ITEMS items; create took $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", (b - a) * 1000}') ms"
times=()
for i in $(seq 1 "$RUNS"); do
  ms=$(curl -sf -o /dev/null -w '%{time_total}' -X POST "$BASE/api/v1/payroll-sheets/$FEB/calculate" -H "authorization: Bearer $ADMIN")
  times+=("$(awk -v s="$ms" 'BEGIN {printf "%.0f", s * 1000}')")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf 'calculate %s items: runs %s ms, median %s ms\n' "$ITEMS" "$sorted" "$median" | tee "$OUT/payroll-summary.txt"
curl -sf "$BASE/api/v1/payroll-sheets/$FEB" -H "authorization: Bearer $ADMIN" | jq -c '.data | {status, totals}'
