//! The five ingest requests and how each becomes a record (or, for an
//! outcome, a change to one): classify by kind, apply policy, build the
//! record with provenance and a `create` audit entry.
//!
//! Request fields are all optional in the JSON shape so that a missing one
//! gets the reference's message ("event ref is required for event
//! candidates") instead of a generic parser error.

use serde::Deserialize;
use serde_json::Value;

use super::builder::RecordDraft;
use super::payload::{
    empty_array, EpisodicPayload, Evidence, OutcomeStatus, Payload, RevisionState, SemanticPayload,
    TaskState, TimelineEvent, ToolNode, Validity, WorkingPayload,
};
use super::policy::{CandidateKind, Policy};
use super::record::{
    Attribution, AuditAction, MemoryRecord, Provenance, ProvenanceKind, ProvenanceSource,
    Sensitivity,
};
use super::time::{parse_rfc3339, truncate_to_micros, Timestamp};
use super::validate::{
    check_json_size, check_strings, normalize_tags, null_as_default, optional_string,
    require_string, Validated, ValidationError,
};

/// Most items in one `ingest/batch` request.
pub const MAX_BATCH_ITEMS: usize = 1000;

/// Fields every record-creating request shares.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRequest {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub event_kind: Option<String>,
    #[serde(rename = "ref", alias = "event_ref", default)]
    pub reference: Option<String>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags: Vec<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOutputRequest {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags: Vec<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationRequest {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub predicate: Option<String>,
    #[serde(default)]
    pub object: Option<Value>,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags: Vec<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRequest {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub target_record_id: Option<String>,
    #[serde(default)]
    pub outcome_status: Option<OutcomeStatus>,
    #[serde(default)]
    pub timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkingStateRequest {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub thread_id: Option<String>,
    #[serde(alias = "task_state", default)]
    pub state: Option<TaskState>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub next_actions: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub open_questions: Vec<String>,
    #[serde(default)]
    pub context_summary: Option<String>,
    #[serde(default)]
    pub active_constraints: Option<Value>,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags: Vec<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub sensitivity: Option<Sensitivity>,
}

/// One item of `POST /v1/ingest/batch`: the same fields as the single
/// endpoints, plus `kind`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IngestItem {
    Event(EventRequest),
    ToolOutput(ToolOutputRequest),
    Observation(ObservationRequest),
    Outcome(OutcomeRequest),
    WorkingState(WorkingStateRequest),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    #[serde(default)]
    pub items: Option<Vec<IngestItem>>,
}

/// A validated ingest: either a new record, or an outcome for an existing
/// episodic record (which only storage can check exists).
#[derive(Debug, Clone, PartialEq)]
pub enum Candidate {
    Create(Box<MemoryRecord>),
    Outcome(OutcomeUpdate),
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeUpdate {
    pub target_record_id: String,
    pub status: OutcomeStatus,
    pub source: String,
    pub timestamp: Timestamp,
}

/// Why an outcome cannot be applied to the record it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotEpisodic {
    pub id: String,
    pub actual: super::record::MemoryType,
}

/// What every ingest needs besides the request.
pub struct IngestContext<'a> {
    pub policy: &'a Policy,
    pub now: Timestamp,
    pub new_id: &'a dyn Fn() -> String,
}

impl IngestItem {
    pub fn kind(&self) -> CandidateKind {
        match self {
            IngestItem::Event(_) => CandidateKind::Event,
            IngestItem::ToolOutput(_) => CandidateKind::ToolOutput,
            IngestItem::Observation(_) => CandidateKind::Observation,
            IngestItem::Outcome(_) => CandidateKind::Outcome,
            IngestItem::WorkingState(_) => CandidateKind::WorkingState,
        }
    }

    /// Validates the request and builds what it asks for.
    pub fn into_candidate(self, cx: &IngestContext<'_>) -> Validated<Candidate> {
        let kind = self.kind();
        match self {
            IngestItem::Event(req) => build_event(req, cx).map(|r| Candidate::Create(Box::new(r))),
            IngestItem::ToolOutput(req) => {
                build_tool_output(req, cx).map(|r| Candidate::Create(Box::new(r)))
            }
            IngestItem::Observation(req) => {
                build_observation(req, cx).map(|r| Candidate::Create(Box::new(r)))
            }
            IngestItem::WorkingState(req) => {
                build_working_state(req, cx).map(|r| Candidate::Create(Box::new(r)))
            }
            IngestItem::Outcome(req) => {
                debug_assert_eq!(kind, CandidateKind::Outcome);
                build_outcome(req, cx).map(Candidate::Outcome)
            }
        }
    }
}

impl BatchRequest {
    /// Validates every item; the first bad one rejects the whole batch, its
    /// field path naming the item (`items[3].source`).
    pub fn into_candidates(self, cx: &IngestContext<'_>) -> Validated<Vec<Candidate>> {
        let items = self.items.unwrap_or_default();
        if items.is_empty() {
            return Err(ValidationError::new(
                "items",
                "at least one item is required",
            ));
        }
        if items.len() > MAX_BATCH_ITEMS {
            return Err(ValidationError::new(
                "items",
                format!(
                    "too many items: {} given, maximum is {MAX_BATCH_ITEMS}",
                    items.len()
                ),
            ));
        }
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                item.into_candidate(cx)
                    .map_err(|e| e.within(&format!("items[{i}]")))
            })
            .collect()
    }
}

