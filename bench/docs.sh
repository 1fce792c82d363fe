#!/usr/bin/env bash
# Issue 4 bench: create DOCS (default 10,000) documents in one project through
# POST /api/docs/ on the release server, loopback only, and report documents per second.
# The project and token come from the CLI, as an operator would make them. Every document
# is a child of one root, so each request also checks its parent.
#   bench/docs.sh                          (SQLite, wrk -t2 -c16)
#   DOCS=20000 CONNS=32 bench/docs.sh      DB=postgres://… bench/docs.sh
# Uses $CARGO_TARGET_DIR when set. Needs curl, jq and wrk (Debian packages; installed if
# missing and running as root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/bench/out}
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/atrium
DOCS=${DOCS:-10000}
THREADS=${THREADS:-2}
CONNS=${CONNS:-16}
DB=${DB:-sqlite://$OUT/docs-bench.db}
mkdir -p "$OUT"

for tool in wrk jq curl; do
  command -v "$tool" >/dev/null || { echo "installing $tool"; apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null; }
done

rm -f "$OUT"/docs-bench.db* "$OUT/docs-bench.secrets.json"
(cd "$ROOT" && cargo build --release -q -p atrium-server)
export DATABASE_URL=$DB ATRIUM_SECRETS_FILE=$OUT/docs-bench.secrets.json ATRIUM_LOG=warn ATRIUM_BOOTSTRAP_ADMIN=false

"$BIN" migrate >/dev/null
PROJECT=$("$BIN" docs project create --name "bench" | tail -n 1)
TOKEN=$("$BIN" docs token create --name "bench" --project "$PROJECT" | tail -n 1)

PORT=${PORT:-$(( 30000 + RANDOM % 20000 ))}
BASE="http://127.0.0.1:$PORT"
ATRIUM_BIND="127.0.0.1:$PORT" "$BIN" serve > "$OUT/docs-server.log" 2>&1 &
SERVER_PID=$!
WRK_PID=
cleanup() {
  [ -n "$WRK_PID" ] && kill "$WRK_PID" 2>/dev/null || true
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.1; done

post() { curl -sf "$BASE/api/docs/" -H "Authorization: Token $TOKEN" -H 'Content-Type: application/json' -d "$1"; }
ROOT_DOC=$(post "{\"project\":$PROJECT,\"name\":\"Root\",\"content\":\"# Root\"}" | jq -r .data.id)

# Each wrk thread stops after its share; wrk itself waits out -d, so we stop it (SIGINT makes
# it print its summary) as soon as the DOCS-th document exists. Ids are sequential on a fresh
# database, so that document's id is known in advance.
cat > "$OUT/docs-create.lua" <<'LUA'
local next_id = 0
function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
end
function init(args)
  project = os.getenv("BENCH_PROJECT")
  parent = os.getenv("BENCH_PARENT")
  share = tonumber(os.getenv("BENCH_SHARE"))
  headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Token " .. os.getenv("BENCH_TOKEN") }
  sent, done = 0, 0
end
function request()
  sent = sent + 1
  local body = string.format(
    '{"project":%s,"name":"Document %d-%d","parent":%s,"sort":%d,"content":"# Document %d\\n\\nSome *Markdown* text for the bench."}',
    project, tid, sent, parent, sent, sent)
  return wrk.format("POST", nil, headers, body)
end
function response(status, hdrs, body)
  done = done + 1
  if done >= share then wrk.thread:stop() end
end
LUA
LAST_ID=$(( ROOT_DOC + DOCS ))
start=$(date +%s.%N)
BENCH_PROJECT=$PROJECT BENCH_PARENT=$ROOT_DOC BENCH_TOKEN=$TOKEN BENCH_SHARE=$(( (DOCS + THREADS - 1) / THREADS )) \
  wrk -t"$THREADS" -c"$CONNS" -d600s --latency -s "$OUT/docs-create.lua" "$BASE/api/docs/" > "$OUT/docs.wrk" 2>&1 &
WRK_PID=$!
until curl -sf "$BASE/api/docs/$LAST_ID" -H "Authorization: Token $TOKEN" >/dev/null; do
  kill -0 "$WRK_PID" 2>/dev/null || { echo "wrk ended early:"; cat "$OUT/docs.wrk"; exit 1; }
  sleep 0.05
done
end=$(date +%s.%N)
kill -INT "$WRK_PID"; wait "$WRK_PID" || true; WRK_PID=

first=$(curl -sf "$BASE/api/docs/$(( ROOT_DOC + 1 ))" -H "Authorization: Token $TOKEN" | jq -r .data.created_at)
last=$(curl -sf "$BASE/api/docs/$LAST_ID" -H "Authorization: Token $TOKEN" | jq -r .data.created_at)
total=$(curl -sf "$BASE/api/docs/?project=$PROJECT" -H "Authorization: Token $TOKEN" | jq -r .data.total)
non2xx=$(awk '/Non-2xx/ {print $4}' "$OUT/docs.wrk")
p99=$(awk '$1=="99%" {print $2}' "$OUT/docs.wrk")
span=$(awk -v a="$(date -d "$first" +%s.%N)" -v b="$(date -d "$last" +%s.%N)" 'BEGIN {print b - a}')
wall=$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')

{
  echo "backend: ${DB%%:*}; wrk -t$THREADS -c$CONNS; $DOCS documents under one parent in project $PROJECT"
  awk -v n="$DOCS" -v t="$wall" 'BEGIN {printf "wall clock: %d documents in %.2f s = %.0f documents/s\n", n, t, n / t}'
  awk -v n="$DOCS" -v t="$span" 'BEGIN {printf "server side (created_at of document 1 to %d): %.2f s = %.0f documents/s\n", n, t, (n - 1) / t}'
  echo "p99 latency: $p99; non-2xx responses: ${non2xx:-0}; documents in the project afterwards: $total (wrk's last in-flight requests may add a few)"
} | tee "$OUT/docs-summary.txt"
