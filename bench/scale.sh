#!/usr/bin/env bash
# Two instances: the money path on one, then on two Atrium instances sharing one PostgreSQL
# database and the same cores: throughput of two against one, and that nothing is done twice or
# lost when two instances serve it at once.
#
# One throwaway PostgreSQL (scripts/pg-throwaway.sh; or PG_URL, a superuser URL of a cluster in
# which a database atrium_scale_<pid> is made and dropped), a pay platform stand-in (an atrium
# with ATRIUM_PLATFORM=sandbox on its own SQLite file), and the instances, pinned to CPUS
# (default 0,1) with ATRIUM_PLATFORM=wechat and ATRIUM_WECHAT_PAY_BASE at the stand-in. The
# load, bench/scale/moneypath.py, runs CONCURRENCY flows at a time for DURATION seconds per
# phase: create an order, pay it, the stand-in pays and notifies, wait for `paid`, refund it in
# full, the stand-in settles and notifies, wait for `refunded`. Each request goes to the next
# instance in turn, and with two instances each one's ATRIUM_PUBLIC_URL is the other's, so a
# payment's notification lands on the instance that did not start it. Printed: flows/s of one
# and two and their ratio, p50/p99 per step, CPU per process and per flow, PostgreSQL
# transactions and WAL per flow, the ledger events waiting, rows written per flow by table;
# then, counted in the database, orders created against flows started, duplicate orders,
# transactions and refunds, orders whose paid or refunded amount is not their ledger's (a
# notification applied twice or never) or whose status is not their ledger's (a lost update),
# and failed jobs. Exits non-zero if any of those is not 0 or a flow failed.
#   bench/scale.sh        DURATION=30 CONCURRENCY=64 TENANTS=8 bench/scale.sh
# The throwaway cluster runs with fsync=off and synchronous_commit=off, so writes cost less
# than on a durable server (docs/operations.md, "What a second instance buys").
source "$(dirname "$0")/lib.sh"
for tool in psql python3 jq curl; do
  command -v "$tool" >/dev/null || { echo "bench/scale.sh needs $tool" >&2; exit 1; }
done
DURATION=${DURATION:-25}
CONCURRENCY=${CONCURRENCY:-48}
TENANTS=${TENANTS:-4}
CPUS=${CPUS-0,1}
SCALE=$ROOT/bench/scale
STAMP=$(date +%s)
SECRETS=$OUT/scale.secrets.json
rm -f "$OUT"/scale-standin.db* "$OUT/scale-standin.secrets.json" "$SECRETS"
build_release

PIN=()
if [ -n "$CPUS" ] && command -v taskset >/dev/null; then PIN=(taskset -c "$CPUS"); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

