#!/usr/bin/env bash
# Holds the OpenAPI document to the truth: validates /api/v1/openapi.json, then fuzzes the
# running server with schemathesis (every check, stateful phase included) and fails on any
# finding. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [extra `st run` options…]
#
# Knobs (environment):
#   FUZZ_SECONDS=300          time budget of the schemathesis run (--max-time)
#   FUZZ_MAX_EXAMPLES=25      test cases per operation and phase (--max-examples)
#   FUZZ_SEED=<n>             reproduce a run (default: random, printed)
#   FUZZ_WORKERS=1            schemathesis workers (more than 1 needs Python 3.13+: on older
#                             CPython, parallel hypothesis threads hit "AST constructor recursion
#                             depth mismatch" errors, a CPython bug fixed in 3.13)
#   FUZZ_PHASES=examples,coverage,fuzzing,stateful
#   FUZZ_SKIP_VALIDATION=1    report the validator's errors but fuzz anyway; they do not fail the run
#   FUZZ_REPORT_DIR=<dir>     keep the reports there (default: discarded): findings.md (every
#                             failing operation and message with an example), schemathesis'
#                             events.ndjson and junit.xml, the document, server.log, events.log
#   ATRIUM_BIN=<path>         fuzz this binary instead of building `cargo build --release -p atrium-server`
# Extra arguments go to `st run`, e.g. --include-path-regex '^/api/docs' or --exclude-checks ignored_auth.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

seconds=${FUZZ_SECONDS:-300}
max_examples=${FUZZ_MAX_EXAMPLES:-25}
seed=${FUZZ_SEED:-$(( RANDOM << 15 | RANDOM ))}
workers=${FUZZ_WORKERS:-1}
phases=${FUZZ_PHASES:-examples,coverage,fuzzing,stateful}
skip_validation=${FUZZ_SKIP_VALIDATION:-0}
started=$(date +%s)
say() { printf '\n== %s\n' "$*"; }

# ---- the Python tools, in a virtualenv cached by the hash of the pinned requirements -----
req=scripts/fuzz/requirements.txt
python=${FUZZ_PYTHON:-python3}
hash=$({ cat "$req"; "$python" --version; } | sha256sum | cut -c1-16)
venv=${XDG_CACHE_HOME:-$HOME/.cache}/atrium-fuzz/venv-$hash
if [ ! -f "$venv/.complete" ]; then
  say "virtualenv $venv (from $req)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$req"
  touch "$venv/.complete"
fi
echo "schemathesis $("$venv/bin/python" -c 'import schemathesis; print(schemathesis.SCHEMATHESIS_VERSION)')," \
  "openapi-spec-validator $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("openapi-spec-validator"))')"

# ---- the server ------------------------------------------------------------------------
if [ -z "${ATRIUM_BIN:-}" ]; then
  say "cargo build --release -p atrium-server"
  cargo build --release -p atrium-server
  ATRIUM_BIN=${CARGO_TARGET_DIR:-$root/target}/release/atrium
fi
[ -x "$ATRIUM_BIN" ] || { echo "no server binary at $ATRIUM_BIN" >&2; exit 2; }
# Absolute: the hooks run it from another working directory.
ATRIUM_BIN="$(cd "$(dirname "$ATRIUM_BIN")" && pwd)/$(basename "$ATRIUM_BIN")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/atrium-fuzz.XXXXXX")
server_pid=
st_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local rc=$?
  if [ -n "$st_pid" ]; then
    kill "$st_pid" 2>/dev/null || true
    wait "$st_pid" 2>/dev/null || true
  fi
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ -n "${FUZZ_REPORT_DIR:-}" ] && [ -d "$tmp" ]; then
    mkdir -p "$FUZZ_REPORT_DIR"
    cp -f "$tmp"/server.log "$tmp"/events.log "$FUZZ_REPORT_DIR"/ 2>/dev/null || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
report_dir=${FUZZ_REPORT_DIR:-$tmp/report}
mkdir -p "$report_dir"
report_dir=$(cd "$report_dir" && pwd)

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
export DATABASE_URL=sqlite://$tmp/fuzz.db
export ATRIUM_PROFILE=dev ATRIUM_PLATFORM=sandbox ATRIUM_BIND=127.0.0.1:$port ATRIUM_PUBLIC_URL=$base
export ATRIUM_BOOTSTRAP_ADMIN=0 ATRIUM_BCRYPT_COST=4 ATRIUM_WORKERS=2 ATRIUM_LOG=${ATRIUM_LOG:-info}
# Limits far above what a fuzzing run reaches, so it tests the API rather than the 429s.
export ATRIUM_USER_CREATES_PER_HOUR=1000000 ATRIUM_CODES_PER_TARGET_PER_HOUR=1000000
export ATRIUM_CODES_PER_IP_PER_HOUR=1000000 ATRIUM_CODE_RESEND_SECS=0
export RUST_BACKTRACE=1

