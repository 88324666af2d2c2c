#!/usr/bin/env bash
# Runs tests/ui/dashboard.py (Playwright from PyPI, into a virtual
# environment under target/, driving the system's Chromium: nothing else is
# downloaded) against a live server with a new database and an admin key.
#
#   bash tests/ui/run.sh          # check every page
#   bash tests/ui/run.sh docs     # ... and save a picture of each in docs/
set -euo pipefail
cd "$(dirname "$0")/../.."

# Debian's Chromium, when it is missing.
if ! command -v chromium >/dev/null 2>&1; then
  sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium >/dev/null
fi

. tests/live.sh
python_env ui-venv playwright==1.65.2
live_server ui
CHROMIUM=$(command -v chromium) "$venv/bin/python" tests/ui/dashboard.py "$url" "$secret" "$@"
