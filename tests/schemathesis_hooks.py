"""Rules of engram's API that its document states in words, because JSON
Schema has no way to say them, taught to schemathesis so that what it
draws as valid data is valid. Each hook changes only cases drawn as
valid (positive), and only so far as one such rule needs: schemathesis
still checks that every answer conforms, and every invalid (negative)
case is sent as drawn.

Loaded through tests/schemathesis.toml.
"""

import base64
import datetime

import schemathesis
from hypothesis import strategies as st

# A time of something that has happened (an ingest's `timestamp`, a
# turn's `at`, a record's `created_at`, ...) may not be later than the
# server's clock; no JSON Schema keyword compares with "now". Times are
# drawn from the past, with offsets, which every `date-time` field takes.
_OFFSETS = [
    datetime.timezone.utc,
    datetime.timezone(datetime.timedelta(hours=5, minutes=30)),
    datetime.timezone(datetime.timedelta(hours=-8)),
]
schemathesis.openapi.format(
    "date-time",
    st.datetimes(
        min_value=datetime.datetime(1900, 1, 1),
        max_value=datetime.datetime(2020, 1, 1),
        timezones=st.sampled_from(_OFFSETS),
    ).map(lambda t: t.isoformat().replace("+00:00", "Z")),
)


def _positive(case):
    meta = case.meta
    return meta is not None and meta.generation.mode.is_positive


def _time(text):
    if not isinstance(text, str):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _ordered(body, first, second):
    """`second` later than `first`, as the descriptions ask: drops it when not."""
    start, end = _time(body.get(first)), _time(body.get(second))
    if start is not None and end is not None and end <= start:
        del body[second]


def _plan_graph(payload):
    """Each node id once, each edge naming nodes of the graph."""
    if not isinstance(payload, dict) or payload.get("kind") != "plan_graph":
        return
    nodes, seen = payload.get("nodes"), set()
    if isinstance(nodes, list):
        payload["nodes"] = [
            n for n in nodes if not (n["id"] in seen or seen.add(n["id"]))
        ]
    edges = payload.get("edges")
    if isinstance(edges, list):
        payload["edges"] = [e for e in edges if e["from"] in seen and e["to"] in seen]


def _validity(payload):
    """A fact's validity ends no earlier than it starts."""
    if isinstance(payload, dict) and isinstance(payload.get("validity"), dict):
        _ordered(payload["validity"], "start", "end")


def _turns_in_order(turns):
    """A conversation's turns in the order they happened (`null`: now)."""
    times = sorted(
        (t.get("at") for t in turns),
        key=lambda at: (at is None, _time(at) or datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)),
    )
    for turn, at in zip(turns, times):
        turn["at"] = at


# The stateless MCP protocol (2026-07-28) asks each request to carry its
# version and the client's capabilities in `params._meta`, and to repeat
# its method and tool in the `Mcp-Method` and `Mcp-Name` headers: rules
# between headers and body, which JSON Schema cannot relate.
_STATELESS = "2026-07-28"


def _stateless_mcp(case):
    headers = case.headers or {}
    version = next((v for k, v in headers.items() if k.lower() == "mcp-protocol-version"), None)
    if version != _STATELESS or not isinstance(case.body, dict):
        return
    params = case.body.get("params")
    if not isinstance(params, dict):
        params = case.body["params"] = {}
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": _STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    for name in [k for k in headers if k.lower() in ("mcp-method", "mcp-name")]:
        del headers[name]
    # A method travels in its header as it is: one a header cannot carry
    # as printable ASCII cannot be sent in this protocol at all.
    method = case.body["method"]
    if not (method and method.isascii() and method.isprintable() and method == method.strip()):
        case.body["method"] = method = "tools/list"
    headers["Mcp-Method"] = method
    if isinstance(params.get("name"), str):
        headers["Mcp-Name"] = _header(params["name"])
    case.headers = headers


def _header(text):
    """`text` as a header value: as it is, or in MCP's base64 form."""
    if text and text.isascii() and text.isprintable() and text == text.strip() and not text.startswith("=?"):
        return text
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


@schemathesis.hook
def map_case(context, case):
    if not _positive(case):
        return case
    if case.path == "/mcp":
        _stateless_mcp(case)
        return case
    body = case.body if isinstance(case.body, dict) else {}
    if isinstance(body.get("turns"), list):
        _turns_in_order(body["turns"])
    # A cursor is sealed by the server: only one it issued is valid.
    body.pop("cursor", None)
    if case.query:
        case.query.pop("cursor", None)
    _ordered(body, "after", "before")
    _ordered(body, "created_after", "created_before")
    for record in (body, *(body.get(f) for f in ("new_record", "forked_record", "merged_record"))):
        if isinstance(record, dict):
            _plan_graph(record.get("payload"))
            _validity(record.get("payload"))
    # A topic ingest names each field once.
    if isinstance(body.get("fields"), list):
        seen = set()
        body["fields"] = [
            f for f in body["fields"] if not (f["name"] in seen or seen.add(f["name"]))
        ]
    # A job's schedule is a cron expression that runs, and not too often.
    if isinstance(body.get("schedule"), str):
        body["schedule"] = "0 */15 * * * *"
    return case
