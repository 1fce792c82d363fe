#!/usr/bin/env bash
# Issue 26 bench: a release campaign over 1,000 tenants whose mini-programs are authorised on
# the sandbox (authorize-many), the sandbox's reviewers passing every audit by themselves, from
# start to every tenant released; the time it takes and the server's peak RSS (VmHWM).
#   bench/campaign.sh                          (SQLite)
#   DB=postgres://…/db bench/campaign.sh       (PostgreSQL, empty database)
#   TENANTS=200 PARALLELISM=16 TICK_MS=500 bench/campaign.sh
# The time should be set by ATRIUM_CAMPAIGN_PARALLELISM, the tick and the platform, not by
# Atrium: each tenant needs an upload job, a submission, the reviewers' answer and a release.
source "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { apt-get install -y -qq jq >/dev/null; }
TENANTS=${TENANTS:-1000}
PARALLELISM=${PARALLELISM:-8}
TICK_MS=${TICK_MS:-500}
DB=${DB:-sqlite://$OUT/campaign-bench.db}
rm -rf "$OUT"/campaign-bench.* "$OUT/bench.secrets.json"
build_release
atrium_cli "$DB" migrate >/dev/null
atrium_cli "$DB" seed --tenants "$TENANTS" --employees-per-tenant 0 >/dev/null
start_server "$DB" ATRIUM_PACKAGE_DIR="$OUT/campaign-bench.packages" ATRIUM_JOB_POLL_MS=50 \
  ATRIUM_CAMPAIGN_PARALLELISM="$PARALLELISM" ATRIUM_CAMPAIGN_TICK_MS="$TICK_MS"
trap stop_server EXIT
ADMIN=$(login admin "$ADMIN_PASSWORD")
H=(-H "authorization: Bearer $ADMIN" -H 'content-type: application/json')

# The seeded tenants' ids, a page at a time.
IDS=$(for page in $(seq 1 $(( (TENANTS + 99) / 100 ))); do
  curl -sf "$BASE/api/v1/tenants?page=$page&page_size=100" "${H[@]}" | jq -c '.data.items[].id'
done | jq -s -c .)
FIRST=$(echo "$IDS" | jq '.[0]')
# The sandbox pushes its first verify ticket once the server answers; then a link exists.
for _ in $(seq 1 100); do
  url=$(curl -sf "$BASE/api/v1/miniprogram/authorization?tenant_id=$FIRST" "${H[@]}" | jq -r .data.authorize_url)
  [ "$url" != null ] && break; sleep 0.1
done
started=$(date +%s.%N)
authorized=$(curl -sf "$BASE/sandbox/control/authorize-many" -H 'content-type: application/json' -d "{\"tenant_ids\":$IDS}" | jq '.authorized | length')
authorize_secs=$(awk "BEGIN {print $(date +%s.%N) - $started}")
curl -sf "$BASE/sandbox/control/quota" -H 'content-type: application/json' -d "{\"rest\":$(( TENANTS * 2 )),\"limit\":$(( TENANTS * 2 ))}" >/dev/null
curl -sf "$BASE/sandbox/control/audit-policy" -H 'content-type: application/json' -d '{"result":"passed","after_ms":200}' >/dev/null

C=$(curl -sf "$BASE/api/v1/miniprogram/campaigns" "${H[@]}" -d '{
  "name":"Bench","template_id":1,"version":"9.0.0","description":"Bench",
  "ext_json":{"extEnable":true,"extAppid":"{authorizer_appid}"},
  "tenants":{"all":true},"waves":[{"percent":100,"release":"full"}],
  "domains":{"requestdomain":["https://api.example.com"]},
  "privacy":{"owner_setting":{"contact_email":"p@example.com","notice_method":"In the app"},
             "setting_list":[{"privacy_key":"PhoneNumber","privacy_text":"to confirm orders"}]}}' | jq .data.id)
started=$(date +%s.%N)
curl -sf -X POST "$BASE/api/v1/miniprogram/campaigns/$C/start" "${H[@]}" >/dev/null
status=
for _ in $(seq 1 7200); do
  status=$(curl -sf "$BASE/api/v1/miniprogram/campaigns/$C" "${H[@]}" | jq -c '.data | {status, counts}')
  case $status in *'"completed"'*|*'"paused"'*|*'"cancelled"'*) break;; esac
  sleep 0.5
done
campaign_secs=$(awk "BEGIN {print $(date +%s.%N) - $started}")
peak_kib=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status")
{
  echo "backend: ${DB%%:*}; $TENANTS tenants ($authorized authorised in $(printf '%.1f' "$authorize_secs") s); parallelism $PARALLELISM; tick $TICK_MS ms"
  echo "campaign: $status"
  printf 'start to all released: %.1f s (%.1f tenants/s); peak RSS %d MiB\n' "$campaign_secs" "$(awk "BEGIN {print $TENANTS / $campaign_secs}")" $(( peak_kib / 1024 ))
} | tee "$OUT/campaign-summary.txt"
