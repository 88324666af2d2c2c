#!/usr/bin/env bash
# The figures to compare two builds of engram on this machine: the write
# targets against the bare baseline, then retrieval at 1 and 16 clients
# with 100k records. Uses target/release unless ENGRAM_BIN / LOADTESTS_BIN
# name other binaries (e.g. copies built from an earlier commit).
set -euo pipefail
cd "$(dirname "$0")/.."

. loadtests/server.sh
release_binaries
work=$(mktemp -d)
trap 'stop; rm -rf "$work"' EXIT

lt() { "$loadtests" "$@" --url "$url" --quiet; }

echo "== write targets (new database)"
start targets
lt targets --duration 10 --records 50000

echo
echo "== retrieval with 100k records"
start retrieval
lt batch --clients 8 --batch-size 100 --requests 1000 --no-verify >/dev/null
echo "-- retrieve (limit 20, ~10% visible), 1 client, 3000 requests"
lt retrieve --clients 1 --requests 3000 | grep -E 'throughput|latency|errors'
echo "-- retrieve, 16 clients, 10 s"
lt retrieve --clients 16 --duration 10 | grep -E 'throughput|latency|errors'