declare -A PID
PG_STARTED= SCALE_DB_URL= ADMIN_URL=
cleanup() {
  local name
  for name in "${!PID[@]}"; do
    kill "${PID[$name]}" 2>/dev/null || true
    wait "${PID[$name]}" 2>/dev/null || true
  done
  if [ -n "$PG_STARTED" ]; then
    "$ROOT/scripts/pg-throwaway.sh" stop "$PG_DIR"
  elif [ -n "$SCALE_DB_URL" ]; then
    psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $DB_NAME" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# start_atrium NAME PORT DATABASE_URL [ENV=VALUE...]: starts the release binary on loopback and
# waits (at most 60 s) until it is ready. Its log is $OUT/scale-NAME.log.
start_atrium() {
  local name=$1 port=$2 url=$3; shift 3
  env DATABASE_URL="$url" ATRIUM_BIND="127.0.0.1:$port" ATRIUM_LOG=warn ATRIUM_SECRETS_FILE="$SECRETS" \
    ATRIUM_BCRYPT_COST=10 "$@" "${PIN[@]}" "$ATRIUM_BIN" > "$OUT/scale-$name.log" 2>&1 &
  PID[$name]=$!
  local deadline=$(( SECONDS + 60 ))
  until curl -sf "http://127.0.0.1:$port/healthz/ready" >/dev/null; do
    if ! kill -0 "${PID[$name]}" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "$name did not become ready; its log:" >&2; tail -20 "$OUT/scale-$name.log" >&2; exit 1
    fi
    sleep 0.1
  done
}
stop_atrium() {
  kill "${PID[$1]}" 2>/dev/null || true
  wait "${PID[$1]}" 2>/dev/null || true
  unset "PID[$1]"
}

# CPU ticks (user + system) a process has used, and the sum over the throwaway cluster's
# processes (the postmaster's children: the backends).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() {
  local pm
  pm=$(head -1 "$PG_DATA/postmaster.pid" 2>/dev/null) || { echo 0; return; }
  awk -v pm="$pm" '($2 == "(postgres)") && ($1 == pm || $4 == pm) {t += $14 + $15} END {print t + 0}' /proc/[0-9]*/stat 2>/dev/null || true
}
# Transactions committed in the bench database (reads included), the WAL position in bytes,
# and the next transaction id (only a transaction that writes takes one).
pg_counters() {
  psql -At -F' ' "$SCALE_DB_URL" -c "SELECT xact_commit, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
                                            txid_snapshot_xmax(txid_current_snapshot())
                                      FROM pg_stat_database WHERE datname = current_database()"
}
# Rows inserted, updated and deleted so far per table, and whether it has a tenant_id column.
table_writes() {
  psql -At -F' ' "$SCALE_DB_URL" -c "SELECT t.relname, t.n_tup_ins + t.n_tup_upd + t.n_tup_del,
        CASE WHEN EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = t.schemaname
                          AND c.table_name = t.relname AND c.column_name = 'tenant_id') THEN 'tenant' ELSE '-' END
      FROM pg_stat_user_tables t"
}
machine_ticks() { awk '/^cpu / {busy = $2 + $3 + $4 + $7 + $8; print busy, busy + $5 + $6}' /proc/stat; }

# ---- PostgreSQL: a fresh database in a throwaway cluster, or in the one PG_URL names.
if [ -z "${PG_URL:-}" ]; then
  eval "$(PG_PARENT=/tmp "$ROOT/scripts/pg-throwaway.sh" start)"
  PG_STARTED=1
  PG_URL=$ATRIUM_TEST_PG_URL
  PG_DATA=$PG_DIR/data
else
  PG_DATA=${PG_DATA:-}
fi
ADMIN_URL=$PG_URL
DB_NAME=atrium_scale_$$
psql -q "$ADMIN_URL" -c "CREATE DATABASE $DB_NAME" >/dev/null
SCALE_DB_URL="${PG_URL%/*}/$DB_NAME"
MAX_CONN=$(psql -At "$SCALE_DB_URL" -c "SHOW max_connections")
PG_SETTINGS=$(psql -At "$SCALE_DB_URL" -c "SELECT string_agg(name || '=' || setting, ' ') FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'max_connections')")

# ---- The pay platform stand-in, and instance a (which migrates and makes the first admin).
STANDIN_PORT=$(free_port); STANDIN=http://127.0.0.1:$STANDIN_PORT
A_PORT=$(free_port); A=http://127.0.0.1:$A_PORT
B_PORT=$(free_port); B=http://127.0.0.1:$B_PORT
PIN_SAVED=("${PIN[@]}"); PIN=()
# actix answers 408 on a connection that carried no request within
# ATRIUM_CLIENT_REQUEST_TIMEOUT_MS, and a client's pool may hand out such a connection just
# then: Atrium's pay client takes that 408 as the platform's refusal (the flow fails with
# `pay_platform: HTTP_408`). The stand-in waits longer by default, as the real platform's
# front is no actix server; STANDIN_REQUEST_TIMEOUT_MS=5000 shows it.
start_atrium standin "$STANDIN_PORT" "sqlite://$OUT/scale-standin.db" ATRIUM_PLATFORM=sandbox ATRIUM_JOBS=false \
  ATRIUM_SECRETS_FILE="$OUT/scale-standin.secrets.json" ATRIUM_CLIENT_REQUEST_TIMEOUT_MS="${STANDIN_REQUEST_TIMEOUT_MS:-600000}"
