"""Runs the examples of the documentation against a live engram, as a reader
would: every `curl` of README.md and docs/api.md in order, each document on a
new server, with the ids its placeholders stand for (`<id>`,
`<semantic record id>`, `<topic id>`, ...) taken from earlier answers, and
the status of each answer checked against the one docs/api.md states for the
route (its heading, `### POST /v1/ingest/event → 201`), or, for a route
without one, a success status the API document lists, and the answer of a
route that shows something (records, nodes, topics, a topic's fields, a
history, turns, jobs, keys) checked to hold some of it. Then the client
examples: the Python and TypeScript blocks of README.md and of each client's
README, with a real key for `<secret>`.

Usage: python3 run.py ENGRAM_BINARY PYTHON_WITH_CLIENT
Exits non-zero naming each example that failed.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = re.compile(r"<([a-z][a-z0-9 _]*)>")
HEADING = re.compile(r"^### (GET|POST|PUT|DELETE) (\S+) → (\d{3})(?:.*, (GET|POST|PUT|DELETE) → (\d{3}))?")


class Server:
    """engram on a new database in a scratch directory, without keys."""

    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        self.env = dict(os.environ, ENGRAM_DB_PATH=os.path.join(work, "engram.db"),
                        ENGRAM_LISTEN="127.0.0.1:0", RUST_LOG="info")
        self.process = None
        self.url = None

    def start(self):
        log = open(os.path.join(self.work, "server.log"), "a+")
        start = log.tell()
        self.process = subprocess.Popen([self.binary], env=self.env, stdout=log,
                                        stderr=subprocess.STDOUT)
        for _ in range(200):
            log.seek(start)
            found = re.search(r"addr=(127\.0\.0\.1:\d+)", log.read())
            if found:
                self.url = f"http://{found.group(1)}"
                return
            time.sleep(0.05)
        raise RuntimeError("engram did not start:\n" + open(log.name).read())

    def stop(self):
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def keys_create(self, args):
        made = subprocess.run([self.binary, "keys", "create", *args], env=self.env,
                              check=True, capture_output=True, text=True)
        return made.stdout.strip().splitlines()[-1]


def blocks(path, languages):
    """The fenced code blocks of a Markdown file in these languages, with the
    line each starts on."""
    found, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w+)\s*$", lines[i])
        if fence and fence.group(1) in languages:
            start, body = i + 1, []
            i += 1
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            found.append((start + 1, fence.group(1), body))
        i += 1
    return found


def curls(path):
    """Every curl command of the file's shell blocks: (line, words)."""
    found = []
    for start, _, body in blocks(path, {"sh", "bash"}):
        i = 0
        while i < len(body):
            if not body[i].lstrip().startswith("curl "):
                i += 1
                continue
            text, line = body[i], start + i
            while True:
                try:
                    # A placeholder stands for one word (`<record id>`).
                    words = shlex.split(PLACEHOLDER.sub(lambda m: "<" + m.group(1).replace(" ", "_") + ">", text),
                                        comments=True)
                    break
                except ValueError:  # a quote still open: the command goes on
                    i += 1
                    text += "\n" + body[i]
            found.append((line, words))
            i += 1
    return found


def request_of(words):
    """What a curl command asks: method, path, headers and body."""
    method, headers, data, target = None, {}, None, None
    it = iter(words[1:])
    for word in it:
        if word in ("-X", "--request"):
            method = next(it)
        elif word in ("-H", "--header"):
            name, value = next(it).split(":", 1)
            headers[name.strip()] = value.strip()
        elif word in ("-d", "--data", "--data-raw"):
            data = next(it)
        elif word.startswith("-"):
            continue
        else:
            target = word
    path = re.sub(r"^(https?://)?localhost:8080", "", target)
    return method or ("POST" if data is not None else "GET"), path, headers, data


