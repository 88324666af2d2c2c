//! The one way a new record is made. Ingest, `POST /v1/records`, the
//! revisions and consolidation each describe the record they want as a
//! [`RecordDraft`]; [`RecordDraft::build`] fills in what policy decides and
//! checks the result against the same invariants and policy caps, so no
//! path stores a record that another path would have refused.

use super::payload::Payload;
use super::policy::Policy;
use super::record::{
    AuditEntry, Lifecycle, MemoryRecord, MemoryType, Provenance, Relation, Sensitivity, Status,
};
use super::time::Timestamp;
use super::validate::{Validated, ValidationError};
use super::vector::Embedding;

/// A record to be: what its author decided. Everything left `None` gets
/// the policy's value for the record's type.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordDraft {
    /// `None`: a new id is drawn.
    pub id: Option<String>,
    pub memory_type: MemoryType,
    pub sensitivity: Sensitivity,
    pub payload: Payload,
    pub confidence: f64,
    /// `None`: `policy.initial_salience`.
    pub salience: Option<f64>,
    pub scope: Option<String>,
    pub tags: Vec<String>,
    pub status: Status,
    /// `None`: now.
    pub created_at: Option<Timestamp>,
    /// `None`: the policy's lifecycle for the type, starting now.
    pub lifecycle: Option<Lifecycle>,
    pub provenance: Provenance,
    pub relations: Vec<Relation>,
    /// Entries the record arrives with; the author's `create` entry last.
    pub audit_log: Vec<AuditEntry>,
    pub embedding: Option<Embedding>,
}

impl RecordDraft {
    /// A draft of `memory_type` with nothing but its payload, sensitivity
    /// and confidence decided.
    pub fn new(
        memory_type: MemoryType,
        sensitivity: Sensitivity,
        confidence: f64,
        payload: Payload,
    ) -> Self {
        RecordDraft {
            id: None,
            memory_type,
            sensitivity,
            payload,
            confidence,
            salience: None,
            scope: None,
            tags: Vec::new(),
            status: Status::Active,
            created_at: None,
            lifecycle: None,
            provenance: Provenance::default(),
            relations: Vec::new(),
            audit_log: Vec::new(),
            embedding: None,
        }
    }

    /// The record, completed by `policy` as of `now`, or why it cannot be
    /// stored. `new_id` is called only when the draft names no id.
    pub fn build(
        self,
        policy: &Policy,
        now: Timestamp,
        new_id: impl FnOnce() -> String,
    ) -> Validated<MemoryRecord> {
        let salience = self.salience.unwrap_or(policy.initial_salience);
        let record = MemoryRecord {
            id: self.id.unwrap_or_else(new_id),
            memory_type: self.memory_type,
            sensitivity: self.sensitivity,
            confidence: self.confidence,
            salience,
            scope: self.scope,
            tags: self.tags,
            status: self.status,
            created_at: self.created_at.unwrap_or(now),
            updated_at: now,
            lifecycle: self
                .lifecycle
                .unwrap_or_else(|| policy.lifecycle(self.memory_type, now)),
            provenance: self.provenance,
            relations: self.relations,
            payload: self.payload,
            audit_log: self.audit_log,
            embedding: self.embedding,
            searchable: Default::default(),
        };
        record.validate()?;
        record.check_timestamps(now)?;
        check_policy_caps(policy, &record)?;
        Ok(record)
    }
}

/// What policy bounds beyond the record's own invariants.
pub fn check_policy_caps(policy: &Policy, record: &MemoryRecord) -> Validated<()> {
    if record.salience > policy.max_salience {
        return Err(ValidationError::new(
            "salience",
            format!(
                "must be at most {} (policy.max_salience), got {}",
                policy.max_salience, record.salience
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::payload::WorkingPayload;
    use crate::domain::record::DeletionPolicy;
    use crate::domain::time::parse_rfc3339;

    fn now() -> Timestamp {
        parse_rfc3339("2026-01-01T00:00:00Z").unwrap()
    }

    fn working() -> Payload {
        Payload::Working(WorkingPayload {
            thread_id: "t".into(),
            state: crate::domain::payload::TaskState::Done,
            active_constraints: serde_json::json!([]),
            next_actions: Vec::new(),
            open_questions: Vec::new(),
            context_summary: None,
        })
    }

    #[test]
    fn a_draft_gets_the_policy_defaults_for_its_type() {
        let policy = Policy {
            initial_salience: 0.9,
            ..Policy::default()
        };
        let record = RecordDraft::new(MemoryType::Working, Sensitivity::Low, 1.0, working())
            .build(&policy, now(), || "id".into())
            .unwrap();
        assert_eq!(record.id, "id");
        assert_eq!(record.salience, 0.9);
        assert_eq!(record.created_at, now());
        assert_eq!(record.lifecycle.decay.half_life_seconds, 86_400);
        assert_eq!(record.lifecycle.deletion_policy, DeletionPolicy::AutoPrune);
    }

    #[test]
    fn a_draft_above_the_salience_cap_or_invalid_is_refused() {
        let mut draft = RecordDraft::new(MemoryType::Working, Sensitivity::Low, 1.0, working());
        draft.salience = Some(1.5);
        let err = draft
            .clone()
            .build(&Policy::default(), now(), || "id".into())
            .unwrap_err();
        assert_eq!(err.field, "salience");
        draft.salience = None;
        draft.confidence = 2.0;
        let err = draft
            .build(&Policy::default(), now(), || "id".into())
            .unwrap_err();
        assert_eq!(err.field, "confidence");
    }

    #[test]
    fn a_payload_of_another_type_is_refused() {
        let err = RecordDraft::new(MemoryType::Semantic, Sensitivity::Low, 1.0, working())
            .build(&Policy::default(), now(), || "id".into())
            .unwrap_err();
        assert_eq!(err.field, "payload.kind");
    }
}
