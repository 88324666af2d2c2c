"""Spans engram sends over OTLP/HTTP, received by a collector built on the
official OTLP protobuf definitions (opentelemetry-proto).

Checks, against the real binary:
- a request's span tree: the HTTP server span, the storage actor that ran
  its job within it, the job within that, in one trace that
  continues the caller's `traceparent`;
- the semantic conventions' names, kinds, attributes and status (HTTP
  server spans; the GenAI memory operation of the route);
- that no span carries the key's secret, a query's text or a record's
  content;
- that a collector that is down, or that never answers, holds up no request
  and costs no more than the bounded queue: spans beyond it are dropped and
  counted.

    python check.py path/to/engram
"""

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

ENGRAM = sys.argv[1]
SECRET_CONTENT = "quartz-heron-5521"
QUERY_TEXT = "periwinkle-lantern-9034"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Collector:
    """An OTLP/HTTP traces receiver: every request body it took, decoded."""

    def __init__(self, hang=False):
        self.bodies = []
        self.requests = []
        self.hang = hang
        self.release = threading.Event()
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if collector.hang:
                    collector.release.wait(60)
                    return
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.bodies.append(body)
                collector.requests.append((self.path, self.headers["Content-Type"], request))
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}/v1/traces"

    def spans(self):
        for _, _, request in list(self.requests):
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        yield resource_spans.resource, span

    def stop(self):
        self.release.set()
        self.server.shutdown()


class Engram:
    """The binary on a new database, exporting to `endpoint`."""

    def __init__(self, endpoint, **telemetry):
        self.dir = tempfile.mkdtemp()
        self.env = dict(os.environ, ENGRAM_DB_PATH=f"{self.dir}/engram.db", RUST_LOG="info")
        self.env.pop("ENGRAM_CONFIG", None)
        made = subprocess.run(
            [ENGRAM, "keys", "create", "--name", "tracing-admin", "--role", "admin",
             "--max-sensitivity", "hyper", "--rate", "10000"],
            env=self.env, capture_output=True, text=True, check=True)
        self.secret = made.stdout.strip().splitlines()[-1]
        env = dict(self.env, ENGRAM_LISTEN="127.0.0.1:0",
                   ENGRAM_TELEMETRY__OTLP_ENDPOINT=endpoint)
        for name, value in telemetry.items():
            env[f"ENGRAM_TELEMETRY__{name.upper()}"] = str(value)
        self.log = open(f"{self.dir}/engram.log", "w+")
        self.process = subprocess.Popen([ENGRAM], env=env, stdout=self.log, stderr=self.log)
        for _ in range(200):
            found = re.search(r"addr=(127\.0\.0\.1:\d+)", open(f"{self.dir}/engram.log").read())
            if found:
                self.url = f"http://{found.group(1)}"
                return
            time.sleep(0.05)
        raise SystemExit("engram did not start:\n" + open(f"{self.dir}/engram.log").read())

    def call(self, method, path, body=None, headers=None, status=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.secret}")
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                got, text = answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            got, text = error.code, error.read().decode()
        if status is not None:
            assert got == status, f"{method} {path}: {got} {text}"
        return json.loads(text) if text.startswith(("{", "[")) else text

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def attributes(span_or_resource):
    values = {}
    for kv in span_or_resource.attributes:
        which = kv.value.WhichOneof("value")
        values[kv.key] = getattr(kv.value, which)
    return values


