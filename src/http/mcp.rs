//! `POST /mcp`: engram as a Model Context Protocol server, so an agent that
//! speaks MCP can use it as tools. Streamable HTTP transport, each request
//! answered with one JSON body, or one event for a client that accepts only
//! a stream (no server-initiated stream; `GET /mcp` is 405, as the
//! transport allows). It sits behind the same keys as the rest of the API,
//! and each tool needs the role its HTTP route needs.
//!
//! Two eras on one endpoint: the handshake versions (2024-11-05 to
//! 2025-11-25, `initialize` first) here, and the stateless protocol
//! (2026-07-28) in `mcp/modern.rs`, chosen by the `MCP-Protocol-Version`
//! header. The tools are the same in both.
//!
//! A tool's arguments are the body of the route it stands for, parsed by
//! the same types with the same checks and error messages, and its input
//! schema is that body's schema from the API document. The answer is short
//! text a model can read, with the route's JSON as structured content.

use actix_web::http::{header, Method};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use utoipa::openapi::schema::{SchemaType, Type};
use utoipa::openapi::ObjectBuilder;

use super::auth::Gatekeeper;
use super::ingest::{ingest_conversation, ingest_item};
use super::retrieve::{record_by_id, retrieved};
use super::revisions::revised;
use super::topics::{ingested, queried, IngestBody, QueryBody};
use super::{openapi, parse_json, AppState, Endpoint, JsonBytes};
use crate::domain::access::{Access, Role};
use crate::domain::new_record::NewRecord;
use crate::domain::payload::Payload;
use crate::domain::record::MemoryRecord;
use crate::domain::requests::{
    ContestRequest, ConversationRequest, EventRequest, IngestItem, ObservationRequest,
    OutcomeRequest, PenalizeRequest, ReinforceRequest, RetractRequest, RetrieveRequest,
    RevisionRequest, SupersedeRequest, WorkingStateRequest,
};
use crate::domain::trust::TrustContext;
use crate::domain::validate::ValidationError;
use crate::error::{ApiError, Code, ErrorBody};
use crate::telemetry::MemoryOperation;

mod modern;

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::new(Method::POST, "/mcp", Role::Read, mcp)]
}

/// The handshake-era protocol versions this server speaks, newest first:
/// a session agreed at `initialize`.
const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless protocol versions this server speaks (2026-07-28 and
/// later): no handshake; each request names its version and the client's
/// capabilities in `params._meta` and in its headers (see [`modern`]).
const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// Every version this server speaks, newest first, as an unsupported
/// version's error lists them.
pub(super) fn every_version() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(PROTOCOL_VERSIONS.iter())
        .copied()
        .collect()
}

/// The version a request without `MCP-Protocol-Version` is taken to speak,
/// as the transport says (the header came with 2025-06-18).
const UNSTATED_VERSION: &str = "2025-03-26";

/// Whether JSON-RPC batches are part of `version`: 2025-03-26 added them,
/// 2025-06-18 took them out again.
fn has_batches(version: &str) -> bool {
    version == "2025-03-26"
}

/// A JSON-RPC 2.0 message from the client: a request (with `id`) or a
/// notification (without).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))]
pub struct RpcRequest {
    #[schema(schema_with = jsonrpc_version)]
    jsonrpc: String,
    /// A string or a number; absent in a notification.
    #[serde(default)]
    #[schema(schema_with = request_id)]
    id: Option<Value>,
    /// `initialize`, `ping`, `tools/list`, `tools/call`, or a notification.
    method: String,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    params: Option<Value>,
}

/// The answer to a request: `result` or `error`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RpcResponse {
    #[schema(value_type = String, example = "2.0")]
    jsonrpc: &'static str,
    /// The request's id, exactly as it was sent (a number keeps every
    /// digit); `null` when the request could not be read.
    #[schema(schema_with = response_id)]
    id: RpcId,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    result: Option<Answer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<RpcError>,
}

/// A method's result: a value made for the request, or JSON written once
/// and sent as it is (the tool list).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Answer {
    Made(Value),
    Written(&'static RawValue),
}

fn jsonrpc_version() -> utoipa::openapi::Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["2.0"]))
        .description(Some("Always `2.0`."))
        .build()
}

fn id_schema(types: &[Type], description: &str) -> utoipa::openapi::Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter(types.iter().cloned()))
        .description(Some(description))
        .build()
}

fn request_id() -> utoipa::openapi::Object {
    id_schema(
        &[Type::String, Type::Number],
        "A string or a number; absent in a notification.",
    )
}

fn response_id() -> utoipa::openapi::Object {
    id_schema(
        &[Type::String, Type::Number, Type::Null],
        "The request's id; `null` when the request could not be read.",
    )
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RpcError {
    /// JSON-RPC's: -32700 not JSON, -32600 not a valid request, -32601
    /// unknown method, -32602 bad parameters; MCP's: -32020 headers that
    /// do not match the body, -32022 an unsupported protocol version.
    code: i64,
    message: String,
    /// With -32022, `{"supported": [...], "requested": "..."}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    data: Option<Box<Value>>,
}

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
/// MCP 2026-07-28: the HTTP headers do not match the request's body, or a
/// required one is missing.
const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the request's protocol version is not one spoken here.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// A request's id as its client wrote it; `None` where none could be read.
type RpcId = Option<Box<RawValue>>;

/// A message of a batch not run or not returned: the batch reached the
/// deadline or the response size of one request (a server error in
/// JSON-RPC's reserved range).
const LIMIT_EXCEEDED: i64 = -32000;

fn rpc_error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
        data: None,
    }
}

