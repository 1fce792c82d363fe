#!/usr/bin/env bash
# Generates clients from the OpenAPI document the server serves (/api/v1/openapi.json) with
# tools people use, at pinned versions, and checks that they work:
#
#   Python      openapi-python-client (scripts/clients/requirements.txt, configured by
#               scripts/clients/python-client.yaml). Any generator warning fails, except the
#               two event URLs under /api/v1/miniprogram/component/, whose <xml> bodies it does
#               not support (scripts/clients/generator_output.py). The generated package is
#               installed and scripts/clients/order.py logs in, creates a tenant and an order
#               with it against the running server.
#   TypeScript  openapi-typescript and typescript (scripts/clients/ts/package.json and its
#               lock): generates api.d.ts, which must come out without warnings, and compiles
#               scripts/clients/ts/check.ts against it with `tsc --noEmit --strict`.
#
#   scripts/clients.sh
#
# Knobs (environment):
#   ATRIUM_BIN=<path>          the server binary (default: target/debug/atrium, as the tests build it)
#   CLIENTS_CACHE_DIR=<dir>    the virtualenv, node_modules and generated clients, kept between
#                              runs (default: target/clients); rebuilt when the pins change
#   CLIENTS_PYTHON=python3     the Python the virtualenv is made with
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
started=$(date +%s)
say() { printf '\n== %s\n' "$*"; }

target=${CARGO_TARGET_DIR:-$root/target}
ATRIUM_BIN=${ATRIUM_BIN:-$target/debug/atrium}
[ -x "$ATRIUM_BIN" ] || { echo "no server binary at $ATRIUM_BIN (cargo build -p atrium-server)" >&2; exit 2; }
ATRIUM_BIN="$(cd "$(dirname "$ATRIUM_BIN")" && pwd)/$(basename "$ATRIUM_BIN")"
cache=${CLIENTS_CACHE_DIR:-$target/clients}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
python=${CLIENTS_PYTHON:-python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/atrium-clients.XXXXXX")
server_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local rc=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the server: fresh SQLite database, bootstrap administrator --------------------------
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
export DATABASE_URL=sqlite://$tmp/atrium.db ATRIUM_SECRETS_FILE=$tmp/atrium.secrets.json
export ATRIUM_PROFILE=dev ATRIUM_PLATFORM=sandbox ATRIUM_BIND=127.0.0.1:$port ATRIUM_PUBLIC_URL=$base
export ATRIUM_BOOTSTRAP_ADMIN=1 ATRIUM_BCRYPT_COST=4 ATRIUM_WORKERS=2 ATRIUM_LOG=${ATRIUM_LOG:-info}

say "server on $base"
(cd "$tmp" && exec "$ATRIUM_BIN" serve) >"$tmp/server.log" 2>&1 &
server_pid=$!
# Ready when /healthz answers and the first start has printed the administrator's password.
admin_password=
for i in $(seq 100); do
  if curl -fsS "$base/healthz" >/dev/null 2>&1; then
    admin_password=$(sed -n "s/.*created platform administrator 'admin' with password: \([^ ]*\).*/\1/p" "$tmp/server.log")
    [ -n "$admin_password" ] && break
  fi
  kill -0 "$server_pid" 2>/dev/null || { echo "the server exited:" >&2; tail -n 30 "$tmp/server.log" >&2; exit 2; }
  [ "$i" = 100 ] && { echo "no answer from $base/healthz, or no administrator password printed, after 20 s" >&2; tail -n 30 "$tmp/server.log" >&2; exit 2; }
  sleep 0.2
done
doc=$tmp/openapi.json
curl -fsS "$base/api/v1/openapi.json" -o "$doc"
echo "healthy; the document is $(wc -c <"$doc") bytes"

# ---- Python: openapi-python-client ---------------------------------------------------
python_client() {
  local req=scripts/clients/requirements.txt venv=$cache/venv hash gen=$cache/python/atrium-client
  hash=$({ cat "$req"; "$python" --version; } | sha256sum | cut -c1-16)
  if [ "$(cat "$venv/.complete" 2>/dev/null)" != "$hash" ]; then
    echo "virtualenv $venv (from $req)"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"
    echo "$hash" >"$venv/.complete"
  fi
  local version
  version=$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("openapi-python-client"))')
  echo "openapi-python-client $version → $gen"
  mkdir -p "$(dirname "$gen")"
  if ! "$venv/bin/openapi-python-client" generate --path "$doc" --output-path "$gen" --overwrite \
      --config scripts/clients/python-client.yaml >"$tmp/python-generator.log" 2>&1; then
    cat "$tmp/python-generator.log" >&2
    echo "FAIL: openapi-python-client could not generate the client" >&2
    return 1
  fi
  local warnings
  if ! warnings=$("$venv/bin/python" scripts/clients/generator_output.py "$tmp/python-generator.log"); then
    echo "FAIL: openapi-python-client warned: $warnings" >&2
    return 1
  fi
  echo "$warnings"
  # Reinstalled every run (the version stays that of the document), dependencies checked.
  "$venv/bin/pip" uninstall --quiet --disable-pip-version-check --yes atrium-client 2>/dev/null || true
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input --no-build-isolation "$gen"
  local order
  order=$(ATRIUM_URL=$base ATRIUM_ADMIN_PASSWORD=$admin_password "$venv/bin/python" scripts/clients/order.py)
  echo "$order"
  echo "python: openapi-python-client $version: $warnings; $order" >>"$tmp/summary"
}

