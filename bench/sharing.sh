#!/usr/bin/env bash
# Issue 38 bench: the sharing job of one instance against the sandbox pay platform, in a
# process of its own as the real platform would be. PAYMENTS sub-merchant payments are paid
# with the job runners off; then the instance starts with them on, and the time until every
# share succeeded gives shares per second (two a payment: the platform's and the partner's,
# each payment's receivers added, its share requested, queried and the rest unfrozen).
#   bench/sharing.sh            (SQLite)      DB=postgres://…/db bench/sharing.sh   (PostgreSQL, empty db)
# Target: ≥ 250 shares/s (the platform takes 300 share requests a second per provider).
source "$(dirname "$0")/lib.sh"
need_wrk
PAYMENTS=${PAYMENTS:-2000}
RUNNERS=${RUNNERS:-8}
DB=${DB:-sqlite://$OUT/sharing-bench.db}
rm -f "$OUT"/sharing-bench.db* "$OUT/bench.secrets.json" "$OUT"/sharing-standin.db* "$OUT/sharing-standin.secrets.json"
build_release
STANDIN_PORT=$(( 30000 + RANDOM % 20000 ))
STANDIN="http://127.0.0.1:$STANDIN_PORT"
DATABASE_URL="sqlite://$OUT/sharing-standin.db" ATRIUM_BIND="127.0.0.1:$STANDIN_PORT" ATRIUM_PLATFORM=sandbox ATRIUM_JOBS=false \
  ATRIUM_LOG=warn ATRIUM_SECRETS_FILE="$OUT/sharing-standin.secrets.json" ATRIUM_CLIENT_REQUEST_TIMEOUT_MS=600000 \
  "$ATRIUM_BIN" > "$OUT/standin.log" 2>&1 &
STANDIN_PID=$!
for _ in $(seq 1 100); do curl -sf "$STANDIN/healthz" >/dev/null && break; sleep 0.1; done
PORT=$(( 30000 + RANDOM % 20000 ))
SERVER_VARS=(ATRIUM_PLATFORM=wechat ATRIUM_WECHAT_PAY_BASE="$STANDIN/sandbox/pay" ATRIUM_PUBLIC_URL="http://127.0.0.1:$PORT"
  ATRIUM_SHARING_DELAY_SECS=0 ATRIUM_SHARING_RUNNERS="$RUNNERS")
start_server "$DB" "${SERVER_VARS[@]}" ATRIUM_JOBS=false
trap 'stop_server; kill "$STANDIN_PID" 2>/dev/null || true' EXIT
ADMIN=$(login admin "$ADMIN_PASSWORD")
H="authorization: Bearer $ADMIN"
J='content-type: application/json'

# The platform's provider account, a partner on a plan, its tenant a sub-merchant.
curl -sf "$STANDIN/sandbox/control/profitsharing/rules" -H "$J" -d '{"one_minute":false,"notify":false}' >/dev/null
curl -sf "$STANDIN/sandbox/control/merchant" -H "$J" -d '{"mchid":"1900000100","appid":"wx_bench_sp"}' > "$OUT/provider.json"
curl -sf -X PUT "$BASE/api/v1/platform/pay-provider" -H "$H" -H "$J" \
  -d "{\"sp_mchid\":\"1900000100\",\"sp_appid\":\"wx_bench_sp\",\"sp_name\":\"Bench Platform Ltd\",\"platform_bp\":100,\"api_v3_key\":$(jq .api_v3_key "$OUT/provider.json")}" >/dev/null
curl -sf "$BASE/api/v1/platform/pay-provider/cert/upload" -H "$H" \
  -F private_key="$(jq -r .private_key_pem "$OUT/provider.json")" -F certificate="$(jq -r .certificate_pem "$OUT/provider.json")" \
  -F platform_public_key="$(jq -r .platform_public_key_pem "$OUT/provider.json")" \
  -F platform_public_key_id="$(jq -r .platform_public_key_id "$OUT/provider.json")" >/dev/null
curl -sf -X PUT "$BASE/api/v1/platform/pay-provider" -H "$H" -H "$J" -d '{"sp_mchid":"1900000100","sp_appid":"wx_bench_sp","enabled":true}' >/dev/null
PID=$(curl -sf "$BASE/api/v1/partners" -H "$H" -H "$J" -d '{"name":"Bench partner"}' | jq .data.id)
curl -sf -X PUT "$BASE/api/v1/partners/$PID/share-plan" -H "$H" -H "$J" \
  -d '{"commission_bp":250,"receiver":{"type":"MERCHANT_ID","account":"1900000301","name":"Bench Agency Ltd"}}' >/dev/null
TID=$(curl -sf "$BASE/api/v1/tenants" -H "$H" -H "$J" -d "{\"name\":\"Bench shop\",\"partner_id\":$PID}" | jq .data.id)
curl -sf "$STANDIN/sandbox/control/sub-merchant" -H "$J" -d '{"sp_mchid":"1900000100","sub_mchid":"1900000201"}' >/dev/null
curl -sf -X PUT "$BASE/api/v1/miniprogram/payment/config" -H "$H" -H "$J" \
  -d "{\"tenant_id\":$TID,\"mode\":\"sub_merchant\",\"sub_mchid\":\"1900000201\",\"enabled\":true}" >/dev/null

# PAYMENTS payments of 10,001 fen, placed and paid (the platform notifies each at once).
echo "paying $PAYMENTS sub-merchant payments…"
pay_one() {
  curl -sS -f "$BASE/api/v1/miniprogram/payment/unified-order" -H "$H" -H "$J" \
    -d "{\"tenant_id\":$TID,\"description\":\"Bench\",\"amount\":10001,\"openid\":\"o_bench\",\"out_trade_no\":\"T_SHARE_$1\"}" >/dev/null
  curl -sf "$STANDIN/sandbox/control/pay" -H "$J" -d "{\"out_trade_no\":\"T_SHARE_$1\",\"result\":\"SUCCESS\"}" \
    | jq -e '.notification.attempts[0].status == 204' >/dev/null || { echo "payment $1 not notified" >&2; return 1; }
}
export -f pay_one
export BASE STANDIN H J TID
seq -w 1 "$PAYMENTS" | xargs -P 8 -I{} bash -c "pay_one {}" || { echo "paying failed" >&2; tail -5 "$OUT/server.log" >&2; exit 1; }
stop_server

# Every share succeeded: the 2×PAYMENTS-th succeeded share exists.
SHARES=$(( 2 * PAYMENTS ))
shared() {
  curl -sf "$BASE/api/v1/miniprogram/payment/shares?status=succeeded&page=$SHARES&page_size=1" -H "$H" | jq -e '.data.items | length == 1' >/dev/null
}
# Started again with its job runners (start_server would look for a first start's password).
env DATABASE_URL="$DB" ATRIUM_BIND="127.0.0.1:$PORT" ATRIUM_LOG=warn ATRIUM_SECRETS_FILE="$OUT/bench.secrets.json" "${SERVER_VARS[@]}" \
  "$ATRIUM_BIN" > "$OUT/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.1; done
started=$(date +%s.%N)
server_before=$(cpu_ticks "$SERVER_PID") standin_before=$(cpu_ticks "$STANDIN_PID")
until shared; do
  sleep 0.2
  awk -v s="$started" -v n="$(date +%s.%N)" 'BEGIN { exit !(n - s > 600) }' && { echo "not every share succeeded within 600 s" >&2; exit 1; }
done
finished=$(date +%s.%N)
server_ticks=$(( $(cpu_ticks "$SERVER_PID") - server_before )) standin_ticks=$(( $(cpu_ticks "$STANDIN_PID") - standin_before ))
# The platform's record of one payment, and the books' count of what is not settled.
curl -sf "$STANDIN/sandbox/control/profitsharing?sub_mchid=1900000201&out_trade_no=T_SHARE_$(seq -w 1 "$PAYMENTS" | tail -1)" \
  | jq -c '{shared, unfrozen: .unfrozen.amount, requests: [.orders[].kind]}'
left=$(curl -sf "$BASE/api/v1/miniprogram/payment/shares?status=processing&page_size=1" -H "$H" | jq .data.total)
{
  echo "backend: ${DB%%:*}; $PAYMENTS payments of 10,001 fen, $SHARES shares, $RUNNERS sharing runners; $left still processing"
  awk -v s="$started" -v f="$finished" -v n="$SHARES" 'BEGIN { printf "sharing                      %10.0f shares/s (%d in %.1f s)\n", n / (f - s), n, f - s }'
  awk -v s="$server_ticks" -v t="$standin_ticks" -v n="$SHARES" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    printf "sharing_cpu_server           %10.2f ms of CPU per share\n", 1000 * s / hz / n
    printf "sharing_cpu_standin          %10.2f ms of CPU per share\n", 1000 * t / hz / n }'
} | tee "$OUT/sharing-summary.txt"