class Reader:
    """What a reader knows from the answers so far: the records and topics
    made, newest last, and which records are still active."""

    def __init__(self):
        self.records = {}  # id -> {"type", "status", "revised"}
        self.order = []
        self.topics = []

    def saw(self, answer, path, body):
        found = []

        def walk(value):
            if isinstance(value, dict):
                # (A schema of one, in the API document, has them too.)
                if isinstance(value.get("id"), str) and "type" in value and "status" in value \
                        and "payload" in value:
                    found.append(value)
                for inner in value.values():
                    walk(inner)
            elif isinstance(value, list):
                for inner in value:
                    walk(inner)

        walk(answer)
        for record in found:
            known = self.records.setdefault(record["id"], {"revised": False})
            known.update(type=record["type"], status=record["status"])
            if record["id"] in self.order:
                self.order.remove(record["id"])
            self.order.append(record["id"])
        if isinstance(answer, dict) and "topic_id" in answer:
            if answer["topic_id"] in self.topics:
                self.topics.remove(answer["topic_id"])
            self.topics.append(answer["topic_id"])
        if path.endswith("/supersede") and isinstance(body, dict):
            old = self.records.get(body.get("old_id"))
            if old:
                old.update(status="superseded", revised=True)
            for record in found:
                self.records[record["id"]]["revised"] = True
        if path.endswith("/merge") and isinstance(body, dict):
            for id in body.get("ids", []):
                if id in self.records:
                    self.records[id]["status"] = "retracted"

    def record(self, kind, taken, revised=False):
        for id in reversed(self.order):
            known = self.records[id]
            if id in taken or (kind and known["type"] != kind):
                continue
            if revised and known["revised"]:
                return id
            if not revised and known["status"] == "active":
                return id
        raise LookupError(f"no {'revised ' if revised else 'active '}{kind or ''} record yet")

    def topic(self, taken):
        for id in reversed(self.topics):
            if id not in taken:
                return id
        raise LookupError("no topic yet")


def fill(reader, path, data):
    """The command's path and body with each placeholder replaced by an id
    from earlier answers: one of the kind the example needs, a different one
    for each placeholder of the command."""
    taken, chosen = [], {}
    kind = None
    try:
        body = json.loads(PLACEHOLDER.sub("x", data)) if data else {}
    except ValueError:
        body = {}
    for field in ("new_record", "forked_record", "merged_record"):
        if isinstance(body.get(field), dict):
            kind = body[field].get("type")

    def pick(match):
        name = match.group(1).replace("_", " ")
        if name in chosen:
            return chosen[name]
        if "topic" in name or (name in ("id", "other", "other id") and "/topics/" in path):
            id = reader.topic(taken)
        elif name.startswith("episodic"):
            id = reader.record("episodic", taken)
        elif name.startswith("semantic"):
            id = reader.record("semantic", taken)
        elif path.endswith("/history"):
            id = reader.record(None, taken, revised=True)
        else:
            id = reader.record(kind, taken)
        taken.append(id)
        chosen[name] = id
        return id

    # "<other>" is the one made last, as the examples introduce it just
    # before use; "<id>" then is the one before.
    def others_first(text, first):
        return PLACEHOLDER.sub(lambda m: pick(m) if m.group(1).startswith("other") == first
                               else m.group(0), text)

    for first in (True, False):
        path = others_first(path, first)
        data = others_first(data, first) if data is not None else None
    return path, data


def expected_statuses(document):
    """(method, path regex) -> the statuses docs/api.md's heading states
    for the route, else the success statuses the API document lists."""
    stated = {}
    for line in (ROOT / "docs/api.md").read_text().splitlines():
        heading = HEADING.match(line)
        if heading:
            stated[(heading.group(1), heading.group(2))] = {int(heading.group(3))}
            if heading.group(4):
                stated[(heading.group(4), heading.group(2))] = {int(heading.group(5))}
    routes = []
    for template, item in document["paths"].items():
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$")
        for method, operation in item.items():
            listed = {int(s) for s in operation["responses"] if s.startswith("2")}
            routes.append((method.upper(), pattern, stated.get((method.upper(), template), listed)))
    return routes


# What an answer of these routes must hold for its example to show
# anything: (method, path regex, the answer's part that must not be empty).
SHOWS = [
    ("POST", r"^/v1/retrieve$", ("records",)),
    ("POST", r"^/v1/retrieve/graph$", ("nodes",)),
    ("POST", r"^/v1/topics/query$", ("topics",)),
    ("POST", r"^/v1/topics/[^/]+/view$", ("topic", "fields")),
    ("POST", r"^/v1/topics/[^/]+/fields/[^/]+/history$", ("versions",)),
    ("POST", r"^/v1/records/[^/]+/history$", ("chain",)),
    ("POST", r"^/v1/conversations/[^/]+/turns$", ("sessions",)),
    ("GET", r"^/v1/jobs$", ("jobs",)),
    ("GET", r"^/v1/keys$", ("keys",)),
]


