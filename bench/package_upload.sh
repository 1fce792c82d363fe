#!/usr/bin/env bash
# Issue 14 bench: a 19 MiB mini-program package through POST /api/v1/miniprogram/upload and its
# upload job (to the sandbox's upload endpoint, in the same process), with the server's peak
# RSS (VmHWM) read before and after. Target: the peak grows by less than the package's size
# (packages are streamed to disk, never held whole in memory).
#   bench/package_upload.sh            SIZE_MIB=19 by default
source "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { apt-get install -y -qq jq >/dev/null; }
SIZE_MIB=${SIZE_MIB:-19}
DB=sqlite://$OUT/package-bench.db
rm -rf "$OUT"/package-bench.* "$OUT/bench.secrets.json" "$OUT/pkg"
mkdir -p "$OUT/pkg"
build_release
start_server "$DB" ATRIUM_PACKAGE_DIR="$OUT/package-bench.packages" ATRIUM_JOB_POLL_MS=100
trap stop_server EXIT
ADMIN=$(login admin "$ADMIN_PASSWORD")
H=(-H "authorization: Bearer $ADMIN")
TENANT=$(curl -sf "$BASE/api/v1/tenants" "${H[@]}" -H 'content-type: application/json' -d '{"name":"Bench shop"}' | jq .data.id)

# The sandbox pushes its first verify ticket once the server answers; then a link exists.
for _ in $(seq 1 50); do
  url=$(curl -sf "$BASE/api/v1/miniprogram/authorization?tenant_id=$TENANT" "${H[@]}" | jq -r .data.authorize_url)
  [ "$url" != null ] && break; sleep 0.2
done
curl -sf "$BASE/sandbox/control/authorize" -H 'content-type: application/json' \
  -d "{\"tenant_id\":$TENANT,\"authorizer_appid\":\"wxbench000000001\"}" >/dev/null

# A package of incompressible bytes (stored), so the zip is SIZE_MIB on the wire and on disk.
make_zip() {
  python3 - "$1" "$2" <<'EOF'
import os, sys, zipfile
path, size = sys.argv[1], int(sys.argv[2])
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
    z.writestr("project.config.json", '{"appid": "wxbench000000001", "compileType": "miniprogram"}')
    z.writestr("app.json", '{"pages": ["pages/index/index"]}')
    z.writestr("pages/index/index.js", "Page({})")
    z.writestr("static/blob.bin", os.urandom(max(size - 4096, 0)))
EOF
}
make_zip "$OUT/pkg/small.zip" 65536
make_zip "$OUT/pkg/big.zip" $(( SIZE_MIB * 1024 * 1024 - 1024 ))
BYTES=$(stat -c %s "$OUT/pkg/big.zip")

upload() { # FILE VERSION → task id
  curl -sf "$BASE/api/v1/miniprogram/upload" "${H[@]}" -F tenant_id="$TENANT" -F version="$2" -F description=bench \
    -F package=@"$1" | jq .data.id
}
wait_uploaded() {
  for _ in $(seq 1 300); do
    s=$(curl -sf "$BASE/api/v1/miniprogram/upload-tasks/$1" "${H[@]}" | jq -r .data.status)
    case $s in uploaded) return 0 ;; failed) echo "upload task $1 failed" >&2; exit 1 ;; esac
    sleep 0.1
  done
  echo "upload task $1 did not finish" >&2; exit 1
}
kib() { awk -v k="$1" '$1==k":" {print $2}' "/proc/$SERVER_PID/status"; }

# Warm up every path once (allocator pools, TLS-free HTTP clients, the job runner).
wait_uploaded "$(upload "$OUT/pkg/small.zip" 0.0.1)"
HWM_BEFORE=$(kib VmHWM); RSS_BEFORE=$(kib VmRSS)
START=$(date +%s.%N)
TASK=$(upload "$OUT/pkg/big.zip" 1.0.0)
ACCEPTED=$(date +%s.%N)
wait_uploaded "$TASK"
DONE=$(date +%s.%N)
HWM_AFTER=$(kib VmHWM); RSS_AFTER=$(kib VmRSS)
GROWTH=$(( HWM_AFTER - HWM_BEFORE ))
{
  printf 'package            %d bytes (%.1f MiB)\n' "$BYTES" "$(echo "$BYTES / 1048576" | bc -l)"
  printf 'request accepted   %.2f s; uploaded by the job %.2f s later\n' "$(echo "$ACCEPTED - $START" | bc -l)" "$(echo "$DONE - $ACCEPTED" | bc -l)"
  printf 'peak RSS (VmHWM)   %d KiB before, %d KiB after: grew %d KiB (%.1f %% of the package)\n' \
    "$HWM_BEFORE" "$HWM_AFTER" "$GROWTH" "$(echo "100 * $GROWTH * 1024 / $BYTES" | bc -l)"
  printf 'RSS now            %d KiB (was %d KiB)\n' "$RSS_AFTER" "$RSS_BEFORE"
} | tee "$OUT/package-upload-summary.txt"
[ $(( GROWTH * 1024 )) -lt "$BYTES" ] || { echo "FAIL: the peak grew by more than the package's size" >&2; exit 1; }
