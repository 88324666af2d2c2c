//! `POST /mcp`: engram as a Model Context Protocol server, so an agent that
//! speaks MCP can use it as tools. Streamable HTTP transport, each request
//! answered with one JSON body (no server-sent events; `GET /mcp` is 405,
//! as the transport allows). It sits behind the same keys as the rest of
//! the API, and each tool needs the role its HTTP route needs.
//!
//! A tool's arguments are the body of the route it stands for, parsed by
//! the same types with the same checks and error messages, and its input
//! schema is that body's schema from the API document. The answer is short
//! text a model can read, with the route's JSON as structured content.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::ingest::ingest_item;
use super::requests::{
    ContestRequest, EventRequest, IngestItem, ObservationRequest, OutcomeRequest, PenalizeRequest,
    ReinforceRequest, RetractRequest, RetrieveRequest, RevisionRequest, SupersedeRequest,
    WorkingStateRequest,
};
use super::retrieve::{record_by_id, retrieved};
use super::revisions::revised;
use super::topics::{ingested, queried, IngestBody, QueryBody};
use super::{openapi, parse_json, AppState, Endpoint, JsonBody};
use crate::domain::access::{Access, Role};
use crate::domain::payload::Payload;
use crate::domain::policy::NewRecord;
use crate::domain::record::MemoryRecord;
use crate::domain::trust::TrustContext;
use crate::domain::validate::ValidationError;
use crate::error::{ApiError, Code, ErrorBody};

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::new(Method::POST, "/mcp", Role::Read, mcp)]
}

/// The protocol versions this server speaks, newest first.
const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// A JSON-RPC 2.0 message from the client: a request (with `id`) or a
/// notification (without).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))]
pub struct RpcRequest {
    /// Always `2.0`.
    jsonrpc: String,
    /// A string or a number; absent in a notification.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
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
    #[schema(value_type = Object)]
    id: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<RpcError>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RpcError {
    /// JSON-RPC's: -32601 unknown method, -32602 bad parameters.
    code: i64,
    message: String,
}

const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

fn rpc_error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
    }
}

#[utoipa::path(
    post,
    path = "/mcp",
    operation_id = "callMcp",
    tag = "mcp",
    summary = "Model Context Protocol (streamable HTTP, JSON answers)",
    description = "A JSON-RPC 2.0 message. Requests (`initialize`, `ping`, `tools/list`, `tools/call`) are answered with one JSON-RPC response; notifications with 202 and no body. Each tool needs the role of the route it stands for.",
    request_body = RpcRequest,
    responses(
        (status = 200, description = "The JSON-RPC response", body = RpcResponse),
        (status = 202, description = "A notification, taken"),
    )
)]
async fn mcp(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<RpcRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.0;
    if request.jsonrpc != "2.0" {
        return Err(ValidationError::new("jsonrpc", "must be \"2.0\"").into());
    }
    let Some(id) = request.id else {
        // Notifications (`notifications/initialized`, cancellations) need
        // nothing from a server that answers every request at once.
        return Ok(HttpResponse::Accepted().finish());
    };
    let params = request.params.unwrap_or(Value::Null);
    let outcome = match request.method.as_str() {
        "initialize" => Ok(initialize(&params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tool_list()})),
        "tools/call" => call(&state, access, params).await,
        other => Err(rpc_error(
            METHOD_NOT_FOUND,
            format!("unknown method {other:?}"),
        )),
    };
    let (result, error) = match outcome {
        Ok(result) => (Some(result), None),
        Err(error) => (None, Some(error)),
    };
    Ok(HttpResponse::Ok().json(RpcResponse {
        jsonrpc: "2.0",
        id,
        result,
        error,
    }))
}

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
        "instructions": "engram is a shared, durable memory. Remember what happened \
            (remember_event), facts (remember_fact) and task state (set_working_state); \
            recall what a task needs (recall); correct knowledge with revise, never by \
            writing a contradicting fact beside it; tell engram what helped (feedback, \
            record_outcome). Topics keep things whose attributes change over time \
            (topic_ingest, topic_query).",
    })
}

/// One tool: its name, what it is for, the role it needs, and the API
/// document's schema its arguments follow.
struct Tool {
    name: &'static str,
    description: &'static str,
    role: Role,
    schema: &'static str,
}

