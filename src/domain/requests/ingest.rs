//! The ingest bodies: the five kinds, one at a time or in a batch, each
//! turned into a checked [`Candidate`] by the domain's ingestion rules.

use serde::Deserialize;
use serde_json::Value;

use crate::domain::conversation::Attachment;
use crate::domain::ingest::{self, Candidate, NewConversation, TurnFields};
use crate::domain::new_record::NewRecordContext;
use crate::domain::payload::{empty_array, OutcomeStatus, TaskState, WorkingPayload};
use crate::domain::record::Sensitivity;
use crate::domain::schema;
use crate::domain::validate::{null_as_default, Validated};

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:planner", "event_kind": "deploy", "ref": "run-42", "summary": "Deployed billing 1.4 to staging", "tags": ["deploy"], "sensitivity": "low"}))]
pub struct EventRequest {
    #[schema(schema_with = schema::actor)]
    pub source: String,
    #[schema(schema_with = schema::text)]
    pub event_kind: String,
    #[serde(rename = "ref", alias = "event_ref")]
    #[schema(schema_with = schema::text)]
    pub reference: String,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    pub summary: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::past_time_or_empty)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::tags)]
    pub tags: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:coder", "tool_name": "pytest", "args": {"path": "tests/"}, "result": {"passed": 120, "failed": 0}, "tags": ["ci"]}))]
pub struct ToolOutputRequest {
    #[schema(schema_with = schema::actor)]
    pub source: String,
    #[schema(schema_with = schema::text)]
    pub tool_name: String,
    #[serde(default)]
    pub args: Option<Value>,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = schema::past_time_or_empty)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::tags)]
    pub tags: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:planner", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "sensitivity": "low"}))]
pub struct ObservationRequest {
    #[schema(schema_with = schema::actor)]
    pub source: String,
    #[schema(schema_with = schema::text)]
    pub subject: String,
    #[schema(schema_with = schema::text)]
    pub predicate: String,
    #[serde(default)]
    pub object: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = schema::past_time_or_empty)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::tags)]
    pub tags: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:coder", "target_record_id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "outcome_status": "success"}))]
pub struct OutcomeRequest {
    #[schema(schema_with = schema::actor)]
    pub source: String,
    #[schema(schema_with = schema::id)]
    pub target_record_id: String,
    pub outcome_status: OutcomeStatus,
    #[serde(default)]
    #[schema(schema_with = schema::past_time_or_empty)]
    pub timestamp: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:coder", "thread_id": "ticket-1182", "state": "executing", "next_actions": ["run the migration on staging"], "open_questions": ["is the index needed?"], "context_summary": "Adding a column to invoices"}))]
pub struct WorkingStateRequest {
    #[schema(schema_with = schema::actor)]
    pub source: String,
    #[schema(schema_with = schema::text)]
    pub thread_id: String,
    #[serde(alias = "task_state")]
    pub state: TaskState,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub next_actions: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub open_questions: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    pub context_summary: Option<String>,
    #[serde(default)]
    pub active_constraints: Option<Value>,
    #[serde(default)]
    #[schema(schema_with = schema::past_time_or_empty)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::tags)]
    pub tags: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub embedding: Option<Vec<f64>>,
}

/// One item of `POST /v1/ingest/batch`: the same fields as the single
/// endpoints, plus `kind` (its schema: `http/openapi.rs`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IngestItem {
    Event(EventRequest),
    ToolOutput(ToolOutputRequest),
    Observation(ObservationRequest),
    Outcome(OutcomeRequest),
    WorkingState(WorkingStateRequest),
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"items": [{"kind": "event", "source": "agent:planner", "event_kind": "deploy", "ref": "run-42"}, {"kind": "observation", "source": "agent:planner", "subject": "service:billing", "predicate": "version", "object": "1.4"}]}))]
pub struct BatchRequest {
    #[schema(schema_with = items)]
    pub items: Vec<IngestItem>,
}

