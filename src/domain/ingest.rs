//! How what agents send becomes a record (or, for an outcome, a change to
//! one): classify by kind, apply policy, build the record with provenance
//! and a `create` audit entry through the record builder. The wire shapes
//! of the requests are in `http::requests`; the rules are here.

use serde_json::Value;

use super::builder::RecordDraft;
use super::conversation::{check_id as check_conversation_id, Attachment, Turn, MAX_TURNS};
use super::ids::{ConversationId, RecordId};
use super::new_record::NewRecordContext;
use super::payload::{
    EpisodicPayload, Evidence, OutcomeStatus, Payload, RevisionState, SemanticPayload,
    TimelineEvent, ToolNode, Validity, WorkingPayload,
};
use super::policy::CandidateKind;
use super::record::{
    Attribution, AuditAction, MemoryRecord, Provenance, ProvenanceKind, ProvenanceSource,
    Sensitivity,
};
use super::time::Timestamp;
use super::trust::signed;
use super::validate::{
    check_actor, check_json_size, check_strings, normalize_tags, optional_string, past_time,
    require_string, Validated, ValidationError,
};
use super::vector::Embedding;

/// Most items in one `ingest/batch` request.
pub const MAX_BATCH_ITEMS: usize = 1000;

/// A validated ingest: either a new record, or an outcome for an existing
/// episodic record (which only storage can check exists).
#[derive(Debug, Clone, PartialEq)]
pub enum Candidate {
    Create(Box<MemoryRecord>),
    Outcome(OutcomeUpdate),
}

impl Candidate {
    /// Whether storing it only adds a new record, reading nothing another
    /// write may change meanwhile: not an outcome (which changes its
    /// episode), not a working state (which supersedes its thread's
    /// current one), and without a vector (the first one stored fixes the
    /// database's dimensions).
    pub fn adds_only(&self) -> bool {
        match self {
            Candidate::Create(record) => {
                !matches!(record.payload, Payload::Working(_)) && record.embedding.is_none()
            }
            Candidate::Outcome(_) => false,
        }
    }

