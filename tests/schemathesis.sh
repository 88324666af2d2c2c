#!/usr/bin/env bash
# Validates the API document (openapi-spec-validator), then fuzzes every
# operation of it against a live server with schemathesis (both from PyPI,
# into virtual environments under target/), every check: no answer may be a
# 5xx, every answer must be one the document lists, with the body, type and
# headers it gives, every body the document admits must be taken and every
# one it does not must be refused. Twice: on a new database with an admin key
# with a high rate, so every route is reached; then on a new database
# without keys, where a read's trust is the body's alone. What the document
# can only say in words is taught to schemathesis by the hooks that
# tests/schemathesis.toml names.
#
#   bash tests/schemathesis.sh            # 100 examples per operation
#   EXAMPLES=200 bash tests/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."

. tests/live.sh
live_server fuzz 100000

# The document itself first: valid OpenAPI 3.1 (unique operation ids,
# resolvable references, schemas of the right form), as client generators
# need it.
python_env openapi-venv openapi-spec-validator==0.9.0
validator=$venv/bin/openapi-spec-validator
validate() {
  curl -fsS "$url/openapi.json" -o "$work/openapi.json"
  "$validator" "$work/openapi.json"
}
validate

python_env schemathesis-venv schemathesis==4.32.5
schemathesis=$venv/bin/schemathesis

# One worker: with two threads, Hypothesis parsing its strategies' sources
# at once trips CPython 3.11's "AST constructor recursion depth mismatch"
# (fixed in 3.11.8 and 3.12), a runtime error of the tool, not of engram.
fuzz() {
  local name=$1 started=$SECONDS
  shift
  "$schemathesis" --config-file tests/schemathesis.toml run "$url/openapi.json" "$@" \
    --checks all \
    --phases examples,coverage,fuzzing \
    --max-examples "${EXAMPLES:-100}" \
    --seed "${SEED:-1}" \
    --workers 1 \
    --no-color \
    --warnings off
  echo "schemathesis, $name: $((SECONDS - started)) s"
}

fuzz "admin key" --header "Authorization: Bearer $secret"

# Without keys. Making one would end that (every later request would need
# it), so key creation is left to the run above.
start open
validate
fuzz "no keys" --exclude-operation-id createKey
