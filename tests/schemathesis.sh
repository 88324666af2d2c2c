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
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

export ENGRAM_DB_PATH="$work/engram.db"
secret=$("$engram" keys create --name fuzz --role admin --max-sensitivity hyper --rate 100000 | tail -n 1)
ENGRAM_LISTEN=127.0.0.1:0 "$engram" >"$work/server.log" 2>&1 &
server=$!
addr=
for _ in $(seq 1 100); do
  addr=$(grep -o 'addr=127\.0\.0\.1:[0-9]*' "$work/server.log" | head -n 1 | cut -d= -f2 || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "engram did not start:"; cat "$work/server.log"; exit 1; }

"$venv/bin/schemathesis" run "http://$addr/openapi.json" \
  --header "Authorization: Bearer $secret" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --phases examples,coverage,fuzzing \
  --max-examples "${EXAMPLES:-25}" \
  --seed "${SEED:-1}" \
  --workers 2 \
  --no-color \
  --warnings off