PIN=("${PIN_SAVED[@]}")
INSTANCE_ENV=(ATRIUM_PLATFORM=wechat ATRIUM_WECHAT_PAY_BASE="$STANDIN/sandbox/pay")
start_atrium a "$A_PORT" "$SCALE_DB_URL" "${INSTANCE_ENV[@]}" ATRIUM_PUBLIC_URL="$A"
ADMIN_PASSWORD=$(grep -o "password: [^ ]*" "$OUT/scale-a.log" | head -1 | awk '{print $2}')
[ -n "$ADMIN_PASSWORD" ] || { echo "no first admin's password in $OUT/scale-a.log" >&2; exit 1; }
BASE=$A
TOKEN=$(login admin "$ADMIN_PASSWORD")
H="authorization: Bearer $TOKEN"
J='content-type: application/json'

# ---- TENANTS tenants, each paid into its own merchant account on the stand-in.
TIDS=()
for i in $(seq 1 "$TENANTS"); do
  MCHID=$(printf '19%08d' "$i")
  TID=$(curl -sf "$A/api/v1/tenants" -H "$H" -H "$J" -d "{\"name\":\"Scale shop $i\"}" | jq .data.id)
  curl -sf "$STANDIN/sandbox/control/merchant" -H "$J" -d "{\"mchid\":\"$MCHID\",\"appid\":\"wx_scale_mp\"}" > "$OUT/scale-merchant.json"
  curl -sf -X PUT "$A/api/v1/miniprogram/payment/config" -H "$H" -H "$J" \
    -d "{\"tenant_id\":$TID,\"mchid\":\"$MCHID\",\"appid\":\"wx_scale_mp\",\"api_v3_key\":$(jq .api_v3_key "$OUT/scale-merchant.json")}" >/dev/null
  curl -sf "$A/api/v1/miniprogram/payment/cert/upload" -H "$H" -F tenant_id="$TID" \
    -F private_key="$(jq -r .private_key_pem "$OUT/scale-merchant.json")" -F certificate="$(jq -r .certificate_pem "$OUT/scale-merchant.json")" \
    -F platform_public_key="$(jq -r .platform_public_key_pem "$OUT/scale-merchant.json")" \
    -F platform_public_key_id="$(jq -r .platform_public_key_id "$OUT/scale-merchant.json")" >/dev/null
  curl -sf -X PUT "$A/api/v1/miniprogram/payment/config" -H "$H" -H "$J" \
    -d "{\"tenant_id\":$TID,\"mchid\":\"$MCHID\",\"appid\":\"wx_scale_mp\",\"enabled\":true}" >/dev/null
  [ "$(curl -sf "$A/api/v1/miniprogram/payment/test" -H "$H" -H "$J" -d "{\"tenant_id\":$TID}" | jq .data.ok)" = true ] \
    || { echo "tenant $TID's payment configuration does not test ok against the stand-in" >&2; exit 1; }
  TIDS+=("$TID")
done
TENANT_LIST=$(IFS=,; echo "${TIDS[*]}")

# run_phase LABEL BASE...: the load against those instances, with the CPU each process used.
run_phase() {
  local label=$1; shift
  local bases=() b pids=() name
  for b in "$@"; do bases+=(--base "$b"); done
  for name in "${!PID[@]}"; do [ "$name" = standin ] || pids+=("${PID[$name]}"); done
  local inst0=0 inst1=0 sb0 sb1 pg0 pg1 m0 m1 p
  for p in "${pids[@]}"; do inst0=$(( inst0 + $(ticks "$p") )); done
  sb0=$(ticks "${PID[standin]}"); pg0=$(pg_ticks); m0=$(machine_ticks)
  local db0 db1; db0=$(pg_counters); table_writes > "$OUT/scale-$label.tables0"
  # The ledger events due and not yet run, every half second: the job queue's backlog.
  (
    while :; do
      psql -At "$SCALE_DB_URL" -c "SELECT count(*) FROM jobs WHERE status = 'pending' AND kind = 'ledger.order_changed'
                                   AND run_at <= now() AT TIME ZONE 'UTC'" 2>/dev/null || true
      sleep 0.5
    done
  ) > "$OUT/scale-$label.backlog" &
  local sampler=$!
  python3 "$SCALE/moneypath.py" "${bases[@]}" --standin "$STANDIN" --token "$TOKEN" --tenants "$TENANT_LIST" \
    --concurrency "$CONCURRENCY" --duration "$DURATION" --run "$label" --out "$OUT/scale-$label.json"
  kill $sampler 2>/dev/null || true; wait $sampler 2>/dev/null || true
  for p in "${pids[@]}"; do inst1=$(( inst1 + $(ticks "$p") )); done
  sb1=$(ticks "${PID[standin]}"); pg1=$(pg_ticks); m1=$(machine_ticks)
  # An idle backend reports its counters within 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL).
  sleep 11; db1=$(pg_counters); table_writes > "$OUT/scale-$label.tables1"
  # Rows written per flow, by table; "tenant" marks a table with a tenant_id column.
  awk -v ok="$(jq .flows_ok "$OUT/scale-$label.json")" 'FNR == 1 {f++} f == 1 {b[$1] = $2; next}
      {d = $2 - b[$1]; if (d > 0) printf "%-28s %8.2f %s\n", $1, d / (ok > 0 ? ok : 1), $3}' \
    "$OUT/scale-$label.tables0" "$OUT/scale-$label.tables1" | sort -k2,2nr > "$OUT/scale-$label.writes"
  psql -At -F' / ' "$SCALE_DB_URL" -c "SELECT count(*), (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'jobs')
                                        FROM jobs WHERE status = 'pending'" > "$OUT/scale-$label.jobs"
  local hz; hz=$(getconf CLK_TCK)
  read -r mb0 mt0 <<< "$m0"; read -r mb1 mt1 <<< "$m1"
  local c0 w0 x0 c1 w1 x1; read -r c0 w0 x0 <<< "$db0"; read -r c1 w1 x1 <<< "$db1"
  jq -n --argjson hz "$hz" --argjson commits $(( c1 - c0 )) --argjson wal $(( w1 - w0 )) --argjson writes $(( x1 - x0 )) --argjson atrium $(( inst1 - inst0 )) --argjson standin $(( sb1 - sb0 )) \
    --argjson pg $(( pg1 - pg0 )) --argjson driver "$(jq .driver_cpu_s "$OUT/scale-$label.json")" --argjson busy $(( mb1 - mb0 )) --argjson total $(( mt1 - mt0 )) \
    '{atrium: ($atrium / $hz), standin: ($standin / $hz), postgres: ($pg / $hz), driver: $driver,
      commits: $commits, write_transactions: $writes, wal_bytes: $wal,
      machine_busy_pct: (if $total > 0 then (1000 * $busy / $total | round) / 10 else null end)}' > "$OUT/scale-$label.cpu.json"
  printf '  CPU seconds: atrium %s, stand-in %s, postgres %s, load driver %s; machine busy %s %%\n' \
    $(jq -r '.atrium, .standin, .postgres, .driver, .machine_busy_pct' "$OUT/scale-$label.cpu.json")
  awk '{n++; s += $1; if ($1 > m) m = $1} END {printf "  ledger events due, not yet run: mean %.1f, max %d\n", (n ? s / n : 0), m}' \
    "$OUT/scale-$label.backlog"
}

