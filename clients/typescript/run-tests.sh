#!/usr/bin/env bash
# Installs the client's build tool (TypeScript, pinned in package-lock.json)
# from npm, checks that the committed dist/ is what src/ builds to, builds
# engram, and runs the client's tests (node's test runner) against it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root/clients/typescript"
npm ci --silent --no-audit --no-fund
npm run --silent build
# dist/ is committed so that installing from a path needs no build step;
# it must be exactly what the sources build to.
if ! git -C "$root" diff --quiet -- clients/typescript/dist ||
  [ -n "$(git -C "$root" ls-files --others --exclude-standard -- clients/typescript/dist)" ]; then
  echo "clients/typescript/dist differs from a build of src/; run npm run build there and commit it:" >&2
  git -C "$root" status --short -- clients/typescript/dist >&2
  exit 1
fi
(cd "$root" && cargo build --locked --quiet -p engram)
ENGRAM_BIN="$root/target/debug/engram" node --test test/*.test.mjs "$@"