/// The error for a request naming protocol version `requested`, which this
/// server does not speak: every version it does, for the client to pick.
fn unsupported_version(requested: &str) -> RpcError {
    RpcError {
        code: UNSUPPORTED_PROTOCOL_VERSION,
        message: format!(
            "Unsupported protocol version {requested:?}: this server speaks {}",
            every_version().join(", ")
        ),
        data: Some(Box::new(
            json!({"supported": every_version(), "requested": requested}),
        )),
    }
}

impl RpcResponse {
    fn new(id: RpcId, outcome: Result<Answer, RpcError>) -> RpcResponse {
        let (result, error) = match outcome {
            Ok(result) => (Some(result), None),
            Err(error) => (None, Some(error)),
        };
        RpcResponse {
            jsonrpc: "2.0",
            id,
            result,
            error,
        }
    }

    fn failed(id: RpcId, code: i64, message: impl Into<String>) -> RpcResponse {
        RpcResponse::new(id, Err(rpc_error(code, message)))
    }
}

#[utoipa::path(
    post,
    path = "/mcp",
    operation_id = "callMcp",
    tag = "mcp",
    summary = "Model Context Protocol (streamable HTTP)",
    description = "A JSON-RPC 2.0 message. Requests (`initialize`, `ping`, `tools/list`, `tools/call`; `server/discover`, `tools/list`, `tools/call` in 2026-07-28) are answered with one JSON-RPC response: as JSON, or as a one-event `text/event-stream` when the request accepts only that; notifications with 202 and no body. Protocol versions 2026-07-28 (stateless: `params._meta` names the version and the client's capabilities, the `Mcp-Method` and `Mcp-Name` headers repeat the method and a tool's name) and 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05 (the `initialize` handshake); a request without `MCP-Protocol-Version` is taken as 2025-03-26, the one version with JSON-RPC batches (an array of messages, answered with an array). Bytes that are not JSON are 400 with JSON-RPC error -32700; a message that is not a JSON-RPC request or a batch where the version has none are 400 with -32600; a version no era speaks is 400 with -32022 and the versions spoken; in 2026-07-28, a missing `_meta` is 400 with -32602, headers that do not match the body 400 with -32020, an unknown method 404 with -32601. Each tool needs the role of the route it stands for.",
    request_body = RpcRequest,
    params(
        ("MCP-Protocol-Version" = Option<String>, Header, description = "2026-07-28, or the version agreed at `initialize`; 2025-03-26 when absent"),
        ("Mcp-Method" = Option<String>, Header, description = "2026-07-28: the request's method"),
        ("Mcp-Name" = Option<String>, Header, description = "2026-07-28, `tools/call`: the tool's name"),
    ),
    responses(
        (status = 200, description = "The JSON-RPC response (an array for a batch)", body = RpcResponse),
        (status = 202, description = "A notification (or a batch of them), taken"),
        (status = 400, description = "Not JSON (-32700), not a JSON-RPC request or a batch the version lacks (-32600), an unsupported protocol version (-32022); in 2026-07-28, no `_meta` (-32602) or headers that do not match the body (-32020)", body = RpcResponse),
        (status = 404, description = "2026-07-28: a method the stateless protocol has not (-32601)", body = RpcResponse),
    )
)]
async fn mcp(
    state: web::Data<AppState>,
    access: Access,
    req: HttpRequest,
    body: JsonBytes,
) -> Result<HttpResponse, ApiError> {
    let JsonBytes(body, _permit) = body;
    let stream = wants_event_stream(&req);
    // Read as raw JSON first: each message's id is echoed as it was sent.
    let message: &RawValue = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(e) => {
            let message = format!("parse error: the body is not JSON ({e})");
            return Ok(unreadable(PARSE_ERROR, message));
        }
    };
    let version = match req.headers().get(PROTOCOL_VERSION_HEADER) {
        None => UNSTATED_VERSION,
        Some(value) => match PROTOCOL_VERSIONS
            .iter()
            .find(|known| value.as_bytes() == known.as_bytes())
        {
            Some(known) => known,
            // Any other version is the stateless protocol's to accept or
            // refuse, with the versions spoken.
            None => return Ok(modern::answer(&state, &access, &req, message, stream).await),
        },
    };
    if !message.get().starts_with('[') {
        return Ok(match read_message(message, false) {
            Err(refused) => bad_request(refused),
            Ok(None) => HttpResponse::Accepted().finish(),
            Ok(Some((id, request))) => {
                let answer = RpcResponse::new(id, run_method(&state, &access, request).await);
                respond(stream, &answer)
            }
        });
    }
    if !has_batches(version) {
        let message = format!(
            "invalid request: JSON-RPC batches are not part of MCP {version}; send one message per request"
        );
        return Ok(unreadable(INVALID_REQUEST, message));
    }
    let batch: Vec<&RawValue> =
        serde_json::from_str(message.get()).expect("a JSON array is an array of values");
    if batch.is_empty() {
        return Ok(unreadable(
            INVALID_REQUEST,
            "invalid request: the batch is empty",
        ));
    }
    if batch.len() > MAX_BATCH {
        let message = format!(
            "invalid request: a batch holds at most {MAX_BATCH} messages, got {}",
            batch.len()
        );
        return Ok(unreadable(INVALID_REQUEST, message));
    }
    // Every message counts against the key's rate as a request would; the
    // HTTP request that carries them was counted already.
    let gate = req
        .app_data::<web::Data<Gatekeeper>>()
        .expect("the gatekeeper is registered");
    gate.charge(&access, batch.len() - 1)?;
    let answers = run_batch(&state, &access, batch).await;
    if answers.is_empty() {
        return Ok(HttpResponse::Accepted().finish());
    }
    Ok(respond(stream, &answers))
}

