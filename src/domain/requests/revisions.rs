//! The revision and feedback bodies, each turned into a checked
//! [`RevisionCommand`].

use serde::Deserialize;

use crate::domain::new_record::{NewRecord, NewRecordContext};
use crate::domain::revision::{
    self, attribution, record_id, revised_record, Revision, RevisionCommand,
};
use crate::domain::schema;
use crate::domain::validate::Validated;

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:planner", "rationale": "ownership moved", "old_id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "new_record": {"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "evidence": [{"source_type": "event", "source_id": "run-42"}]}}}))]
pub struct SupersedeRequest {
    #[schema(schema_with = schema::actor)]
    pub actor: String,
    #[schema(schema_with = schema::text)]
    pub rationale: String,
    #[schema(schema_with = schema::id)]
    pub old_id: String,
    pub new_record: NewRecord,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:planner", "rationale": "a variant for the EU region", "source_id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "forked_record": {"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "evidence": [{"source_type": "event", "source_id": "run-42"}]}}}))]
pub struct ForkRequest {
    #[schema(schema_with = schema::actor)]
    pub actor: String,
    #[schema(schema_with = schema::text)]
    pub rationale: String,
    #[schema(schema_with = schema::id)]
    pub source_id: String,
    pub forked_record: NewRecord,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:reviewer", "rationale": "the observation was wrong", "id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10"}))]
pub struct RetractRequest {
    #[schema(schema_with = schema::actor)]
    pub actor: String,
    #[schema(schema_with = schema::text)]
    pub rationale: String,
    #[schema(schema_with = schema::id)]
    pub id: String,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:curator", "rationale": "two records of one fact", "ids": ["3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "8d1e4b2a-0c9f-4e3d-a6b5-7c2d1e0f9a8b"], "merged_record": {"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "evidence": [{"source_type": "event", "source_id": "run-42"}]}}}))]
pub struct MergeRequest {
    #[schema(schema_with = schema::actor)]
    pub actor: String,
    #[schema(schema_with = schema::text)]
    pub rationale: String,
    #[schema(schema_with = merge_ids)]
    pub ids: Vec<String>,
    pub merged_record: NewRecord,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:reviewer", "rationale": "the dashboard shows another owner", "id": "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10", "contesting_ref": "dashboard:owners"}))]
pub struct ContestRequest {
    #[schema(schema_with = schema::actor)]
    pub actor: String,
    #[schema(schema_with = schema::text)]
    pub rationale: String,
    #[schema(schema_with = schema::id)]
    pub id: String,
    #[serde(default)]
    #[schema(schema_with = contesting_ref)]
    pub contesting_ref: Option<String>,
    /// Clears a contest: the record goes back to active.
    #[serde(default)]
    pub resolve: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:coder", "rationale": "the procedure worked"}))]
pub struct ReinforceRequest {
    #[schema(schema_with = schema::actor)]
    pub actor: String,
    #[schema(schema_with = schema::text)]
    pub rationale: String,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"actor": "agent:coder", "rationale": "the procedure failed twice", "amount": 0.2}))]
pub struct PenalizeRequest {
    #[schema(schema_with = schema::actor)]
    pub actor: String,
    #[schema(schema_with = schema::text)]
    pub rationale: String,
    #[schema(schema_with = amount)]
    pub amount: f64,
}

fn merge_ids() -> utoipa::openapi::Array {
    let mut ids = schema::ids(revision::MAX_MERGE_SOURCES, true);
    ids.description = Some("Distinct record ids.".to_string());
    ids
}

/// Blank: none; else a record id ([`revision::contest_revision`]).
fn contesting_ref() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    schema::blank_or(schema::id())
}

fn amount() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Number)
        .exclusive_minimum(Some(0))
        .build()
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
                let ids = revision::merge_ids(r.ids)?;
                let merged_by = revision::merged_by(&by, &ids);
                let merged_record =
                    revised_record("merged_record", r.merged_record, &merged_by, cx)?;
                let revision = Revision::Merge {
                    ids,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    use crate::domain::policy::Policy;

    use crate::domain::requests::parse_json;
    use crate::domain::time::{parse_rfc3339, Timestamp};
    use serde_json::json;

    fn now() -> Timestamp {
        parse_rfc3339("2026-03-01T12:00:00Z").unwrap()
    }

    fn parsed<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, String> {
        parse_json(body.to_string().as_bytes()).map_err(|e| e.message)
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
}
