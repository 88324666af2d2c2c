/**
 * A client for engram, the memory service AI agents share over HTTP: every
 * route of its API, with API-key auth, one error class, retries on 429 and
 * 503 after the Retry-After engram sends, and a paging helper for
 * retrieval. It uses the platform's `fetch` (Node 18 or later, browsers).
 *
 * Request bodies and answers keep engram's own field names (snake_case), as
 * the API document and docs/api.md write them.
 */

export type Json = { [key: string]: unknown };

export type Sensitivity = "low" | "medium" | "high" | "hyper";
export type MemoryType = "episodic" | "working" | "semantic" | "competence" | "plan_graph";
export type Role = "read" | "write" | "revise" | "admin";

/** Who is reading: needed on a service without keys; with a key, the key's grant applies. */
export interface Trust {
  max_sensitivity: Sensitivity;
  scopes?: string[];
  [key: string]: unknown;
}

/** A memory record: its kind (`type`), trust level, standing and payload. */
export interface MemoryRecord {
  id: string;
  type: MemoryType;
  sensitivity: Sensitivity;
  confidence: number;
  salience: number;
  status: string;
  tags: string[];
  created_at: string;
  updated_at: string;
  payload: Json;
  scope?: string | null;
  lifecycle?: Json;
  provenance?: Json;
  relations?: Json[];
  audit_log?: Json[];
  [key: string]: unknown;
}

/** How one record scored: its text, vector, salience and total parts. */
export interface Score {
  id: string;
  total: number;
  [key: string]: unknown;
}

/** Which of the competing procedures to use, and how sure engram is. */
export interface Selection {
  selected: MemoryRecord[];
  confidence: number;
  needs_more: boolean;
  scores?: Json[];
  [key: string]: unknown;
}

export interface RetrieveResult {
  records: MemoryRecord[];
  scores: Score[];
  selection?: Selection | null;
  /** Present when more records follow: send it as `cursor` for the next page. */
  next_cursor?: string | null;
  [key: string]: unknown;
}

export interface RetrieveRequest {
  trust?: Trust;
  task_descriptor?: string;
  memory_types?: MemoryType[];
  min_salience?: number;
  limit?: number;
  context?: Json;
  include_retracted?: boolean;
  cursor?: string;
  /** At most this many records per answer; the rest of `limit` follows through `next_cursor`. */
  page_size?: number;
  tags?: string[];
  sources?: string[];
  thread_id?: string;
  subject?: string;
  /** Turns of this conversation only. */
  conversation_id?: string;
  /** Turns by any of these speakers only. */
  speakers?: string[];
  /** Each turn returned carries `context: {before, after}`: up to this many (0 to 10) visible turns of its session on each side. */
  context_turns?: number;
  created_after?: string;
  created_before?: string;
  query_embedding?: number[];
  [key: string]: unknown;
}

/** One turn of a conversation, as sent. */
export interface TurnInput {
  speaker: string;
  text: string;
  /** RFC 3339 with an offset; absent: now. */
  at?: string;
  ref?: string;
  attachments?: { caption: string; url?: string }[];
  embedding?: number[];
}

/** What appending turns answers. */
export interface ConversationIngested {
  conversation_id: string;
  session_id: string;
  new_session: boolean;
  records: MemoryRecord[];
}

/** A page of a conversation, by session. */
export interface ConversationPage {
  sessions: { session_id: string; scope?: string; started_at: string; turns: MemoryRecord[] }[];
  next_cursor?: string | null;
}

export interface GraphNode {
  record: MemoryRecord;
  root: boolean;
  hop: number;
}

export interface Graph {
  nodes: GraphNode[];
  edges: Json[];
  [key: string]: unknown;
}

export interface JobRun {
  started_at: string;
  finished_at: string;
  duration_ms: number;
  result?: Json | null;
  error?: string | null;
}

/** A maintenance job: its schedule, whether it is on, and its newest runs. */
export interface Job {
  name: string;
  schedule: string;
  enabled: boolean;
  running: boolean;
  next_run?: string | null;
  last_run?: JobRun | null;
  recent_runs?: JobRun[];
  [key: string]: unknown;
}

