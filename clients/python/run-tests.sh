#!/usr/bin/env bash
# Installs the client with its test dependencies into a virtual environment
# under target/, builds engram, and runs the client's tests against it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
venv=target/python-client-venv
if [ ! -x "$venv/bin/pytest" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "./clients/python[test]"
cargo build --locked --quiet -p engram
cd clients/python
ENGRAM_BIN="$root/target/debug/engram" "$root/$venv/bin/pytest" -q "$@"
