"""The client against a real engram: every route, sync and async, errors
and retries. The last test checks that every operation of the server's API
document was called."""

import re
import time

import httpx
import pytest

from engram_client import AsyncClient, Client, EngramError, Record
from conftest import CALLED, tracked_async_http, tracked_http

TRUST = {"max_sensitivity": "hyper"}


def fact(subject, obj):
    return {"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": subject, "predicate": "owner",
                        "object": obj, "evidence": [{"source_type": "ticket", "source_id": "T-1"}]}}


@pytest.fixture
def engram(server):
    url, secret = server
    with Client(url, api_key=secret, http=tracked_http()) as client:
        yield client


def test_health_and_the_api_document(engram):
    assert engram.health() == {"status": "ok"}
    assert engram.ready() == {"status": "ready"}
    assert engram.openapi()["openapi"] == "3.1.0"


def test_ingest_retrieve_revise_and_feedback(engram):
    event = engram.ingest_event("agent", "deploy", "run-1", summary="billing deployed",
                                tags=["deploy"])
    assert isinstance(event, Record) and event.type == "episodic"
    tool = engram.ingest_tool_output("agent", "pytest", result={"passed": 3})
    assert tool.payload["kind"] == "episodic"
    observed = engram.ingest_observation("agent", "service:billing", "owner", "team-a")
    assert observed.payload["object"] == "team-a"
    outcome = engram.ingest_outcome("agent", event.id, "success")
    assert outcome.id == event.id
    working = engram.ingest_working_state("agent", "t-1", "executing", next_actions=["watch"])
    assert working.type == "working"
    batch = engram.ingest_batch([
        {"kind": "event", "source": "agent", "event_kind": "note", "ref": "n-1"},
        {"kind": "observation", "source": "agent", "subject": "service:billing",
         "predicate": "tier", "object": "gold"},
    ])
    assert [r.type for r in batch] == ["episodic", "semantic"]
    made = engram.create_record(fact("service:ledger", "team-b"))
    assert made.sensitivity == "low"

    found = engram.retrieve(TRUST, task_descriptor="billing owner", memory_types=["semantic"])
    assert observed.id in [r.id for r in found.records]
    assert len(found.scores) == len(found.records)
    graph = engram.retrieve_graph(TRUST, task_descriptor="billing")
    assert any(node.root for node in graph.nodes)
    assert engram.get_record(observed.id, TRUST).id == observed.id

    newer = engram.supersede(made.id, fact("service:ledger", "team-c"), "agent", "moved")
    assert [r.id for r in engram.history(newer.id, TRUST)] == [made.id, newer.id]
    forked = engram.fork(newer.id, fact("service:ledger-eu", "team-c"), "agent", "EU variant")
    merged = engram.merge([newer.id, forked.id], fact("service:ledger", "team-c"), "agent",
                          "one fact")
    assert merged.status == "active"
    contested = engram.contest(merged.id, "agent", "the wiki disagrees", contesting_ref="wiki")
    assert contested.status == "contested"
    assert engram.contest(merged.id, "agent", "settled", resolve=True).status == "active"
    assert engram.reinforce(merged.id, "agent", "it helped").id == merged.id
    assert engram.penalize(event.id, "agent", "noise", 0.2).salience < event.salience
    assert engram.retract(observed.id, "agent", "wrong").status == "retracted"


def test_conversations(engram):
    first = engram.ingest_conversation("chat", "support/42", [
        {"speaker": "Ana", "text": "Which plan has SSO?", "at": "2025-03-01T10:00:00Z"},
        {"speaker": "Bo", "text": "The business plan.", "at": "2025-03-01T10:01:00Z"},
    ], scope="team-a")
    assert first["new_session"] and len(first["records"]) == 2
    assert first["records"][1].payload["turn"]["index"] == 1
    more = engram.ingest_conversation("chat", "support/42", [
        {"speaker": "Ana", "text": "Thanks!", "at": "2025-03-01T10:05:00Z"}], scope="team-a")
    assert more["session_id"] == first["session_id"] and not more["new_session"]
    page = engram.conversation_turns("support/42", TRUST, page_size=2)
    assert [t.payload["turn"]["text"] for t in page["sessions"][0]["turns"]] == [
        "Which plan has SSO?", "The business plan."]
    rest = engram.conversation_turns("support/42", TRUST, page_size=2,
                                     cursor=page["next_cursor"])
    assert rest["sessions"][0]["turns"][0].payload["turn"]["text"] == "Thanks!"
    found = engram.retrieve(TRUST, task_descriptor="SSO plan", conversation_id="support/42",
                            context_turns=1)
    assert found.records[0].raw["context"]["after"], found.raw
    assert engram.erase("dpo", "test", conversation_id="support/42")["erased"] == 3


