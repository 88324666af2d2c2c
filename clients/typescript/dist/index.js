/**
 * A client for engram, the memory service AI agents share over HTTP: every
 * route of its API, with API-key auth, one error class, retries on 429 and
 * 503 after the Retry-After engram sends, and a paging helper for
 * retrieval. It uses the platform's `fetch` (Node 18 or later, browsers).
 *
 * Request bodies and answers keep engram's own field names (snake_case), as
 * the API document and docs/api.md write them.
 */
/** Every refused request: engram's HTTP status, its stable error code and message. */
export class EngramError extends Error {
    status;
    /** `invalid_argument`, `not_found`, `rate_limited`, ... (docs/api.md#errors). */
    code;
    /** Seconds engram asked to wait before retrying, when it said. */
    retryAfter;
    constructor(status, code, message, retryAfter = null) {
        super(message);
        this.name = "EngramError";
        this.status = status;
        this.code = code;
        this.retryAfter = retryAfter;
    }
}
const RETRIED = new Set([429, 503]);
function retryAfter(response) {
    const value = response.headers.get("retry-after");
    if (value === null)
        return null;
    const seconds = Number(value);
    return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}
async function refused(response) {
    const text = await response.text();
    let code = "unknown";
    let message = text;
    try {
        const error = JSON.parse(text).error;
        if (error && typeof error.code === "string" && typeof error.message === "string") {
            code = error.code;
            message = error.message;
        }
    }
    catch {
        // Not engram's JSON (a proxy's page): the text is the message.
    }
    return new EngramError(response.status, code, message, retryAfter(response));
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** The body without the fields left undefined. */
function body(fields) {
    return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
const segment = encodeURIComponent;
export class EngramClient {
    url;
    apiKey;
    maxRetries;
    maxRetryWait;
    timeoutMs;
    fetch;
    constructor(url = "http://127.0.0.1:8080", options = {}) {
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
    async send(method, path, payload) {
        const headers = { accept: "application/json" };
        if (this.apiKey)
            headers.authorization = `Bearer ${this.apiKey}`;
        if (payload !== undefined)
            headers["content-type"] = "application/json";
        for (let attempt = 0;; attempt++) {
            const controller = new AbortController();
            const timer = setTimeout(() => controller.abort(), this.timeoutMs);
            let response;
            try {
                response = await this.fetch(this.url + path, {
                    method,
                    headers,
                    body: payload === undefined ? undefined : JSON.stringify(payload),
                    signal: controller.signal,
                });
            }
            finally {
                clearTimeout(timer);
            }
            if (!RETRIED.has(response.status) || attempt >= this.maxRetries)
                return response;
            const wait = Math.min(retryAfter(response) ?? 1, this.maxRetryWait);
            // The body is not needed; reading it lets the connection be reused.
            await response.arrayBuffer();
            await sleep(wait * 1000);
        }
    }
    async json(method, path, payload) {
        const response = await this.send(method, path, payload);
        if (!response.ok)
            throw await refused(response);
        return (await response.json());
    }
    async record(path, payload) {
        return (await this.json("POST", path, payload)).record;
    }
    // Health and the API document (no key needed).
    health() {
        return this.json("GET", "/healthz");
    }
    ready() {
        return this.json("GET", "/readyz");
    }
    /** The API document (OpenAPI 3.1). */
    openapi() {
        return this.json("GET", "/openapi.json");
    }
    // Ingestion.
    /** An event (episodic memory): `event_kind`, `ref`; optional summary, timestamp, tags, scope, sensitivity, embedding. */
    ingestEvent(event) {
        return this.record("/v1/ingest/event", event);
    }
    /** A tool call (episodic memory): `tool_name`; optional args, result, depends_on, ... */
    ingestToolOutput(output) {
        return this.record("/v1/ingest/tool-output", output);
    }
    /** A fact (semantic memory) as subject, predicate and object. */
    ingestObservation(fact) {
        return this.record("/v1/ingest/observation", fact);
    }
    /** The outcome (success, failure, partial) of an earlier episode. */
    ingestOutcome(outcome) {
        return this.record("/v1/ingest/outcome", outcome);
    }
    /** A thread's current task state (working memory). */
    ingestWorkingState(state) {
        return this.record("/v1/ingest/working-state", state);
    }
    /** Several items, each with its `kind` (event, tool_output, observation, ...), stored all or none. */
    async ingestBatch(items) {
        return (await this.json("POST", "/v1/ingest/batch", { items })).records;
    }
    /**
     * Appends turns to a conversation, all or none. Without `session_id`, the
     * turns continue the latest session when its last turn is recent enough
     * (`conversations.session_gap_minutes`), else open a new one.
     */
    ingestConversation(request) {
        return this.json("POST", "/v1/ingest/conversation", body(request));
    }
    /**
     * A page of a conversation's turns the caller may see, in order, by
     * session; pass `next_cursor` back as `cursor`, with the same request, for
     * the next page.
     */
    conversationTurns(conversationId, request = {}) {
        return this.json("POST", `/v1/conversations/${encodeURIComponent(conversationId)}/turns`, body(request));
    }
    /** A whole record (type, sensitivity, payload, ...), completed by policy. */
    createRecord(record) {
        return this.record("/v1/records", record);
    }
    // Retrieval.
    /** Records the caller may see, best first, with their scores and the selection among procedures. */
    retrieve(request = {}) {
        return this.json("POST", "/v1/retrieve", request);
    }
    /**
     * Every record a retrieval finds (up to its `limit`), across the pages
     * an answer is cut into (`page_size` records, or what fits in the
     * server's `retrieval.max_response_bytes`): follows `next_cursor` until
     * there is none.
     */
    async *retrieveAll(request = {}) {
        let cursor = request.cursor;
        do {
            const page = await this.retrieve(body({ ...request, cursor }));
            yield* page.records;
            cursor = page.next_cursor ?? undefined;
        } while (cursor);
    }
    /** Ranked root records and their neighbours through relations and topic links. */
    retrieveGraph(request = {}) {
        return this.json("POST", "/v1/retrieve/graph", request);
    }
    getRecord(id, trust) {
        return this.record(`/v1/retrieve/${segment(id)}`, body({ trust }));
    }
    /** The record's revision chain, oldest first. */
    async history(id, trust) {
        const path = `/v1/records/${segment(id)}/history`;
        return (await this.json("POST", path, body({ trust }))).chain;
    }
    // Revision and feedback.
    supersede(old_id, new_record, actor, rationale) {
        return this.record("/v1/revisions/supersede", { old_id, new_record, actor, rationale });
    }
    fork(source_id, forked_record, actor, rationale) {
        return this.record("/v1/revisions/fork", { source_id, forked_record, actor, rationale });
    }
    retract(id, actor, rationale) {
        return this.record("/v1/revisions/retract", { id, actor, rationale });
    }
    merge(ids, merged_record, actor, rationale) {
        return this.record("/v1/revisions/merge", { ids, merged_record, actor, rationale });
    }
    contest(id, actor, rationale, options = {}) {
        return this.record("/v1/revisions/contest", body({ id, actor, rationale, ...options }));
    }
    reinforce(id, actor, rationale) {
        return this.record(`/v1/records/${segment(id)}/reinforce`, { actor, rationale });
    }
    penalize(id, actor, rationale, amount) {
        return this.record(`/v1/records/${segment(id)}/penalize`, { actor, rationale, amount });
    }
    // Topics.
    /** Fields: placement, topic_id, title, summary, why_changed, kind, fields, edges, suggest_similar, on_ambiguous, sensitivity, scope, tags, trust, embedding. */
    topicIngest(request) {
        return this.json("POST", "/v1/topics/ingest", request);
    }
    /** Fields: text, embedding, kind, limit, hops, as_of, include_history, trust. */
    async topicQuery(request = {}) {
        return (await this.json("POST", "/v1/topics/query", request)).topics;
    }
    async topicView(id, options = {}) {
        const path = `/v1/topics/${segment(id)}/view`;
        return (await this.json("POST", path, body(options))).topic;
    }
    async fieldHistory(id, name, trust) {
        const path = `/v1/topics/${segment(id)}/fields/${segment(name)}/history`;
        return (await this.json("POST", path, body({ trust }))).versions;
    }
    /** Every summary the topic has had, oldest first. */
    async summaryHistory(id, trust) {
        const path = `/v1/topics/${segment(id)}/summary/history`;
        return (await this.json("POST", path, body({ trust }))).versions;
    }
    addEdge(id, to_topic_id, kind, trust) {
        return this.json("POST", `/v1/topics/${segment(id)}/edges`, body({ to_topic_id, kind, trust }));
    }
    removeEdge(id, to_topic_id, kind, trust) {
        return this.json("DELETE", `/v1/topics/${segment(id)}/edges`, body({ to_topic_id, kind, trust }));
    }
    async archiveTopic(id, trust) {
        const path = `/v1/topics/${segment(id)}/archive`;
        return (await this.json("POST", path, body({ trust }))).topic;
    }
    // Operations.
    async jobs() {
        return (await this.json("GET", "/v1/jobs")).jobs;
    }
    async updateJob(name, change) {
        return (await this.json("PUT", `/v1/jobs/${segment(name)}`, body(change))).job;
    }
    runJob(name) {
        return this.json("POST", `/v1/jobs/${segment(name)}/run`);
    }
    async keys() {
        return (await this.json("GET", "/v1/keys")).keys;
    }
    /** Makes a key; answers it and its secret (shown this once). */
    createKey(request) {
        return this.json("POST", "/v1/keys", body(request));
    }
    async revokeKey(name) {
        return (await this.json("DELETE", `/v1/keys/${segment(name)}`)).key;
    }
    /**
     * Erases records for good, with what was made from them: exactly one of
     * `ids`, `scope`, `source`, `subject`, `conversation_id`; `actor` and `rationale` required;
     * `dry_run` to count only. Answers the report.
     */
    erase(request) {
        return this.json("POST", "/v1/erase", body(request));
    }
    /** The erasure log, newest first (`limit` 1 to 1,000, default 100). */
    async erasures(limit) {
        return (await this.erasureLog(limit)).erasures;
    }
    /**
     * A page of the erasure log, newest first; pass `next_cursor` back, with
     * the same `limit`, for the page after.
     */
    erasureLog(limit, cursor) {
        const query = new URLSearchParams();
        if (limit !== undefined)
            query.set("limit", String(limit));
        if (cursor !== undefined)
            query.set("cursor", cursor);
        const text = query.toString();
        return this.json("GET", `/v1/erasures${text ? `?${text}` : ""}`);
    }
    /** Memory aggregates: counts by type, sensitivity and status, salience. */
    metrics() {
        return this.json("GET", "/v1/metrics");
    }
    /** The Prometheus exposition text. */
    async prometheusMetrics() {
        const response = await this.send("GET", "/metrics");
        if (!response.ok)
            throw await refused(response);
        return response.text();
    }
    /** Sends one JSON-RPC message to the MCP endpoint; answers its response (null for a notification). */
    async mcp(message) {
        const response = await this.send("POST", "/mcp", message);
        if (!response.ok)
            throw await refused(response);
        return response.status === 202 ? null : (await response.json());
    }
}
