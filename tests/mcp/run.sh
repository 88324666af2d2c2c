#!/usr/bin/env bash
# Runs tests/mcp/client.py (the official MCP Python client, from PyPI into a
# virtual environment under target/) against a live server with a new
# database and an admin key.
set -euo pipefail
cd "$(dirname "$0")/../.."

. tests/live.sh
python_env mcp-venv mcp==1.30.0
live_server mcp
"$venv/bin/python" tests/mcp/client.py "$url" "$secret"
