#!/usr/bin/env bash
# A few seconds of every load scenario against a throwaway server, and two
# crash cycles, so the load tool is exercised on every CI run. Uses the
# debug build: figures from it mean nothing, only that every request
# succeeded and every acknowledged write is read back intact (the tool
# exits non-zero otherwise).
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
run() { target/debug/loadtests "$@" --url "http://$addr" --quiet; }
run ingest --clients 8 --requests 400 --seed 7
run batch --clients 4 --requests 20 --batch-size 50 --seed 8
run mixed --clients 8 --requests 300 --read-ratio 0.5 --seed 9
run retrieve --clients 2 --requests 100
run revise --clients 8 --requests 150 --topics 3
run ingest --rate 200 --requests 200 --clients 4 --seed 10
run during-maintenance --clients 4 --duration 2 --maintenance-every 1 --seed 11
run topics --clients 4 --requests 200 --seed 12
run topics-query --clients 2 --requests 100 --seed 12
run tenants --records 2000 --scopes 10 --requests 10 --duration 2 --clients 2 --vectors 8 --seed 13 >/dev/null
# The conversation evaluation on the project's set: its figures are the
# same on any build (recall, not speed).
run conversations
target/debug/loadtests crash --engram target/debug/engram --cycles 2 --clients 4 >/dev/null
echo "smoke: every scenario ran, every acknowledged write was read back, crash cycles lost nothing"
