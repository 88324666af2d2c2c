#!/usr/bin/env bash
# A few seconds of load against a throwaway server, so the load tool is
# exercised on every CI run. Uses the debug build; figures from it mean
# nothing, only that every acknowledged write is read back intact.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --bin engram -p engram
cargo build --quiet -p loadtests
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

ENGRAM_LISTEN=127.0.0.1:0 ENGRAM_DB_PATH="$work/engram.db" RUST_LOG=info \
  target/debug/engram >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  addr=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$work/server.log" | head -n 1 | cut -d= -f2 || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
if [ -z "${addr:-}" ]; then
  echo "smoke: the server did not start" >&2
  cat "$work/server.log" >&2
  exit 1
fi
target/debug/loadtests ingest --url "http://$addr" --clients 8 --requests 400 --seed 7
