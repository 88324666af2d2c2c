#!/usr/bin/env bash
# Many tenants in one memory: `loadtests tenants` against a fresh engram,
# at each size in SIZES (records, over SCOPES scopes), the database grown
# from one size to the next, so the figures show what the growth of
# everyone else's data does to each caller's cost.
#   bash loadtests/tenants.sh                      # SQLite, 100,000 records
#   SIZES="100000 1000000" bash loadtests/tenants.sh
#   BACKEND=postgres bash loadtests/tenants.sh     # a private cluster
# Each caller is timed for REQUESTS requests (500) or SECONDS_PER_CALLER
# (60), whichever comes first. Release build; the scheduled jobs are off
# (a sweep would be timed too).
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=${SIZES:-100000}
scopes=${SCOPES:-100}
requests=${REQUESTS:-500}
backend=${BACKEND:-sqlite}
cargo build --release --quiet -p engram -p loadtests
work=$(mktemp -d)
chmod 755 "$work"
engram=target/release/engram
. loadtests/server.sh
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ "$backend" = postgres ]; then bash tests/postgres.sh stop "$work/pg" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

env=(ENGRAM_LISTEN=127.0.0.1:0 ENGRAM_JOBS__DECAY__ENABLED=false
     ENGRAM_JOBS__CONSOLIDATION__ENABLED=false RUST_LOG=info)
if [ "$backend" = postgres ]; then
  admin=$(PG_SHARED_BUFFERS=2GB bash tests/postgres.sh start "$work/pg")
  psql -q "$admin" -c "CREATE DATABASE engram"
  export ENGRAM_PEPPER_HEX
  ENGRAM_PEPPER_HEX=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
  env+=(ENGRAM_DATABASE_URL="${admin%/postgres}/engram" ENGRAM_AUTH__PEPPER_ENV=ENGRAM_PEPPER_HEX)
else
  env+=(ENGRAM_DB_PATH="$work/engram.db")
fi
env "${env[@]}" "$engram" >"$work/server.log" 2>&1 &
server=$!
listening "$work/server.log"

# A caller whose requests time out (503) makes the tool exit 1; the
# figures of the others are still wanted, so the script goes on and exits
# 1 at the end.
status=0
have=0
for size in $sizes; do
  echo "== $backend, $size records over $scopes scopes"
  target/release/loadtests tenants --url "$url" --records $(( size - have )) --from "$have" \
    --scopes "$scopes" --requests "$requests" --duration "${SECONDS_PER_CALLER:-60}" --clients 1 \
    --vectors "${VECTORS:-32}" || status=1
  have=$size
  echo "-- 16 clients, one scope"
  target/release/loadtests tenants --url "$url" --scopes "$scopes" --requests 4000 --clients 16 \
    --vectors "${VECTORS:-32}" --caller "one scope" 2>/dev/null | grep -E '^caller|^one scope  ' || status=1
done
exit $status