/// `POST /v1/ingest/conversation`: turns of a conversation, appended in
/// order.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "chat-agent", "conversation_id": "support-4711", "session_id": "s-2023-05-08", "scope": "team-a", "sensitivity": "low", "tags": ["support"], "turns": [{"speaker": "Caroline", "text": "I went to a support group yesterday.", "at": "2023-05-08T13:56:00Z", "ref": "D1:3"}, {"speaker": "Melanie", "text": "How did it go?", "at": "2023-05-08T13:57:10Z", "ref": "D1:4", "attachments": [{"caption": "a photo of a sunset over a lake"}]}]}))]
pub struct ConversationRequest {
    #[schema(schema_with = schema::actor)]
    pub source: String,
    #[schema(schema_with = schema::conversation_id)]
    pub conversation_id: String,
    /// Absent: the latest session goes on when its last turn is at most
    /// `conversations.session_gap_minutes` before the first new one, else
    /// a new session opens.
    #[serde(default)]
    #[schema(schema_with = schema::optional_conversation_id)]
    pub session_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::tags)]
    pub tags: Vec<String>,
    #[schema(schema_with = turns)]
    pub turns: Vec<TurnRequest>,
}

/// One turn: who said what, when.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    #[schema(schema_with = schema::speaker)]
    pub speaker: String,
    #[schema(schema_with = schema::turn_text)]
    pub text: String,
    #[serde(default)]
    #[schema(schema_with = schema::turn_at)]
    pub at: Option<String>,
    #[serde(rename = "ref", default)]
    #[schema(schema_with = schema::optional_conversation_id)]
    pub reference: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = attachments)]
    pub attachments: Vec<Attachment>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub embedding: Option<Vec<f64>>,
}

impl ConversationRequest {
    /// Checks the request and builds its turns' records.
    pub fn into_conversation(self, cx: &NewRecordContext<'_>) -> Validated<NewConversation> {
        let turns = self
            .turns
            .into_iter()
            .map(|t| TurnFields {
                speaker: t.speaker,
                text: t.text,
                at: t.at,
                reference: t.reference,
                attachments: t.attachments,
                embedding: t.embedding,
            })
            .collect();
        ingest::conversation(
            cx,
            self.source,
            self.conversation_id,
            self.session_id,
            self.scope,
            self.sensitivity,
            self.tags,
            turns,
        )
    }
}

/// The fields every record-creating request has, checked: moved out of
/// the request `r`, whose other fields stay usable.
macro_rules! common {
    ($cx:expr, $r:expr) => {
        ingest::common(
            $cx,
            $r.source,
            $r.timestamp,
            $r.tags,
            $r.scope,
            $r.sensitivity,
            $r.embedding,
        )
    };
}

impl IngestItem {
    /// Checks the request and builds what it asks for.
    pub fn into_candidate(self, cx: &NewRecordContext<'_>) -> Validated<Candidate> {
        match self {
            IngestItem::Event(r) => {
                let common = common!(cx, r)?;
                ingest::event(cx, common, r.event_kind, r.reference, r.summary)
            }
            IngestItem::ToolOutput(r) => {
                let common = common!(cx, r)?;
                ingest::tool_output(cx, common, r.tool_name, r.args, r.result, r.depends_on)
            }
            IngestItem::Observation(r) => {
                let common = common!(cx, r)?;
                ingest::observation(cx, common, r.subject, r.predicate, r.object)
            }
            IngestItem::WorkingState(r) => {
                let common = common!(cx, r)?;
                let state = WorkingPayload {
                    thread_id: r.thread_id,
                    state: r.state,
                    active_constraints: r.active_constraints.unwrap_or_else(empty_array),
                    next_actions: r.next_actions,
                    open_questions: r.open_questions,
                    context_summary: r.context_summary,
                };
                ingest::working_state(cx, common, state)
            }
            IngestItem::Outcome(r) => ingest::outcome(
                cx,
                r.source,
                r.target_record_id,
                r.outcome_status,
                r.timestamp,
                r.embedding,
            ),
        }
    }
}

