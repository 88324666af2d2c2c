"""Drives engram's MCP endpoint with the official MCP Python SDK (2.x), once
pinned to the stateless protocol 2026-07-28 and once at 2025-11-25 (the
`initialize` handshake).

Usage: python client.py URL ADMIN_SECRET [TOOLS_JSON]

For each version: connects (2026-07-28 also through `server/discover`, as a
client on `auto` does), lists the tools (each with a title, annotations and
an output schema, which the SDK checks every result against; with
TOOLS_JSON the list is written there), calls every one, runs the remember
-> recall -> revise -> recall loop, then checks that errors come back as
tool errors and that a key without the role is refused. Both versions must
list the same tools and give the same answers. Exits non-zero (with the
failed assertion) on the first thing that is not so.
"""

import asyncio
import json
import sys
import urllib.request

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "remember_conversation", "remember_event", "remember_fact", "set_working_state", "record_outcome",
    "recall", "get_record", "revise", "feedback", "topic_ingest", "topic_query",
}
READS = {"recall", "get_record", "topic_query"}
VERSIONS = {"2026-07-28": "2026-07-28", "auto": "2026-07-28", "legacy": "2025-11-25"}


def make_key(url, admin, body):
    request = urllib.request.Request(
        url + "/v1/keys", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["secret"]


async def call(client, name, arguments, error=False):
    result = await client.call_tool(name, arguments)
    text = result.content[0].text
    assert result.is_error == error, f"{name}: {text}"
    print(f"  {name}: {text.splitlines()[0]}")
    return result.structured_content, text


async def as_key(url, secret, mode, work):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with Client(streamable_http_client(url + "/mcp", http_client=http), mode=mode) as client:
        assert client.protocol_version == VERSIONS.get(mode, mode), client.protocol_version
        if mode != "2026-07-28":
            # Pinned, the client adopts the version without asking the
            # server who it is; otherwise discover or initialize says.
            assert client.server_info is not None and client.server_info.name == "engram"
        return await work(client)


async def tool_list(client):
    tools = (await client.list_tools()).tools
    names = {tool.name for tool in tools}
    assert names == TOOLS, names
    for tool in tools:
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.description and tool.title, tool.name
        # The SDK checks every result against it (below, each tool is
        # called and answers without error at least once).
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        hints = tool.annotations
        assert hints.read_only_hint == (tool.name in READS), tool.name
        assert hints.open_world_hint is False, tool.name
        if tool.name in READS:
            assert hints.idempotent_hint is True, tool.name
    return [tool.model_dump(by_alias=True, exclude_none=True) for tool in tools]


async def everything(client, tag):
    """Every tool, the loop and the errors; answers what a reader of the
    answers sees, without the ids and times that differ between runs."""
    seen = []
    # remember -> recall -> revise -> recall
    fact, _ = await call(client, "remember_fact", {
        "source": "mcp-test", "subject": f"service:billing-{tag}", "predicate": "owner",
        "object": "team-payments", "tags": ["billing", tag]})
    fact_id = fact["record"]["id"]
    found, text = await call(client, "recall", {
        "task_descriptor": "who owns billing", "memory_types": ["semantic"], "tags": [tag]})
    assert fact_id in [r["id"] for r in found["records"]], found
    assert "team-payments" in text, text
    seen.append(len(found["records"]))

    new_record = {
        "type": "semantic", "sensitivity": "low", "tags": [tag],
        "payload": {"kind": "semantic", "subject": f"service:billing-{tag}", "predicate": "owner",
                    "object": "team-ledger",
                    "evidence": [{"source_type": "ticket", "source_id": "OPS-12"}]}}
    revised, _ = await call(client, "revise", {
        "operation": "supersede", "id": fact_id, "actor": "mcp-test",
        "rationale": "ownership moved", "new_record": new_record})
    new_id = revised["record"]["id"]
    found, text = await call(client, "recall", {
        "task_descriptor": "who owns billing", "memory_types": ["semantic"], "tags": [tag]})
    ids = [r["id"] for r in found["records"]]
    assert new_id in ids and fact_id not in ids, found
    assert "team-ledger" in text and "team-payments" not in text, text

    # The superseded version is kept, retracted.
    record, _ = await call(client, "get_record", {"id": fact_id})
    assert record["record"]["status"] == "retracted", record
    seen.append(record["record"]["status"])

    # The other tools, once each.
    event, _ = await call(client, "remember_event", {
        "source": "mcp-test", "event_kind": "deploy", "ref": f"run-{tag}",
        "summary": "billing deployed"})
    await call(client, "record_outcome", {
        "source": "mcp-test", "target_record_id": event["record"]["id"],
        "outcome_status": "success"})
    working, _ = await call(client, "set_working_state", {
        "source": "mcp-test", "thread_id": f"t-{tag}", "state": "executing",
        "next_actions": ["watch the error rate"]})
    seen.append(working["record"]["payload"]["state"])
    await call(client, "feedback", {
        "kind": "reinforce", "id": new_id, "actor": "mcp-test", "rationale": "it was right"})
    penalized, _ = await call(client, "feedback", {
        "kind": "penalize", "id": event["record"]["id"], "actor": "mcp-test",
        "rationale": "noise", "amount": 0.2})
    seen.append(round(penalized["record"]["salience"], 3))
    contested, _ = await call(client, "revise", {
        "operation": "contest", "id": new_id, "actor": "mcp-test",
        "rationale": "the wiki says otherwise", "contesting_ref": "wiki:owners"})
    assert contested["record"]["status"] == "contested", contested
    turns, text = await call(client, "remember_conversation", {
        "source": "mcp-test", "conversation_id": f"support-{tag}",
        "turns": [{"speaker": "Ana", "text": "Which plan do I need for SSO?"},
                  {"speaker": "Agent", "text": "The business plan includes it."}]})
    assert len(turns["records"]) == 2 and "2 turns" in text, turns
    found, text = await call(client, "recall", {
        "task_descriptor": "SSO plan", "conversation_id": f"support-{tag}",
        "speakers": ["Ana"], "context_turns": 1})
    assert found["records"][0]["context"]["after"][0]["payload"]["turn"]["speaker"] == "Agent", found
    assert f"Ana said in support-{tag}" in text, text
    topic, _ = await call(client, "topic_ingest", {
        "title": f"Billing service {tag}", "source": "mcp-test",
        "fields": [{"name": "owner", "value": "team-ledger"}]})
    topics, text = await call(client, "topic_query", {"text": f"billing {tag}"})
    assert topic["topic_id"] in [t["topic"]["id"] for t in topics["topics"]], topics
    assert "team-ledger" in text, text
    seen.append(topics["topics"][0]["topic"]["fields"]["owner"]["value"])

    # Errors are the model's to read.
    failed, text = await call(client, "remember_fact", {"source": "mcp-test", "predicate": "p"},
                              error=True)
    assert failed["error"]["code"] == "invalid_argument" and "subject" in text, failed
    seen.append(text)
    _, text = await call(client, "get_record", {"id": "no-such-record"}, error=True)
    assert text.startswith("not_found"), text
    seen.append(text)
    return seen


async def read_only(client):
    _, text = await call(client, "remember_fact", {
        "source": "s", "subject": "a", "predicate": "b", "object": "c"}, error=True)
    assert text.startswith("permission_denied") and "write" in text, text
    await call(client, "recall", {"task_descriptor": "billing"})
    return text


def main():
    url, admin = sys.argv[1], sys.argv[2]
    reader = make_key(url, admin, {"name": "mcp-reader", "roles": ["read"]})
    lists, answers, refusals = {}, {}, {}
    for mode in ("2026-07-28", "auto", "legacy"):
        print(f"MCP {mode}:")
        lists[mode] = asyncio.run(as_key(url, admin, mode, tool_list))
        answers[mode] = asyncio.run(as_key(url, admin, mode, lambda c, m=mode: everything(c, m)))
        refusals[mode] = asyncio.run(as_key(url, reader, mode, read_only))
    # The same tools and the same answers, whichever version is spoken.
    assert lists["2026-07-28"] == lists["legacy"] == lists["auto"]
    assert answers["2026-07-28"] == answers["legacy"] == answers["auto"], answers
    assert refusals["2026-07-28"] == refusals["legacy"], refusals
    if len(sys.argv) > 3:
        # For the strict schema compile (tests/mcp/strict-schemas.mjs).
        with open(sys.argv[3], "w") as out:
            json.dump(lists["legacy"], out)
    print("MCP client 2026-07-28 and 2025-11-25: every tool called, the loop and the errors as expected, "
          "the same tools and answers at both")


if __name__ == "__main__":
    main()