def shows_nothing(method, path, answer):
    """The part of the answer an example of this route shows, when it is
    empty (an example that succeeds but shows nothing); else None."""
    for m, pattern, part in SHOWS:
        if m != method or not re.match(pattern, path.split("?")[0]):
            continue
        value = answer
        for key in part:
            value = value.get(key) if isinstance(value, dict) else None
        if not value:
            return ".".join(part)
    return None


def send(url, method, path, headers, data):
    request = urllib.request.Request(url + path, method=method, headers=headers,
                                     data=data.encode() if data is not None else None)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def run_curls(doc, server, routes, env, failures):
    reader = Reader()
    ran = 0
    for line, words in curls(ROOT / doc):
        where = f"{doc}:{line}"
        method, path, headers, data = request_of(words)
        # Examples that send a key (`$SECRET`) run in the pass with one.
        if any("$" in value for value in headers.values()) != (env is not None):
            continue
        try:
            path, data = fill(reader, path, data)
        except LookupError as missing:
            failures.append(f"{where}: {missing}, as the example needs")
            continue
        if env is not None:
            headers = {k: re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), m.group(0)), v)
                       for k, v in headers.items()}
        status, text = send(server.url, method, path, headers, data)
        ran += 1
        if os.environ.get("EXAMPLES_VERBOSE"):
            print(f"{where}: {method} {path} {data or ''} -> {status} {text[:200]}")
        wanted = next((s for m, p, s in routes if m == method and p.match(path.split("?")[0])), None)
        if wanted is None:
            failures.append(f"{where}: {method} {path} is no route of the API document")
            continue
        if status not in wanted:
            failures.append(f"{where}: {method} {path} answered {status}, the document says "
                            f"{sorted(wanted)}: {text[:300]}")
            continue
        try:
            answer = json.loads(text)
        except ValueError:
            answer = None
        empty = shows_nothing(method, path, answer) if status < 300 else None
        if empty:
            failures.append(f"{where}: {method} {path} answered {status} with no {empty}: "
                            f"the example shows nothing: {text[:300]}")
        reader.saw(answer, path, json.loads(data) if data else None)
    return ran


def run_clients(server, secret, python, failures):
    ran = 0
    examples = [(doc, start, lang, body)
                for doc in ("README.md", "clients/python/README.md", "clients/typescript/README.md")
                for start, lang, body in blocks(ROOT / doc, {"python", "ts"})]
    with tempfile.TemporaryDirectory() as scratch:
        modules = Path(scratch, "node_modules")
        modules.mkdir()
        (modules / "engram-memory-client").symlink_to(ROOT / "clients/typescript")
        for doc, start, lang, body in examples:
            code = "\n".join(body).replace("<secret>", secret)
            code = code.replace("http://127.0.0.1:8080", server.url)
            if lang == "python":
                command = [python, "-c", code]
            else:
                script = Path(scratch, f"example-{start}.mjs")
                script.write_text(code)
                command = ["node", str(script)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
            ran += 1
            if done.returncode != 0:
                failures.append(f"{doc}:{start}: the {lang} example failed:\n{done.stderr[-1500:]}")
    return ran


def main():
    binary, python = sys.argv[1], sys.argv[2]
    failures, counts = [], []
    for doc in ("README.md", "docs/api.md"):
        with tempfile.TemporaryDirectory() as work:
            server = Server(binary, work)
            server.start()
            try:
                document = json.loads(send(server.url, "GET", "/openapi.json", {}, None)[1])
                routes = expected_statuses(document)
                counts.append(f"{doc}: {run_curls(doc, server, routes, None, failures)} curl")
                if doc == "README.md":
                    # The reader makes a key as "Securing engram" shows, and
                    # from then on sends it; the service reads keys at start.
                    server.stop()
                    secret = server.keys_create(["--name", "ops", "--role", "admin",
                                                 "--max-sensitivity", "hyper"])
                    server.start()
                    keyed = run_curls(doc, server, routes, {"SECRET": secret}, failures)
                    clients = run_clients(server, secret, python, failures)
                    counts.append(f"README.md with a key: {keyed} curl; "
                                  f"client READMEs: {clients} examples")
            finally:
                server.stop()
    print("; ".join(counts))
    if failures:
        print(f"{len(failures)} examples failed:", file=sys.stderr)
        for failure in failures:
            print("- " + failure, file=sys.stderr)
        sys.exit(1)
    print("every example answered as documented")


if __name__ == "__main__":
    main()
