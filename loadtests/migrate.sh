#!/usr/bin/env bash
# `engram migrate` at scale: a SQLite database filled by the service with
# RECORDS records (default 100,000, by batches of the load tool's ingest
# mix), then moved into a new database on a private PostgreSQL cluster,
# with every table's count and a sample of records checked.
#   bash loadtests/migrate.sh [RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."

size=${1:-100000}
cargo build --release --quiet -p engram -p loadtests
work=$(mktemp -d)
chmod 755 "$work"
engram=target/release/engram
. loadtests/server.sh
trap 'stop; bash tests/postgres.sh stop "$work/pg" || true; rm -rf "$work"' EXIT

start sqlite
target/release/loadtests batch --url "$url" --quiet --clients 8 --batch-size 500 \
  --requests $(( (size + 499) / 500 )) --no-verify >/dev/null
records=$(curl -s "$url/v1/metrics" | grep -o '"total_records":[0-9]*' | cut -d: -f2)
stop
echo "SQLite database: $records records, $(du -h "$work/sqlite/engram.db" | cut -f1)"

admin=$(PG_SHARED_BUFFERS=2GB bash tests/postgres.sh start "$work/pg")
psql -q "$admin" -c "CREATE DATABASE engram"
started=$(date +%s%N)
"$engram" migrate --from "sqlite:$work/sqlite/engram.db" --to "${admin%/postgres}/engram" --sample 1000
echo "migrate took $(( ($(date +%s%N) - started) / 1000000 )) ms"
