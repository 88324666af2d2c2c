// A round trip through a TypeScript client generated from engram's API
// document: types by openapi-typescript, calls by openapi-fetch, compiled
// by tsc in strict mode (a request or answer the types do not allow fails
// the compile), then run against a live server: every ingest kind, a
// batch, retrieval by text (page by page), by id and as a graph, each
// revision, topics (ingest, query, view), an erasure's dry run, the keys.
//
// Usage (compiled): node ts_round_trip.js URL ADMIN_SECRET
import createClient from "openapi-fetch";
import type { paths } from "./schema";

// Node's, without its type package.
declare const process: { argv: string[]; exit(code: number): never };

const [url, secret] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl: url, headers: { Authorization: `Bearer ${secret}` } });
const high = { max_sensitivity: "high" as const };

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

function answered<T>(result: { data?: T; error?: unknown }, what: string): T {
  check(result.data !== undefined, `${what}: ${JSON.stringify(result.error)}`);
  return result.data;
}

async function main(): Promise<void> {
  const event = answered(await client.POST("/v1/ingest/event", {
    body: { source: "gen-ts", event_kind: "deploy", ref: "run-1", summary: "billing deployed", tags: ["billing"] },
  }), "event").record;
  answered(await client.POST("/v1/ingest/tool-output", {
    body: { source: "gen-ts", tool_name: "jest", args: { path: "src/" }, result: { passed: 3 } },
  }), "tool output");
  const fact = answered(await client.POST("/v1/ingest/observation", {
    body: { source: "gen-ts", subject: "service:billing", predicate: "owner", object: "team-payments", tags: ["billing"] },
  }), "observation").record;
  answered(await client.POST("/v1/ingest/outcome", {
    body: { source: "gen-ts", target_record_id: event.id, outcome_status: "success" },
  }), "outcome");
  answered(await client.POST("/v1/ingest/working-state", {
    body: { source: "gen-ts", thread_id: "t-1", state: "executing", next_actions: ["watch"] },
  }), "working state");
  const batch = answered(await client.POST("/v1/ingest/batch", {
    body: { items: [
      { kind: "event", source: "gen-ts", event_kind: "deploy", ref: "run-2" },
      { kind: "observation", source: "gen-ts", subject: "service:billing", predicate: "version", object: "1.4" },
      { kind: "working_state", source: "gen-ts", thread_id: "t-2", state: "planning" },
    ] },
  }), "batch");
  check(batch.records.map((r) => r.type).join() === "episodic,semantic,working", "batch types");

  const seen: string[] = [];
  let cursor: string | null | undefined;
  do {
    const page = answered(await client.POST("/v1/retrieve", {
      body: { trust: high, task_descriptor: "billing", page_size: 1, ...(cursor ? { cursor } : {}) },
    }), "retrieve");
    seen.push(...page.records.map((r) => r.id));
    cursor = page.next_cursor;
  } while (cursor);
  check(seen.includes(fact.id) && seen.length >= 3, `paged: ${seen}`);
  const byId = answered(await client.POST("/v1/retrieve/{id}", {
    params: { path: { id: fact.id } }, body: { trust: high },
  }), "by id");
  check(byId.record.id === fact.id, "by id");
  const graph = answered(await client.POST("/v1/retrieve/graph", {
    body: { trust: high, task_descriptor: "billing owner", max_hops: 1 },
  }), "graph");
  check(graph.nodes.some((n) => n.record.id === fact.id), "graph");

  const superseded = answered(await client.POST("/v1/revisions/supersede", {
    body: { old_id: fact.id, actor: "gen-ts", rationale: "ownership moved",
      new_record: { type: "semantic", sensitivity: "low",
        payload: { kind: "semantic", subject: "service:billing", predicate: "owner", object: "team-ledger",
          evidence: [{ source_type: "ticket", source_id: "OPS-12" }] } } },
  }), "supersede").record;
  check(superseded.payload.kind === "semantic" && superseded.payload.object === "team-ledger", "supersede");
  const contested = answered(await client.POST("/v1/revisions/contest", {
    body: { id: superseded.id, actor: "gen-ts", rationale: "the wiki disagrees", contesting_ref: "wiki:owners" },
  }), "contest").record;
  check(contested.status === "contested", "contest");
  const retracted = answered(await client.POST("/v1/revisions/retract", {
    body: { id: batch.records[1].id, actor: "gen-ts", rationale: "a wrong version" },
  }), "retract").record;
  check(retracted.status === "retracted", "retract");

  const made = answered(await client.POST("/v1/topics/ingest", {
    body: { title: "Payment service", source: "gen-ts", trust: high, fields: [{ name: "version", value: "2.4.1" }] },
  }), "topic ingest");
  const found = answered(await client.POST("/v1/topics/query", {
    body: { trust: high, text: "payments" },
  }), "topic query");
  check(found.topics.some((hit) => hit.topic.id === made.topic_id), "topic query");
  const view = answered(await client.POST("/v1/topics/{id}/view", {
    params: { path: { id: made.topic_id } }, body: { trust: high },
  }), "topic view");
  check(view.topic.fields["version"]?.value === "2.4.1", "topic view");

  const report = answered(await client.POST("/v1/erase", {
    body: { source: "gen-ts", actor: "gen-ts", rationale: "a dry run", dry_run: true },
  }), "erase");
  check(report.dry_run && report.erased >= 1, "erase dry run");
  const keys = answered(await client.GET("/v1/keys"), "keys");
  check(keys.keys.some((key) => key.name === "generated-admin"), "keys");
  console.log("generated TypeScript client: every call made, typed both ways");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
