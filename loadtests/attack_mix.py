#!/usr/bin/env python3
"""The memory attack mix against a running engram on loopback.

Usage: attack_mix.py URL PID

Runs, in order and partly at once: 40 records of ~10 MB each; three
retrievals at once that would return all of them; a merge naming all 40;
100 connections each declaring a 15 MiB body and trickling it; bodies of
10.5 MB of numbers. Samples the server's resident memory (VmRSS of PID)
every 100 ms throughout, then for 60 s after, and prints the peak, the
value 60 s after the attack and what each step got back.
Bounded in time (about 2 minutes) and loopback only.
"""

import json
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

URL, PID = sys.argv[1], int(sys.argv[2])
HOST, PORT = urllib.parse.urlparse(URL).hostname, urllib.parse.urlparse(URL).port
assert HOST in ("127.0.0.1", "localhost", "::1"), "loopback only"

samples = []
sampling = True


def rss_mb():
    with open(f"/proc/{PID}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def sampler():
    while sampling:
        samples.append((time.time(), rss_mb()))
        time.sleep(0.1)


def post(path, body, timeout=120):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(URL + path, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except Exception as error:  # connection closed by the server
        return 0, str(error).encode()


def step(name, started):
    print(f"{name}: {time.time() - started:.1f} s, RSS now {rss_mb():.0f} MB, peak so far {max(s[1] for s in samples):.0f} MB", flush=True)


threading.Thread(target=sampler, daemon=True).start()
t0 = time.time()
baseline = rss_mb()
print(f"RSS before: {baseline:.0f} MB")

# 1. Forty records of ~10 MB (a 10 MB string object each).
big = "x" * (10 * 1024 * 1024 - 512)
ids = []
for i in range(40):
    status, body = post("/v1/records", {"type": "semantic", "sensitivity": "low",
                                        "provenance": {"sources": [{"kind": "artifact", "ref": f"a{i}", "timestamp": "2025-01-01T00:00:00Z"}]},
                                        "payload": {"kind": "semantic", "subject": "big", "predicate": "is", "object": big}})
    if status == 201:
        ids.append(json.loads(body)["record"]["id"])
step(f"40 records of 10 MB ({len(ids)} stored)", t0)

# 2. Three retrievals at once, each asking for everything.
answers = []
def retrieve():
    status, body = post("/v1/retrieve", {"trust": {"max_sensitivity": "hyper"}, "limit": 1000})
    answers.append((status, len(body), b"next_cursor" in body))
threads = [threading.Thread(target=retrieve) for _ in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
step(f"3 retrievals at once: {[(s, f'{n / 1e6:.1f} MB', 'paged' if c else 'whole') for s, n, c in answers]}", t0)

# 3. A merge of all forty.
started = time.time()
status, body = post("/v1/revisions/merge", {"ids": ids, "actor": "attacker", "rationale": "r",
                                            "merged_record": {"type": "semantic", "sensitivity": "low",
                                                              "provenance": {"sources": [{"kind": "artifact", "ref": "m", "timestamp": "2025-01-01T00:00:00Z"}]},
                                                              "payload": {"kind": "semantic", "subject": "m", "predicate": "p"}}})
step(f"merge of 40: {status} in {time.time() - started:.2f} s ({body[:90]!r})", t0)

# 4. 100 connections declaring 15 MiB bodies, trickling a byte every 2 s.
declared = 15 * 1024 * 1024
connections, refused = [], 0
for _ in range(100):
    s = socket.create_connection((HOST, PORT))
    s.sendall(f"POST /v1/ingest/event HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n".encode())
    s.sendall(b'{"source": "' + b"a" * (4 * 1024 * 1024))
    connections.append(s)
deadline = time.time() + 25
answered = {}
while time.time() < deadline and len(answered) < len(connections):
    for i, s in enumerate(connections):
        if i in answered:
            continue
        try:
            s.setblocking(False)
            data = s.recv(200)
            if data:
                answered[i] = data.split(b" ")[1].decode()
                continue
        except BlockingIOError:
            pass
        except OSError:
            answered[i] = "closed"
            continue
        try:
            s.sendall(b"a")
        except OSError:
            answered[i] = "closed"
    time.sleep(2)
codes = {}
for code in answered.values():
    codes[code] = codes.get(code, 0) + 1
for s in connections:
    s.close()
step(f"100 slow 15 MiB bodies: answers {codes}, {100 - len(answered)} still open after 25 s", t0)

# 5. Bodies of 10.5 MB of numbers, four at once, twice.
numbers = b'{"source": "a", "tool_name": "t", "args": [' + b",".join([b"1"] * (5 * 1024 * 1024 + 256 * 1024)) + b"]}"
statuses = []
for _ in range(2):
    results = []
    threads = [threading.Thread(target=lambda: results.append(post("/v1/ingest/tool-output", numbers)[0])) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    statuses += results
step(f"8 bodies of {len(numbers) / 1e6:.1f} MB of numbers: {statuses}", t0)

attack_end = time.time()
peak = max(s[1] for s in samples)
time.sleep(60)
sampling = False
after = rss_mb()
print(f"peak RSS during the attack: {peak:.0f} MB")
print(f"RSS 60 s after the attack: {after:.0f} MB")
ok = peak < 1024 and after < 300
print("goal (peak < 1 GiB, < 300 MB 60 s later):", "met" if ok else "NOT met")
sys.exit(0 if ok else 1)
