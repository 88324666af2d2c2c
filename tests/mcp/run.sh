#!/usr/bin/env bash
# Runs tests/mcp/client.py (the official MCP Python client, from PyPI into a
# virtual environment under target/) against a live server with a new
# database and an admin key.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=target/mcp-venv
version=1.30.0
if [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$version"
fi

cargo build --locked --quiet -p engram
engram=target/debug/engram
work=$(mktemp -d)
. loadtests/server.sh
trap 'stop; rm -rf "$work"' EXIT

mkdir -p "$work/mcp"
secret=$(ENGRAM_DB_PATH="$work/mcp/engram.db" "$engram" keys create --name mcp-admin --role admin \
  --max-sensitivity hyper --rate 1000 | tail -n 1)
start mcp
"$venv/bin/python" tests/mcp/client.py "$url" "$secret"