    /// Whether storing it may read `record`, a new record written before
    /// it in the same transaction: an outcome reads its episode, a working
    /// state its thread's current state. Nothing else looks a new record
    /// up, since its id is known to no one until the transaction commits.
    pub fn may_read(&self, record: &MemoryRecord) -> bool {
        match self {
            Candidate::Outcome(_) => true,
            Candidate::Create(new) => {
                new.payload.thread().is_some() && new.payload.thread() == record.payload.thread()
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeUpdate {
    pub target_record_id: RecordId,
    pub status: OutcomeStatus,
    pub source: String,
    /// Who the audit entry names: the source, signed by the request's key.
    pub actor: String,
    pub timestamp: Timestamp,
    /// A new vector for the episode, as it stands with its outcome.
    pub embedding: Option<Embedding>,
}

/// Why an outcome cannot be applied to the record it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotEpisodic {
    pub id: String,
    pub actual: super::record::MemoryType,
}

/// Checks the number of items of a batch; each item is checked on its own.
pub fn check_batch_size(items: usize) -> Validated<()> {
    if items == 0 {
        return Err(ValidationError::new(
            "items",
            "at least one item is required",
        ));
    }
    if items > MAX_BATCH_ITEMS {
        return Err(ValidationError::new(
            "items",
            format!("too many items: {items} given, maximum is {MAX_BATCH_ITEMS}"),
        ));
    }
    Ok(())
}

/// The fields shared by the record-creating requests, checked.
pub struct Common {
    source: String,
    timestamp: Timestamp,
    tags: Vec<String>,
    scope: Option<String>,
    sensitivity: Sensitivity,
    embedding: Option<Embedding>,
}

/// Checks the fields every record-creating request has.
pub fn common(
    cx: &NewRecordContext<'_>,
    source: String,
    timestamp: Option<String>,
    tags: Vec<String>,
    scope: Option<String>,
    sensitivity: Option<Sensitivity>,
    embedding: Option<Vec<f64>>,
) -> Validated<Common> {
    Ok(Common {
        source: require_source(source)?,
        timestamp: event_time(cx, timestamp)?,
        tags: normalize_tags("tags", tags)?,
        scope: optional_string("scope", scope)?,
        sensitivity: sensitivity.unwrap_or(cx.policy.default_sensitivity),
        embedding: Embedding::optional("embedding", embedding)?,
    })
}

fn require_source(source: String) -> Validated<String> {
    let source = require_string("source", source, "candidate source is required")?;
    check_actor("source", &source)?;
    Ok(source)
}

/// The time the data describes; ingest time when not given.
fn event_time(cx: &NewRecordContext<'_>, timestamp: Option<String>) -> Validated<Timestamp> {
    past_time("timestamp", timestamp.filter(|t| !t.is_empty()), cx.now)
}

fn new_record(
    cx: &NewRecordContext<'_>,
    kind: CandidateKind,
    common: Common,
    reference: String,
    payload: Payload,
) -> Validated<MemoryRecord> {
    new_record_as(cx, kind, kind_name(kind), common, reference, payload)
}

/// [`new_record`], its audit entry saying it ingested `what`.
fn new_record_as(
    cx: &NewRecordContext<'_>,
    kind: CandidateKind,
    what: &str,
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
        audit_log: vec![Attribution::new(
            signed(cx.key, &common.source),
            format!("ingested {what}"),
        )
        .entry(AuditAction::Create, cx.now)],
        embedding: common.embedding,
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

/// An event: an episode with one timeline entry.
pub fn event(
    cx: &NewRecordContext<'_>,
    common: Common,
    event_kind: String,
    reference: String,
    summary: Option<String>,
) -> Validated<Candidate> {
    let event_kind = require_string(
        "event_kind",
        event_kind,
        "event kind is required for event candidates",
    )?;
    let reference = require_string(
        "ref",
        reference,
        "event ref is required for event candidates",
    )?;
    let summary = optional_string("summary", summary)?;
    let payload = Payload::Episodic(EpisodicPayload {
        timeline: vec![TimelineEvent {
            t: common.timestamp,
            event_kind,
            reference: reference.clone(),
            summary,
        }],
        ..EpisodicPayload::default()
    });
    created(new_record(
        cx,
        CandidateKind::Event,
        common,
        reference,
        payload,
    ))
}

/// A tool call: an episode with one tool-graph node, whose generated id is
/// the provenance reference.
pub fn tool_output(
    cx: &NewRecordContext<'_>,
    common: Common,
    tool_name: String,
    args: Option<Value>,
    result: Option<Value>,
    depends_on: Vec<String>,
) -> Validated<Candidate> {
    let tool = require_string(
        "tool_name",
        tool_name,
        "tool name is required for tool output candidates",
    )?;
    let args = args.unwrap_or(Value::Null);
    let result = result.unwrap_or(Value::Null);
    check_json_size("args", &args)?;
    check_json_size("result", &result)?;
    check_strings("depends_on", &depends_on)?;
    let node_id = (cx.new_id)();
    let payload = Payload::Episodic(EpisodicPayload {
        tool_graph: vec![ToolNode {
            id: node_id.clone(),
            tool,
            args,
            result,
            timestamp: common.timestamp,
            depends_on,
        }],
        ..EpisodicPayload::default()
    });
    created(new_record(
        cx,
        CandidateKind::ToolOutput,
        common,
        node_id,
        payload,
    ))
}

/// An observation: a fact, kept as sent, evidenced by its source.
pub fn observation(
    cx: &NewRecordContext<'_>,
    common: Common,
    subject: String,
    predicate: String,
    object: Option<Value>,
) -> Validated<Candidate> {
    let subject = require_string(
        "subject",
        subject,
        "subject is required for observation candidates",
    )?;
    let predicate = require_string(
        "predicate",
        predicate,
        "predicate is required for observation candidates",
    )?;
    let object = object.unwrap_or(Value::Null);
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
    created(new_record(
        cx,
        CandidateKind::Observation,
        common,
        reference,
        payload,
    ))
}

/// Current task state: working memory, referenced by its thread.
pub fn working_state(
    cx: &NewRecordContext<'_>,
    common: Common,
    state: WorkingPayload,
) -> Validated<Candidate> {
    let thread_id = require_string(
        "thread_id",
        state.thread_id,
        "thread ID is required for working state candidates",
    )?;
    check_json_size("active_constraints", &state.active_constraints)?;
    check_strings("next_actions", &state.next_actions)?;
    check_strings("open_questions", &state.open_questions)?;
    let payload = Payload::Working(WorkingPayload {
        thread_id: thread_id.clone(),
        context_summary: optional_string("context_summary", state.context_summary)?,
        ..state
    });
    created(new_record(
        cx,
        CandidateKind::WorkingState,
        common,
        thread_id,
        payload,
    ))
}

fn created(record: Validated<MemoryRecord>) -> Validated<Candidate> {
    record.map(|record| Candidate::Create(Box::new(record)))
}

/// The outcome of an earlier episode, to be set on it.
pub fn outcome(
    cx: &NewRecordContext<'_>,
    source: String,
    target_record_id: String,
    status: OutcomeStatus,
    timestamp: Option<String>,
    embedding: Option<Vec<f64>>,
) -> Validated<Candidate> {
    let source = require_source(source)?;
    let target_record_id = require_string(
        "target_record_id",
        target_record_id,
        "target record ID is required for outcome candidates",
    )?;
    let target_record_id = RecordId::parse("target_record_id", target_record_id)?;
    Ok(Candidate::Outcome(OutcomeUpdate {
        target_record_id,
        status,
        actor: signed(cx.key, &source),
        source,
        timestamp: event_time(cx, timestamp)?,
        embedding: Embedding::optional("embedding", embedding)?,
    }))
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
        if self.embedding.is_some() {
            record.embedding.clone_from(&self.embedding);
        }
        record.provenance.sources.push(ProvenanceSource {
            kind: ProvenanceKind::Outcome,
            reference: self.source.clone(),
            hash: None,
            created_by: Some(self.source.clone()),
            timestamp: self.timestamp,
        });
        let by = Attribution::new(
            self.actor.clone(),
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
    use crate::domain::new_record::NewRecord;
    use crate::domain::policy::Policy;
    use crate::domain::record::Attribution;
    use crate::domain::vector::Embedding;

    fn created(kind: &str, payload: serde_json::Value) -> MemoryRecord {
        let new: NewRecord = serde_json::from_value(serde_json::json!({
            "type": kind, "sensitivity": "low", "payload": payload
        }))
        .unwrap();
        new.into_record(
            &Policy::default(),
            &Attribution::new("t", "test"),
            chrono::Utc::now(),
            || "r-1".to_string(),
        )
        .unwrap()
    }

    #[test]
    fn only_new_records_without_a_thread_or_a_vector_add_only() {
        let fact = created(
            "semantic",
            serde_json::json!({"kind": "semantic", "subject": "s", "predicate": "is"}),
        );
        assert!(Candidate::Create(Box::new(fact.clone())).adds_only());
        let mut with_vector = fact;
        with_vector.embedding = Some(Embedding::new("embedding", vec![1.0, 0.0]).unwrap());
        assert!(!Candidate::Create(Box::new(with_vector)).adds_only());
        let state = created(
            "working",
            serde_json::json!({"kind": "working", "thread_id": "t", "state": "done"}),
        );
        assert!(!Candidate::Create(Box::new(state)).adds_only());
        let outcome = Candidate::Outcome(OutcomeUpdate {
            target_record_id: RecordId::stored("r-1".into()),
            status: OutcomeStatus::Success,
            source: "s".into(),
            actor: "s".into(),
            timestamp: chrono::Utc::now(),
            embedding: None,
        });
        assert!(!outcome.adds_only());
    }
}

/// A turn of a conversation as a client sends it, checked but not yet
/// placed: its session and index are the writer's to set.
pub struct TurnFields {
    pub speaker: String,
    pub text: String,
    pub at: Option<String>,
    pub reference: Option<String>,
    pub attachments: Vec<Attachment>,
    pub embedding: Option<Vec<f64>>,
}

/// The turns of one request, as records whose turns are still to be
/// placed in their conversation ([`crate::domain::conversation::place`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NewConversation {
    pub conversation_id: ConversationId,
    /// The session the client named, if any.
    pub session_id: Option<String>,
    pub records: Vec<MemoryRecord>,
}

/// The session a turn stands in until the writer places it.
const UNPLACED: &str = "-";

/// Checks a conversation's turns and builds their records: one episodic
/// record per turn, in the order sent, sharing the request's source,
/// scope, sensitivity and tags.
#[allow(clippy::too_many_arguments)]
pub fn conversation(
    cx: &NewRecordContext<'_>,
    source: String,
    conversation_id: String,
    session_id: Option<String>,
    scope: Option<String>,
    sensitivity: Option<Sensitivity>,
    tags: Vec<String>,
    turns: Vec<TurnFields>,
) -> Validated<NewConversation> {
    let source = require_source(source)?;
    let conversation_id = ConversationId::parse("conversation_id", conversation_id)?;
    if let Some(session) = &session_id {
        check_conversation_id("session_id", session)?;
    }
    let scope = optional_string("scope", scope)?;
    let tags = normalize_tags("tags", tags)?;
    if turns.is_empty() || turns.len() > MAX_TURNS {
        return Err(ValidationError::new(
            "turns",
            format!("1 to {MAX_TURNS} turns are required, {} given", turns.len()),
        ));
    }
    let mut records = Vec::with_capacity(turns.len());
    for (i, fields) in turns.into_iter().enumerate() {
        let field = |name: &str| format!("turns[{i}].{name}");
        let at = past_time(&field("at"), fields.at, cx.now)?;
        let turn = Turn {
            conversation_id: conversation_id.to_string(),
            session_id: session_id.clone().unwrap_or_else(|| UNPLACED.to_string()),
            index: 0,
            speaker: fields.speaker,
            text: fields.text,
            at,
            reference: fields.reference,
            attachments: fields.attachments,
        };
        turn.validate(&format!("turns[{i}]"))?;
        let common = Common {
            source: source.clone(),
            timestamp: at,
            tags: tags.clone(),
            scope: scope.clone(),
            sensitivity: sensitivity.unwrap_or(cx.policy.default_sensitivity),
            embedding: Embedding::optional(&field("embedding"), fields.embedding)?,
        };
        let reference = turn
            .reference
            .clone()
            .unwrap_or_else(|| conversation_id.to_string());
        let payload = Payload::Episodic(EpisodicPayload {
            turn: Some(turn),
            ..EpisodicPayload::default()
        });
        records.push(
            new_record_as(
                cx,
                CandidateKind::Event,
                "conversation turn",
                common,
                reference,
                payload,
            )
            .map_err(|e| e.within(&format!("turns[{i}]")))?,
        );
    }
    Ok(NewConversation {
        conversation_id,
        session_id,
        records,
    })
}
