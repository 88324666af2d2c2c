"""Starts a real engram (a new database, an admin key) for the tests, and
records every route the tests call, so the last test can check that each
route of the API document was called."""

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
CALLED = set()


def _record_route(request):
    # As sent: a percent-encoded "/" inside a path segment stays one segment.
    CALLED.add((request.method, request.url.raw_path.decode().split("?")[0]))


@pytest.fixture(scope="session")
def server():
    binary = os.environ.get("ENGRAM_BIN", str(ROOT / "target" / "debug" / "engram"))
    work = tempfile.mkdtemp()
    env = dict(os.environ, ENGRAM_DB_PATH=os.path.join(work, "engram.db"),
               ENGRAM_LISTEN="127.0.0.1:0", RUST_LOG="info")
    made = subprocess.run(
        [binary, "keys", "create", "--name", "admin", "--role", "admin",
         "--max-sensitivity", "hyper", "--rate", "1000"],
        env=env, check=True, capture_output=True, text=True)
    secret = made.stdout.strip().splitlines()[-1]
    log = open(os.path.join(work, "server.log"), "w+")
    process = subprocess.Popen([binary], env=env, stdout=log, stderr=subprocess.STDOUT)
    address = None
    for _ in range(200):
        log.seek(0)
        found = re.search(r"addr=(127\.0\.0\.1:\d+)", log.read())
        if found:
            address = found.group(1)
            break
        time.sleep(0.05)
    if address is None:
        process.kill()
        log.seek(0)
        raise RuntimeError("engram did not start:\n" + log.read())
    yield f"http://{address}", secret
    process.terminate()
    process.wait(timeout=10)


def tracked_http():
    return httpx.Client(timeout=30, event_hooks={"request": [_record_route]})


def tracked_async_http():
    async def hook(request):
        _record_route(request)
    return httpx.AsyncClient(timeout=30, event_hooks={"request": [hook]})