def wait_for(what, predicate, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {seconds} s")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def children(spans, parent):
    return [s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id]


def tree_below(spans, root, depth=0):
    lines = [f"{'  ' * depth}{root.name}"]
    for child in sorted(children(spans, root), key=lambda s: s.start_time_unix_nano):
        lines += tree_below(spans, child, depth + 1)
    return lines


def the_span_tree_follows_the_conventions():
    collector = Collector()
    engram = Engram(collector.endpoint, otlp_export_ms=200)
    try:
        engram.call("POST", "/v1/ingest/observation", {
            "source": "tracing-agent", "subject": "heron", "predicate": "colour",
            "object": SECRET_CONTENT}, status=201)
        event = engram.call("POST", "/v1/ingest/event", {
            "source": "tracing-agent", "event_kind": "deploy", "ref": SECRET_CONTENT}, status=201)
        traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
        engram.call("POST", "/v1/retrieve", {"task_descriptor": QUERY_TEXT, "limit": 5},
                    headers={"traceparent": traceparent}, status=200)
        old = engram.call("POST", "/v1/ingest/observation", {
            "source": "tracing-agent", "subject": "heron", "predicate": "habitat",
            "object": "marsh"}, status=201)["record"]["id"]
        engram.call("POST", "/v1/revisions/supersede", {
            "old_id": old, "actor": "tracing-agent", "rationale": "moved",
            "new_record": {"type": "semantic", "sensitivity": "low", "payload": {
                "kind": "semantic", "subject": "heron", "predicate": "habitat",
                "object": "river", "evidence": [{"source_type": "survey", "source_id": "s1"}]}}},
            status=201)
        engram.call("POST", f"/v1/retrieve/{event['record']['id']}0", {}, status=404)

        def span_named(name):
            return lambda: next((s for _, s in collector.spans() if s.name == name), None)

        retrieve = wait_for("retrieve span", span_named("POST /v1/retrieve"))
        supersede = wait_for("supersede span", span_named("POST /v1/revisions/supersede"))
        missing = wait_for("404 span", span_named("POST /v1/retrieve/{id}"))
        spans = [s for _, s in collector.spans()]

        for path, content_type, _ in collector.requests:
            check(path == "/v1/traces", f"sent to {path}")
            check(content_type == "application/x-protobuf", f"sent as {content_type}")
        resource = attributes(next(collector.spans())[0])
        check(resource.get("service.name") == "engram", f"resource {resource}")
        check("service.version" in resource and "service.instance.id" in resource, f"resource {resource}")

        # The HTTP server span, in the caller's trace.
        check(retrieve.kind == trace_pb2.Span.SPAN_KIND_SERVER, f"kind {retrieve.kind}")
        check(retrieve.trace_id.hex() == TRACE_ID, f"trace {retrieve.trace_id.hex()}")
        check(retrieve.parent_span_id.hex() == PARENT_ID, f"parent {retrieve.parent_span_id.hex()}")
        check(retrieve.flags & 0x300 == 0x300, f"flags {retrieve.flags:#x}: a remote parent")
        got = attributes(retrieve)
        for key, want in {
            "http.request.method": "POST", "http.route": "/v1/retrieve", "url.path": "/v1/retrieve",
            "url.scheme": "http", "http.response.status_code": 200, "network.protocol.version": "1.1",
            "client.address": "127.0.0.1", "engram.key.name": "tracing-admin",
            "gen_ai.operation.name": "search_memory",
        }.items():
            check(got.get(key) == want, f"{key}: {got.get(key)!r}, not {want!r}, in {got}")
        check(isinstance(got.get("gen_ai.memory.record.count"), int), f"record count in {got}")
        check(retrieve.status.code == trace_pb2.Status.STATUS_CODE_UNSET, "a 200 is no error")
        check(retrieve.end_time_unix_nano >= retrieve.start_time_unix_nano > 0, "times")

        # HTTP → storage actor → storage job, each within its parent.
        for root, storage_actor in [(retrieve, "StoreReader"), (supersede, "Writer")]:
            shape = "\n".join(tree_below(spans, root))
            storage = children(spans, root)
            check(storage and all(s.name.split()[0] == storage_actor for s in storage),
                  f"not {storage_actor} under {root.name}:\n{shape}")
            for actor in storage:
                check(attributes(actor).get("engram.actor") == storage_actor, shape)
                check(isinstance(attributes(actor).get("engram.queue.wait_ms"), float), shape)
            jobs = [job for s in storage for job in children(spans, s)]
            check(jobs and all(j.name.startswith("job ") for j in jobs), f"no job:\n{shape}")
            for parent, kids in [(root, storage)] + [(s, children(spans, s)) for s in storage]:
                for kid in kids:
                    check(kid.kind == trace_pb2.Span.SPAN_KIND_INTERNAL, f"{kid.name} kind")
                    check(kid.start_time_unix_nano >= parent.start_time_unix_nano, f"{kid.name} starts in {parent.name}")
                    check(kid.end_time_unix_nano <= parent.end_time_unix_nano, f"{kid.name} ends in {parent.name}")
            print(f"span tree of {root.name}:\n{shape}")
        check(attributes(supersede).get("gen_ai.operation.name") == "update_memory", "supersede operation")

        # A client's error is not the server's.
        check(attributes(missing).get("http.response.status_code") == 404, "404 status")
        check(missing.status.code == trace_pb2.Status.STATUS_CODE_UNSET, "a 404 is no span error")
        check("error.type" not in attributes(missing), "no error.type for a 404")

        # Never a secret, a query or content.
        for body in collector.bodies:
            for secret in (engram.secret, SECRET_CONTENT, QUERY_TEXT):
                check(secret.encode() not in body, f"{secret!r} was sent to the collector")
        print(f"{len(spans)} spans in {len(collector.requests)} requests; every check passed")
    except Exception:
        print(open(f"{engram.dir}/engram.log").read()[-4000:])
        raise
    finally:
        engram.stop()
        collector.stop()


def metric(engram, name):
    text = engram.call("GET", "/metrics", status=200)
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1)) if found else None


def an_absent_or_stuck_collector_holds_up_nothing():
    # Down: nothing listens on the port.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    engram = Engram(f"http://127.0.0.1:{closed}/v1/traces", otlp_export_ms=100)
    try:
        for i in range(20):
            engram.call("POST", "/v1/ingest/event", {
                "source": "agent", "event_kind": "deploy", "ref": f"down-{i}"}, status=201)
        wait_for("failed export", lambda: (metric(engram, "engram_trace_export_failures_total") or 0) > 0)
        log = open(f"{engram.dir}/engram.log").read()
        check(log.count("span export failed") == 1, "a failing collector is logged once, not per batch")
    finally:
        engram.stop()
    # Stuck: the collector takes the connection and never answers; the queue
    # holds 16 spans, the rest are dropped and counted.
    stuck = Collector(hang=True)
    engram = Engram(stuck.endpoint, otlp_export_ms=50, otlp_max_queue=16, otlp_max_batch=8,
                    otlp_timeout_ms=30000)
    try:
        started = time.time()
        for i in range(100):
            engram.call("POST", "/v1/ingest/event", {
                "source": "agent", "event_kind": "deploy", "ref": f"stuck-{i}"}, status=201)
        took = time.time() - started
        dropped = metric(engram, "engram_trace_spans_dropped_total")
        check(dropped is not None and dropped > 0, f"dropped {dropped}")
        check(metric(engram, "engram_trace_spans_exported_total") == 0, "nothing was taken")
        print(f"with a stuck collector: 100 writes in {took:.2f} s, {dropped:.0f} spans dropped")
    finally:
        engram.stop()
        stuck.stop()


the_span_tree_follows_the_conventions()
an_absent_or_stuck_collector_holds_up_nothing()
