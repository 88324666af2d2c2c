//! The request bodies of the JSON API, as clients send them: a field the
//! API requires is required in the type (so a schema generated from these
//! types says so), optional ones are `Option` or default to empty. Unknown
//! fields are refused.
//!
//! Each body turns into the domain request it stands for through the
//! domain's own checks (`domain::ingest`, `domain::revision`,
//! `domain::retrieval`); the actors call these conversions, so the checks
//! run on their threads, once. A missing field is reported by
//! `http::parse_json` with the reference's words for it.

use serde::Deserialize;
use serde_json::Value;

use crate::domain::access::Access;
use crate::domain::ingest::{self, Candidate, IngestContext};
use crate::domain::payload::{empty_array, OutcomeStatus, TaskState, WorkingPayload};
use crate::domain::policy::NewRecord;
use crate::domain::record::{MemoryType, Sensitivity};
use crate::domain::retrieval::{FilterFields, Filters, Retrieval};
use crate::domain::revision::{
    self, attribution, record_id, revised_record, NewRecordContext, Revision, RevisionCommand,
};
use crate::domain::trust::{Caller, TrustContext};
use crate::domain::validate::{null_as_default, Validated};
use crate::domain::vector::Embedding;
use crate::service::graph::GraphLimits;

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:planner", "event_kind": "deploy", "ref": "run-42", "summary": "Deployed billing 1.4 to staging", "tags": ["deploy"], "sensitivity": "low"}))]
pub struct EventRequest {
    pub source: String,
    pub event_kind: String,
    #[serde(rename = "ref", alias = "event_ref")]
    pub reference: String,
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
    #[serde(default)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:coder", "tool_name": "pytest", "args": {"path": "tests/"}, "result": {"passed": 120, "failed": 0}, "tags": ["ci"]}))]
pub struct ToolOutputRequest {
    pub source: String,
    pub tool_name: String,
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
    #[serde(default)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:planner", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "sensitivity": "low"}))]
pub struct ObservationRequest {
    pub source: String,
    pub subject: String,
    pub predicate: String,
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
    #[serde(default)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:coder", "target_record_id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "outcome_status": "success"}))]
pub struct OutcomeRequest {
    pub source: String,
    pub target_record_id: String,
    pub outcome_status: OutcomeStatus,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default)]
    pub embedding: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "agent:coder", "thread_id": "ticket-1182", "state": "executing", "next_actions": ["run the migration on staging"], "open_questions": ["is the index needed?"], "context_summary": "Adding a column to invoices"}))]
pub struct WorkingStateRequest {
    pub source: String,
    pub thread_id: String,
    #[serde(alias = "task_state")]
    pub state: TaskState,
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
    #[serde(default)]
    pub embedding: Option<Vec<f64>>,
}

