"""Drives engram's MCP endpoint with the official MCP Python client.

Usage: python client.py URL ADMIN_SECRET [TOOLS_JSON]

Initializes a session, lists the tools (each with a title, annotations and
an output schema, which the client checks every result against; with
TOOLS_JSON, the list is written there), calls every one, and runs the
remember -> recall -> revise -> recall loop; then checks that errors come
back as tool errors and that a key without the role is refused. Exits
non-zero (with the failed assertion) on the first thing that is not so.
"""

import asyncio
import json
import sys
import urllib.request

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

TOOLS = {
    "remember_conversation", "remember_event", "remember_fact", "set_working_state", "record_outcome",
    "recall", "get_record", "revise", "feedback", "topic_ingest", "topic_query",
}


def make_key(url, admin, body):
    request = urllib.request.Request(
        url + "/v1/keys", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["secret"]


async def call(session, name, arguments, error=False):
    result = await session.call_tool(name, arguments)
    text = result.content[0].text
    assert result.isError == error, f"{name}: {text}"
    print(f"{name}: {text}")
    return result.structuredContent, text


async def as_key(url, secret, work):
    headers = {"Authorization": f"Bearer {secret}"}
    async with streamablehttp_client(url + "/mcp", headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            started = await session.initialize()
            # The client's newest version, which every later request names
            # in its MCP-Protocol-Version header.
            assert started.protocolVersion == "2025-11-25", started.protocolVersion
            return await work(session)


async def everything(session):
    tools = await session.list_tools()
    names = {tool.name for tool in tools.tools}
    assert names == TOOLS, names
    reads = {"recall", "get_record", "topic_query"}
    for tool in tools.tools:
        assert tool.inputSchema["type"] == "object", tool.name
        assert tool.description, tool.name
        assert tool.title, tool.name
        # The client checks every result against it (below, each tool is
        # called and answers without error at least once).
        assert tool.outputSchema and tool.outputSchema["type"] == "object", tool.name
        hints = tool.annotations
        assert hints.readOnlyHint == (tool.name in reads), tool.name
        assert hints.openWorldHint is False, tool.name
        if tool.name in reads:
            assert hints.idempotentHint is True, tool.name
    if len(sys.argv) > 3:
        # For the strict schema compile (tests/mcp/strict-schemas.mjs).
        with open(sys.argv[3], "w") as out:
            json.dump([tool.model_dump(by_alias=True, exclude_none=True) for tool in tools.tools], out)
    await session.send_ping()

    # remember -> recall -> revise -> recall
    fact, _ = await call(session, "remember_fact", {
        "source": "mcp-test", "subject": "service:billing", "predicate": "owner",
        "object": "team-payments", "tags": ["billing"]})
    fact_id = fact["record"]["id"]
    found, text = await call(session, "recall", {
        "task_descriptor": "who owns billing", "memory_types": ["semantic"]})
    assert fact_id in [r["id"] for r in found["records"]], found
    assert "team-payments" in text, text

    new_record = {
        "type": "semantic", "sensitivity": "low",
        "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner",
                    "object": "team-ledger",
                    "evidence": [{"source_type": "ticket", "source_id": "OPS-12"}]}}
    revised, _ = await call(session, "revise", {
        "operation": "supersede", "id": fact_id, "actor": "mcp-test",
        "rationale": "ownership moved", "new_record": new_record})
    new_id = revised["record"]["id"]
    found, text = await call(session, "recall", {
        "task_descriptor": "who owns billing", "memory_types": ["semantic"]})
    ids = [r["id"] for r in found["records"]]
    assert new_id in ids and fact_id not in ids, found
    assert "team-ledger" in text and "team-payments" not in text, text

    # The superseded version is kept, retracted.
    record, _ = await call(session, "get_record", {"id": fact_id})
    assert record["record"]["status"] == "retracted", record

    # The other tools, once each.
    event, _ = await call(session, "remember_event", {
        "source": "mcp-test", "event_kind": "deploy", "ref": "run-7",
        "summary": "billing deployed"})
    await call(session, "record_outcome", {
        "source": "mcp-test", "target_record_id": event["record"]["id"],
        "outcome_status": "success"})
    await call(session, "set_working_state", {
        "source": "mcp-test", "thread_id": "t-1", "state": "executing",
        "next_actions": ["watch the error rate"]})
    await call(session, "feedback", {
        "kind": "reinforce", "id": new_id, "actor": "mcp-test", "rationale": "it was right"})
    await call(session, "feedback", {
        "kind": "penalize", "id": event["record"]["id"], "actor": "mcp-test",
        "rationale": "noise", "amount": 0.2})
    contested, _ = await call(session, "revise", {
        "operation": "contest", "id": new_id, "actor": "mcp-test",
        "rationale": "the wiki says otherwise", "contesting_ref": "wiki:owners"})
    assert contested["record"]["status"] == "contested", contested
    turns, text = await call(session, "remember_conversation", {
        "source": "mcp-test", "conversation_id": "support-1",
        "turns": [{"speaker": "Ana", "text": "Which plan do I need for SSO?"},
                  {"speaker": "Agent", "text": "The business plan includes it."}]})
    assert len(turns["records"]) == 2 and "2 turns" in text, turns
    found, text = await call(session, "recall", {
        "task_descriptor": "SSO plan", "conversation_id": "support-1",
        "speakers": ["Ana"], "context_turns": 1})
    assert found["records"][0]["context"]["after"][0]["payload"]["turn"]["speaker"] == "Agent", found
    assert "Ana said in support-1" in text, text
    topic, _ = await call(session, "topic_ingest", {
        "title": "Billing service", "source": "mcp-test",
        "fields": [{"name": "owner", "value": "team-ledger"}]})
    topics, text = await call(session, "topic_query", {"text": "billing"})
    assert topic["topic_id"] in [t["topic"]["id"] for t in topics["topics"]], topics
    assert "team-ledger" in text, text

    # Errors are the model's to read.
    failed, text = await call(session, "remember_fact", {"source": "mcp-test", "predicate": "p"},
                              error=True)
    assert failed["error"]["code"] == "invalid_argument" and "subject" in text, failed
    _, text = await call(session, "get_record", {"id": "no-such-record"}, error=True)
    assert text.startswith("not_found"), text


async def read_only(session):
    _, text = await call(session, "remember_fact", {
        "source": "s", "subject": "a", "predicate": "b", "object": "c"}, error=True)
    assert text.startswith("permission_denied") and "write" in text, text
    await call(session, "recall", {"task_descriptor": "billing"})


def main():
    url, admin = sys.argv[1], sys.argv[2]
    asyncio.run(as_key(url, admin, everything))
    reader = make_key(url, admin, {"name": "mcp-reader", "roles": ["read"]})
    asyncio.run(as_key(url, reader, read_only))
    print("MCP client: every tool called, the loop and the errors as expected")


if __name__ == "__main__":
    main()
