// The client against a real engram: every route, errors, retries and
// paging. The last test checks that every operation of the server's API
// document was called.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { EngramClient, EngramError } from "../dist/index.js";
import { called, startEngram, trackingFetch } from "./server.mjs";

const TRUST = { max_sensitivity: "hyper" };
let server;
let engram;

const fact = (subject, object) => ({
  type: "semantic",
  sensitivity: "low",
  payload: {
    kind: "semantic",
    subject,
    predicate: "owner",
    object,
    evidence: [{ source_type: "ticket", source_id: "T-1" }],
  },
});

before(async () => {
  server = await startEngram();
  engram = new EngramClient(server.url, { apiKey: server.secret, fetch: trackingFetch() });
});

after(() => server.stop());

test("health and the API document", async () => {
  assert.deepEqual(await engram.health(), { status: "ok" });
  assert.deepEqual(await engram.ready(), { status: "ready" });
  assert.equal((await engram.openapi()).openapi, "3.1.0");
});

test("ingest, retrieve, revise and feedback", async () => {
  const event = await engram.ingestEvent({
    source: "agent", event_kind: "deploy", ref: "run-1", summary: "billing deployed", tags: ["deploy"],
  });
  assert.equal(event.type, "episodic");
  const tool = await engram.ingestToolOutput({ source: "agent", tool_name: "node-test", result: { passed: 3 } });
  assert.equal(tool.payload.kind, "episodic");
  const observed = await engram.ingestObservation({
    source: "agent", subject: "service:billing", predicate: "owner", object: "team-a",
  });
  assert.equal(observed.payload.object, "team-a");
  const outcome = await engram.ingestOutcome({ source: "agent", target_record_id: event.id, outcome_status: "success" });
  assert.equal(outcome.id, event.id);
  const working = await engram.ingestWorkingState({
    source: "agent", thread_id: "t-1", state: "executing", next_actions: ["watch"],
  });
  assert.equal(working.type, "working");
  const batch = await engram.ingestBatch([
    { kind: "event", source: "agent", event_kind: "note", ref: "n-1" },
    { kind: "observation", source: "agent", subject: "service:billing", predicate: "tier", object: "gold" },
  ]);
  assert.deepEqual(batch.map((r) => r.type), ["episodic", "semantic"]);
  const made = await engram.createRecord(fact("service:ledger", "team-b"));
  assert.equal(made.sensitivity, "low");

  const found = await engram.retrieve({ trust: TRUST, task_descriptor: "billing owner", memory_types: ["semantic"] });
  assert.ok(found.records.some((r) => r.id === observed.id));
  assert.equal(found.scores.length, found.records.length);
  const graph = await engram.retrieveGraph({ trust: TRUST, task_descriptor: "billing" });
  assert.ok(graph.nodes.some((node) => node.root));
  assert.equal((await engram.getRecord(observed.id, TRUST)).id, observed.id);

  const newer = await engram.supersede(made.id, fact("service:ledger", "team-c"), "agent", "moved");
  assert.deepEqual((await engram.history(newer.id, TRUST)).map((r) => r.id), [made.id, newer.id]);
  const forked = await engram.fork(newer.id, fact("service:ledger-eu", "team-c"), "agent", "EU variant");
  const merged = await engram.merge([newer.id, forked.id], fact("service:ledger", "team-c"), "agent", "one fact");
  assert.equal(merged.status, "active");
  const contested = await engram.contest(merged.id, "agent", "the wiki disagrees", { contesting_ref: "wiki" });
  assert.equal(contested.status, "contested");
  assert.equal((await engram.contest(merged.id, "agent", "settled", { resolve: true })).status, "active");
  assert.equal((await engram.reinforce(merged.id, "agent", "it helped")).id, merged.id);
  assert.ok((await engram.penalize(event.id, "agent", "noise", 0.2)).salience < event.salience);
  assert.equal((await engram.retract(observed.id, "agent", "wrong")).status, "retracted");
});

test("retrieveAll follows the cursor across pages", async () => {
  const cursors = [];
  const paging = new EngramClient(server.url, {
    apiKey: server.secret,
    fetch: async (url, init) => {
      if (init.body) cursors.push(JSON.parse(init.body).cursor ?? null);
      return trackingFetch()(url, init);
    },
  });
  const items = Array.from({ length: 40 }, (_, i) => ({ kind: "event", source: "pager", event_kind: "page", ref: `p-${i}` }));
  const made = (await paging.ingestBatch(items)).map((record) => record.id);
  cursors.length = 0;
  const seen = [];
  for await (const record of paging.retrieveAll({ trust: TRUST, sources: ["pager"], limit: 35, page_size: 15 })) {
    seen.push(record.id);
  }
  assert.equal(seen.length, 35);
  assert.equal(new Set(seen).size, seen.length, "no record twice");
  assert.ok(seen.every((id) => made.includes(id)));
  assert.equal(cursors.length, 3, "pages of 15, 15 and 5");
  assert.equal(cursors[0], null);
  assert.ok(cursors.slice(1).every((c) => typeof c === "string"));
});