/// Most messages in one batch: a batch is one request, and its work must
/// stay within what one request may take.
pub const MAX_BATCH: usize = 32;

/// Runs a batch's messages in order, within one request's deadline and
/// response size (`AppState::request_limits`): a message that would start
/// after the deadline, or whose answer would take the answers past the
/// size, is answered with an error naming the limit instead of being run
/// or returned. A batch whose client has gone stops where it is.
async fn run_batch(state: &AppState, access: &Access, batch: Vec<&RawValue>) -> Vec<RpcResponse> {
    let limits = state.request_limits;
    let started = std::time::Instant::now();
    let mut answers = Vec::new();
    let mut bytes = 2;
    for message in batch {
        if super::disconnect::client_gone() {
            return Vec::new();
        }
        let (id, request) = match read_message(message, true) {
            Err(refused) => {
                answers.push(refused);
                continue;
            }
            Ok(None) => continue,
            Ok(Some(read)) => read,
        };
        let Some(left) = limits.deadline.checked_sub(started.elapsed()) else {
            let why = format!(
                "not run: the batch reached the deadline of one request ({} ms)",
                limits.deadline.as_millis()
            );
            answers.push(RpcResponse::failed(id, LIMIT_EXCEEDED, why));
            continue;
        };
        let outcome = actix_web::rt::time::timeout(left, run_method(state, access, request))
            .await
            .unwrap_or_else(|_| {
                Err(rpc_error(
                    LIMIT_EXCEEDED,
                    format!(
                        "stopped: the batch reached the deadline of one request ({} ms)",
                        limits.deadline.as_millis()
                    ),
                ))
            });
        let mut answer = RpcResponse::new(id, outcome);
        let mut size = serialized_len(&answer) + 1;
        if bytes + size > limits.max_answer_bytes {
            let why = format!(
                "not returned: the batch's answers would exceed {} bytes; send fewer messages in one batch",
                limits.max_answer_bytes
            );
            answer = RpcResponse::failed(answer.id, LIMIT_EXCEEDED, why);
            size = serialized_len(&answer) + 1;
        }
        bytes += size;
        answers.push(answer);
    }
    answers
}

/// The length of `value` as JSON, without keeping the bytes.
fn serialized_len(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).expect("JSON-RPC answers serialize");
    count.0
}

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// A message read as JSON-RPC: a request with its id (as sent), `None` for
/// what needs no answer (a notification, or a response to a request this
/// server never sends), or the error answer for anything else.
fn read_message(
    raw: &RawValue,
    in_batch: bool,
) -> Result<Option<(RpcId, RpcRequest)>, RpcResponse> {
    // Raw JSON that is no `Value` holds a number beyond what one can be.
    let message: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
    let id = match message.get("id") {
        Some(Value::String(_) | Value::Number(_)) => raw_id(raw),
        _ => None,
    };
    let invalid = |why: String| {
        RpcResponse::failed(
            id.clone(),
            INVALID_REQUEST,
            format!("invalid request: {why}"),
        )
    };
    let Value::Object(fields) = &message else {
        return Err(invalid("a message must be a JSON object".into()));
    };
    if !fields.contains_key("method")
        && fields.contains_key("id")
        && (fields.contains_key("result") || fields.contains_key("error"))
    {
        return Ok(None);
    }
    // Serde reads `"id": null` as no id at all, which would make it a
    // notification; JSON-RPC says such an id is no request.
    if fields
        .get("id")
        .is_some_and(|id| !(id.is_string() || id.is_number()))
    {
        return Err(invalid("id must be a string or a number".into()));
    }
    let request: RpcRequest =
        serde_json::from_value(message).map_err(|e| invalid(e.to_string()))?;
    if request.jsonrpc != "2.0" {
        return Err(invalid("jsonrpc must be \"2.0\"".into()));
    }
    if request.id.is_none() {
        return Ok(None);
    }
    if in_batch && request.method == "initialize" {
        return Err(invalid("initialize may not be part of a batch".into()));
    }
    Ok(Some((id, request)))
}

/// The `id` of a message object as its client wrote it.
fn raw_id(message: &RawValue) -> RpcId {
    #[derive(Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let id = serde_json::from_str::<Id>(message.get()).ok()?.id?;
    Some(id.to_owned())
}