/// The fields shared by the record-creating requests, checked.
struct Common {
    source: String,
    timestamp: Timestamp,
    tags: Vec<String>,
    scope: Option<String>,
    sensitivity: Sensitivity,
}

fn common(
    cx: &IngestContext<'_>,
    source: Option<String>,
    timestamp: Option<String>,
    tags: Vec<String>,
    scope: Option<String>,
    sensitivity: Option<Sensitivity>,
) -> Validated<Common> {
    Ok(Common {
        source: require_string("source", source, "candidate source is required")?,
        timestamp: event_time(cx, timestamp)?,
        tags: normalize_tags("tags", tags)?,
        scope: optional_string("scope", scope)?,
        sensitivity: sensitivity.unwrap_or(cx.policy.default_sensitivity),
    })
}

/// The time the data describes; ingest time when not given.
fn event_time(cx: &IngestContext<'_>, timestamp: Option<String>) -> Validated<Timestamp> {
    match timestamp {
        None => Ok(cx.now),
        Some(text) if text.is_empty() => Ok(cx.now),
        Some(text) => parse_rfc3339(&text)
            .map(truncate_to_micros)
            .map_err(|e| ValidationError::new("timestamp", e)),
    }
}

fn new_record(
    cx: &IngestContext<'_>,
    kind: CandidateKind,
    common: Common,
    reference: String,
    payload: Payload,
) -> Validated<MemoryRecord> {
    let draft = RecordDraft {
        scope: common.scope,
        tags: common.tags,
        provenance: Provenance {
            sources: vec![ProvenanceSource {
                kind: kind.provenance_kind(),
                reference,
                hash: None,
                created_by: Some(common.source.clone()),
                timestamp: common.timestamp,
            }],
            created_by: Some(common.source.clone()),
        },
        audit_log: vec![
            Attribution::new(common.source, format!("ingested {}", kind_name(kind)))
                .entry(AuditAction::Create, cx.now),
        ],
        ..RecordDraft::new(
            kind.memory_type(),
            common.sensitivity,
            kind.confidence(),
            payload,
        )
    };
    draft.build(cx.policy, cx.now, cx.new_id)
}

fn kind_name(kind: CandidateKind) -> &'static str {
    match kind {
        CandidateKind::Event => "event",
        CandidateKind::ToolOutput => "tool output",
        CandidateKind::Observation => "observation",
        CandidateKind::Outcome => "outcome",
        CandidateKind::WorkingState => "working state",
    }
}