/** An API key as engram lists it (never its secret). */
export interface ApiKey {
  name: string;
  roles: Role[];
  max_sensitivity: Sensitivity;
  /** Empty: every scope. */
  scopes: string[];
  created_at: string;
  revoked_at?: string | null;
  /** Requests per second the key is held to: its own, or `auth.default_rate` when `rate_is_default`. */
  rate?: number | null;
  rate_is_default?: boolean;
  [key: string]: unknown;
}

export interface Topic {
  id: string;
  title: string;
  summary?: string;
  sensitivity: Sensitivity;
  salience: number;
  archived: boolean;
  kind?: string | null;
  scope?: string | null;
  tags?: string[];
  fields?: { [name: string]: Json };
  edges?: Json[];
  [key: string]: unknown;
}

export interface TopicHit {
  topic: Topic;
  score: number;
  neighbors: Json[];
  history?: { [field: string]: Json[] } | null;
}

export interface TopicIngested {
  topic_id: string;
  placement: string;
  /** Why `auto` extended the topic it did: `by` is `title`, `alias` or `similar`. */
  matched?: { topic_id: string; by: "title" | "alias" | "similar"; score: number };
  applied: Json[];
  edges_added: number;
  similar_topic_ids: string[];
  [key: string]: unknown;
}

/** A body of one of the ingest routes: `source` and the route's own fields. */
export interface IngestBody {
  source: string;
  [key: string]: unknown;
}

export interface ClientOptions {
  /** The key's secret, sent as `Authorization: Bearer`; leave out on a service without keys. */
  apiKey?: string;
  /** How many times a 429 or 503 is retried (3). */
  maxRetries?: number;
  /** The longest wait before a retry, in seconds, whatever Retry-After says (30). */
  maxRetryWait?: number;
  /** Milliseconds before a request is given up (30000). */
  timeoutMs?: number;
  /** The `fetch` to use (the global one by default). */
  fetch?: typeof fetch;
}