/// One item of `POST /v1/ingest/batch`: the same fields as the single
/// endpoints, plus `kind`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
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
    pub items: Vec<IngestItem>,
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
    pub fn into_candidate(self, cx: &IngestContext<'_>) -> Validated<Candidate> {
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
    pub fn into_candidates(self, cx: &IngestContext<'_>) -> Validated<Vec<Candidate>> {
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

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:planner", "rationale": "ownership moved", "old_id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "new_record": {"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "evidence": [{"source_type": "event", "source_id": "run-42"}]}}}))]
pub struct SupersedeRequest {
    pub actor: String,
    pub rationale: String,
    pub old_id: String,
    pub new_record: NewRecord,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:planner", "rationale": "a variant for the EU region", "source_id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "forked_record": {"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "evidence": [{"source_type": "event", "source_id": "run-42"}]}}}))]
pub struct ForkRequest {
    pub actor: String,
    pub rationale: String,
    pub source_id: String,
    pub forked_record: NewRecord,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:reviewer", "rationale": "the observation was wrong", "id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10"}))]
pub struct RetractRequest {
    pub actor: String,
    pub rationale: String,
    pub id: String,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:curator", "rationale": "two records of one fact", "ids": ["3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "8d1e4b2a-0c9f-4e3d-a6b5-7c2d1e0f9a8b"], "merged_record": {"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "evidence": [{"source_type": "event", "source_id": "run-42"}]}}}))]
pub struct MergeRequest {
    pub actor: String,
    pub rationale: String,
    pub ids: Vec<String>,
    pub merged_record: NewRecord,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:reviewer", "rationale": "the dashboard shows another owner", "id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "contesting_ref": "dashboard:owners"}))]
pub struct ContestRequest {
    pub actor: String,
    pub rationale: String,
    pub id: String,
    #[serde(default)]
    pub contesting_ref: Option<String>,
    /// Clears a contest: the record goes back to active.
    #[serde(default)]
    pub resolve: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:coder", "rationale": "the procedure worked"}))]
pub struct ReinforceRequest {
    pub actor: String,
    pub rationale: String,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:coder", "rationale": "the procedure failed twice", "amount": 0.2}))]
pub struct PenalizeRequest {
    pub actor: String,
    pub rationale: String,
    pub amount: f64,
}

/// A revision as a client asks for it; the record id of reinforce and
/// penalize comes from the path.
#[derive(Debug, Clone)]
pub enum RevisionRequest {
    Supersede(SupersedeRequest),
    Fork(ForkRequest),
    Retract(RetractRequest),
    Merge(MergeRequest),
    Contest(ContestRequest),
    Reinforce {
        id: String,
        request: ReinforceRequest,
    },
    Penalize {
        id: String,
        request: PenalizeRequest,
    },
}

impl RevisionRequest {
    /// The new record the revision makes, and the request field it is in.
    pub fn new_record(&self) -> Option<(&'static str, &NewRecord)> {
        match self {
            RevisionRequest::Supersede(r) => Some(("new_record", &r.new_record)),
            RevisionRequest::Fork(r) => Some(("forked_record", &r.forked_record)),
            RevisionRequest::Merge(r) => Some(("merged_record", &r.merged_record)),
            _ => None,
        }
    }

    /// Checks the request and builds the command it asks for.
    pub fn into_command(self, cx: &NewRecordContext<'_>) -> Validated<RevisionCommand> {
        let (by, revision) = match self {
            RevisionRequest::Supersede(r) => {
                let by = attribution(cx.key, r.actor, r.rationale)?;
                let old_id = record_id("old_id", r.old_id)?;
                let new_record = revised_record("new_record", r.new_record, &by, cx)?;
                let revision = Revision::Supersede {
                    old_id,
                    new_record: Box::new(new_record),
                };
                (by, revision)
            }
            RevisionRequest::Fork(r) => {
                let by = attribution(cx.key, r.actor, r.rationale)?;
                let source_id = record_id("source_id", r.source_id)?;
                let forked_record = revised_record("forked_record", r.forked_record, &by, cx)?;
                let revision = Revision::Fork {
                    source_id,
                    forked_record: Box::new(forked_record),
                };
                (by, revision)
            }
            RevisionRequest::Retract(r) => {
                let by = attribution(cx.key, r.actor, r.rationale)?;
                let id = record_id("id", r.id)?;
                (by, Revision::Retract { id })
            }
            RevisionRequest::Merge(r) => {
                let by = attribution(cx.key, r.actor, r.rationale)?;
                revision::check_merge_ids(&r.ids)?;
                let merged_by = revision::merged_by(&by, &r.ids);
                let merged_record =
                    revised_record("merged_record", r.merged_record, &merged_by, cx)?;
                let revision = Revision::Merge {
                    ids: r.ids,
                    merged_record: Box::new(merged_record),
                };
                (by, revision)
            }
            RevisionRequest::Contest(r) => {
                let by = attribution(cx.key, r.actor, r.rationale)?;
                let id = record_id("id", r.id)?;
                let revision =
                    revision::contest_revision(id, r.contesting_ref, r.resolve.unwrap_or(false))?;
                (by, revision)
            }
            RevisionRequest::Reinforce { id, request } => {
                let by = attribution(cx.key, request.actor, request.rationale)?;
                let id = record_id("id", id)?;
                (by, Revision::Reinforce { id })
            }
            RevisionRequest::Penalize { id, request } => {
                let by = attribution(cx.key, request.actor, request.rationale)?;
                let id = record_id("id", id)?;
                let amount = revision::check_penalty(request.amount)?;
                (by, Revision::Penalize { id, amount })
            }
        };
        Ok(RevisionCommand { revision, by })
    }
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}, "task_descriptor": "deploy the billing service", "memory_types": ["competence", "semantic"], "limit": 10}))]
pub struct RetrieveRequest {
    /// Required without a key; with one, the key's grant when absent.
    #[serde(default)]
    pub trust: Option<TrustContext>,
    #[serde(default)]
    pub task_descriptor: Option<String>,
    #[serde(default)]
    pub memory_types: Option<Vec<MemoryType>>,
    #[serde(default)]
    pub min_salience: Option<f64>,
    /// 0 or absent: the server's maximum.
    #[serde(default)]
    pub limit: Option<i64>,
    #[serde(default)]
    pub context: Option<Value>,
    #[serde(default)]
    pub include_retracted: Option<bool>,
    /// `next_cursor` of an earlier answer, to continue it.
    #[serde(default)]
    pub cursor: Option<String>,
    /// At most this many records in one answer, the rest of `limit`
    /// following through `next_cursor`; absent: as many as fit in the
    /// server's response size.
    #[serde(default)]
    pub page_size: Option<i64>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub sources: Option<Vec<String>>,
    #[serde(default)]
    pub thread_id: Option<String>,
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub created_after: Option<String>,
    #[serde(default)]
    pub created_before: Option<String>,
    #[serde(default)]
    pub query_embedding: Option<Vec<f64>>,
}

impl RetrieveRequest {
    /// The trust the request presents, and the retrieval it asks for.
    pub fn into_retrieval(
        self,
        access: &Access,
        max_limit: usize,
    ) -> Validated<(Caller, Retrieval)> {
        let caller = access.reader(self.trust)?;
        let retrieval = Retrieval::new(
            self.task_descriptor,
            self.memory_types.unwrap_or_default(),
            self.min_salience.unwrap_or(0.0),
            self.limit.unwrap_or(0),
            max_limit,
            self.context,
            self.include_retracted.unwrap_or(false),
        )?
        .continuing(self.cursor)?
        .paged(self.page_size, max_limit)?
        .filtered(Filters::new(FilterFields {
            tags: self.tags,
            sources: self.sources,
            thread_id: self.thread_id,
            subject: self.subject,
            created_after: self.created_after,
            created_before: self.created_before,
        })?)
        .embedded(Embedding::optional(
            "query_embedding",
            self.query_embedding,
        )?);
        Ok((caller, retrieval))
    }
}

/// `POST /v1/retrieve/graph`: ranked roots and what they link to.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}, "task_descriptor": "billing ownership", "root_limit": 5, "max_hops": 2}))]
pub struct GraphRequest {
    #[serde(default)]
    pub trust: Option<TrustContext>,
    #[serde(default)]
    pub task_descriptor: Option<String>,
    #[serde(default)]
    pub query_embedding: Option<Vec<f64>>,
    #[serde(default)]
    pub memory_types: Option<Vec<MemoryType>>,
    #[serde(default)]
    pub root_limit: Option<i64>,
    #[serde(default)]
    pub max_hops: Option<u8>,
    #[serde(default)]
    pub node_limit: Option<usize>,
    #[serde(default)]
    pub edge_limit: Option<usize>,
}

impl GraphRequest {
    /// The caller, the retrieval of the roots (10 unless `root_limit`
    /// says) and the limits of the walk.
    pub fn into_graph(
        self,
        access: &Access,
        max_limit: usize,
    ) -> Validated<(Caller, Retrieval, GraphLimits)> {
        let caller = access.reader(self.trust)?;
        let root_limit = match self.root_limit {
            None => 10,
            Some(n) if n < 1 => {
                return Err(crate::domain::validate::ValidationError::new(
                    "root_limit",
                    format!("must be at least 1, got {n}"),
                ))
            }
            Some(n) => n,
        };
        let retrieval = Retrieval::new(
            self.task_descriptor,
            self.memory_types.unwrap_or_default(),
            0.0,
            root_limit,
            max_limit,
            None,
            false,
        )
        .map_err(|e| e.renamed("limit", "root_limit"))?
        .embedded(Embedding::optional(
            "query_embedding",
            self.query_embedding,
        )?);
        let limits = GraphLimits::checked(self.max_hops, self.node_limit, self.edge_limit)?;
        Ok((caller, retrieval, limits))
    }
}

/// `POST /v1/retrieve/{id}` and `POST /v1/records/{id}/history`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}}))]
pub struct TrustOnlyRequest {
    /// Required without a key; with one, the key's grant when absent.
    #[serde(default)]
    pub trust: Option<TrustContext>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::payload::Payload;
    use crate::domain::policy::Policy;
    use crate::domain::record::{AuditAction, MemoryRecord, ProvenanceKind};
    use crate::domain::time::{parse_rfc3339, Timestamp};
    use crate::http::parse_json;
    use serde_json::json;

    fn now() -> Timestamp {
        parse_rfc3339("2026-03-01T12:00:00Z").unwrap()
    }

    /// Parses an ingest item as the API does and builds it; an error is
    /// the message a client would get.
    fn build(body: Value) -> Result<Candidate, String> {
        let item: IngestItem = parse_json(body.to_string().as_bytes()).map_err(|e| e.message)?;
        let policy = Policy::default();
        let cx = IngestContext {
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

    fn command(request: RevisionRequest) -> Result<RevisionCommand, String> {
        let policy = Policy::default();
        let new_id = || "new".to_string();
        let cx = NewRecordContext {
            policy: &policy,
            now: now(),
            new_id: &new_id,
            key: None,
        };
        request.into_command(&cx).map_err(|e| e.to_string())
    }

    fn parsed<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, String> {
        parse_json(body.to_string().as_bytes()).map_err(|e| e.message)
    }

    #[test]
    fn actor_and_rationale_are_required() {
        let err = parsed::<RetractRequest>(json!({"id": "x", "actor": "a"})).unwrap_err();
        assert_eq!(err, "rationale: rationale is required");
        let request: RetractRequest =
            parsed(json!({"id": "x", "rationale": "r", "actor": " "})).unwrap();
        let err = command(RevisionRequest::Retract(request)).unwrap_err();
        assert_eq!(err, "actor: actor is required");
    }

    #[test]
    fn a_semantic_revision_needs_evidence_of_its_own() {
        let bare = json!({"old_id": "old", "actor": "a", "rationale": "r", "new_record": {
            "type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "go", "predicate": "version", "object": "1.22"}}});
        let supersede = |body: Value| command(RevisionRequest::Supersede(parsed(body).unwrap()));
        let err = supersede(bare.clone()).unwrap_err();
        assert!(err.starts_with("new_record: "), "{err}");
        assert!(err.contains("evidence"), "{err}");
        let mut with_source = bare.clone();
        with_source["new_record"]["provenance"] = json!({"sources": [{"kind": "observation", "ref": "notes", "timestamp": "2026-01-01T00:00:00Z"}]});
        assert!(supersede(with_source).is_ok());
        let mut with_evidence = bare;
        with_evidence["new_record"]["payload"]["evidence"] =
            json!([{"source_type": "doc", "source_id": "notes"}]);
        assert!(supersede(with_evidence).is_ok());
    }

    #[test]
    fn merge_ids_must_be_given_and_distinct() {
        let record = json!({"type": "working", "sensitivity": "low",
            "payload": {"kind": "working", "thread_id": "t", "state": "done"}});
        let merge = |ids: Value| {
            let body = json!({"ids": ids, "merged_record": record, "actor": "a", "rationale": "r"});
            command(RevisionRequest::Merge(parsed(body).unwrap()))
        };
        assert!(merge(json!([])).unwrap_err().starts_with("ids: "));
        assert!(merge(json!(["a", "b", "a"]))
            .unwrap_err()
            .starts_with("ids[2]: "));
        let err = parsed::<MergeRequest>(
            json!({"merged_record": record, "actor": "a", "rationale": "r"}),
        )
        .unwrap_err();
        assert_eq!(err, "ids: at least one record id is required");
    }

    #[test]
    fn penalize_needs_a_positive_finite_amount() {
        for amount in [json!(0), json!(-1)] {
            let request =
                parsed(json!({"amount": amount, "actor": "a", "rationale": "r"})).unwrap();
            let err = command(RevisionRequest::Penalize {
                id: "x".into(),
                request,
            })
            .unwrap_err();
            assert!(err.starts_with("amount: "), "{err}");
        }
        let err =
            parsed::<PenalizeRequest>(json!({"amount": null, "actor": "a", "rationale": "r"}))
                .unwrap_err();
        assert_eq!(err, "amount: amount is required");
    }

    fn retrieval(body: Value) -> Result<crate::domain::retrieval::RecordQuery, String> {
        let request: RetrieveRequest = parsed(body)?;
        request
            .into_retrieval(&Access::Open, 1000)
            .map(|(caller, retrieval)| {
                retrieval.query_for(
                    &caller.trust,
                    &crate::domain::retrieval::Ranking {
                        weights: Default::default(),
                        max_salience: 1.0,
                        max_response_bytes: usize::MAX,
                        scan_records: 0,
                    },
                )
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn retrieval_defaults_query_every_layer_in_order_up_to_the_maximum() {
        let r = retrieval(json!({"trust": {"max_sensitivity": "low"}})).unwrap();
        assert_eq!(r.memory_types, MemoryType::ALL.to_vec());
        assert_eq!(r.limit, 1000);
        assert_eq!(r.scopes, None);
        assert!(!r.include_retracted);
        let r = retrieval(json!({"trust": {"max_sensitivity": "low"}, "memory_types": ["episodic", "working", "episodic"]})).unwrap();
        assert_eq!(
            r.memory_types,
            vec![MemoryType::Working, MemoryType::Episodic]
        );
    }

    #[test]
    fn bad_limits_salience_context_and_a_missing_trust_are_refused() {
        let t = json!({"max_sensitivity": "low"});
        for (body, field) in [
            (json!({"trust": t, "limit": 1001}), "limit: "),
            (json!({"trust": t, "limit": -1}), "limit: "),
            (json!({"trust": t, "min_salience": -0.5}), "min_salience: "),
            (json!({"trust": t, "context": [1]}), "context: "),
            (json!({}), "trust: trust context is required"),
            (json!({"trust": null}), "trust: trust context is required"),
        ] {
            let err = retrieval(body).unwrap_err();
            assert!(
                err.starts_with(field),
                "{err:?} should start with {field:?}"
            );
        }
    }
}