const TOOLS: [Tool; 10] = [
    Tool {
        name: "remember_event",
        description: "Remember something that happened (episodic memory): an event of some kind, with a reference and a short summary.",
        role: Role::Write,
        schema: "EventRequest",
    },
    Tool {
        name: "remember_fact",
        description: "Remember a fact as subject, predicate and object (semantic memory), e.g. subject \"service:billing\", predicate \"owner\", object \"team-payments\".",
        role: Role::Write,
        schema: "ObservationRequest",
    },
    Tool {
        name: "set_working_state",
        description: "Set the current state of a task thread (working memory): its state, next actions, open questions and a summary. The newest state of a thread replaces the last.",
        role: Role::Write,
        schema: "WorkingStateRequest",
    },
    Tool {
        name: "record_outcome",
        description: "Record whether a remembered procedure or plan worked (success, failure or partial); it counts toward which procedure is chosen next time.",
        role: Role::Write,
        schema: "OutcomeRequest",
    },
    Tool {
        name: "recall",
        description: "Recall what a task needs: records ranked by relevance to the task text, across the memory layers, within the caller's trust. Filters: memory_types, tags, sources, thread_id, subject, created_after, created_before; limit. When procedures compete, says which one and how sure it is.",
        role: Role::Read,
        schema: "RetrieveRequest",
    },
    Tool {
        name: "get_record",
        description: "Read one record by its id.",
        role: Role::Read,
        schema: "GetRecordArgs",
    },
    Tool {
        name: "revise",
        description: "Change knowledge, with the history kept: supersede a record with a new version (new_record), retract it, or contest it (it stays, marked as disputed). Needs who (actor) and why (rationale).",
        role: Role::Revise,
        schema: "ReviseArgs",
    },
    Tool {
        name: "feedback",
        description: "Say a record helped (reinforce: it stays salient longer) or misled (penalize by amount, 0 to 1).",
        role: Role::Write,
        schema: "FeedbackArgs",
    },
    Tool {
        name: "topic_ingest",
        description: "Put an observation about a thing (a topic) with fields whose values change over time; every version is kept. placement \"auto\" (the default) finds the topic by title or similar text, or makes it.",
        role: Role::Write,
        schema: "IngestBody",
    },
    Tool {
        name: "topic_query",
        description: "Find topics by text (or vector), with their current fields, neighbours through edges, and field histories if asked.",
        role: Role::Read,
        schema: "QueryBody",
    },
];

fn tool_list() -> Vec<Value> {
    let doc = serde_json::to_value(openapi::document()).expect("the document is JSON");
    let components = &doc["components"]["schemas"];
    TOOLS
        .iter()
        .map(|tool| {
            let mut schema = inline(&components[tool.schema], components, 0);
            // MCP clients show the schema as given; the examples belong
            // to the HTTP document.
            if let Some(object) = schema.as_object_mut() {
                object.remove("example");
            }
            json!({
                "name": tool.name,
                "description": format!("{} Needs the `{}` role.", tool.description, tool.role.as_str()),
                "inputSchema": schema,
            })
        })
        .collect()
}

/// `schema` with every reference to a component replaced by the component
/// itself: a tool's input schema must stand alone.
fn inline(schema: &Value, components: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                // The schemas are not recursive; the bound only guards
                // against one that would be.
                return if depth < 16 {
                    inline(&components[name], components, depth + 1)
                } else {
                    json!({})
                };
            }
            Value::Object(
                map.iter()
                    .filter(|(key, _)| key.as_str() != "example")
                    .map(|(key, value)| (key.clone(), inline(value, components, depth)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| inline(item, components, depth))
                .collect(),
        ),
        other => other.clone(),
    }
}

async fn call(state: &AppState, access: Access, params: Value) -> Result<Value, RpcError> {
    let name = params["name"]
        .as_str()
        .ok_or_else(|| rpc_error(INVALID_PARAMS, "params.name: the tool's name is required"))?;
    let tool = TOOLS
        .iter()
        .find(|tool| tool.name == name)
        .ok_or_else(|| rpc_error(INVALID_PARAMS, format!("unknown tool {name:?}")))?;
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
            let text = format!(
                "Topic {} ({}): {}",
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
        assert_eq!(
            revise["inputSchema"]["properties"]["new_record"]["oneOf"][1]["properties"]["payload"]
                ["discriminator"]["propertyName"],
            "kind"
        );
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
        let record = crate::store::sqlite::test_support::record(
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
        let working = crate::store::sqlite::test_support::record(
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