echo "PostgreSQL: $PG_SETTINGS; $TENANTS tenants; $CONCURRENCY flows at a time for ${DURATION}s per phase;" \
  "atrium pinned to CPUs ${CPUS:-(none)} of $(nproc); ATRIUM_JOB_POLL_MS=${ATRIUM_JOB_POLL_MS:-1000}"
ONE=one-$STAMP TWO=two-$STAMP
# ---- One instance.
run_phase "$ONE" "$A"
# ---- Two instances: a again, with b, each one's notifications sent to the other.
stop_atrium a
start_atrium a "$A_PORT" "$SCALE_DB_URL" "${INSTANCE_ENV[@]}" ATRIUM_PUBLIC_URL="$B"
start_atrium b "$B_PORT" "$SCALE_DB_URL" "${INSTANCE_ENV[@]}" ATRIUM_PUBLIC_URL="$A"
TOKEN=$(login admin "$ADMIN_PASSWORD")
run_phase "$TWO" "$A" "$B"

# ---- What the database holds, and the table.
check() { psql -At -F' ' -v run="$1" -f "$SCALE/checks.sql" "$SCALE_DB_URL"; }
check "$ONE" > "$OUT/scale-$ONE.counts"
check "$TWO" > "$OUT/scale-$TWO.counts"
POOL=${ATRIUM_DB_POOL_SIZE:-16}
{
  printf '\n%-28s %14s %14s\n' "" "one instance" "two instances"
  row() { printf '%-28s %14s %14s\n' "$1" "$2" "$3"; }
  field() { jq -r "$2" "$OUT/scale-$1.json"; }
  count() { awk -v k="$2" '$1 == k {print $2}' "$OUT/scale-$1.counts"; }
  row "flows/s" "$(field "$ONE" .flows_per_s)" "$(field "$TWO" .flows_per_s)"
  for s in flow create pay platform_pay wait_paid refund platform_refund wait_refunded; do
    row "$s p50 / p99 ms" "$(field "$ONE" ".steps_ms.$s | \"\(.p50) / \(.p99)\"")" "$(field "$TWO" ".steps_ms.$s | \"\(.p50) / \(.p99)\"")"
  done
  row "CPU s atrium" "$(jq .atrium "$OUT/scale-$ONE.cpu.json")" "$(jq .atrium "$OUT/scale-$TWO.cpu.json")"
  row "CPU s postgres" "$(jq .postgres "$OUT/scale-$ONE.cpu.json")" "$(jq .postgres "$OUT/scale-$TWO.cpu.json")"
  row "CPU s stand-in" "$(jq .standin "$OUT/scale-$ONE.cpu.json")" "$(jq .standin "$OUT/scale-$TWO.cpu.json")"
  row "CPU s load driver" "$(jq .driver "$OUT/scale-$ONE.cpu.json")" "$(jq .driver "$OUT/scale-$TWO.cpu.json")"
  share() { jq -r --argjson e "$(field "$1" .elapsed_s)" --argjson n "$(nproc)" \
    '(1000 * (.atrium + .postgres + .standin + .driver) / ($e * $n) | round) / 10' "$OUT/scale-$1.cpu.json"; }
  row "bench's share of the CPUs %" "$(share "$ONE")" "$(share "$TWO")"
  row "machine busy %" "$(jq .machine_busy_pct "$OUT/scale-$ONE.cpu.json")" "$(jq .machine_busy_pct "$OUT/scale-$TWO.cpu.json")"
  row "status reads per flow" "$(field "$ONE" '(.status_reads / ([.flows_ok, 1] | max) * 10 | round) / 10')" \
    "$(field "$TWO" '(.status_reads / ([.flows_ok, 1] | max) * 10 | round) / 10')"
  backlog() { awk '{n++; s += $1; if ($1 > m) m = $1} END {printf "%.1f / %d", (n ? s / n : 0), m}' "$OUT/scale-$1.backlog"; }
  row "ledger backlog mean / max" "$(backlog "$ONE")" "$(backlog "$TWO")"
  per_flow() { jq -r --argjson ok "$(field "$1" .flows_ok)" "($2 / ([\$ok, 1] | max) * 10 | round) / 10" "$OUT/scale-$1.cpu.json"; }
  row "CPU ms per flow: atrium" "$(per_flow "$ONE" '.atrium * 1000')" "$(per_flow "$TWO" '.atrium * 1000')"
  row "CPU ms per flow: postgres" "$(per_flow "$ONE" '.postgres * 1000')" "$(per_flow "$TWO" '.postgres * 1000')"
  row "transactions per flow, all" "$(per_flow "$ONE" .commits)" "$(per_flow "$TWO" .commits)"
  row "  of which wrote (took an xid)" "$(per_flow "$ONE" .write_transactions)" "$(per_flow "$TWO" .write_transactions)"
  row "WAL kB per flow" "$(per_flow "$ONE" '.wal_bytes / 1024')" "$(per_flow "$TWO" '.wal_bytes / 1024')"
  row "jobs pending / dead rows" "$(cat "$OUT/scale-$ONE.jobs")" "$(cat "$OUT/scale-$TWO.jobs")"
  row "pool connections (of $MAX_CONN)" "$POOL" "$(( 2 * POOL ))"
  row "flows started" "$(field "$ONE" .flows_started)" "$(field "$TWO" .flows_started)"
  row "notifications retried" "$(field "$ONE" .notifications_retried)" "$(field "$TWO" .notifications_retried)"
  row "flows failed" "$(field "$ONE" .flows_failed)" "$(field "$TWO" .flows_failed)"
  for k in orders_created refunded duplicate_orders duplicate_transactions duplicate_refunds \
           paid_amount_mismatch refunded_amount_mismatch status_mismatch over_refunded failed_jobs; do
    row "$k" "$(count "$ONE" $k)" "$(count "$TWO" $k)"
  done
  printf '\nrows written per flow (two instances), by table; "tenant": the table has a tenant_id column\n'
  cat "$OUT/scale-$TWO.writes"
  awk '{all += $2; if ($3 == "tenant" && $1 != "jobs") t += $2; if ($1 == "jobs") j += $2}
       END {if (all == 0) exit; printf "%.1f rows per flow: %.0f %% on tenant tables, %.0f %% on jobs, %.0f %% elsewhere\n",
            all, 100 * t / all, 100 * j / all, 100 * (all - t - j) / all}' "$OUT/scale-$TWO.writes"
  awk -v one="$(field "$ONE" .flows_per_s)" -v two="$(field "$TWO" .flows_per_s)" \
    'BEGIN {printf "\ntwo instances / one: %.2f x the flows/s\n", (one > 0 ? two / one : 0)}'
} | tee "$OUT/scale-summary.txt"