fn build_event(req: EventRequest, cx: &IngestContext<'_>) -> Validated<MemoryRecord> {
    let common = common(
        cx,
        req.source,
        req.timestamp,
        req.tags,
        req.scope,
        req.sensitivity,
    )?;
    let event_kind = require_string(
        "event_kind",
        req.event_kind,
        "event kind is required for event candidates",
    )?;
    let reference = require_string(
        "ref",
        req.reference,
        "event ref is required for event candidates",
    )?;
    let summary = optional_string("summary", req.summary)?;
    let payload = Payload::Episodic(EpisodicPayload {
        timeline: vec![TimelineEvent {
            t: common.timestamp,
            event_kind,
            reference: reference.clone(),
            summary,
        }],
        ..EpisodicPayload::default()
    });
    new_record(cx, CandidateKind::Event, common, reference, payload)
}

fn build_tool_output(req: ToolOutputRequest, cx: &IngestContext<'_>) -> Validated<MemoryRecord> {
    let common = common(
        cx,
        req.source,
        req.timestamp,
        req.tags,
        req.scope,
        req.sensitivity,
    )?;
    let tool = require_string(
        "tool_name",
        req.tool_name,
        "tool name is required for tool output candidates",
    )?;
    let args = req.args.unwrap_or(Value::Null);
    let result = req.result.unwrap_or(Value::Null);
    check_json_size("args", &args)?;
    check_json_size("result", &result)?;
    check_strings("depends_on", &req.depends_on)?;
    let node_id = (cx.new_id)();
    let payload = Payload::Episodic(EpisodicPayload {
        tool_graph: vec![ToolNode {
            id: node_id.clone(),
            tool,
            args,
            result,
            timestamp: common.timestamp,
            depends_on: req.depends_on,
        }],
        ..EpisodicPayload::default()
    });
    new_record(cx, CandidateKind::ToolOutput, common, node_id, payload)
}

fn build_observation(req: ObservationRequest, cx: &IngestContext<'_>) -> Validated<MemoryRecord> {
    let common = common(
        cx,
        req.source,
        req.timestamp,
        req.tags,
        req.scope,
        req.sensitivity,
    )?;
    let subject = require_string(
        "subject",
        req.subject,
        "subject is required for observation candidates",
    )?;
    let predicate = require_string(
        "predicate",
        req.predicate,
        "predicate is required for observation candidates",
    )?;
    let object = req.object.unwrap_or(Value::Null);
    check_json_size("object", &object)?;
    let payload = Payload::Semantic(SemanticPayload {
        subject,
        predicate,
        object,
        validity: Validity::default(),
        evidence: vec![Evidence {
            source_type: "observation".to_string(),
            source_id: common.source.clone(),
            timestamp: Some(common.timestamp),
        }],
        revision_policy: "replace".to_string(),
        revision: RevisionState::default(),
    });
    let reference = common.source.clone();
    new_record(cx, CandidateKind::Observation, common, reference, payload)
}

fn build_working_state(
    req: WorkingStateRequest,
    cx: &IngestContext<'_>,
) -> Validated<MemoryRecord> {
    let common = common(
        cx,
        req.source,
        req.timestamp,
        req.tags,
        req.scope,
        req.sensitivity,
    )?;
    let thread_id = require_string(
        "thread_id",
        req.thread_id,
        "thread ID is required for working state candidates",
    )?;
    let state = req.state.ok_or_else(|| {
        ValidationError::new(
            "state",
            "task state is required for working state candidates",
        )
    })?;
    let active_constraints = req.active_constraints.unwrap_or_else(empty_array);
    check_json_size("active_constraints", &active_constraints)?;
    check_strings("next_actions", &req.next_actions)?;
    check_strings("open_questions", &req.open_questions)?;
    let payload = Payload::Working(WorkingPayload {
        thread_id: thread_id.clone(),
        state,
        active_constraints,
        next_actions: req.next_actions,
        open_questions: req.open_questions,
        context_summary: optional_string("context_summary", req.context_summary)?,
    });
    new_record(cx, CandidateKind::WorkingState, common, thread_id, payload)
}