impl BatchRequest {
    /// Checks every item; the first bad one rejects the whole batch, its
    /// field path naming the item (`items[3].source`).
    pub fn into_candidates(self, cx: &NewRecordContext<'_>) -> Validated<Vec<Candidate>> {
        ingest::check_batch_size(self.items.len())?;
        self.items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                item.into_candidate(cx)
                    .map_err(|e| e.within(&format!("items[{i}]")))
            })
            .collect()
    }
}

fn items() -> utoipa::openapi::Array {
    schema::list(
        utoipa::openapi::Ref::from_schema_name("IngestItem"),
        1,
        ingest::MAX_BATCH_ITEMS,
        false,
    )
}

fn turns() -> utoipa::openapi::Array {
    schema::list(
        utoipa::openapi::Ref::from_schema_name("TurnRequest"),
        1,
        crate::domain::conversation::MAX_TURNS,
        false,
    )
}

fn attachments() -> utoipa::openapi::Array {
    schema::list(
        utoipa::openapi::Ref::from_schema_name("Attachment"),
        0,
        crate::domain::conversation::MAX_ATTACHMENTS,
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::payload::Payload;
    use crate::domain::policy::Policy;
    use crate::domain::record::MemoryType;
    use crate::domain::record::{AuditAction, MemoryRecord, ProvenanceKind};
    use crate::domain::requests::parse_json;
    use crate::domain::time::{parse_rfc3339, Timestamp};
    use serde_json::json;

    fn now() -> Timestamp {
        parse_rfc3339("2026-03-01T12:00:00Z").unwrap()
    }

    /// Parses an ingest item as the API does and builds it; an error is
    /// the message a client would get.
    fn build(body: Value) -> Result<Candidate, String> {
        let item: IngestItem = parse_json(body.to_string().as_bytes()).map_err(|e| e.message)?;
        let policy = Policy::default();
        let cx = NewRecordContext {
            policy: &policy,
            now: now(),
            new_id: &|| "fixed-id".to_string(),
            key: None,
        };
        item.into_candidate(&cx).map_err(|e| e.to_string())
    }

    fn created(body: Value) -> MemoryRecord {
        match build(body).unwrap() {
            Candidate::Create(record) => *record,
            other => panic!("expected a record, got {other:?}"),
        }
    }

    #[test]
    fn an_event_becomes_an_episodic_record_with_the_reference_policy() {
        let record = created(json!({
            "kind": "event", "source": "agent", "event_kind": "user_input", "ref": "msg-1",
            "summary": "hello", "timestamp": "2026-02-01T00:00:00Z", "tags": ["a"], "scope": "project"
        }));
        assert_eq!(record.memory_type, MemoryType::Episodic);
        assert_eq!(record.confidence, 0.8);
        assert_eq!(record.salience, 1.0);
        assert_eq!(record.sensitivity, Sensitivity::Low);
        assert_eq!(record.lifecycle.decay.half_life_seconds, 3600);
        assert_eq!(record.created_at, now());
        let source = &record.provenance.sources[0];
        assert_eq!(source.kind, ProvenanceKind::Event);
        assert_eq!(
            source.timestamp,
            parse_rfc3339("2026-02-01T00:00:00Z").unwrap()
        );
        let Payload::Episodic(payload) = &record.payload else {
            panic!()
        };
        assert_eq!(payload.timeline[0].t, source.timestamp);
        assert_eq!(record.audit_log[0].action, AuditAction::Create);
    }

    #[test]
    fn an_observation_keeps_its_object_as_sent() {
        let record = created(json!({
            "kind": "observation", "source": "a", "subject": "user", "predicate": "likes", "object": "\"Go\""
        }));
        let Payload::Semantic(payload) = &record.payload else {
            panic!()
        };
        assert_eq!(payload.object, json!("\"Go\""));
        assert_eq!(payload.revision_policy, "replace");
        assert_eq!(record.confidence, 0.7);
        assert_eq!(record.lifecycle.decay.half_life_seconds, 2_592_000);
    }

    #[test]
    fn working_state_is_recorded_with_event_provenance() {
        let record = created(json!({
            "kind": "working_state", "source": "a", "thread_id": "t1", "state": "executing"
        }));
        assert_eq!(record.memory_type, MemoryType::Working);
        assert_eq!(record.confidence, 1.0);
        assert_eq!(record.provenance.sources[0].kind, ProvenanceKind::Event);
        assert_eq!(record.lifecycle.decay.half_life_seconds, 86_400);
        let Payload::Working(payload) = &record.payload else {
            panic!()
        };
        assert_eq!(payload.active_constraints, json!([]));
    }

    #[test]
    fn missing_required_fields_get_the_reference_messages() {
        let cases = [
            (
                json!({"kind": "event", "event_kind": "e", "ref": "r"}),
                "source: candidate source is required",
            ),
            (
                json!({"kind": "event", "source": " ", "event_kind": "e", "ref": "r"}),
                "source: candidate source is required",
            ),
            (
                json!({"kind": "event", "source": "s", "ref": "r"}),
                "event_kind: event kind is required for event candidates",
            ),
            (
                json!({"kind": "event", "source": "s", "event_kind": "e"}),
                "ref: event ref is required for event candidates",
            ),
            (
                json!({"kind": "tool_output", "source": "s"}),
                "tool_name: tool name is required for tool output candidates",
            ),
            (
                json!({"kind": "observation", "source": "s", "predicate": "p"}),
                "subject: subject is required for observation candidates",
            ),
            (
                json!({"kind": "observation", "source": "s", "subject": "x"}),
                "predicate: predicate is required for observation candidates",
            ),
            (
                json!({"kind": "outcome", "source": "s", "outcome_status": "success"}),
                "target_record_id: target record ID is required for outcome candidates",
            ),
            (
                json!({"kind": "outcome", "source": "s", "target_record_id": "x"}),
                "outcome_status: outcome status is required for outcome candidates",
            ),
            (
                json!({"kind": "working_state", "source": "s", "state": "done"}),
                "thread_id: thread ID is required for working state candidates",
            ),
            (
                json!({"kind": "working_state", "source": "s", "thread_id": "t"}),
                "state: task state is required for working state candidates",
            ),
            (
                json!({"kind": "event", "source": "s", "event_kind": "e", "ref": "r", "timestamp": "yesterday"}),
                "timestamp: invalid RFC 3339 timestamp",
            ),
        ];
        for (body, message) in cases {
            let err = build(body).unwrap_err();
            assert!(
                err.starts_with(message),
                "{err:?} should start with {message:?}"
            );
        }
    }

    #[test]
    fn an_outcome_applies_only_to_episodic_records() {
        let Candidate::Outcome(update) = build(json!({
            "kind": "outcome", "source": "s", "target_record_id": "x", "outcome_status": "failure"
        }))
        .unwrap() else {
            panic!()
        };
        let mut episodic =
            created(json!({"kind": "event", "source": "s", "event_kind": "e", "ref": "r"}));
        update.apply(&mut episodic, now()).unwrap();
        let Payload::Episodic(payload) = &episodic.payload else {
            panic!()
        };
        assert_eq!(payload.outcome, Some(OutcomeStatus::Failure));
        assert_eq!(episodic.confidence, 0.8);
        assert_eq!(
            episodic.audit_log.last().unwrap().action,
            AuditAction::Revise
        );
        assert_eq!(
            episodic.provenance.sources.last().unwrap().kind,
            ProvenanceKind::Outcome
        );

        let mut semantic = created(
            json!({"kind": "observation", "source": "s", "subject": "a", "predicate": "b"}),
        );
        assert!(update.apply(&mut semantic, now()).is_err());
    }
}
