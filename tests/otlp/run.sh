#!/usr/bin/env bash
# Spans sent over OTLP/HTTP to a collector built on the official OTLP
# protobuf definitions (opentelemetry-proto from PyPI, in a virtual
# environment under target/): a request's span tree and the semantic
# conventions, nothing secret, and a collector that is down or stuck
# holding up no request (tests/otlp/check.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/live.sh
cargo build --locked --quiet -p engram
python_env otlp-venv opentelemetry-proto==1.45.2 protobuf==7.36.2
"$venv/bin/python" tests/otlp/check.py target/debug/engram
