#!/usr/bin/env bash
# Issue 5 bench: POST /payroll-sheets/:id/calculate for a 10,000-employee sheet, end to end
# over HTTP, with a calculated-and-approved January behind it so year-to-date sums are read.
# Issue 23: then the same sheet's export (xlsx, csv) and an import of 10,000 rows (csv, xlsx):
# time per request and the server's peak resident memory during each step.
#   bench/payroll.sh            (SQLite)      DB=postgres://…/db bench/payroll.sh   (PostgreSQL, empty db)
# PERF=1: also profile the calculations (bench/lib.sh perf_start).
# The engine alone: cargo bench -p atrium-payroll; the file adapter alone: cargo bench -p atrium-tabular
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
perf_start payroll-calculate
for i in $(seq 1 "$RUNS"); do
  ms=$(curl -sf -o /dev/null -w '%{time_total}' -X POST "$BASE/api/v1/payroll-sheets/$FEB/calculate" -H "authorization: Bearer $ADMIN")
  times+=("$(awk -v s="$ms" 'BEGIN {printf "%.0f", s * 1000}')")
done
perf_stop
sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf 'calculate %s items: runs %s ms, median %s ms\n' "$ITEMS" "$sorted" "$median" | tee "$OUT/payroll-summary.txt"
curl -sf "$BASE/api/v1/payroll-sheets/$FEB" -H "authorization: Bearer $ADMIN" | jq -c '.data | {status, totals}'

# FILES=0: the calculation only (bench/all.sh's 100,000-line run).
[ "${FILES:-1}" = 0 ] && exit 0

# ---- Files (issue 23): export and import of the 10,000-line sheet ----
# Memory: the server's VmHWM (peak resident set) over each step, reset to the current resident
# set before it (`echo 5 > /proc/PID/clear_refs`, Linux 4.0+), next to VmRSS before the step.
status_mib() { awk -v k="$1:" '$1 == k {print int($2 / 1024)}' "/proc/$SERVER_PID/status"; }
reset_peak() { echo 5 > "/proc/$SERVER_PID/clear_refs" 2>/dev/null || echo "(cannot reset VmHWM: the peak shown is since start)" >&2; }
# step NAME UPLOAD-FILE CURL-ARGS...: RUNS requests that must answer 200; prints the times,
# the median, the size of what went up (UPLOAD-FILE) or came down, and memory.
step() {
  local name=$1 upload=$2; shift 2
  local rss_before times=() size=0 s bytes code
  rss_before=$(status_mib VmRSS)
  reset_peak
  for _ in $(seq 1 "$RUNS"); do
    read -r s bytes code < <(curl -s -o "$OUT/payroll-file.out" -w '%{time_total} %{size_download} %{http_code}\n' "$@")
    [ "$code" = 200 ] || { echo "$name: HTTP $code: $(head -c 400 "$OUT/payroll-file.out")" >&2; exit 1; }
    times+=("$(awk -v s="$s" 'BEGIN {printf "%.0f", s * 1000}')")
    size=$bytes
  done
  [ -n "$upload" ] && size=$(stat -c %s "$upload")
  local sorted median
  sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-12s %s lines: runs %sms, median %s ms, file %s KiB; server RSS %s MiB before, peak %s MiB during\n' \
    "$name" "$ITEMS" "$sorted" "$median" "$((size / 1024))" "$rss_before" "$(status_mib VmHWM)" | tee -a "$OUT/payroll-summary.txt"
}
auth=(-H "authorization: Bearer $ADMIN")
step "export xlsx" "" "${auth[@]}" "$BASE/api/v1/payroll-sheets/$FEB/export?format=xlsx"
step "export csv" "" "${auth[@]}" "$BASE/api/v1/payroll-sheets/$FEB/export?format=csv"
# The import files: a row for each seeded employee (E000001, …) with an allowance and a bonus.
(cd "$ROOT" && cargo build --release -q -p atrium-tabular --example import_file)
for f in csv xlsx; do "${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/import_file" "$EMPLOYEES" "$f" "$OUT/payroll-import.$f"; done
step "import csv" "$OUT/payroll-import.csv" -X POST "${auth[@]}" -F "file=@$OUT/payroll-import.csv" "$BASE/api/v1/payroll-sheets/$FEB/items/import"
step "import xlsx" "$OUT/payroll-import.xlsx" -X POST "${auth[@]}" -F "file=@$OUT/payroll-import.xlsx" "$BASE/api/v1/payroll-sheets/$FEB/items/import"
curl -sf "$BASE/api/v1/payroll-sheets/$FEB" "${auth[@]}" \
  | jq -c '{status: .data.status, items: (.data.items | length), bonus_of_E000002: (.data.items[] | select(.employee_no == "E000002") | .bonus)}'
