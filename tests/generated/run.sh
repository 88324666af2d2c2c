#!/usr/bin/env bash
# Generates clients from the live server's API document (`GET /openapi.json`)
# and runs a round trip through each against the server:
# - Python: openapi-python-client (from PyPI, into a virtual environment
#   under target/); any warning of the generator (a model or an operation it
#   had to leave out) fails; then tests/generated/python_round_trip.py.
# - TypeScript: openapi-typescript and openapi-fetch (from npm, into
#   target/), tests/generated/ts_round_trip.ts compiled by tsc in strict
#   mode, then run.
set -euo pipefail
cd "$(dirname "$0")/../.."

. tests/live.sh
live_server generated
python_env generated-venv openapi-python-client==0.29.1
curl -fsS "$url/openapi.json" -o "$work/openapi.json"
printf 'post_hooks: []\n' >"$work/generator.yaml"
"$venv/bin/openapi-python-client" generate --path "$work/openapi.json" --meta none \
  --output-path "$work/python/engram_oa" --config "$work/generator.yaml" >"$work/generated.log" 2>&1
if grep -qi "warning\|unable\|error" "$work/generated.log"; then
  cat "$work/generated.log"
  echo "openapi-python-client did not take the whole document" >&2
  exit 1
fi
PYTHONPATH="$work/python" "$venv/bin/python" tests/generated/python_round_trip.py "$url" "$secret"

# The same with a TypeScript client: types by openapi-typescript, calls by
# openapi-fetch, compiled by tsc in strict mode, then run.
node_env generated-ts openapi-typescript@7.13.0 openapi-fetch@0.17.0 typescript@5.9.3
ts=$PWD/target/generated-ts
mkdir -p "$work/ts"
"$ts/node_modules/.bin/openapi-typescript" "$work/openapi.json" -o "$work/ts/schema.d.ts" >/dev/null
cp tests/generated/ts_round_trip.ts "$work/ts/"
ln -s "$ts/node_modules" "$work/ts/node_modules"
cat >"$work/ts/tsconfig.json" <<'JSON'
{"compilerOptions": {"strict": true, "target": "ES2022", "module": "NodeNext",
  "moduleResolution": "NodeNext", "outDir": "out", "types": []},
 "files": ["ts_round_trip.ts"]}
JSON
"$ts/node_modules/.bin/tsc" -p "$work/ts/tsconfig.json"
node "$work/ts/out/ts_round_trip.js" "$url" "$secret"
