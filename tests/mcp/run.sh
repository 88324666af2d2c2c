#!/usr/bin/env bash
# Runs tests/mcp/client.py (the official MCP Python SDK, from PyPI into a
# virtual environment under target/) against a live server with a new
# database and an admin key; then compiles every tool's schemas with Ajv
# (from npm, into target/) in strict JSON Schema 2020-12 mode.
set -euo pipefail
cd "$(dirname "$0")/../.."

. tests/live.sh
python_env mcp-venv mcp==2.3.0
ajv=target/mcp-ajv
if [ ! -d "$ajv/node_modules/ajv-formats" ] || [ ! -d "$ajv/node_modules/ajv" ]; then
  mkdir -p "$ajv"
  npm install --silent --no-audit --no-fund --prefix "$ajv" ajv@8.17.1 ajv-formats@3.0.1
fi
live_server mcp
"$venv/bin/python" tests/mcp/client.py "$url" "$secret" "$work/tools.json"
AJV_MODULES="$PWD/$ajv/node_modules" node tests/mcp/strict-schemas.mjs "$work/tools.json"