async fn run_method(
    state: &AppState,
    access: &Access,
    request: RpcRequest,
) -> Result<Answer, RpcError> {
    let params = request.params.unwrap_or(Value::Null);
    crate::telemetry::record_mcp_method(&request.method);
    match request.method.as_str() {
        "initialize" => Ok(Answer::Made(initialize(&params))),
        "ping" => Ok(Answer::Made(json!({}))),
        "tools/list" => Ok(Answer::Written(tools_listed())),
        "tools/call" => call(state, access.clone(), params).await.map(Answer::Made),
        other => Err(rpc_error(
            METHOD_NOT_FOUND,
            format!("unknown method {other:?}"),
        )),
    }
}

/// Whether the request accepts `text/event-stream` but not JSON: such a
/// client (or a proxy before it) may refuse a JSON answer, so it gets the
/// answer as the one event of a stream.
fn wants_event_stream(req: &HttpRequest) -> bool {
    let mut stream = false;
    let mut json = false;
    for value in req.headers().get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let essence = range.split(';').next().unwrap_or_default().trim();
            match essence.to_ascii_lowercase().as_str() {
                "text/event-stream" => stream = true,
                "application/json" | "application/*" | "*/*" => json = true,
                _ => {}
            }
        }
    }
    stream && !json
}

fn respond(stream: bool, answer: &impl Serialize) -> HttpResponse {
    respond_with(actix_web::http::StatusCode::OK, stream, answer)
}

/// [`respond`] with `status`: the stateless protocol gives a refused
/// request the HTTP status of its error.
fn respond_with(
    status: actix_web::http::StatusCode,
    stream: bool,
    answer: &impl Serialize,
) -> HttpResponse {
    if !stream {
        return HttpResponse::build(status).json(answer);
    }
    let data = serde_json::to_string(answer).expect("JSON-RPC answers serialize");
    HttpResponse::build(status)
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(format!("event: message\ndata: {data}\n\n"))
}

fn bad_request(answer: RpcResponse) -> HttpResponse {
    HttpResponse::BadRequest().json(answer)
}

/// `400` with JSON-RPC error `code` for a request whose id could not be
/// read (it is `null` in the answer).
fn unreadable(code: i64, message: impl Into<String>) -> HttpResponse {
    bad_request(RpcResponse::failed(None, code, message))
}

/// What a model is told of engram when a client connects.
const INSTRUCTIONS: &str = "engram is a shared, durable memory. Remember what happened \
    (remember_event), facts (remember_fact) and task state (set_working_state); \
    recall what a task needs (recall); correct knowledge with revise, never by \
    writing a contradicting fact beside it; tell engram what helped (feedback, \
    record_outcome). Topics keep things whose attributes change over time \
    (topic_ingest, topic_query).";

fn initialize(params: &Value) -> Value {
    let asked = params["protocolVersion"].as_str().unwrap_or_default();
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == asked)
        .unwrap_or(&PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "engram", "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    })
}

/// One tool: its name and title, what it is for, the role it needs, what
/// it does to what is stored (`annotations`), and the API document's
/// schemas its arguments and its structured result follow.
struct Tool {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    role: Role,
    effect: Effect,
    /// What it does to memory, named in its request's span.
    operation: MemoryOperation,
    schema: &'static str,
    output: &'static str,
}

/// What a tool does to what is stored, as MCP's tool annotations say it.
#[derive(Clone, Copy)]
enum Effect {
    /// Changes nothing: a client may call it without asking.
    Reads,
    /// Adds to what is stored; the same call twice adds twice.
    Adds,
    /// May replace what is current (the history keeps the old).
    Revises,
}

impl Effect {
    fn annotations(self, title: &str) -> Value {
        let (read_only, destructive, idempotent) = match self {
            Effect::Reads => (true, false, true),
            Effect::Adds => (false, false, false),
            Effect::Revises => (false, true, false),
        };
        json!({
            "title": title,
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": idempotent,
            // engram's own memory: no world outside it is touched.
            "openWorldHint": false,
        })
    }
}

