#!/usr/bin/env bash
# Runs the official MCP SDKs against a live server with a new database and an
# admin key, each at the stateless protocol 2026-07-28 and at 2025-11-25:
# tests/mcp/client.py (the Python SDK, from PyPI into a virtual environment
# under target/) and tests/mcp/ts-client.mjs (the TypeScript SDK, from npm
# into target/); then compiles every tool's schemas with Ajv (from npm) in
# strict JSON Schema 2020-12 mode.
set -euo pipefail
cd "$(dirname "$0")/../.."

. tests/live.sh
python_env mcp-venv mcp==2.3.0
node_env mcp-ts @modelcontextprotocol/client@2.4.0
node_env mcp-ajv ajv@8.17.1 ajv-formats@3.0.1
live_server mcp
"$venv/bin/python" tests/mcp/client.py "$url" "$secret" "$work/tools.json"
MCP_TS_MODULES="$PWD/target/mcp-ts/node_modules" node tests/mcp/ts-client.mjs "$url" "$secret"
AJV_MODULES="$PWD/target/mcp-ajv/node_modules" node tests/mcp/strict-schemas.mjs "$work/tools.json"