/** Every refused request: engram's HTTP status, its stable error code and message. */
export class EngramError extends Error {
  readonly status: number;
  /** `invalid_argument`, `not_found`, `rate_limited`, ... (docs/api.md#errors). */
  readonly code: string;
  /** Seconds engram asked to wait before retrying, when it said. */
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string, retryAfter: number | null = null) {
    super(message);
    this.name = "EngramError";
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

const RETRIED = new Set([429, 503]);

function retryAfter(response: Response): number | null {
  const value = response.headers.get("retry-after");
  if (value === null) return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}

async function refused(response: Response): Promise<EngramError> {
  const text = await response.text();
  let code = "unknown";
  let message = text;
  try {
    const error = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
    if (error && typeof error.code === "string" && typeof error.message === "string") {
      code = error.code;
      message = error.message;
    }
  } catch {
    // Not engram's JSON (a proxy's page): the text is the message.
  }
  return new EngramError(response.status, code, message, retryAfter(response));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The body without the fields left undefined. */
function body(fields: Json): Json {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

const segment = encodeURIComponent;

export class EngramClient {
  readonly url: string;
  private readonly apiKey?: string;
  private readonly maxRetries: number;
  private readonly maxRetryWait: number;
  private readonly timeoutMs: number;
  private readonly fetch: typeof fetch;

  constructor(url = "http://127.0.0.1:8080", options: ClientOptions = {}) {
    this.url = url.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryWait = options.maxRetryWait ?? 30;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * Sends one request; answers the response of the first attempt engram
   * did not refuse with 429 or 503 (or of the last one allowed).
   */
  private async send(method: string, path: string, payload?: unknown): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    if (payload !== undefined) headers["content-type"] = "application/json";
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), this.timeoutMs);
      let response: Response;
      try {
        response = await this.fetch(this.url + path, {
          method,
          headers,
          body: payload === undefined ? undefined : JSON.stringify(payload),
          signal: controller.signal,
        });
      } finally {
        clearTimeout(timer);
      }
      if (!RETRIED.has(response.status) || attempt >= this.maxRetries) return response;
      const wait = Math.min(retryAfter(response) ?? 1, this.maxRetryWait);
      // The body is not needed; reading it lets the connection be reused.
      await response.arrayBuffer();
      await sleep(wait * 1000);
    }
  }

  private async json<T>(method: string, path: string, payload?: unknown): Promise<T> {
    const response = await this.send(method, path, payload);
    if (!response.ok) throw await refused(response);
    return (await response.json()) as T;
  }

  private async record(path: string, payload: unknown): Promise<MemoryRecord> {
    return (await this.json<{ record: MemoryRecord }>("POST", path, payload)).record;
  }

  // Health and the API document (no key needed).

  health(): Promise<Json> {
    return this.json("GET", "/healthz");
  }

  ready(): Promise<Json> {
    return this.json("GET", "/readyz");
  }

  /** The API document (OpenAPI 3.1). */
  openapi(): Promise<Json> {
    return this.json("GET", "/openapi.json");
  }

  // Ingestion.

  /** An event (episodic memory): `event_kind`, `ref`; optional summary, timestamp, tags, scope, sensitivity, embedding. */
  ingestEvent(event: IngestBody & { event_kind: string; ref: string }): Promise<MemoryRecord> {
    return this.record("/v1/ingest/event", event);
  }

  /** A tool call (episodic memory): `tool_name`; optional args, result, depends_on, ... */
  ingestToolOutput(output: IngestBody & { tool_name: string }): Promise<MemoryRecord> {
    return this.record("/v1/ingest/tool-output", output);
  }

  /** A fact (semantic memory) as subject, predicate and object. */
  ingestObservation(
    fact: IngestBody & { subject: string; predicate: string; object?: unknown },
  ): Promise<MemoryRecord> {
    return this.record("/v1/ingest/observation", fact);
  }

  /** The outcome (success, failure, partial) of an earlier episode. */
  ingestOutcome(
    outcome: IngestBody & { target_record_id: string; outcome_status: "success" | "failure" | "partial" },
  ): Promise<MemoryRecord> {
    return this.record("/v1/ingest/outcome", outcome);
  }

  /** A thread's current task state (working memory). */
  ingestWorkingState(state: IngestBody & { thread_id: string; state: string }): Promise<MemoryRecord> {
    return this.record("/v1/ingest/working-state", state);
  }

  /** Several items, each with its `kind` (event, tool_output, observation, ...), stored all or none. */
  async ingestBatch(items: Json[]): Promise<MemoryRecord[]> {
    return (await this.json<{ records: MemoryRecord[] }>("POST", "/v1/ingest/batch", { items })).records;
  }

  /**
   * Appends turns to a conversation, all or none. Without `session_id`, the
   * turns continue the latest session when its last turn is recent enough
   * (`conversations.session_gap_minutes`), else open a new one.
   */
  ingestConversation(request: {
    source: string;
    conversation_id: string;
    turns: TurnInput[];
    session_id?: string;
    scope?: string;
    sensitivity?: Sensitivity;
    tags?: string[];
  }): Promise<ConversationIngested> {
    return this.json("POST", "/v1/ingest/conversation", body(request));
  }

  /**
   * A page of a conversation's turns the caller may see, in order, by
   * session; pass `next_cursor` back as `cursor`, with the same request, for
   * the next page.
   */
  conversationTurns(
    conversationId: string,
    request: {
      trust?: Trust;
      scope?: string;
      session_id?: string;
      speakers?: string[];
      after?: string;
      before?: string;
      include_retracted?: boolean;
      page_size?: number;
      cursor?: string;
    } = {},
  ): Promise<ConversationPage> {
    return this.json(
      "POST",
      `/v1/conversations/${encodeURIComponent(conversationId)}/turns`,
      body(request),
    );
  }

  /** A whole record (type, sensitivity, payload, ...), completed by policy. */
  createRecord(record: Json): Promise<MemoryRecord> {
    return this.record("/v1/records", record);
  }

  // Retrieval.

  /** Records the caller may see, best first, with their scores and the selection among procedures. */
  retrieve(request: RetrieveRequest = {}): Promise<RetrieveResult> {
    return this.json("POST", "/v1/retrieve", request);
  }

  /**
   * Every record a retrieval finds (up to its `limit`), across the pages
   * an answer is cut into (`page_size` records, or what fits in the
   * server's `retrieval.max_response_bytes`): follows `next_cursor` until
   * there is none.
   */
  async *retrieveAll(request: RetrieveRequest = {}): AsyncGenerator<MemoryRecord, void, undefined> {
    let cursor = request.cursor;
    do {
      const page = await this.retrieve(body({ ...request, cursor }) as RetrieveRequest);
      yield* page.records;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** Ranked root records and their neighbours through relations and topic links. */
  retrieveGraph(request: RetrieveRequest & { hops?: number } = {}): Promise<Graph> {
    return this.json("POST", "/v1/retrieve/graph", request);
  }

  getRecord(id: string, trust?: Trust): Promise<MemoryRecord> {
    return this.record(`/v1/retrieve/${segment(id)}`, body({ trust }));
  }

  /** The record's revision chain, oldest first. */
  async history(id: string, trust?: Trust): Promise<MemoryRecord[]> {
    const path = `/v1/records/${segment(id)}/history`;
    return (await this.json<{ chain: MemoryRecord[] }>("POST", path, body({ trust }))).chain;
  }

  // Revision and feedback.

  supersede(old_id: string, new_record: Json, actor: string, rationale: string): Promise<MemoryRecord> {
    return this.record("/v1/revisions/supersede", { old_id, new_record, actor, rationale });
  }

  fork(source_id: string, forked_record: Json, actor: string, rationale: string): Promise<MemoryRecord> {
    return this.record("/v1/revisions/fork", { source_id, forked_record, actor, rationale });
  }

  retract(id: string, actor: string, rationale: string): Promise<MemoryRecord> {
    return this.record("/v1/revisions/retract", { id, actor, rationale });
  }

  merge(ids: string[], merged_record: Json, actor: string, rationale: string): Promise<MemoryRecord> {
    return this.record("/v1/revisions/merge", { ids, merged_record, actor, rationale });
  }

  contest(
    id: string,
    actor: string,
    rationale: string,
    options: { contesting_ref?: string; resolve?: boolean } = {},
  ): Promise<MemoryRecord> {
    return this.record("/v1/revisions/contest", body({ id, actor, rationale, ...options }));
  }

  reinforce(id: string, actor: string, rationale: string): Promise<MemoryRecord> {
    return this.record(`/v1/records/${segment(id)}/reinforce`, { actor, rationale });
  }

  penalize(id: string, actor: string, rationale: string, amount: number): Promise<MemoryRecord> {
    return this.record(`/v1/records/${segment(id)}/penalize`, { actor, rationale, amount });
  }

  // Topics.

  /** Fields: placement, topic_id, title, summary, why_changed, kind, fields, edges, suggest_similar, on_ambiguous, sensitivity, scope, tags, trust, embedding. */
  topicIngest(request: IngestBody): Promise<TopicIngested> {
    return this.json("POST", "/v1/topics/ingest", request);
  }

  /** Fields: text, embedding, kind, limit, hops, as_of, include_history, trust. */
  async topicQuery(request: Json = {}): Promise<TopicHit[]> {
    return (await this.json<{ topics: TopicHit[] }>("POST", "/v1/topics/query", request)).topics;
  }

  async topicView(id: string, options: { trust?: Trust; as_of?: string } = {}): Promise<Topic> {
    const path = `/v1/topics/${segment(id)}/view`;
    return (await this.json<{ topic: Topic }>("POST", path, body(options))).topic;
  }

  async fieldHistory(id: string, name: string, trust?: Trust): Promise<Json[]> {
    const path = `/v1/topics/${segment(id)}/fields/${segment(name)}/history`;
    return (await this.json<{ versions: Json[] }>("POST", path, body({ trust }))).versions;
  }

  /** Every summary the topic has had, oldest first. */
  async summaryHistory(id: string, trust?: Trust): Promise<Json[]> {
    const path = `/v1/topics/${segment(id)}/summary/history`;
    return (await this.json<{ versions: Json[] }>("POST", path, body({ trust }))).versions;
  }

  addEdge(id: string, to_topic_id: string, kind: string, trust?: Trust): Promise<Json> {
    return this.json("POST", `/v1/topics/${segment(id)}/edges`, body({ to_topic_id, kind, trust }));
  }

  removeEdge(id: string, to_topic_id: string, kind: string, trust?: Trust): Promise<Json> {
    return this.json("DELETE", `/v1/topics/${segment(id)}/edges`, body({ to_topic_id, kind, trust }));
  }

  async archiveTopic(id: string, trust?: Trust): Promise<Topic> {
    const path = `/v1/topics/${segment(id)}/archive`;
    return (await this.json<{ topic: Topic }>("POST", path, body({ trust }))).topic;
  }

  // Operations.

  async jobs(): Promise<Job[]> {
    return (await this.json<{ jobs: Job[] }>("GET", "/v1/jobs")).jobs;
  }

  async updateJob(name: string, change: { schedule?: string; enabled?: boolean }): Promise<Job> {
    return (await this.json<{ job: Job }>("PUT", `/v1/jobs/${segment(name)}`, body(change))).job;
  }

  runJob(name: string): Promise<JobRun> {
    return this.json("POST", `/v1/jobs/${segment(name)}/run`);
  }

  async keys(): Promise<ApiKey[]> {
    return (await this.json<{ keys: ApiKey[] }>("GET", "/v1/keys")).keys;
  }

  /** Makes a key; answers it and its secret (shown this once). */
  createKey(request: {
    name: string;
    roles?: Role[];
    max_sensitivity?: Sensitivity;
    scopes?: string[];
    rate?: number;
  }): Promise<{ key: ApiKey; secret: string }> {
    return this.json("POST", "/v1/keys", body(request));
  }

  async revokeKey(name: string): Promise<ApiKey> {
    return (await this.json<{ key: ApiKey }>("DELETE", `/v1/keys/${segment(name)}`)).key;
  }

  /**
   * Erases records for good, with what was made from them: exactly one of
   * `ids`, `scope`, `source`, `subject`, `conversation_id`; `actor` and `rationale` required;
   * `dry_run` to count only. Answers the report.
   */
  erase(request: {
    ids?: string[];
    scope?: string;
    source?: string;
    subject?: string;
    conversation_id?: string;
    actor: string;
    rationale: string;
    dry_run?: boolean;
    trust?: Trust;
  }): Promise<Json> {
    return this.json("POST", "/v1/erase", body(request));
  }

  /** The erasure log, newest first (`limit` 1 to 1,000, default 100). */
  async erasures(limit?: number): Promise<Json[]> {
    return (await this.erasureLog(limit)).erasures;
  }

  /**
   * A page of the erasure log, newest first; pass `next_cursor` back, with
   * the same `limit`, for the page after.
   */
  erasureLog(limit?: number, cursor?: string): Promise<{ erasures: Json[]; next_cursor?: string }> {
    const query = new URLSearchParams();
    if (limit !== undefined) query.set("limit", String(limit));
    if (cursor !== undefined) query.set("cursor", cursor);
    const text = query.toString();
    return this.json("GET", `/v1/erasures${text ? `?${text}` : ""}`);
  }

  /** Memory aggregates: counts by type, sensitivity and status, salience. */
  metrics(): Promise<Json> {
    return this.json("GET", "/v1/metrics");
  }

  /** The Prometheus exposition text. */
  async prometheusMetrics(): Promise<string> {
    const response = await this.send("GET", "/metrics");
    if (!response.ok) throw await refused(response);
    return response.text();
  }

  /** Sends one JSON-RPC message to the MCP endpoint; answers its response (null for a notification). */
  async mcp(message: Json): Promise<Json | null> {
    const response = await this.send("POST", "/mcp", message);
    if (!response.ok) throw await refused(response);
    return response.status === 202 ? null : ((await response.json()) as Json);
  }
}