const TOOLS: [Tool; 11] = [
    Tool {
        name: "remember_conversation",
        operation: MemoryOperation::Create,
        title: "Remember a conversation",
        description: "Remember turns of a conversation: who said what, and when. Later calls with the same conversation_id append in order; without session_id, turns within 30 minutes of the last one continue its session. recall with conversation_id, speakers and context_turns finds turns with the exchange around them.",
        role: Role::Write,
        effect: Effect::Adds,
        schema: "ConversationRequest",
        output: "ConversationIngested",
    },
    Tool {
        name: "remember_event",
        operation: MemoryOperation::Create,
        title: "Remember an event",
        description: "Remember something that happened (episodic memory): an event of some kind, with a reference and a short summary.",
        role: Role::Write,
        effect: Effect::Adds,
        schema: "EventRequest",
        output: "RecordBody",
    },
    Tool {
        name: "remember_fact",
        operation: MemoryOperation::Create,
        title: "Remember a fact",
        description: "Remember a fact as subject, predicate and object (semantic memory), e.g. subject \"service:billing\", predicate \"owner\", object \"team-payments\".",
        role: Role::Write,
        effect: Effect::Adds,
        schema: "ObservationRequest",
        output: "RecordBody",
    },
    Tool {
        name: "set_working_state",
        operation: MemoryOperation::Upsert,
        title: "Set a task's working state",
        description: "Set the current state of a task thread (working memory): its state, next actions, open questions and a summary. The newest state of a thread replaces the last.",
        role: Role::Write,
        effect: Effect::Revises,
        schema: "WorkingStateRequest",
        output: "RecordBody",
    },
    Tool {
        name: "record_outcome",
        operation: MemoryOperation::Create,
        title: "Record a procedure's outcome",
        description: "Record whether a remembered procedure or plan worked (success, failure or partial); it counts toward which procedure is chosen next time.",
        role: Role::Write,
        effect: Effect::Adds,
        schema: "OutcomeRequest",
        output: "RecordBody",
    },
    Tool {
        name: "recall",
        operation: MemoryOperation::Search,
        title: "Recall what a task needs",
        description: "Recall what a task needs: records ranked by relevance to the task text, across the memory layers, within the caller's trust. Filters: memory_types, tags, sources, thread_id, subject, conversation_id, speakers, created_after, created_before; limit; context_turns returns the turns around each conversation turn found. When procedures compete, says which one and how sure it is. trust (max_sensitivity, scopes) says what the caller may see: with an API key it may be left out (the key's grant) and can only narrow it; without a key it is required.",
        role: Role::Read,
        effect: Effect::Reads,
        schema: "RetrieveRequest",
        output: "RetrieveResult",
    },
    Tool {
        name: "get_record",
        operation: MemoryOperation::Search,
        title: "Read a record",
        description: "Read one record by its id. trust (max_sensitivity, scopes) says what the caller may see: with an API key it may be left out (the key's grant) and can only narrow it; without a key it is required.",
        role: Role::Read,
        effect: Effect::Reads,
        schema: "GetRecordArgs",
        output: "RecordBody",
    },
    Tool {
        name: "revise",
        operation: MemoryOperation::Update,
        title: "Revise a record",
        description: "Change knowledge, with the history kept: supersede a record with a new version (new_record), retract it, or contest it (it stays, marked as disputed). Needs who (actor) and why (rationale). A semantic new_record must carry evidence of its own: at least one payload.evidence entry ({source_type, source_id}) or provenance source; the link to the old record is added by engram.",
        role: Role::Revise,
        effect: Effect::Revises,
        schema: "ReviseArgs",
        output: "RecordBody",
    },
    Tool {
        name: "feedback",
        operation: MemoryOperation::Update,
        title: "Say a record helped or misled",
        description: "Say a record helped (reinforce: it stays salient longer) or misled (penalize by amount, 0 to 1).",
        role: Role::Write,
        effect: Effect::Revises,
        schema: "FeedbackArgs",
        output: "RecordBody",
    },
    Tool {
        name: "topic_ingest",
        operation: MemoryOperation::Upsert,
        title: "Put an observation about a topic",
        description: "Put an observation about a thing (a topic) with fields whose values change over time; every version is kept. placement \"auto\" (the default) finds the topic by its title, an alias, or a title alike enough (never across kinds, numbers or versions), or makes it; when two topics could be the one, it makes a new topic and lists them in similar_topic_ids (on_ambiguous \"fail\" refuses instead).",
        role: Role::Write,
        effect: Effect::Revises,
        schema: "IngestBody",
        output: "Ingested",
    },
    Tool {
        name: "topic_query",
        operation: MemoryOperation::Search,
        title: "Find topics",
        description: "Find topics by text (or vector), with their current fields, neighbours through edges, and field histories if asked. trust (max_sensitivity, scopes) says what the caller may see: with an API key it may be left out (the key's grant) and can only narrow it; without a key it is required.",
        role: Role::Read,
        effect: Effect::Reads,
        schema: "QueryBody",
        output: "TopicsBody",
    },
];

/// The answer to `tools/list`, built from the API document and written
/// as JSON once: building it costs far more than sending it.
fn tools_listed() -> &'static RawValue {
    static TOOLS_LISTED: std::sync::LazyLock<Box<RawValue>> = std::sync::LazyLock::new(|| {
        let listed = json!({"tools": build_tool_list()});
        serde_json::value::to_raw_value(&listed).expect("the tool list is JSON")
    });
    &TOOLS_LISTED
}

#[cfg(test)]
fn tool_list() -> Vec<Value> {
    let listed: Value = serde_json::from_str(tools_listed().get()).unwrap();
    listed["tools"].as_array().unwrap().clone()
}

fn build_tool_list() -> Vec<Value> {
    let doc = serde_json::to_value(openapi::document()).expect("the document is JSON");
    let components = &doc["components"]["schemas"];
    TOOLS
        .iter()
        .map(|tool| {
            // MCP clients show the schema as given; the examples belong
            // to the HTTP document.
            let schema = inline(&components[tool.schema], components, 0);
            let output = inline(&components[tool.output], components, 0);
            json!({
                "name": tool.name,
                "title": tool.title,
                "description": format!("{} Needs the `{}` role.", tool.description, tool.role.as_str()),
                "inputSchema": schema,
                "outputSchema": output,
                "annotations": tool.effect.annotations(tool.title),
            })
        })
        .collect()
}

