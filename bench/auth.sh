#!/usr/bin/env bash
# Issue 2 bench: GET /api/v1/auth/me (authenticated) against GET /healthz (no auth) on the same
# release server in the same run, 32 connections; then /auth/me again while 5 password
# logins per second run beside it.
#   bench/auth.sh            (SQLite)      DB=postgres://… bench/auth.sh   (PostgreSQL)
source "$(dirname "$0")/lib.sh"
need_wrk
DURATION=${DURATION:-10s}
DB=${DB:-sqlite://$OUT/auth-bench.db}
rm -f "$OUT"/auth-bench.db* "$OUT/bench.secrets.json"
start_server "$DB" ATRIUM_BCRYPT_COST=${ATRIUM_BCRYPT_COST:-10}
trap stop_server EXIT
TOKEN=$(login admin "$ADMIN_PASSWORD")

echo "backend: ${DB%%:*}; wrk -t2 -c32 -d$DURATION"
wrk_run healthz "$BASE/healthz" -t2 -c32 -d"$DURATION" | tee "$OUT/auth-summary.txt"
wrk_run auth_me "$BASE/api/v1/auth/me" -t2 -c32 -d"$DURATION" -H "Authorization: Bearer $TOKEN" | tee -a "$OUT/auth-summary.txt"

# 5 password logins per second in the background while /auth/me is measured again.
(
  end=$(( $(date +%s) + ${DURATION%s} + 2 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    for _ in 1 2 3 4 5; do login admin "$ADMIN_PASSWORD" >/dev/null & done
    sleep 1
  done
  wait
) &
LOGINS=$!
sleep 1
wrk_run auth_me_with_logins "$BASE/api/v1/auth/me" -t2 -c32 -d"$DURATION" -H "Authorization: Bearer $TOKEN" | tee -a "$OUT/auth-summary.txt"
wait $LOGINS

awk '/^healthz/ {h=$2} /^auth_me / {m=$2} END {printf "ratio auth_me/healthz: %.1f %%\n", 100*m/h}' "$OUT/auth-summary.txt"