test("conversations", async () => {
  const first = await engram.ingestConversation({
    source: "chat",
    conversation_id: "support/42",
    scope: "team-a",
    turns: [
      { speaker: "Ana", text: "Which plan has SSO?", at: "2025-03-01T10:00:00Z" },
      { speaker: "Bo", text: "The business plan.", at: "2025-03-01T10:01:00Z" },
    ],
  });
  assert.equal(first.new_session, true);
  assert.equal(first.records[1].payload.turn.index, 1);
  const more = await engram.ingestConversation({
    source: "chat",
    conversation_id: "support/42",
    scope: "team-a",
    turns: [{ speaker: "Ana", text: "Thanks!", at: "2025-03-01T10:05:00Z" }],
  });
  assert.equal(more.session_id, first.session_id);
  const page = await engram.conversationTurns("support/42", { trust: TRUST, page_size: 2 });
  assert.deepEqual(
    page.sessions[0].turns.map((t) => t.payload.turn.text),
    ["Which plan has SSO?", "The business plan."],
  );
  const rest = await engram.conversationTurns("support/42", {
    trust: TRUST,
    page_size: 2,
    cursor: page.next_cursor,
  });
  assert.equal(rest.sessions[0].turns[0].payload.turn.text, "Thanks!");
  const found = await engram.retrieve({
    trust: TRUST,
    task_descriptor: "SSO plan",
    conversation_id: "support/42",
    context_turns: 1,
  });
  assert.ok(found.records[0].context.after.length > 0);
  const report = await engram.erase({ conversation_id: "support/42", actor: "dpo", rationale: "test" });
  assert.equal(report.erased, 3);
});

test("topics", async () => {
  const made = await engram.topicIngest({
    source: "agent", placement: "new_topic", title: "Billing", kind: "service",
    fields: [{ name: "owner", value: "team-a" }], trust: TRUST,
  });
  const other = await engram.topicIngest({
    source: "agent", title: "Ledger", fields: [{ name: "owner", value: "b" }], trust: TRUST,
  });
  const again = await engram.topicIngest({
    source: "agent", title: "Billing", fields: [{ name: "owner", value: "team-c" }], trust: TRUST,
  });
  assert.equal(again.topic_id, made.topic_id);
  assert.equal(again.applied[0].op, "versioned");
  const hits = await engram.topicQuery({ trust: TRUST, text: "billing", include_history: true });
  assert.equal(hits[0].topic.id, made.topic_id);
  const view = await engram.topicView(made.topic_id, { trust: TRUST });
  assert.equal(view.fields.owner.value, "team-c");
  const versions = await engram.fieldHistory(made.topic_id, "owner", TRUST);
  assert.deepEqual(versions.map((v) => v.value), ["team-a", "team-c"]);
  assert.deepEqual(again.matched, { topic_id: made.topic_id, by: "title", score: 1 });
  await engram.topicIngest({ source: "agent", title: "Billing", summary: "invoices", trust: TRUST });
  const summaries = await engram.summaryHistory(made.topic_id, TRUST);
  assert.deepEqual(summaries.map((v) => v.summary), ["invoices"]);
  assert.equal((await engram.addEdge(made.topic_id, other.topic_id, "depends_on", TRUST)).added, true);
  assert.deepEqual(await engram.removeEdge(made.topic_id, other.topic_id, "depends_on", TRUST), { removed: true });
  assert.equal((await engram.archiveTopic(other.topic_id, TRUST)).archived, true);
});