/// The formats of JSON Schema 2020-12's format vocabulary; the API
/// document's others (`int64`, `double`, ...) are OpenAPI's own.
const JSON_SCHEMA_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Whether a keyword of the API document's schemas stays in a tool's:
/// not OpenAPI's own (`discriminator`, `example`, an OpenAPI format), so
/// a strict JSON Schema 2020-12 compiler takes the schema.
fn plain_json_schema(key: &str, value: &Value) -> bool {
    match key {
        "example" | "discriminator" => false,
        "format" => value
            .as_str()
            .is_some_and(|f| JSON_SCHEMA_FORMATS.contains(&f)),
        _ => true,
    }
}

/// `schema` with every reference to a component replaced by the component
/// itself (a tool's schemas must stand alone), in plain JSON Schema
/// ([`plain_json_schema`]).
fn inline(schema: &Value, components: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if let Some(name) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
    {
        // The schemas are not recursive; the bound only guards against one
        // that would be.
        return if depth < 16 {
            inline(&components[name], components, depth + 1)
        } else {
            json!({})
        };
    }
    let inner = |value: &Value| inline(value, components, depth);
    Value::Object(
        map.iter()
            .filter(|(key, value)| plain_json_schema(key, value))
            .map(|(key, value)| {
                // Only what holds schemas is walked: a property, a default
                // or an enum value keeps every key it has.
                let walked = match (key.as_str(), value) {
                    (
                        "properties" | "patternProperties" | "$defs" | "dependentSchemas",
                        Value::Object(named),
                    ) => Value::Object(named.iter().map(|(n, s)| (n.clone(), inner(s))).collect()),
                    ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(schemas)) => {
                        Value::Array(schemas.iter().map(inner).collect())
                    }
                    (
                        "items"
                        | "additionalProperties"
                        | "not"
                        | "if"
                        | "then"
                        | "else"
                        | "contains"
                        | "propertyNames"
                        | "unevaluatedProperties"
                        | "unevaluatedItems",
                        _,
                    ) => inner(value),
                    _ => value.clone(),
                };
                (key.clone(), walked)
            })
            .collect(),
    )
}

async fn call(state: &AppState, access: Access, params: Value) -> Result<Value, RpcError> {
    let name = params["name"]
        .as_str()
        .ok_or_else(|| rpc_error(INVALID_PARAMS, "params.name: the tool's name is required"))?;
    let tool = TOOLS
        .iter()
        .find(|tool| tool.name == name)
        .ok_or_else(|| rpc_error(INVALID_PARAMS, format!("unknown tool {name:?}")))?;
    crate::telemetry::record_tool(tool.name);
    crate::telemetry::record_operation(tool.operation);
    let arguments = match &params["arguments"] {
        Value::Null => Value::Object(Map::new()),
        other => other.clone(),
    };
    let answer = if access.may(tool.role) {
        run(state, access, tool.name, &arguments).await
    } else {
        Err(ApiError::new(
            Code::PermissionDenied,
            format!(
                "the tool {} needs a key with the {} role",
                tool.name,
                tool.role.as_str()
            ),
        ))
    };
    Ok(match answer {
        Ok((text, structured)) => json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": false,
        }),
        // A tool's failure is the model's to read and act on.
        Err(error) => json!({
            "content": [{"type": "text", "text": format!("{}: {}", error.code.name(), error.message)}],
            "structuredContent": ErrorBody::of(&error),
            "isError": true,
        }),
    })
}

/// `get_record`'s arguments.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRecordArgs {
    id: String,
    /// Required without a key; with one, the key's grant when absent.
    #[serde(default)]
    trust: Option<TrustContext>,
}

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviseOperation {
    Supersede,
    Retract,
    Contest,
}

/// `revise`'s arguments: one shape for the three operations.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviseArgs {
    operation: ReviseOperation,
    /// The record revised.
    id: String,
    actor: String,
    rationale: String,
    /// The new version (supersede only).
    #[serde(default)]
    new_record: Option<NewRecord>,
    /// What contradicts it (contest only).
    #[serde(default)]
    contesting_ref: Option<String>,
    /// Clears a contest (contest only).
    #[serde(default)]
    resolve: Option<bool>,
}

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackKind {
    Reinforce,
    Penalize,
}

/// `feedback`'s arguments.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackArgs {
    kind: FeedbackKind,
    id: String,
    actor: String,
    rationale: String,
    /// How much salience to take (penalize only), 0 to 1.
    #[serde(default)]
    amount: Option<f64>,
}

fn arguments<T: serde::de::DeserializeOwned>(arguments: &Value) -> Result<T, ApiError> {
    parse_json(arguments.to_string().as_bytes())
}