def test_topics(engram):
    made = engram.topic_ingest("agent", placement="new_topic", title="Billing", kind="service",
                               fields=[{"name": "owner", "value": "team-a"}], trust=TRUST)
    other = engram.topic_ingest("agent", title="Ledger", fields=[{"name": "owner", "value": "b"}],
                                trust=TRUST)
    again = engram.topic_ingest("agent", title="Billing", trust=TRUST,
                                fields=[{"name": "owner", "value": "team-c"}])
    assert again.topic_id == made.topic_id and again.applied[0]["op"] == "versioned"
    assert again.matched == {"topic_id": made.topic_id, "by": "title", "score": 1.0}
    hits = engram.topic_query(TRUST, text="billing", include_history=True)
    assert hits[0].topic.id == made.topic_id
    view = engram.topic_view(made.topic_id, TRUST)
    assert view.fields["owner"]["value"] == "team-c"
    versions = engram.field_history(made.topic_id, "owner", TRUST)
    assert [v["value"] for v in versions] == ["team-a", "team-c"]
    engram.topic_ingest("agent", title="Billing", summary="invoices", trust=TRUST)
    assert [v["summary"] for v in engram.summary_history(made.topic_id, TRUST)] == ["invoices"]
    edge = engram.add_edge(made.topic_id, other.topic_id, "depends_on", TRUST)
    assert edge["added"] is True
    assert engram.remove_edge(made.topic_id, other.topic_id, "depends_on", TRUST) == {
        "removed": True}
    assert engram.archive_topic(other.topic_id, TRUST).archived is True


def test_operations(engram, server):
    jobs = {job.name: job for job in engram.jobs()}
    assert set(jobs) == {"decay", "consolidation"}
    changed = engram.update_job("decay", schedule="0 */30 * * * *", enabled=False)
    assert (changed.schedule, changed.enabled) == ("0 */30 * * * *", False)
    run = engram.run_job("decay")
    assert run.error is None and run.result is not None
    decay = next(job for job in engram.jobs() if job.name == "decay")
    assert decay.recent_runs[0] == decay.last_run and decay.last_run.result == run.result
    key, secret = engram.create_key("reader", roles=["read"], max_sensitivity="medium")
    assert key.roles == ["read"] and secret
    assert "reader" in [k.name for k in engram.keys()]
    assert engram.revoke_key("reader").revoked_at is not None
    doomed = engram.ingest_event("eraser-test", event_kind="user_input", ref="r", summary="gone")
    assert engram.erase("dpo", "test", source="eraser-test", dry_run=True)["erased"] == 1
    assert engram.erase("dpo", "test", ids=[doomed.id])["erased"] == 1
    assert engram.erasures(10)[0]["selector"] == "ids"
    second = engram.ingest_event("eraser-test", event_kind="user_input", ref="s", summary="gone")
    engram.erase("dpo", "test", ids=[second.id])
    first_page = engram.erasure_log(limit=1)
    next_page = engram.erasure_log(limit=1, cursor=first_page["next_cursor"])
    assert first_page["erasures"][0]["id"] != next_page["erasures"][0]["id"]
    with Client(server[0], api_key=secret, http=tracked_http()) as revoked:
        with pytest.raises(EngramError) as refused:
            revoked.retrieve(TRUST)
        assert refused.value.status == 401 and refused.value.code == "unauthenticated"
    stats = engram.metrics()
    assert stats["total_records"] >= 0 and "semantic" in stats["records_by_type"], stats
    assert "engram_" in engram.prometheus_metrics()
    answer = engram.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert "recall" in [tool["name"] for tool in answer["result"]["tools"]]
    assert engram.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None


def test_errors_are_one_exception_with_code_message_and_status(engram):
    with pytest.raises(EngramError) as invalid:
        engram.ingest_event("", "deploy", "run-1")
    assert (invalid.value.status, invalid.value.code) == (400, "invalid_argument")
    assert "source" in invalid.value.message
    with pytest.raises(EngramError) as missing:
        engram.get_record("no-such-record", TRUST)
    assert (missing.value.status, missing.value.code) == (404, "not_found")


async def test_the_async_client(server):
    url, secret = server
    async with AsyncClient(url, api_key=secret, http=tracked_async_http()) as engram:
        stored = await engram.ingest_observation("agent", "service:queue", "owner", "team-q")
        found = await engram.retrieve(TRUST, task_descriptor="queue owner")
        assert stored.id in [r.id for r in found.records]
        with pytest.raises(EngramError) as missing:
            await engram.get_record("no-such-record", TRUST)
        assert missing.value.code == "not_found"


def test_rate_limits_are_retried_after_retry_after(engram, server):
    _, secret = engram.create_key("slow", roles=["read"], rate=1)
    with Client(server[0], api_key=secret, max_retries=0, http=tracked_http()) as once:
        once.health()
        with pytest.raises(EngramError) as limited:
            for _ in range(5):
                once.retrieve(TRUST)
        assert limited.value.status == 429 and limited.value.code == "rate_limited"
        assert limited.value.retry_after and limited.value.retry_after >= 1

    attempts = []
    http = httpx.Client(timeout=30, event_hooks={"response": [lambda r: attempts.append(
        r.status_code)]})
    with Client(server[0], api_key=secret, max_retries=5, http=http) as patient:
        started = time.monotonic()
        for _ in range(3):
            patient.retrieve(TRUST)
        assert 429 in attempts and attempts[-1] == 200, attempts
        assert time.monotonic() - started >= 1.0


def test_every_route_of_the_api_document_was_called(engram):
    document = engram.openapi()
    missing = []
    for path, item in document["paths"].items():
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
        for method in item:
            if not any(m == method.upper() and pattern.match(p) for m, p in CALLED):
                missing.append(f"{method.upper()} {path}")
    assert not missing, f"routes the tests never called: {missing}"