test("operations: jobs, keys, metrics, MCP", async () => {
  const jobs = await engram.jobs();
  assert.deepEqual(jobs.map((j) => j.name).sort(), ["consolidation", "decay"]);
  const changed = await engram.updateJob("decay", { schedule: "0 */30 * * * *", enabled: false });
  assert.deepEqual([changed.schedule, changed.enabled], ["0 */30 * * * *", false]);
  const run = await engram.runJob("decay");
  assert.equal(run.error ?? null, null);
  assert.ok(run.result);
  const { key, secret } = await engram.createKey({ name: "reader", roles: ["read"], max_sensitivity: "medium" });
  assert.deepEqual(key.roles, ["read"]);
  assert.ok(secret);
  assert.equal(key.rate_is_default, true);
  assert.ok((await engram.keys()).some((k) => k.name === "reader"));
  assert.ok((await engram.revokeKey("reader")).revoked_at);
  const doomed = await engram.ingestEvent({ source: "eraser-test", event_kind: "user_input", ref: "r", summary: "gone" });
  const dry = await engram.erase({ source: "eraser-test", actor: "dpo", rationale: "test", dry_run: true });
  assert.equal(dry.erased, 1);
  assert.equal((await engram.erase({ ids: [doomed.id], actor: "dpo", rationale: "test" })).erased, 1);
  assert.equal((await engram.erasures(10))[0].selector, "ids");
  const second = await engram.ingestEvent({ source: "eraser-test", event_kind: "user_input", ref: "s", summary: "gone" });
  await engram.erase({ ids: [second.id], actor: "dpo", rationale: "test" });
  const firstPage = await engram.erasureLog(1);
  const nextPage = await engram.erasureLog(1, firstPage.next_cursor);
  assert.notEqual(firstPage.erasures[0].id, nextPage.erasures[0].id);
  const revoked = new EngramClient(server.url, { apiKey: secret, fetch: trackingFetch() });
  await assert.rejects(revoked.retrieve({ trust: TRUST }), (error) => {
    assert.ok(error instanceof EngramError);
    assert.equal(error.status, 401);
    assert.equal(error.code, "unauthenticated");
    return true;
  });
  const stats = await engram.metrics();
  assert.ok("semantic" in stats.records_by_type, JSON.stringify(stats));
  assert.match(await engram.prometheusMetrics(), /engram_/);
  const answer = await engram.mcp({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  assert.ok(answer.result.tools.some((tool) => tool.name === "recall"));
  assert.equal(await engram.mcp({ jsonrpc: "2.0", method: "notifications/initialized" }), null);
});

test("errors are one class with status, code and message", async () => {
  await assert.rejects(engram.ingestEvent({ source: "", event_kind: "deploy", ref: "run-1" }), (error) => {
    assert.ok(error instanceof EngramError && error instanceof Error);
    assert.deepEqual([error.status, error.code], [400, "invalid_argument"]);
    assert.match(error.message, /source/);
    return true;
  });
  await assert.rejects(engram.getRecord("no-such-record", TRUST), (error) => {
    assert.deepEqual([error.status, error.code], [404, "not_found"]);
    return true;
  });
});

test("rate limits are retried after Retry-After", async () => {
  const { secret } = await engram.createKey({ name: "slow", roles: ["read"], rate: 1 });
  const once = new EngramClient(server.url, { apiKey: secret, maxRetries: 0, fetch: trackingFetch() });
  await assert.rejects(
    (async () => {
      for (let i = 0; i < 5; i++) await once.retrieve({ trust: TRUST });
    })(),
    (error) => {
      assert.deepEqual([error.status, error.code], [429, "rate_limited"]);
      assert.ok(error.retryAfter >= 1, String(error.retryAfter));
      return true;
    },
  );
  const attempts = [];
  const patient = new EngramClient(server.url, { apiKey: secret, maxRetries: 5, fetch: trackingFetch(attempts) });
  const started = Date.now();
  for (let i = 0; i < 3; i++) await patient.retrieve({ trust: TRUST });
  assert.ok(attempts.includes(429) && attempts.at(-1) === 200, String(attempts));
  assert.ok(Date.now() - started >= 1000);
});

test("503 is retried, and maxRetryWait caps the wait", async () => {
  const statuses = [503, 503, 200];
  const waits = [];
  let last = Date.now();
  const flaky = new EngramClient("http://engram.invalid", {
    maxRetryWait: 0.05,
    fetch: async () => {
      const now = Date.now();
      waits.push(now - last);
      last = now;
      const status = statuses.shift();
      return new Response(status === 200 ? "{\"status\":\"ok\"}" : "{\"error\":{\"code\":\"overloaded\",\"message\":\"busy\"}}", {
        status,
        headers: { "retry-after": "120", "content-type": "application/json" },
      });
    },
  });
  assert.deepEqual(await flaky.health(), { status: "ok" });
  assert.equal(statuses.length, 0, "three attempts");
  assert.ok(waits.slice(1).every((ms) => ms < 5000), `waits capped: ${waits}`);
});

test("every route of the API document was called", async () => {
  const document = await engram.openapi();
  const missing = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    for (const method of Object.keys(item)) {
      const wanted = method.toUpperCase();
      const seen = [...called].some((call) => {
        const [m, p] = call.split(" ");
        return m === wanted && pattern.test(p);
      });
      if (!seen) missing.push(`${wanted} ${path}`);
    }
  }
  assert.deepEqual(missing, [], "routes the tests never called");
});