fn build_outcome(req: OutcomeRequest, cx: &IngestContext<'_>) -> Validated<OutcomeUpdate> {
    let source = require_string("source", req.source, "candidate source is required")?;
    let target_record_id = require_string(
        "target_record_id",
        req.target_record_id,
        "target record ID is required for outcome candidates",
    )?;
    let status = req.outcome_status.ok_or_else(|| {
        ValidationError::new(
            "outcome_status",
            "outcome status is required for outcome candidates",
        )
    })?;
    Ok(OutcomeUpdate {
        target_record_id,
        status,
        source,
        timestamp: event_time(cx, req.timestamp)?,
    })
}

impl OutcomeUpdate {
    /// Sets the outcome on an episodic record, with a provenance source and
    /// a `revise` audit entry; confidence is left as it is.
    pub fn apply(&self, record: &mut MemoryRecord, now: Timestamp) -> Result<(), NotEpisodic> {
        let Payload::Episodic(payload) = &mut record.payload else {
            return Err(NotEpisodic {
                id: record.id.clone(),
                actual: record.memory_type,
            });
        };
        payload.outcome = Some(self.status);
        record.provenance.sources.push(ProvenanceSource {
            kind: ProvenanceKind::Outcome,
            reference: self.source.clone(),
            hash: None,
            created_by: Some(self.source.clone()),
            timestamp: self.timestamp,
        });
        let by = Attribution::new(
            self.source.clone(),
            format!("outcome reported: {}", outcome_name(self.status)),
        );
        record.audit_log.push(by.entry(AuditAction::Revise, now));
        record.updated_at = now;
        Ok(())
    }
}

fn outcome_name(status: OutcomeStatus) -> &'static str {
    match status {
        OutcomeStatus::Success => "success",
        OutcomeStatus::Failure => "failure",
        OutcomeStatus::Partial => "partial",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::record::MemoryType;
    use serde_json::json;

    fn now() -> Timestamp {
        parse_rfc3339("2026-03-01T12:00:00Z").unwrap()
    }

    fn build(body: Value) -> Validated<Candidate> {
        let item: IngestItem = serde_json::from_value(body).unwrap();
        let policy = Policy::default();
        let cx = IngestContext {
            policy: &policy,
            now: now(),
            new_id: &|| "fixed-id".to_string(),
        };
        item.into_candidate(&cx)
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
    }

    #[test]
    fn missing_required_fields_get_the_reference_messages() {
        let cases = [
            (
                json!({"kind": "event", "event_kind": "e", "ref": "r"}),
                "source",
                "candidate source is required",
            ),
            (
                json!({"kind": "event", "source": "s", "ref": "r"}),
                "event_kind",
                "event kind is required for event candidates",
            ),
            (
                json!({"kind": "event", "source": "s", "event_kind": "e"}),
                "ref",
                "event ref is required for event candidates",
            ),
            (
                json!({"kind": "tool_output", "source": "s"}),
                "tool_name",
                "tool name is required for tool output candidates",
            ),
            (
                json!({"kind": "observation", "source": "s", "predicate": "p"}),
                "subject",
                "subject is required for observation candidates",
            ),
            (
                json!({"kind": "observation", "source": "s", "subject": "x"}),
                "predicate",
                "predicate is required for observation candidates",
            ),
            (
                json!({"kind": "outcome", "source": "s", "outcome_status": "success"}),
                "target_record_id",
                "target record ID is required for outcome candidates",
            ),
            (
                json!({"kind": "outcome", "source": "s", "target_record_id": "x"}),
                "outcome_status",
                "outcome status is required for outcome candidates",
            ),
            (
                json!({"kind": "working_state", "source": "s", "state": "done"}),
                "thread_id",
                "thread ID is required for working state candidates",
            ),
            (
                json!({"kind": "working_state", "source": "s", "thread_id": "t"}),
                "state",
                "task state is required for working state candidates",
            ),
            (
                json!({"kind": "event", "source": "s", "event_kind": "e", "ref": "r", "timestamp": "yesterday"}),
                "timestamp",
                "invalid RFC 3339 timestamp",
            ),
        ];
        for (body, field, message) in cases {
            let err = build(body).unwrap_err();
            assert_eq!(err.field, field);
            assert!(err.message.contains(message), "{err}");
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
