#!/usr/bin/env bash
# Metrics labels stay bounded: rounds of 1,000 requests with made-up HTTP methods and 1,000
# requests to paths with no route, without a token, against one server; after each round, the
# number of series /metrics holds and the server's resident memory (VmRSS).
#   bench/labels.sh                 (release build, SQLite)
#   ROUNDS=10 bench/labels.sh       ATRIUM_BIN=target/debug/atrium bench/labels.sh
source "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-5}
DB=${DB:-sqlite://$OUT/labels-bench.db}
rm -f "$OUT"/labels-bench.db* "$OUT/bench.secrets.json"
start_server "$DB" ATRIUM_METRICS=on
trap stop_server EXIT

series() { curl -s "$BASE/metrics" | grep -cv '^#'; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }

# One round: 1,000 made-up methods to /healthz/live and 1,000 GETs of unknown paths, each
# method and path new (the round number is part of them), over one keep-alive connection.
round() {
  python3 - "$PORT" "$1" <<'PY'
import http.client, sys
port, r = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
for i in range(1000):
    for method, path in ((f"PTXYZ{r}X{i:04d}", "/healthz/live"), ("GET", f"/no/such/{r}/{i}")):
        c.request(method, path)
        resp = c.getresponse(); resp.read()
        if resp.status < 400 or resp.status >= 500:
            sys.exit(f"{method} {path}: unexpected {resp.status}")
PY
}

printf '%-8s %8s %10s\n' round series rss_kib
printf '%-8s %8s %10s\n' start "$(series)" "$(rss_kib)"
for r in $(seq 1 "$ROUNDS"); do
  round "$r"
  printf '%-8s %8s %10s\n' "$r" "$(series)" "$(rss_kib)"
done
