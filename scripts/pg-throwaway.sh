#!/usr/bin/env bash
# Starts or stops a throwaway PostgreSQL 15 cluster on loopback for tests.
#   eval "$(scripts/pg-throwaway.sh start)"   # sets PG_DIR and ATRIUM_TEST_PG_URL
#   scripts/pg-throwaway.sh stop "$PG_DIR"
# The cluster lives in memory (/dev/shm) when it can: tests create and drop a database each,
# and on a disk every one costs about 120 ms of file work even with fsync off. PG_PARENT=/tmp
# puts it on disk instead (the benches do, to measure what a server on a disk does).
set -euo pipefail
cmd=${1:-start}
find_bin() {
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && { echo "$d"; return; }; done
  return 1
}
as_pg() {
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi
}
case "$cmd" in
  start)
    bin=$(find_bin) || {
      echo "PostgreSQL server binaries missing; installing postgresql" >&2
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
      bin=$(find_bin)
    }
    parent=${PG_PARENT:-}
    if [ -z "$parent" ]; then
      if [ -d /dev/shm ] && [ -w /dev/shm ]; then parent=/dev/shm; else parent=/tmp; fi
    fi
    dir=$(mktemp -d "$parent/atrium-pg.XXXXXX")
    chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    port=$(( 20000 + RANDOM % 20000 ))
    as_pg "$bin/initdb -D $dir/data -A trust -U postgres -E UTF8 >$dir/initdb.log 2>&1"
    as_pg "$bin/pg_ctl -D $dir/data -l $dir/server.log -w -o '-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400' start >/dev/null"
    echo "PG_DIR=$dir"
    echo "ATRIUM_TEST_PG_URL=postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    dir=${2:?cluster directory}
    bin=$(find_bin)
    as_pg "$bin/pg_ctl -D $dir/data -m immediate stop >/dev/null 2>&1" || true
    rm -rf "$dir"
    ;;
esac
