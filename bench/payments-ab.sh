#!/usr/bin/env bash
# Two builds of the server alternated through bench/payments.sh (unified-order and signed
# notifications through the pay platform's stand-in), each run on a database of its own, with
# the server's CPU time per order. For "no slower than before" claims on the payment path.
#   A=/path/to/atrium-before B=/path/to/atrium-after bench/payments-ab.sh            (SQLite)
#   A=… B=… PG=postgres://user@host:port/postgres bench/payments-ab.sh               (PostgreSQL)
# With PG, each run gets a fresh database created through that URL and dropped after.
# Rounds alternate which build goes first (A B, B A, …): on PostgreSQL the run after another
# pays for its leftovers (the checkpoint of its writes), which a fixed order would count
# against the second build (0.2–0.3 ms of CPU an order here). ROUNDS (4), DURATION (10s).
: "${A:?A=the first build's binary}" "${B:?B=the second build's binary}"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/bench/out}
ROUNDS=${ROUNDS:-4}
mkdir -p "$OUT"

# run LABEL BIN ROUND → "LABEL orders/s CPU-ms-per-order notifications/s"
run() {
  local label=$1 bin=$2 round=$3 out="$OUT/pay-ab-$1-$3" db
  rm -rf "$out"; mkdir -p "$out"
  if [ -n "${PG:-}" ]; then
    db="payab_${label,,}_${round}_$$"
    psql -q "$PG" -c "CREATE DATABASE $db"
    db="${PG%/*}/$db"
  else
    db="sqlite://$out/payments-bench.db"
  fi
  ATRIUM_BIN=$bin DB=$db OUT=$out "$ROOT/bench/payments.sh" > "$out/summary.txt" 2>&1 \
    || { echo "run $label $round failed; see $out" >&2; exit 1; }
  [ -n "${PG:-}" ] && psql -q "$PG" -c "DROP DATABASE ${db##*/}"
  awk -v l="$label" '
    $1 == "unified_order" && $3 == "req/s" { r = $2 }
    $1 == "unified_order_cpu_server" { c = $2 }
    $1 == "notification" && $3 == "req/s" { n = $2 }
    END { printf "%-2s %8.0f orders/s  %5.2f ms CPU/order  %8.0f notifications/s\n", l, r, c, n }' "$out/summary.txt"
}

for round in $(seq "$ROUNDS"); do
  if (( round % 2 )); then order="A B"; else order="B A"; fi
  for label in $order; do
    if [ "$label" = A ]; then run A "$A" "$round"; else run B "$B" "$round"; fi
  done
done | tee "$OUT/payments-ab.txt"
