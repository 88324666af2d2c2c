#!/usr/bin/env bash
# Reproduces the figures in loadtests/README.md on this machine: the write
# targets against the bare baseline, then, as the database grows to 10k,
# 100k and 1M records, ingest, retrieval, a decay sweep with ingests
# running during it, and the server's resident memory.
# Release build; takes several minutes and a few GB of disk under $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet -p engram -p loadtests
work=$(mktemp -d)
engram=target/release/engram
. loadtests/server.sh
trap 'stop; rm -rf "$work"' EXIT

lt() { target/release/loadtests "$@" --url "$url" --quiet; }
records() { curl -s "$url/v1/metrics" | grep -o '"total_records":[0-9]*' | cut -d: -f2; }
rss_mb() { echo $(( $(ps -o rss= -p "$server") / 1024 )); }

echo "== write targets (new database)"
start targets
lt targets --duration 10 --records 50000

start growth
for size in 10000 100000 1000000; do
  have=$(records)
  if [ "$have" -lt "$size" ]; then
    lt batch --clients 8 --batch-size 100 --requests $(( (size - have + 99) / 100 )) --no-verify >/dev/null
  fi
  echo
  echo "== $(records) records"
  echo "-- retrieve (limit 20, ~10% visible), 1 client, 3000 requests"
  lt retrieve --clients 1 --requests 3000 | grep -E 'throughput|latency|errors'
  echo "-- retrieve, 16 clients, 5 s"
  lt retrieve --clients 16 --duration 5 | grep -E 'throughput|latency|errors'
  echo "-- ingest, 64 clients, 20000 requests"
  lt ingest --clients 64 --requests 20000 --seed "$size" | grep -E 'throughput|latency|errors'
  echo "-- ingest, 16 clients, while decay sweeps run back to back"
  lt during-maintenance --jobs decay --maintenance-every 0 --clients 16 --duration 15 --seed $(( size + 1 )) \
    | grep -E 'throughput|latency|errors|maintenance|verification'
  echo "-- resident memory: $(rss_mb) MB"
done