say "fixture: database, platform administrator, document project and API token"
admin_user=fuzz-admin
admin_password="Fz-$("$python" -c 'import secrets; print(secrets.token_urlsafe(18))')"
cli() { "$ATRIUM_BIN" "$@" 2>>"$tmp/cli.log" || { echo "atrium $1 $2 failed:" >&2; cat "$tmp/cli.log" >&2; return 1; }; }
cli migrate >/dev/null
ATRIUM_ADMIN_PASSWORD=$admin_password cli admin create --username "$admin_user"
project=$(cli docs project create --name fuzz | tail -n1)
docs_token=$(cli docs token create --name fuzz | tail -n1)
echo "document project $project; API token issued"

say "server on $base (log: server.log)"
"$ATRIUM_BIN" serve >"$tmp/server.log" 2>&1 &
server_pid=$!
for i in $(seq 100); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { echo "the server exited:" >&2; tail -n 30 "$tmp/server.log" >&2; exit 2; }
  [ "$i" = 100 ] && { echo "no answer from $base/healthz after 20 s" >&2; tail -n 30 "$tmp/server.log" >&2; exit 2; }
  sleep 0.2
done
echo "healthy"

say "the document: $base/api/v1/openapi.json"
curl -fsS "$base/api/v1/openapi.json" -o "$tmp/openapi.json"
cp "$tmp/openapi.json" "$report_dir/openapi.json"
validation=valid
if ! "$venv/bin/python" scripts/fuzz/validate.py "$tmp/openapi.json" 10; then
  validation=invalid
  if [ "$skip_validation" != 1 ]; then
    echo
    echo "FAIL: the document is not valid OpenAPI (FUZZ_SKIP_VALIDATION=1 reports this and fuzzes anyway)"
    exit 1
  fi
  echo "FUZZ_SKIP_VALIDATION=1: fuzzing anyway; the validation errors do not fail this run"
fi

say "schemathesis: every check, phases $phases, $max_examples examples per operation, at most ${seconds}s, seed $seed"
: >"$tmp/events.log"
st_rc=0
(
  # In the report directory: schemathesis and hypothesis keep their caches and crash files in
  # the working directory, which must not be the repository.
  cd "$report_dir"
  export FUZZ_BASE_URL=$base FUZZ_ADMIN_USER=$admin_user FUZZ_ADMIN_PASSWORD=$admin_password
  export FUZZ_DOCS_TOKEN=$docs_token FUZZ_DOCS_PROJECT=$project FUZZ_ATRIUM_BIN=$ATRIUM_BIN
  export FUZZ_EVENTS=$tmp/events.log ATRIUM_LOG=warn PYTHONPATH=$root/scripts/fuzz SCHEMATHESIS_HOOKS=hooks
  exec "$venv/bin/st" run "$tmp/openapi.json" --url "$base" \
    --checks all --phases "$phases" \
    --max-examples "$max_examples" --max-time "$seconds" --seed "$seed" --workers "$workers" \
    --request-timeout 30 --generation-database none \
    --report ndjson,junit --report-dir "$report_dir" \
    --report-ndjson-path "$report_dir/events.ndjson" --report-junit-path "$report_dir/junit.xml" \
    "$@"
) &
st_pid=$!  # waited on in the background, so a signal to this script stops the run at once
wait "$st_pid" || st_rc=$?
st_pid=

say "summary"
summary_rc=0
"$venv/bin/python" scripts/fuzz/summary.py \
  --events "$report_dir/events.ndjson" --server-log "$tmp/server.log" --fixture-log "$tmp/events.log" \
  --details "$report_dir/findings.md" --validation "$validation" --seed "$seed" --elapsed "$(( $(date +%s) - started ))" --schemathesis-exit "$st_rc" \
  || summary_rc=$?
[ -n "${FUZZ_REPORT_DIR:-}" ] || echo "(set FUZZ_REPORT_DIR to keep findings.md, the reports and the server log)"
# An invalid document has already ended the run unless FUZZ_SKIP_VALIDATION=1.
[ "$st_rc" = 0 ] && [ "$summary_rc" = 0 ]
