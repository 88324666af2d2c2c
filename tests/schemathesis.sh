#!/usr/bin/env bash
# Validates the API document (openapi-spec-validator), then fuzzes every
# operation of it against a live server with schemathesis (both from PyPI,
# into virtual environments under target/): no answer may be a 5xx, and every answer must be one the document lists,
# with the body, type and headers it gives. The server has a new database
# and an admin key with a high rate, so every route is reached.
#
#   bash tests/schemathesis.sh            # 25 examples per operation
#   EXAMPLES=200 bash tests/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."

. tests/live.sh
live_server fuzz 100000

# The document itself first: valid OpenAPI 3.1 (unique operation ids,
# resolvable references, schemas of the right form), as client generators
# need it.
python_env openapi-venv openapi-spec-validator==0.9.0
curl -fsS "$url/openapi.json" -o "$work/openapi.json"
"$venv/bin/openapi-spec-validator" "$work/openapi.json"

python_env schemathesis-venv schemathesis==4.32.5

# One worker: with two threads, Hypothesis parsing its strategies' sources
# at once trips CPython 3.11's "AST constructor recursion depth mismatch"
# (fixed in 3.11.8 and 3.12), a runtime error of the tool, not of engram.

"$venv/bin/schemathesis" run "$url/openapi.json" \
  --header "Authorization: Bearer $secret" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --phases examples,coverage,fuzzing \
  --max-examples "${EXAMPLES:-25}" \
  --seed "${SEED:-1}" \
  --workers 1 \
  --no-color \
  --warnings off
