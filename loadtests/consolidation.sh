#!/usr/bin/env bash
# Ingest latency while consolidation works through 100k episodes that all
# report the same event (one fact, reinforced on every page: the case that
# once grew quadratically). Prints the run's duration and counts, and the
# latency of an open-loop ingest load (200 requests/s) running meanwhile.
# Release build; about two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

. loadtests/server.sh
release_binaries
work=$(mktemp -d)
trap 'stop; rm -rf "$work"' EXIT

start consolidation
episodes=${EPISODES:-100000}
python3 - "$url" "$episodes" <<'PY'
import json, sys, urllib.request
url, total = sys.argv[1], int(sys.argv[2])
item = {"kind": "event", "source": "agent", "event_kind": "error", "ref": "build-1",
        "summary": "disk full on build host", "scope": "ci"}
body = json.dumps({"items": [item] * 500}).encode()
for _ in range(total // 500):
    request = urllib.request.Request(url + "/v1/ingest/batch", data=body,
                                     headers={"content-type": "application/json"})
    urllib.request.urlopen(request).read()
PY
echo "seeded $episodes identical episodes"
"$loadtests" ingest --rate 200 --clients 8 --duration 40 --no-verify --quiet --url "$url" \
  > "$work/ingest.txt" 2>&1 &
load=$!
sleep 3
started=$(date +%s%N)
report=$(curl -s -X POST "$url/v1/jobs/consolidation/run")
finished=$(date +%s%N)
echo "consolidation run: $(( (finished - started) / 1000000 )) ms: $report"
wait $load || true
echo "ingest during the run (open loop, 200 req/s, 40 s):"
grep -E 'requests|throughput|latency|errors' "$work/ingest.txt"
python3 - "$work/consolidation/engram.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for key, size in db.execute(
        "SELECT r.key, length(p.payload_json) FROM records r "
        "JOIN tags t ON t.record_key = r.key AND t.tag = 'consolidated' "
        "JOIN payloads p ON p.record_key = r.key"):
    sources = db.execute("SELECT COUNT(*) FROM provenance_sources WHERE record_key = ?", (key,)).fetchone()[0]
    audit = db.execute("SELECT COUNT(*) FROM audit_log WHERE record_key = ?", (key,)).fetchone()[0]
    print(f"consolidated record: payload {size} bytes, {sources} provenance sources, {audit} audit entries")
PY