# ---- Exit non-zero on any failed flow, any order missing or extra, any duplicate or mismatch.
bad=0
for label in "$ONE" "$TWO"; do
  started=$(jq .flows_started "$OUT/scale-$label.json"); failed=$(jq .flows_failed "$OUT/scale-$label.json")
  created=$(awk '$1 == "orders_created" {print $2}' "$OUT/scale-$label.counts")
  refunded=$(awk '$1 == "refunded" {print $2}' "$OUT/scale-$label.counts")
  [ "$failed" = 0 ] || { echo "$label: $failed flows failed (errors in $OUT/scale-$label.json)" >&2; bad=1; }
  [ "$created" = "$started" ] || { echo "$label: $created orders created for $started flows started" >&2; bad=1; }
  [ "$refunded" = "$started" ] || { echo "$label: $refunded of $started orders refunded" >&2; bad=1; }
  [ "$started" -gt 0 ] || { echo "$label: no flow started" >&2; bad=1; }
  while read -r k v; do
    case $k in orders_created | refunded) ;; *) [ "$v" = 0 ] || { echo "$label: $k = $v" >&2; bad=1; } ;; esac
  done < "$OUT/scale-$label.counts"
done
[ $bad = 0 ] && echo "no duplicates, no lost updates"
exit $bad
