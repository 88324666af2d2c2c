// Drives engram's MCP endpoint with the official MCP TypeScript SDK
// (@modelcontextprotocol/client, from npm into target/), pinned to the
// stateless protocol 2026-07-28 and on the 2025-11-25 handshake: lists the
// tools, calls every one (the SDK checks each result against the tool's
// output schema) and compares what the two versions answer.
//
// Usage: node ts-client.mjs URL ADMIN_SECRET  (MCP_TS_MODULES: node_modules)
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(process.env.MCP_TS_MODULES + "/");
const sdk = await import(pathToFileURL(require.resolve("@modelcontextprotocol/client")).href);
const { Client, StreamableHTTPClientTransport } = sdk;

const [url, secret] = process.argv.slice(2);
const READS = new Set(["recall", "get_record", "topic_query"]);

async function connected(mode) {
  const client = new Client({ name: "engram-ts-test", version: "1" }, { versionNegotiation: { mode } });
  const transport = new StreamableHTTPClientTransport(new URL(url + "/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${secret}` } },
  });
  await client.connect(transport);
  return client;
}

async function call(client, name, args, error = false) {
  const result = await client.callTool({ name, arguments: args });
  const text = result.content[0].text;
  assert.equal(Boolean(result.isError), error, `${name}: ${text}`);
  return [result.structuredContent, text];
}

async function run(mode, tag, version) {
  const client = await connected(mode);
  assert.equal(client.getNegotiatedProtocolVersion(), version);
  assert.equal(client.getServerVersion().name, "engram");
  const { tools } = await client.listTools();
  assert.equal(tools.length, 11);
  for (const tool of tools) {
    assert.ok(tool.title && tool.outputSchema && tool.outputSchema.type === "object", tool.name);
    assert.equal(tool.annotations.readOnlyHint, READS.has(tool.name), tool.name);
  }
  const seen = [];
  const [fact] = await call(client, "remember_fact", {
    source: "mcp-ts", subject: `service:billing-${tag}`, predicate: "owner", object: "team-payments", tags: [tag] });
  let [found, text] = await call(client, "recall", {
    task_descriptor: "who owns billing", memory_types: ["semantic"], tags: [tag] });
  assert.ok(found.records.some((r) => r.id === fact.record.id), text);
  const [revised] = await call(client, "revise", {
    operation: "supersede", id: fact.record.id, actor: "mcp-ts", rationale: "ownership moved",
    new_record: { type: "semantic", sensitivity: "low", tags: [tag],
      payload: { kind: "semantic", subject: `service:billing-${tag}`, predicate: "owner", object: "team-ledger",
        evidence: [{ source_type: "ticket", source_id: "OPS-12" }] } } });
  [found, text] = await call(client, "recall", {
    task_descriptor: "who owns billing", memory_types: ["semantic"], tags: [tag] });
  assert.ok(text.includes("team-ledger") && !text.includes("team-payments"), text);
  const [old] = await call(client, "get_record", { id: fact.record.id });
  seen.push(old.record.status);
  const [event] = await call(client, "remember_event", {
    source: "mcp-ts", event_kind: "deploy", ref: `run-${tag}`, summary: "billing deployed" });
  await call(client, "record_outcome", { source: "mcp-ts", target_record_id: event.record.id, outcome_status: "success" });
  const [working] = await call(client, "set_working_state", {
    source: "mcp-ts", thread_id: `t-${tag}`, state: "executing", next_actions: ["watch"] });
  seen.push(working.record.payload.state);
  const [penalized] = await call(client, "feedback", {
    kind: "penalize", id: event.record.id, actor: "mcp-ts", rationale: "noise", amount: 0.2 });
  seen.push(Math.round(penalized.record.salience * 1000) / 1000);
  const [contested] = await call(client, "revise", {
    operation: "contest", id: revised.record.id, actor: "mcp-ts", rationale: "disputed", contesting_ref: "wiki:owners" });
  seen.push(contested.record.status);
  const [turns] = await call(client, "remember_conversation", {
    source: "mcp-ts", conversation_id: `support-${tag}`,
    turns: [{ speaker: "Ana", text: "Which plan do I need for SSO?" }, { speaker: "Agent", text: "The business plan." }] });
  seen.push(turns.records.length);
  const [topic] = await call(client, "topic_ingest", {
    title: `Ledger ${tag}`, source: "mcp-ts", fields: [{ name: "owner", value: "team-ledger" }] });
  const [topics] = await call(client, "topic_query", { text: `ledger ${tag}` });
  assert.ok(topics.topics.some((t) => t.topic.id === topic.topic_id));
  const [, refused] = await call(client, "get_record", { id: "no-such-record" }, true);
  seen.push(refused);
  await client.close();
  return [tools, seen];
}

const [modernTools, modern] = await run({ pin: "2026-07-28" }, "ts-modern", "2026-07-28");
const [legacyTools, legacy] = await run("legacy", "ts-legacy", "2025-11-25");
assert.deepEqual(modernTools, legacyTools, "the same tools at both versions");
assert.deepEqual(modern, legacy, "the same answers at both versions");
console.log("MCP TypeScript SDK 2026-07-28 and 2025-11-25: every tool called, the same tools and answers at both");
