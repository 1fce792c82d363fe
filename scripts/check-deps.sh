#!/usr/bin/env bash
# The dependency rule of docs/architecture.md: domain crates use no framework, driver, runtime or
# file-format library (spreadsheets are atrium-tabular's); api never reaches storage, platform
# or file adapters.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
for c in kernel identity org payroll payments orders miniprogram docs; do
  bad=$(cargo tree -p "atrium-$c" -e normal --prefix none --format '{p}' 2>/dev/null \
        | awk '{print $1}' | grep -E '^(actix|diesel|r2d2|reqwest|hyper|sqlx|tokio|libsqlite3-sys|pq-sys|calamine|rust_xlsxwriter|csv|encoding_rs)' | sort -u || true)
  if [ -n "$bad" ]; then
    echo "dependency rule: atrium-$c must stay framework-free but depends on: $(echo $bad | tr '\n' ' ')"
    fail=1
  fi
  others=$(cargo tree -p "atrium-$c" -e normal --depth 1 --prefix none --format '{p}' | awk 'NR>1{print $1}' \
        | grep -E '^atrium-(identity|org|payroll|payments|orders|miniprogram|docs|store|tabular|wechat|sandbox|api|server)$' || true)
  if [ -n "$others" ]; then
    echo "dependency rule: domain crate atrium-$c depends on another crate: $(echo $others | tr '\n' ' ')"
    fail=1
  fi
done
api_bad=$(cargo tree -p atrium-api -e normal --prefix none --format '{p}' | awk '{print $1}' | grep -E '^(atrium-store|atrium-tabular|atrium-wechat|atrium-sandbox|diesel|reqwest|calamine|rust_xlsxwriter)$' | sort -u || true)
if [ -n "$api_bad" ]; then
  echo "dependency rule: atrium-api must not depend on $(echo $api_bad | tr '\n' ' ')"
  fail=1
fi
[ $fail -eq 0 ] && echo "dependency rule: ok"
exit $fail
