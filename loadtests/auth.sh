#!/usr/bin/env bash
# Single-record ingest with authentication off and on, measured in one run:
# rounds alternate between a service with `auth.mode = "off"` and one where
# every request carries a key (`Authorization: Bearer …`), each on a new
# database, and the ratio of their throughputs is printed.
#   CLIENTS (64), DURATION seconds per measurement (10), ROUNDS (3)
set -euo pipefail
cd "$(dirname "$0")/.."

engram=${ENGRAM_BIN:-target/release/engram}
loadtests=${LOADTESTS_BIN:-target/release/loadtests}
if [ -z "${ENGRAM_BIN:-}" ] || [ -z "${LOADTESTS_BIN:-}" ]; then
  cargo build --release --quiet -p engram -p loadtests
fi
clients=${CLIENTS:-64}
duration=${DURATION:-10}
rounds=${ROUNDS:-3}
work=$(mktemp -d)
. loadtests/server.sh
trap 'stop; rm -rf "$work"' EXIT

# Requests per second of one ingest measurement against $url.
ingest() {
  "$loadtests" ingest --url "$url" --clients "$clients" --duration "$duration" --quiet "$@" \
    | awk '/^throughput/ {print $2}'
}

off_total=0
on_total=0
for round in $(seq 1 "$rounds"); do
  export ENGRAM_AUTH__MODE=off
  start "off-$round"
  unset ENGRAM_AUTH__MODE
  off=$(ingest)
  mkdir -p "$work/on-$round"
  secret=$(ENGRAM_DB_PATH="$work/on-$round/engram.db" "$engram" keys create \
    --name loadtests --role write --role read --max-sensitivity hyper --rate 1000000 | tail -n 1)
  start "on-$round"
  on=$(ingest --header "Authorization: Bearer $secret")
  echo "round $round: auth off $off req/s, auth on $on req/s"
  off_total=$((off_total + off))
  on_total=$((on_total + on))
done
stop
awk -v on="$on_total" -v off="$off_total" \
  'BEGIN {printf "single-record ingest, %d clients: auth on / auth off = %.3f\n", '"$clients"', on / off}'