# ---- TypeScript: openapi-typescript, tsc --strict -------------------------------------
typescript_client() {
  local pins=scripts/clients/ts ts=$cache/ts hash
  hash=$({ cat "$pins/package.json" "$pins/package-lock.json"; node --version; } | sha256sum | cut -c1-16)
  if [ "$(cat "$ts/node_modules/.complete" 2>/dev/null)" != "$hash" ]; then
    echo "node_modules in $ts (from $pins/package-lock.json)"
    mkdir -p "$ts"
    cp "$pins/package.json" "$pins/package-lock.json" "$ts/"
    (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$hash" >"$ts/node_modules/.complete"
  fi
  cp "$pins/check.ts" "$ts/check.ts"
  rm -f "$ts/api.d.ts"
  local versions
  versions="openapi-typescript $(cd "$ts" && node -p 'require("openapi-typescript/package.json").version'),"
  versions+=" typescript $(cd "$ts" && node -p 'require("typescript/package.json").version')"
  echo "$versions"
  if ! (cd "$ts" && NO_COLOR=1 FORCE_COLOR=0 npx --no -- openapi-typescript "$doc" -o api.d.ts) >"$tmp/ts-generator.log" 2>&1; then
    cat "$tmp/ts-generator.log" >&2
    echo "FAIL: openapi-typescript could not generate the types" >&2
    return 1
  fi
  # It prints its name and the file it wrote; anything else is a warning.
  local unexpected
  unexpected=$(sed 's/\x1b\[[0-9;]*m//g' "$tmp/ts-generator.log" \
    | grep -v -E '^(✨ openapi-typescript [0-9.]+|🚀 .* → api\.d\.ts \[[0-9.]+m?s\]|\s*)$' || true)
  if [ -n "$unexpected" ]; then
    printf 'unexpected openapi-typescript output:\n%s\n' "$unexpected" >&2
    echo "FAIL: openapi-typescript warned" >&2
    return 1
  fi
  if ! (cd "$ts" && npx --no -- tsc --noEmit --strict check.ts) >"$tmp/tsc.log" 2>&1; then
    cat "$tmp/tsc.log" >&2
    echo "FAIL: scripts/clients/ts/check.ts does not compile against the generated api.d.ts" >&2
    return 1
  fi
  echo "typescript: $versions: api.d.ts ($(wc -l <"$ts/api.d.ts") lines), no warnings; check.ts compiles with --strict" >>"$tmp/summary"
}

: >"$tmp/summary"
failed=()
for client in python typescript; do
  say "$client client"
  set +e
  ( set -e; "${client}_client" )
  rc=$?
  set -e
  if [ "$rc" != 0 ]; then
    failed+=("$client")
    echo "$client: FAILED (above)" >>"$tmp/summary"
  fi
done

say "summary ($(( $(date +%s) - started )) s)"
cat "$tmp/summary"
[ "${#failed[@]}" = 0 ]
