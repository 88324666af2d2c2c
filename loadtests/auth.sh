#!/usr/bin/env bash
# Single-record ingest with authentication off and on, measured in one run:
# rounds alternate between a service with `auth.mode = "off"` and one where
# every request carries a key (`Authorization: Bearer …`), each on a new
# database, and the ratio of their throughputs is printed.
#   CLIENTS (64), DURATION seconds per measurement (10), ROUNDS (3)
set -euo pipefail
cd "$(dirname "$0")/.."

clients=${CLIENTS:-64}
duration=${DURATION:-10}
rounds=${ROUNDS:-3}
. loadtests/server.sh
release_binaries
work=$(mktemp -d)
trap 'stop; rm -rf "$work"' EXIT

# Requests per second of one ingest measurement against $url.
ingest() {
  "$loadtests" ingest --url "$url" --clients "$clients" --duration "$duration" --quiet "$@" \
    | awk '/^throughput/ {print $2}'
}

measure_off() {
  export ENGRAM_AUTH__MODE=off
  start "off-$round"
  unset ENGRAM_AUTH__MODE
  off=$(ingest)
}

measure_on() {
  mkdir -p "$work/on-$round"
  secret=$(ENGRAM_DB_PATH="$work/on-$round/engram.db" "$engram" keys create \
    --name loadtests --role write --role read --max-sensitivity hyper --rate 1000000 | tail -n 1)
  start "on-$round"
  on=$(ingest --header "Authorization: Bearer $secret")
}

off_total=0
on_total=0
ratios=
for round in $(seq 1 "$rounds"); do
  # Which goes first alternates, so neither always meets a colder machine.
  if [ $((round % 2)) -eq 1 ]; then measure_off; measure_on; else measure_on; measure_off; fi
  ratio=$(awk -v on="$on" -v off="$off" 'BEGIN {printf "%.3f", on / off}')
  ratios="$ratios $ratio"
  echo "round $round: auth off $off req/s, auth on $on req/s, ratio $ratio"
  off_total=$((off_total + off))
  on_total=$((on_total + on))
done
stop
median=$(echo $ratios | tr ' ' '\n' | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
awk -v on="$on_total" -v off="$off_total" -v median="$median" -v clients="$clients" \
  'BEGIN {printf "single-record ingest, %d clients: auth on / auth off = %.3f of the totals, median of the rounds %.3f\n", clients, on / off, median}'
