#!/usr/bin/env bash
# The memory attack mix (loadtests/attack_mix.py) against a throwaway
# release engram on loopback: prints each step's outcome, the peak RSS and
# the RSS 60 s after. About three minutes, a few hundred MB of disk.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet -p engram
work=$(mktemp -d)
engram=${ENGRAM_BIN:-target/release/engram}
. loadtests/server.sh
trap 'stop; rm -rf "$work"' EXIT

start attack
python3 loadtests/attack_mix.py "$url" "$server"