/// Runs tool `name`; answers its text and its structured content.
async fn run(
    state: &AppState,
    access: Access,
    name: &str,
    args: &Value,
) -> Result<(String, Value), ApiError> {
    let remembered = |record: MemoryRecord| {
        (
            format!("Remembered {}", gist(&record)),
            json!({"record": record}),
        )
    };
    Ok(match name {
        "remember_conversation" => {
            let ingested =
                ingest_conversation(state, access, arguments::<ConversationRequest>(args)?).await?;
            (
                format!(
                    "Remembered {} turns of {} in session {}{}",
                    ingested.records.len(),
                    ingested.conversation_id,
                    ingested.session_id,
                    if ingested.new_session { " (new)" } else { "" }
                ),
                serde_json::to_value(&ingested).unwrap_or_default(),
            )
        }
        "remember_event" => {
            let item = IngestItem::Event(arguments::<EventRequest>(args)?);
            remembered(ingest_item(state, access, item).await?)
        }
        "remember_fact" => {
            let item = IngestItem::Observation(arguments::<ObservationRequest>(args)?);
            remembered(ingest_item(state, access, item).await?)
        }
        "set_working_state" => {
            let item = IngestItem::WorkingState(arguments::<WorkingStateRequest>(args)?);
            remembered(ingest_item(state, access, item).await?)
        }
        "record_outcome" => {
            let item = IngestItem::Outcome(arguments::<OutcomeRequest>(args)?);
            let record = ingest_item(state, access, item).await?;
            (
                format!("Counted: {}", gist(&record)),
                json!({"record": record}),
            )
        }
        "recall" => {
            let result = retrieved(state, access, arguments::<RetrieveRequest>(args)?).await?;
            let mut text = match result.records.len() {
                0 => "Nothing found.".to_string(),
                n => format!("{n} records, best first:"),
            };
            for record in &result.records {
                text.push_str(&format!("\n- {}", gist(record)));
            }
            if let Some(selection) = &result.selection {
                if let Some(best) = selection.selected.first() {
                    text.push_str(&format!(
                        "\nChosen procedure: {} (confidence {:.2}{})",
                        best.id,
                        selection.confidence,
                        if selection.needs_more {
                            "; not sure: more evidence needed"
                        } else {
                            ""
                        }
                    ));
                }
            }
            (text, serde_json::to_value(&result).unwrap_or_default())
        }
        "get_record" => {
            let args = arguments::<GetRecordArgs>(args)?;
            let record = record_by_id(state, access, args.id, args.trust).await?;
            (gist(&record), json!({"record": record}))
        }
        "revise" => {
            let record = revised(state, access, revision(arguments::<ReviseArgs>(args)?)?).await?;
            (format!("Now: {}", gist(&record)), json!({"record": record}))
        }
        "feedback" => {
            let args = arguments::<FeedbackArgs>(args)?;
            let request = match args.kind {
                FeedbackKind::Reinforce => RevisionRequest::Reinforce {
                    id: args.id,
                    request: ReinforceRequest {
                        actor: args.actor,
                        rationale: args.rationale,
                    },
                },
                FeedbackKind::Penalize => RevisionRequest::Penalize {
                    id: args.id,
                    request: PenalizeRequest {
                        actor: args.actor,
                        rationale: args.rationale,
                        amount: args.amount.ok_or_else(|| {
                            ValidationError::new("amount", "amount is required to penalize")
                        })?,
                    },
                },
            };
            let record = revised(state, access, request).await?;
            (format!("Now: {}", gist(&record)), json!({"record": record}))
        }
        "topic_ingest" => {
            let done = ingested(state, access, arguments::<IngestBody>(args)?).await?;
            let why = done.matched.as_ref().map_or(String::new(), |m| {
                format!(", matched by {} at {:.2}", wire(m.by), m.score)
            });
            let text = format!(
                "Topic {} ({}{why}): {}",
                done.topic_id,
                wire(done.placement),
                done.applied
                    .iter()
                    .map(|a| format!("{} {}", a.field, wire(a.op)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            (text, serde_json::to_value(&done).unwrap_or_default())
        }
        "topic_query" => {
            let found = queried(state, access, arguments::<QueryBody>(args)?).await?;
            let mut text = format!("{} topics:", found.len());
            for hit in &found {
                let view = &hit.topic;
                let fields: Vec<String> = view
                    .fields
                    .iter()
                    .map(|(name, field)| format!("{name} = {}", field.value))
                    .collect();
                text.push_str(&format!(
                    "\n- {} {:?} (score {:.2}): {}",
                    view.topic.id,
                    view.topic.title,
                    hit.score,
                    fields.join(", ")
                ));
            }
            (text, json!({"topics": found}))
        }
        _ => unreachable!("every tool in TOOLS is run here"),
    })
}

/// A unit enum as its JSON name (`new_topic`, `created`).
fn wire(value: impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

/// The revision `revise` asks for, its operation's parts checked.
fn revision(args: ReviseArgs) -> Result<RevisionRequest, ApiError> {
    Ok(match args.operation {
        ReviseOperation::Supersede => RevisionRequest::Supersede(SupersedeRequest {
            actor: args.actor,
            rationale: args.rationale,
            old_id: args.id,
            new_record: args.new_record.ok_or_else(|| {
                ValidationError::new("new_record", "new_record is required to supersede")
            })?,
        }),
        ReviseOperation::Retract => RevisionRequest::Retract(RetractRequest {
            actor: args.actor,
            rationale: args.rationale,
            id: args.id,
        }),
        ReviseOperation::Contest => RevisionRequest::Contest(ContestRequest {
            actor: args.actor,
            rationale: args.rationale,
            id: args.id,
            contesting_ref: args.contesting_ref,
            resolve: args.resolve,
        }),
    })
}

/// One line a model can read: what the record is, how it stands, and what
/// it says.
fn gist(record: &MemoryRecord) -> String {
    let says = match &record.payload {
        Payload::Semantic(fact) => format!("{} {} = {}", fact.subject, fact.predicate, fact.object),
        Payload::Episodic(episode) if episode.turn.is_some() => {
            let turn = episode.turn.as_ref().expect("a turn");
            format!(
                "{} said in {} ({}): {}",
                turn.speaker,
                turn.conversation_id,
                turn.at.format("%Y-%m-%d %H:%M"),
                turn.text
            )
        }
        Payload::Episodic(episode) => {
            let events: Vec<String> = episode
                .timeline
                .iter()
                .map(|e| match &e.summary {
                    Some(summary) => format!("{} {}: {summary}", e.event_kind, e.reference),
                    None => format!("{} {}", e.event_kind, e.reference),
                })
                .chain(
                    episode
                        .tool_graph
                        .iter()
                        .map(|t| format!("tool {}", t.tool)),
                )
                .collect();
            events.join("; ")
        }
        Payload::Working(working) => {
            let mut text =
                format!("thread {} is {:?}", working.thread_id, working.state).to_lowercase();
            if let Some(summary) = &working.context_summary {
                text.push_str(&format!(": {summary}"));
            }
            if !working.next_actions.is_empty() {
                text.push_str(&format!("; next: {}", working.next_actions.join(", ")));
            }
            text
        }
        Payload::Competence(skill) => {
            let steps: Vec<&str> = skill.recipe.iter().map(|s| s.step.as_str()).collect();
            format!("skill {}: {}", skill.skill_name, steps.join(" → "))
        }
        Payload::PlanGraph(plan) => format!(
            "plan {}{} ({} steps)",
            plan.plan_id,
            plan.intent
                .as_deref()
                .map(|i| format!(": {i}"))
                .unwrap_or_default(),
            plan.nodes.len()
        ),
    };
    format!(
        "[{}] {} {}, {}, salience {:.2}: {says}",
        record.id, record.memory_type, record.sensitivity, record.status, record.salience
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_standalone_object_schema() {
        let tools = tool_list();
        assert_eq!(tools.len(), TOOLS.len());
        for tool in &tools {
            let schema = &tool["inputSchema"];
            assert_eq!(schema["type"], "object", "{}", tool["name"]);
            let text = schema.to_string();
            assert!(!text.contains("$ref"), "{}: {text}", tool["name"]);
            assert!(
                tool["description"].as_str().unwrap().contains("role"),
                "{}",
                tool["name"]
            );
        }
        let revise = tools.iter().find(|t| t["name"] == "revise").unwrap();
        assert_eq!(
            revise["inputSchema"]["properties"]["operation"]["enum"],
            json!(["supersede", "retract", "contest"])
        );
    }

    #[test]
    fn every_tool_has_a_title_annotations_and_an_output_schema_in_plain_json_schema() {
        for tool in tool_list() {
            let name = tool["name"].as_str().unwrap();
            assert!(
                tool["title"].as_str().is_some_and(|t| !t.is_empty()),
                "{name}"
            );
            assert_eq!(tool["annotations"]["title"], tool["title"], "{name}");
            assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
            for schema in [&tool["inputSchema"], &tool["outputSchema"]] {
                let text = schema.to_string();
                for openapi_only in [
                    "$ref",
                    "\"discriminator\"",
                    "\"example\"",
                    "\"int64\"",
                    "\"double\"",
                ] {
                    assert!(
                        !text.contains(openapi_only),
                        "{name}: {openapi_only} in {text}"
                    );
                }
            }
            let annotations = &tool["annotations"];
            let reads = annotations["readOnlyHint"] == true;
            assert_eq!(
                reads,
                ["recall", "get_record", "topic_query"].contains(&name),
                "{name}"
            );
            if reads {
                assert_eq!(annotations["idempotentHint"], true, "{name}");
            }
            let revises =
                ["revise", "feedback", "set_working_state", "topic_ingest"].contains(&name);
            assert_eq!(annotations["destructiveHint"], revises, "{name}");
            assert_eq!(annotations["openWorldHint"], false, "{name}");
        }
    }

    #[test]
    fn initialize_agrees_on_a_version_the_server_speaks() {
        assert_eq!(
            initialize(&json!({"protocolVersion": "2025-03-26"}))["protocolVersion"],
            "2025-03-26"
        );
        assert_eq!(
            initialize(&json!({"protocolVersion": "1999-01-01"}))["protocolVersion"],
            PROTOCOL_VERSIONS[0]
        );
    }

    #[test]
    fn a_gist_says_what_the_record_holds() {
        let record = crate::domain::new_record::test_record(
            "r1",
            json!({"type": "semantic", "sensitivity": "low",
                   "payload": {"kind": "semantic", "subject": "svc", "predicate": "owner", "object": "team-a"}}),
        );
        assert_eq!(
            gist(&record),
            format!(
                "[r1] semantic low, active, salience {:.2}: svc owner = \"team-a\"",
                record.salience
            )
        );
        let working = crate::domain::new_record::test_record(
            "w1",
            json!({"type": "working", "sensitivity": "low",
                   "payload": {"kind": "working", "thread_id": "t-9", "state": "blocked",
                               "next_actions": ["ask"], "context_summary": "needs a key"}}),
        );
        assert!(
            gist(&working).ends_with("thread t-9 is blocked: needs a key; next: ask"),
            "{}",
            gist(&working)
        );
    }
}
