# Shared helpers for bench scripts: build and start the release server on loopback.
# Source it; it defines start_server, stop_server, login and need_wrk.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/bench/out}
mkdir -p "$OUT"

need_wrk() {
  command -v wrk >/dev/null || { echo "installing wrk (Debian package)"; apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
  command -v jq >/dev/null || { apt-get install -y -qq jq >/dev/null; }
}

# The release binary, where cargo puts it (CARGO_TARGET_DIR moves the target directory), or
# ATRIUM_BIN as given: that binary is run as it is, not built (to compare two builds).
if [ -n "${ATRIUM_BIN:-}" ]; then
  build_release() { [ -x "$ATRIUM_BIN" ] || { echo "ATRIUM_BIN $ATRIUM_BIN is not an executable" >&2; exit 1; }; }
else
  ATRIUM_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/atrium"
  build_release() { (cd "$ROOT" && cargo build --release -q -p atrium-server); }
fi

# atrium_cli DB_URL ARGS...: runs the release binary's CLI against a database.
atrium_cli() {
  local url=$1; shift
  DATABASE_URL="$url" ATRIUM_LOG=warn ATRIUM_SECRETS_FILE="$OUT/bench.secrets.json" "$ATRIUM_BIN" "$@"
}

# start_server DB_URL [extra env...]: starts the release binary on a free loopback port.
start_server() {
  local url=$1; shift
  build_release
  PORT=${PORT:-$(( 30000 + RANDOM % 20000 ))}
  BASE="http://127.0.0.1:$PORT"
  env DATABASE_URL="$url" ATRIUM_BIND="127.0.0.1:$PORT" ATRIUM_LOG=warn ATRIUM_SECRETS_FILE="$OUT/bench.secrets.json" "$@" \
    "$ATRIUM_BIN" > "$OUT/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.1; done
  ADMIN_PASSWORD=$(grep -o "password: [^ ]*" "$OUT/server.log" | head -1 | awk '{print $2}')
}

stop_server() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }

# login USER PASSWORD → prints the access token
login() {
  curl -sf "$BASE/api/v1/auth/login" -H 'content-type: application/json' \
    -d "{\"method\":\"password\",\"username\":\"$1\",\"password\":\"$2\"}" | jq -r .data.access_token
}

# wrk_run NAME URL [wrk args...] → prints "NAME rps p99_ms"
wrk_run() {
  local name=$1 url=$2; shift 2
  wrk --latency "$@" "$url" > "$OUT/$name.wrk" 2>&1
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' "$OUT/$name.wrk")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}' "$OUT/$name.wrk")
  local non2xx
  non2xx=$(awk '/Non-2xx/ {print $4}' "$OUT/$name.wrk")
  printf '%-28s %10s req/s   p99 %8s ms   non-2xx %s\n' "$name" "$rps" "$p99" "${non2xx:-0}"
}

# PERF=1: perf_start NAME ... perf_stop samples the server (perf record, DWARF call graphs)
# between the two (the figures of a profiled run are not for comparing: perf costs the
# server time), and writes $OUT/NAME.perf.txt: the functions with the most samples of
# their own, then with their callees (`perf report --children`). Nothing happens without PERF.
perf_start() {
  [ -n "${PERF:-}" ] || return 0
  command -v perf >/dev/null || { echo "installing perf (Debian package linux-perf)"; apt-get install -y -qq linux-perf >/dev/null; }
  PERF_NAME=$1
  rm -f "$OUT/$PERF_NAME.perf.data"
  perf record -q -F "${PERF_FREQ:-999}" --call-graph dwarf,32768 -p "$SERVER_PID" -o "$OUT/$PERF_NAME.perf.data" 2>/dev/null &
  PERF_PID=$!
  # The measured requests start once perf has attached: it has written its file's header.
  for _ in $(seq 1 50); do [ -s "$OUT/$PERF_NAME.perf.data" ] && break; sleep 0.1; done
}

perf_stop() {
  [ -n "${PERF:-}" ] || return 0
  kill -INT "$PERF_PID"; wait "$PERF_PID" 2>/dev/null || true
  local data="$OUT/$PERF_NAME.perf.data"
  {
    echo "== self (perf report --no-children)"
    perf report -i "$data" --no-children --stdio --percent-limit 1.5 -g none 2>/dev/null | grep -v -e '^#' -e '^$' || true
    echo "== with callees, our own functions (perf report --children)"
    perf report -i "$data" --children --stdio --percent-limit 2 -g none 2>/dev/null | grep -v -e '^#' -e '^$' -e 'inlined)' | grep 'atrium_' || true
  } > "$OUT/$PERF_NAME.perf.txt"
  echo "perf: $OUT/$PERF_NAME.perf.txt" >&2
}

# cpu_ticks PID → the CPU time the process has used so far (every thread, user + system), in
# clock ticks (getconf CLK_TCK a second), from /proc/PID/stat.
cpu_ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
