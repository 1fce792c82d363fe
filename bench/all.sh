#!/usr/bin/env bash
# Every HTTP bench on SQLite and on PostgreSQL, one after the other on a quiet machine, then the
# figures table of docs/performance.md (each figure, its share of /healthz of the same run, the
# target, the machine), so a reader sees the numbers without running anything.
#   bench/all.sh                                   both backends, this tree's release build
#   BACKENDS=sqlite bench/all.sh                   one backend
#   ATRIUM_BIN=/path/to/atrium RESULTS=bench/out/before.tsv NO_DOC=1 bench/all.sh
#                                                  another build's figures, kept for comparing
#   BEFORE=bench/out/before.tsv bench/all.sh       the table shows those beside this run's
# PostgreSQL is a throwaway cluster (scripts/pg-throwaway.sh) with a fresh database per bench.
# Takes about 15 minutes for both backends. The benches: org.sh (a million employees), orders.sh
# (a million orders), payments.sh (unified-order through the pay platform's stand-in in its own
# process, notifications), payroll.sh (10,000 lines with the files; 100,000 lines, calculation).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export OUT=${OUT:-$ROOT/bench/out}
mkdir -p "$OUT"
RESULTS=${RESULTS:-$OUT/all.tsv}
BACKENDS=${BACKENDS:-sqlite postgres}
BENCHES=${BENCHES:-org orders payments payroll payroll100k}
# One build for every bench (each script builds only when ATRIUM_BIN is unset).
if [ -z "${ATRIUM_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release -q -p atrium-server)
  export ATRIUM_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/atrium"
fi
(cd "$ROOT" && cargo build --release -q -p atrium-tabular --example import_file)

PG_DIR=
cleanup() { if [ -n "$PG_DIR" ]; then "$ROOT/scripts/pg-throwaway.sh" stop "$PG_DIR"; fi; }
trap cleanup EXIT

# result BACKEND BENCH SUMMARY-FILE: appends the summary's figures to $RESULTS.tmp as
# backend, bench, name, value, unit, p99 in ms (or empty), share of /healthz in % (or empty).
result() {
  local backend=$1 bench=$2 file=$3
  awk -v b="$backend" -v n="$bench" -v OFS='\t' '
    /req\/s/ { if ($1 == "healthz") h = $2; rows[++k] = $1 OFS $2 OFS "req/s" OFS $5 }
    /^seed_employees/ { rows[++k] = $1 OFS $2 OFS "s" OFS "" }
    /^unified_order_cpu_/ { rows[++k] = $1 OFS $2 OFS "ms" OFS "" }
    /^unified_order_server_alone/ { rows[++k] = $1 OFS $2 OFS "orders/s" OFS "" }
    /^calculate / { for (i = 1; i <= NF; i++) if ($i == "median") m = $(i + 1); rows[++k] = "calculate_" $2 OFS m OFS "ms" OFS "" }
    /^(export|import) / { for (i = 1; i <= NF; i++) if ($i == "median") m = $(i + 1); rows[++k] = $1 "_" $2 OFS m OFS "ms" OFS "" }
    END {
      for (i = 1; i <= k; i++) {
        split(rows[i], f, OFS)
        share = (f[3] == "req/s" && h > 0) ? sprintf("%.1f", 100 * f[2] / h) : ""
        print b, n, rows[i], share
      }
    }' "$file" >> "$RESULTS.tmp"
}

: > "$RESULTS.tmp"
for backend in $BACKENDS; do
  if [ "$backend" = postgres ] && [ -z "$PG_DIR" ]; then
    eval "$(PG_PARENT=/tmp "$ROOT/scripts/pg-throwaway.sh" start)"
    PG_BASE=${ATRIUM_TEST_PG_URL%/*}
  fi
  for bench in $BENCHES; do
    script=$bench env=()
    case $bench in
      payroll100k) script=payroll env=(EMPLOYEES=100000 RUNS=3 FILES=0) ;;
      payroll) env=(RUNS=7) ;;
    esac
    db=
    if [ "$backend" = postgres ]; then
      psql -q "$PG_BASE/postgres" -c "DROP DATABASE IF EXISTS bench_$bench" -c "CREATE DATABASE bench_$bench"
      db="$PG_BASE/bench_$bench"
    fi
    echo "== $backend: $bench"
    env ${db:+DB="$db"} "${env[@]}" "$ROOT/bench/$script.sh" 2>&1 | tee "$OUT/all-$backend-$bench.log"
    result "$backend" "$bench" "$OUT/$script-summary.txt"
    # Dropping a database of a million rows leaves the cluster writing for a while: a checkpoint
    # now, so the next bench does not pay for it (it cost the payroll bench a third).
    if [ "$backend" = postgres ]; then psql -q "$PG_BASE/postgres" -c "DROP DATABASE bench_$bench" -c "CHECKPOINT"; fi
  done
done
mv "$RESULTS.tmp" "$RESULTS"
echo "figures in $RESULTS"
# The list queries' plans, on each backend (EXPLAIN=0 skips them).
plans=()
if [ "${EXPLAIN:-1}" = 1 ]; then
  for backend in $BACKENDS; do
    echo "== $backend: explain"
    if [ "$backend" = postgres ]; then
      psql -q "$PG_BASE/postgres" -c "DROP DATABASE IF EXISTS bench_explain" -c "CREATE DATABASE bench_explain"
      DB="$PG_BASE/bench_explain" "$ROOT/bench/explain.sh"
      psql -q "$PG_BASE/postgres" -c "DROP DATABASE bench_explain"
    else
      "$ROOT/bench/explain.sh"
    fi
    plans+=("$OUT/explain-$backend.md")
  done
fi
if [ "${NO_DOC:-0}" != 1 ]; then
  python3 "$ROOT/bench/render.py" "$RESULTS" ${BEFORE:+--before "$BEFORE"} --doc "$ROOT/docs/performance.md" --explain "${plans[@]}"
  echo "table written to docs/performance.md"
fi
