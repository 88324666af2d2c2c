#!/usr/bin/env bash
# Runs every example of README.md and docs/api.md (curl, and the Python and
# TypeScript clients') against live servers: tests/examples/run.py. The
# Python client goes into a virtual environment under target/ (httpx from
# PyPI); the TypeScript client runs from its committed dist/.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/examples-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check ./clients/python
cargo build --locked --quiet -p engram
python3 tests/examples/run.py target/debug/engram "$venv/bin/python"
