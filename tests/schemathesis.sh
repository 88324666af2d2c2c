#!/usr/bin/env bash
# Fuzzes every operation of the API document against a live server with
# schemathesis (from PyPI, into a virtual environment under target/): no
# answer may be a 5xx, and every answer must be one the document lists,
# with the body, type and headers it gives. The server has a new database
# and an admin key with a high rate, so every route is reached.
#
#   bash tests/schemathesis.sh            # 25 examples per operation
#   EXAMPLES=200 bash tests/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/schemathesis-venv
version=4.32.5
if [ "$("$venv/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
fi

cargo build --locked --quiet -p engram
engram=target/debug/engram
work=$(mktemp -d)
. loadtests/server.sh
trap 'stop; rm -rf "$work"' EXIT

# The key is made in the database `start` then serves.
mkdir -p "$work/fuzz"
secret=$(ENGRAM_DB_PATH="$work/fuzz/engram.db" "$engram" keys create --name fuzz --role admin \
  --max-sensitivity hyper --rate 100000 | tail -n 1)
start fuzz

"$venv/bin/schemathesis" run "$url/openapi.json" \
  --header "Authorization: Bearer $secret" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --phases examples,coverage,fuzzing \
  --max-examples "${EXAMPLES:-25}" \
  --seed "${SEED:-1}" \
  --workers 2 \
  --no-color \
  --warnings off
