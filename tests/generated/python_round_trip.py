"""A round trip through the Python client openapi-python-client generates
from engram's API document (`GET /openapi.json`), against a live server:
every ingest kind, a batch, retrieval by text (page by page), by id and as
a graph, each revision, topics (ingest, query, view), an erasure's dry run,
the keys. Each call goes through the generated models both ways: the
request built from them, the answer parsed into them.

Usage: python python_round_trip.py URL ADMIN_SECRET  (the generated
package `engram_oa` on PYTHONPATH)
"""

import sys

from engram_oa import AuthenticatedClient
from engram_oa.api.erasure import erase_records
from engram_oa.api.ingest import (
    ingest_batch, ingest_event, ingest_observation, ingest_outcome, ingest_tool_output,
    ingest_working_state,
)
from engram_oa.api.keys import list_keys
from engram_oa.api.retrieve import retrieve, retrieve_by_id, retrieve_graph
from engram_oa.api.revisions import contest_record, retract_record, supersede_record
from engram_oa.api.topics import ingest_topic, query_topics, view_topic
from engram_oa.models import (
    BatchRequest, ContestRequest, EraseBody, EventRequest, GraphRequest, IngestBody,
    ObservationRequest, OutcomeRequest, QueryBody, RecordBody, RecordsBody, RetractRequest,
    RetrieveRequest, RetrieveResult, SupersedeRequest, ToolOutputRequest, TrustBody, ViewBody,
    WorkingStateRequest,
)

url, secret = sys.argv[1], sys.argv[2]
client = AuthenticatedClient(base_url=url, token=secret, raise_on_unexpected_status=True)
HIGH = {"max_sensitivity": "high"}


def ok(answer, kind):
    assert isinstance(answer, kind), f"{type(answer).__name__}: {answer}"
    return answer


def record(answer):
    return ok(answer, RecordBody).record


event = record(ingest_event.sync(client=client, body=EventRequest.from_dict(
    {"source": "gen-py", "event_kind": "deploy", "ref": "run-1", "summary": "billing deployed",
     "tags": ["billing"]})))
record(ingest_tool_output.sync(client=client, body=ToolOutputRequest.from_dict(
    {"source": "gen-py", "tool_name": "pytest", "args": {"path": "tests/"},
     "result": {"passed": 3, "failed": 0}})))
fact = record(ingest_observation.sync(client=client, body=ObservationRequest.from_dict(
    {"source": "gen-py", "subject": "service:billing", "predicate": "owner",
     "object": "team-payments", "tags": ["billing"]})))
record(ingest_outcome.sync(client=client, body=OutcomeRequest.from_dict(
    {"source": "gen-py", "target_record_id": event.id, "outcome_status": "success"})))
record(ingest_working_state.sync(client=client, body=WorkingStateRequest.from_dict(
    {"source": "gen-py", "thread_id": "t-1", "state": "executing", "next_actions": ["watch"]})))
batch = ok(ingest_batch.sync(client=client, body=BatchRequest.from_dict({"items": [
    {"kind": "event", "source": "gen-py", "event_kind": "deploy", "ref": "run-2"},
    {"kind": "observation", "source": "gen-py", "subject": "service:billing",
     "predicate": "version", "object": "1.4"},
    {"kind": "working_state", "source": "gen-py", "thread_id": "t-2", "state": "planning"},
]})), RecordsBody)
assert len(batch.records) == 3, batch
assert [r.type_ for r in batch.records] == ["episodic", "semantic", "working"], batch

# Retrieval: by text, a page of one at a time; by id; as a graph.
seen, cursor = [], None
while True:
    request = {"trust": HIGH, "task_descriptor": "billing", "page_size": 1}
    if cursor:
        request["cursor"] = cursor
    page = ok(retrieve.sync(client=client, body=RetrieveRequest.from_dict(request)), RetrieveResult)
    seen += [r.id for r in page.records]
    cursor = page.next_cursor if isinstance(page.next_cursor, str) else None
    if not cursor:
        break
assert fact.id in seen and len(seen) >= 3, seen
assert record(retrieve_by_id.sync(fact.id, client=client, body=TrustBody.from_dict({"trust": HIGH}))).id == fact.id
graph = retrieve_graph.sync(client=client, body=GraphRequest.from_dict(
    {"trust": HIGH, "task_descriptor": "billing owner", "max_hops": 1}))
assert any(n.record.id == fact.id for n in graph.nodes), graph

# Revisions: a new version, a contest, a retraction.
new = record(supersede_record.sync(client=client, body=SupersedeRequest.from_dict(
    {"old_id": fact.id, "actor": "gen-py", "rationale": "ownership moved",
     "new_record": {"type": "semantic", "sensitivity": "low",
                    "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner",
                                "object": "team-ledger",
                                "evidence": [{"source_type": "ticket", "source_id": "OPS-12"}]}}})))
assert new.payload.object_ == "team-ledger", new.payload
contested = record(contest_record.sync(client=client, body=ContestRequest.from_dict(
    {"id": new.id, "actor": "gen-py", "rationale": "the wiki disagrees", "contesting_ref": "wiki:owners"})))
assert contested.status == "contested", contested.status
retracted = record(retract_record.sync(client=client, body=RetractRequest.from_dict(
    {"id": batch.records[1].id, "actor": "gen-py", "rationale": "a wrong version"})))
assert retracted.status == "retracted", retracted.status

# Topics.
made = ingest_topic.sync(client=client, body=IngestBody.from_dict(
    {"title": "Payment service", "source": "gen-py", "trust": HIGH,
     "fields": [{"name": "version", "value": "2.4.1"}]}))
found = query_topics.sync(client=client, body=QueryBody.from_dict({"trust": HIGH, "text": "payments"}))
assert any(hit.topic.id == made.topic_id for hit in found.topics), found
view = view_topic.sync(made.topic_id, client=client, body=ViewBody.from_dict({"trust": HIGH}))
assert view.topic.fields.additional_properties["version"].value == "2.4.1", view

# An erasure's dry run, and the keys.
report = erase_records.sync(client=client, body=EraseBody.from_dict(
    {"source": "gen-py", "actor": "gen-py", "rationale": "a dry run", "dry_run": True}))
assert report.dry_run is True and report.erased >= 1, report
keys = list_keys.sync(client=client)
assert any(key.name == "generated-admin" for key in keys.keys), keys
print("generated Python client: every call made and answered through its models")
