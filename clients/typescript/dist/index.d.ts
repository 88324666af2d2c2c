/**
 * A client for engram, the memory service AI agents share over HTTP: every
 * route of its API, with API-key auth, one error class, retries on 429 and
 * 503 after the Retry-After engram sends, and a paging helper for
 * retrieval. It uses the platform's `fetch` (Node 18 or later, browsers).
 *
 * Request bodies and answers keep engram's own field names (snake_case), as
 * the API document and docs/api.md write them.
 */
export type Json = {
    [key: string]: unknown;
};
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
    attachments?: {
        caption: string;
        url?: string;
    }[];
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
    sessions: {
        session_id: string;
        scope?: string;
        started_at: string;
        turns: MemoryRecord[];
    }[];
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
    fields?: {
        [name: string]: Json;
    };
    edges?: Json[];
    [key: string]: unknown;
}
export interface TopicHit {
    topic: Topic;
    score: number;
    neighbors: Json[];
    history?: {
        [field: string]: Json[];
    } | null;
}
export interface TopicIngested {
    topic_id: string;
    placement: string;
    /** Why `auto` extended the topic it did: `by` is `title`, `alias` or `similar`. */
    matched?: {
        topic_id: string;
        by: "title" | "alias" | "similar";
        score: number;
    };
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
export declare class EngramError extends Error {
    readonly status: number;
    /** `invalid_argument`, `not_found`, `rate_limited`, ... (docs/api.md#errors). */
    readonly code: string;
    /** Seconds engram asked to wait before retrying, when it said. */
    readonly retryAfter: number | null;
    constructor(status: number, code: string, message: string, retryAfter?: number | null);
}
export declare class EngramClient {
    readonly url: string;
    private readonly apiKey?;
    private readonly maxRetries;
    private readonly maxRetryWait;
    private readonly timeoutMs;
    private readonly fetch;
    constructor(url?: string, options?: ClientOptions);
    /**
     * Sends one request; answers the response of the first attempt engram
     * did not refuse with 429 or 503 (or of the last one allowed).
     */
    private send;
    private json;
    private record;
    health(): Promise<Json>;
    ready(): Promise<Json>;
    /** The API document (OpenAPI 3.1). */
    openapi(): Promise<Json>;
    /** An event (episodic memory): `event_kind`, `ref`; optional summary, timestamp, tags, scope, sensitivity, embedding. */
    ingestEvent(event: IngestBody & {
        event_kind: string;
        ref: string;
    }): Promise<MemoryRecord>;
    /** A tool call (episodic memory): `tool_name`; optional args, result, depends_on, ... */
    ingestToolOutput(output: IngestBody & {
        tool_name: string;
    }): Promise<MemoryRecord>;
    /** A fact (semantic memory) as subject, predicate and object. */
    ingestObservation(fact: IngestBody & {
        subject: string;
        predicate: string;
        object?: unknown;
    }): Promise<MemoryRecord>;
    /** The outcome (success, failure, partial) of an earlier episode. */
    ingestOutcome(outcome: IngestBody & {
        target_record_id: string;
        outcome_status: "success" | "failure" | "partial";
    }): Promise<MemoryRecord>;
    /** A thread's current task state (working memory). */
    ingestWorkingState(state: IngestBody & {
        thread_id: string;
        state: string;
    }): Promise<MemoryRecord>;
    /** Several items, each with its `kind` (event, tool_output, observation, ...), stored all or none. */
    ingestBatch(items: Json[]): Promise<MemoryRecord[]>;
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
    }): Promise<ConversationIngested>;
    /**
     * A page of a conversation's turns the caller may see, in order, by
     * session; pass `next_cursor` back as `cursor`, with the same request, for
     * the next page.
     */
    conversationTurns(conversationId: string, request?: {
        trust?: Trust;
        scope?: string;
        session_id?: string;
        speakers?: string[];
        after?: string;
        before?: string;
        include_retracted?: boolean;
        page_size?: number;
        cursor?: string;
    }): Promise<ConversationPage>;
    /** A whole record (type, sensitivity, payload, ...), completed by policy. */
    createRecord(record: Json): Promise<MemoryRecord>;
    /** Records the caller may see, best first, with their scores and the selection among procedures. */
    retrieve(request?: RetrieveRequest): Promise<RetrieveResult>;
    /**
     * Every record a retrieval finds (up to its `limit`), across the pages
     * an answer is cut into (`page_size` records, or what fits in the
     * server's `retrieval.max_response_bytes`): follows `next_cursor` until
     * there is none.
     */
    retrieveAll(request?: RetrieveRequest): AsyncGenerator<MemoryRecord, void, undefined>;
    /** Ranked root records and their neighbours through relations and topic links. */
    retrieveGraph(request?: RetrieveRequest & {
        hops?: number;
    }): Promise<Graph>;
    getRecord(id: string, trust?: Trust): Promise<MemoryRecord>;
    /** The record's revision chain, oldest first. */
    history(id: string, trust?: Trust): Promise<MemoryRecord[]>;
    supersede(old_id: string, new_record: Json, actor: string, rationale: string): Promise<MemoryRecord>;
    fork(source_id: string, forked_record: Json, actor: string, rationale: string): Promise<MemoryRecord>;
    retract(id: string, actor: string, rationale: string): Promise<MemoryRecord>;
    merge(ids: string[], merged_record: Json, actor: string, rationale: string): Promise<MemoryRecord>;
    contest(id: string, actor: string, rationale: string, options?: {
        contesting_ref?: string;
        resolve?: boolean;
    }): Promise<MemoryRecord>;
    reinforce(id: string, actor: string, rationale: string): Promise<MemoryRecord>;
    penalize(id: string, actor: string, rationale: string, amount: number): Promise<MemoryRecord>;
    /** Fields: placement, topic_id, title, summary, why_changed, kind, fields, edges, suggest_similar, on_ambiguous, sensitivity, scope, tags, trust, embedding. */
    topicIngest(request: IngestBody): Promise<TopicIngested>;
    /** Fields: text, embedding, kind, limit, hops, as_of, include_history, trust. */
    topicQuery(request?: Json): Promise<TopicHit[]>;
    topicView(id: string, options?: {
        trust?: Trust;
        as_of?: string;
    }): Promise<Topic>;
    fieldHistory(id: string, name: string, trust?: Trust): Promise<Json[]>;
    /** Every summary the topic has had, oldest first. */
    summaryHistory(id: string, trust?: Trust): Promise<Json[]>;
    addEdge(id: string, to_topic_id: string, kind: string, trust?: Trust): Promise<Json>;
    removeEdge(id: string, to_topic_id: string, kind: string, trust?: Trust): Promise<Json>;
    archiveTopic(id: string, trust?: Trust): Promise<Topic>;
    jobs(): Promise<Job[]>;
    updateJob(name: string, change: {
        schedule?: string;
        enabled?: boolean;
    }): Promise<Job>;
    runJob(name: string): Promise<JobRun>;
    keys(): Promise<ApiKey[]>;
    /** Makes a key; answers it and its secret (shown this once). */
    createKey(request: {
        name: string;
        roles?: Role[];
        max_sensitivity?: Sensitivity;
        scopes?: string[];
        rate?: number;
    }): Promise<{
        key: ApiKey;
        secret: string;
    }>;
    revokeKey(name: string): Promise<ApiKey>;
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
    }): Promise<Json>;
    /** The erasure log, newest first (`limit` 1 to 1,000, default 100). */
    erasures(limit?: number): Promise<Json[]>;
    /**
     * A page of the erasure log, newest first; pass `next_cursor` back, with
     * the same `limit`, for the page after.
     */
    erasureLog(limit?: number, cursor?: string): Promise<{
        erasures: Json[];
        next_cursor?: string;
    }>;
    /** Memory aggregates: counts by type, sensitivity and status, salience. */
    metrics(): Promise<Json>;
    /** The Prometheus exposition text. */
    prometheusMetrics(): Promise<string>;
    /** Sends one JSON-RPC message to the MCP endpoint; answers its response (null for a notification). */
    mcp(message: Json): Promise<Json | null>;
}
