#!/usr/bin/env bash
# The PostgreSQL figures of loadtests/README.md on this machine: a private
# PostgreSQL cluster (tests/postgres.sh), engram on it, then
#   - `loadtests targets --backend postgres`: single-record ingest at 64
#     clients against a bare tokio-postgres loop writing the same rows 64
#     per transaction, batch ingest against the 1,000-per-transaction loop;
#   - the database grown to --records (default 1,000,000) by batches, then
#     text-ranked retrieval (`search`: a three-word query, limit 20) at 1
#     and 4 clients, and retrieval by salience.
# Release build; takes several minutes and a few GB of disk under $TMPDIR.
#   bash loadtests/postgres.sh [RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."

size=${1:-1000000}
cargo build --release --quiet -p engram -p loadtests
work=$(mktemp -d)
chmod 755 "$work"
engram=target/release/engram
. loadtests/server.sh
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  bash tests/postgres.sh stop "$work/pg" || true
  rm -rf "$work"
}
trap cleanup EXIT

admin=$(PG_SHARED_BUFFERS=2GB bash tests/postgres.sh start "$work/pg")
psql -q "$admin" -c "CREATE DATABASE engram"
database=${admin%/postgres}/engram
export ENGRAM_PEPPER_HEX
ENGRAM_PEPPER_HEX=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
# The scheduled jobs are off: the hourly decay sweep of a million records
# takes minutes, and figures measured while it runs are the sweep's too
# (`measure.sh` measures ingest during sweeps on its own). Four reading
# threads, the default: each has a database connection of its own.
ENGRAM_LISTEN=127.0.0.1:0 ENGRAM_DATABASE_URL=$database ENGRAM_AUTH__PEPPER_ENV=ENGRAM_PEPPER_HEX \
  ENGRAM_STORAGE__POOL_SIZE=4 ENGRAM_JOBS__DECAY__ENABLED=false ENGRAM_JOBS__CONSOLIDATION__ENABLED=false \
  RUST_LOG=info "$engram" >"$work/server.log" 2>&1 &
server=$!
listening "$work/server.log"

lt() { target/release/loadtests "$@" --url "$url" --quiet; }
records() { curl -s "$url/v1/metrics" | grep -o '"total_records":[0-9]*' | cut -d: -f2; }

echo "== write targets (PostgreSQL)"
lt targets --backend postgres --database-url "$database" --duration 10 --records 20000

have=$(records)
if [ "$have" -lt "$size" ]; then
  started=$(date +%s)
  lt batch --clients 8 --batch-size 500 --requests $(( (size - have + 499) / 500 )) --no-verify >/dev/null
  echo
  echo "== grown to $(records) records in $(( $(date +%s) - started )) s"
fi
# A settled database: statistics made, the growth's dirty pages written
# out before reads are timed.
psql -q "$database" -c "VACUUM ANALYZE"
psql -q "$database" -c "CHECKPOINT"
echo "-- search (three-word query, limit 20), 1 client, 2000 requests"
lt search --clients 1 --requests 2000 | grep -E 'throughput|latency|errors'
echo "-- search, 4 clients, 10 s"
lt search --clients 4 --duration 10 | grep -E 'throughput|latency|errors'
echo "-- retrieve by salience (limit 20, ~10% visible), 1 client, 2000 requests"
lt retrieve --clients 1 --requests 2000 | grep -E 'throughput|latency|errors'
echo "-- database size: $(psql -Atq "$database" -c "SELECT pg_size_pretty(pg_database_size('engram'))")"
