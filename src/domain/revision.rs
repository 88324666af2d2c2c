//! Revision: knowledge changes by explicit, audited operations, never by
//! silent overwrite. This module holds the requests and the rules; the
//! revision actor runs them inside one storage transaction each.
//!
//! | operation | the record(s) named | the new record |
//! |---|---|---|
//! | supersede | retracted, `superseded_by`, audit `revise` | `supersedes` relation, provenance link, audit `create` |
//! | fork | untouched but for audit `fork` | `derived_from` relation, audit `create` |
//! | retract | salience 0, status `retracted`, audit `delete` | — |
//! | merge | each retracted, audit `merge` | one `derived_from` per source, audit `create` naming them |
//! | contest | status `contested`, optional `contested_by`, audit `revise` | — |
//!
//! Episodic records are immutable: none of these applies to them.

use super::ids::RecordId;
use super::new_record::{NewRecord, NewRecordContext};
use super::payload::Payload;
use super::record::{
    Attribution, AuditAction, MemoryRecord, MemoryType, ProvenanceKind, ProvenanceSource, Relation,
    Status,
};
use super::time::Timestamp;
use super::trust::signed;
use super::validate::{check_actor, check_id, require_string, Validated, ValidationError};

pub const SUPERSEDES: &str = "supersedes";
pub const DERIVED_FROM: &str = "derived_from";
pub const CONTESTED_BY: &str = "contested_by";

/// Most sources one merge may name.
pub const MAX_MERGE_SOURCES: usize = 100;

/// Why a revision cannot be applied to a stored record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevisionError {
    #[error("{field}: record {id} is episodic: episodic memory is immutable")]
    Immutable { field: String, id: String },
    #[error("{field}: record {id} is {status}, not active")]
    NotActive {
        field: String,
        id: String,
        status: Status,
    },
    #[error("id: record {id} is not contested")]
    NotContested { id: String },
    #[error("{field}: record {id} is {actual} memory but the new record is {expected}")]
    TypeMismatch {
        field: String,
        id: String,
        actual: MemoryType,
        expected: MemoryType,
    },
}

/// A checked revision, ready to run against storage.
#[derive(Debug, Clone)]
pub enum Revision {
    Supersede {
        old_id: RecordId,
        new_record: Box<MemoryRecord>,
    },
    Fork {
        source_id: RecordId,
        forked_record: Box<MemoryRecord>,
    },
    Retract {
        id: RecordId,
    },
    Merge {
        ids: Vec<RecordId>,
        merged_record: Box<MemoryRecord>,
    },
    Contest {
        id: RecordId,
        contesting_ref: Option<String>,
    },
    ResolveContest {
        id: RecordId,
    },
    Reinforce {
        id: RecordId,
    },
    Penalize {
        id: RecordId,
        amount: f64,
    },
}

/// A revision and who asks for it.
#[derive(Debug, Clone)]
pub struct RevisionCommand {
    pub revision: Revision,
    pub by: Attribution,
}

/// Who asks for a revision and why: both required. With a key, the
/// audit entry names the key and keeps `actor` beside it.
pub fn attribution(key: Option<&str>, actor: String, rationale: String) -> Validated<Attribution> {
    let actor = require_string("actor", actor, "actor is required")?;
    check_actor("actor", &actor)?;
    Ok(Attribution {
        actor: signed(key, &actor),
        rationale: require_string("rationale", rationale, "rationale is required")?,
    })
}

/// The id of a record a revision names.
pub fn record_id(field: &str, id: String) -> Validated<RecordId> {
    let id = require_string(field, id, &format!("{field} is required"))?;
    RecordId::parse(field, id)
}

/// A semantic record created by a revision must carry evidence of its own:
/// a payload evidence entry or a provenance source. Checked on what the
/// caller sent, before the service adds its link to the old record.
fn check_evidence(field: &str, record: &NewRecord) -> Validated<()> {
    let Payload::Semantic(semantic) = &record.payload else {
        return Ok(());
    };
    let sources = record.provenance.as_ref().map_or(0, |p| p.sources.len());
    if semantic.evidence.is_empty() && sources == 0 {
        return Err(ValidationError::new(
            field,
            "a semantic record created by a revision needs at least one evidence reference \
             (payload.evidence or provenance.sources)",
        ));
    }
    Ok(())
}

/// Checks and completes the new record of a supersede, fork or merge.
pub fn revised_record(
    field: &str,
    record: NewRecord,
    by: &Attribution,
    cx: &NewRecordContext<'_>,
) -> Validated<MemoryRecord> {
    check_evidence(field, &record)?;
    let mut record = record
        .into_record(cx.policy, by, cx.now, cx.new_id)
        .map_err(|e| e.within(field))?;
    set_status(&mut record, Status::Active);
    Ok(record)
}

/// The records a merge names: at least one, at most
/// [`MAX_MERGE_SOURCES`], each a valid id, none twice.
pub fn merge_ids(ids: Vec<String>) -> Validated<Vec<RecordId>> {
    if ids.is_empty() {
        return Err(ValidationError::new(
            "ids",
            "at least one record id is required",
        ));
    }
    if ids.len() > MAX_MERGE_SOURCES {
        return Err(ValidationError::new(
            "ids",
            format!(
                "too many ids: {} given, maximum is {MAX_MERGE_SOURCES}",
                ids.len()
            ),
        ));
    }
    let mut parsed: Vec<RecordId> = Vec::with_capacity(ids.len());
    for (i, id) in ids.into_iter().enumerate() {
        let id = RecordId::parse(&format!("ids[{i}]"), id)?;
        if parsed.contains(&id) {
            return Err(ValidationError::new(
                format!("ids[{i}]"),
                format!("record {id} is named twice; merge ids must be distinct"),
            ));
        }
        parsed.push(id);
    }
    Ok(parsed)
}

/// Who the merged record's `create` entry names, and why: the merge's
/// author, naming its sources.
pub fn merged_by(by: &Attribution, ids: &[RecordId]) -> Attribution {
    Attribution::new(
        by.actor.clone(),
        format!("merged from {}: {}", ids.join(", "), by.rationale),
    )
}

/// A contest of `id`, or with `resolve` the end of one.
pub fn contest_revision(
    id: RecordId,
    contesting_ref: Option<String>,
    resolve: bool,
) -> Validated<Revision> {
    if resolve {
        if contesting_ref.is_some() {
            return Err(ValidationError::new(
                "contesting_ref",
                "contesting_ref cannot be given when resolving a contest",
            ));
        }
        return Ok(Revision::ResolveContest { id });
    }
    let contesting_ref = match contesting_ref {
        Some(reference) if !reference.trim().is_empty() => {
            check_id("contesting_ref", &reference)?;
            Some(reference)
        }
        _ => None,
    };
    Ok(Revision::Contest { id, contesting_ref })
}

/// A penalty: a finite amount above zero.
pub fn check_penalty(amount: f64) -> Validated<f64> {
    if !(amount.is_finite() && amount > 0.0) {
        return Err(ValidationError::new(
            "amount",
            format!("must be a finite number > 0, got {amount}"),
        ));
    }
    Ok(amount)
}

/// Sets the status, mirrored in a semantic payload.
pub fn set_status(record: &mut MemoryRecord, status: Status) {
    record.status = status;
    if let Payload::Semantic(semantic) = &mut record.payload {
        semantic.revision.status = status;
    }
}

/// The record may be revised: it is not episodic.
pub fn check_revisable(field: &str, record: &MemoryRecord) -> Result<(), RevisionError> {
    if record.memory_type == MemoryType::Episodic {
        return Err(RevisionError::Immutable {
            field: field.to_string(),
            id: record.id.clone(),
        });
    }
    Ok(())
}

/// The record is not retracted (active or contested).
pub fn check_not_retracted(field: &str, record: &MemoryRecord) -> Result<(), RevisionError> {
    if record.status == Status::Retracted {
        return Err(RevisionError::NotActive {
            field: field.to_string(),
            id: record.id.clone(),
            status: record.status,
        });
    }
    Ok(())
}

/// The new record replaces `old` in kind: same memory type.
pub fn check_same_type(
    field: &str,
    old: &MemoryRecord,
    new: &MemoryRecord,
) -> Result<(), RevisionError> {
    if old.memory_type != new.memory_type {
        return Err(RevisionError::TypeMismatch {
            field: field.to_string(),
            id: old.id.clone(),
            actual: old.memory_type,
            expected: new.memory_type,
        });
    }
    Ok(())
}

/// Withdraws a record: salience 0, status retracted, audited.
pub fn retract(record: &mut MemoryRecord, action: AuditAction, by: &Attribution, now: Timestamp) {
    record.salience = 0.0;
    set_status(record, Status::Retracted);
    record.audit_log.push(by.entry(action, now));
    record.updated_at = now;
}

/// Retracts `old` in favour of `new`, and links the two both ways.
pub fn supersede(old: &mut MemoryRecord, new: &mut MemoryRecord, by: &Attribution, now: Timestamp) {
    retract(old, AuditAction::Revise, by, now);
    if let Payload::Semantic(semantic) = &mut old.payload {
        semantic.revision.superseded_by = Some(new.id.clone());
    }
    link_to_superseded(new, &old.id, by, now);
}

/// The new record's side of a supersession: a `supersedes` relation to
/// `old_id`, which is also one of its provenance sources.
pub fn link_to_superseded(new: &mut MemoryRecord, old_id: &str, by: &Attribution, now: Timestamp) {
    new.relations.push(relation(SUPERSEDES, old_id, now));
    new.provenance.sources.push(ProvenanceSource {
        kind: ProvenanceKind::Artifact,
        reference: old_id.to_string(),
        hash: None,
        created_by: Some(by.actor.clone()),
        timestamp: now,
    });
    if let Payload::Semantic(semantic) = &mut new.payload {
        semantic.revision.supersedes = Some(old_id.to_string());
    }
}

/// Records a fork of `source` on both records; the source stays as it is.
pub fn fork(
    source: &mut MemoryRecord,
    forked: &mut MemoryRecord,
    by: &Attribution,
    now: Timestamp,
) {
    source.audit_log.push(by.entry(AuditAction::Fork, now));
    forked
        .relations
        .push(relation(DERIVED_FROM, &source.id, now));
}

/// Retracts every source into `merged`, which derives from each.
pub fn merge(
    sources: &mut [MemoryRecord],
    merged: &mut MemoryRecord,
    by: &Attribution,
    now: Timestamp,
) {
    for source in sources.iter_mut() {
        retract(source, AuditAction::Merge, by, now);
        merged
            .relations
            .push(relation(DERIVED_FROM, &source.id, now));
    }
}

pub fn contest(
    record: &mut MemoryRecord,
    contesting_ref: Option<&str>,
    by: &Attribution,
    now: Timestamp,
) {
    set_status(record, Status::Contested);
    if let Some(reference) = contesting_ref {
        record
            .relations
            .push(relation(CONTESTED_BY, reference, now));
    }
    record.audit_log.push(by.entry(AuditAction::Revise, now));
    record.updated_at = now;
}

pub fn resolve_contest(
    record: &mut MemoryRecord,
    by: &Attribution,
    now: Timestamp,
) -> Result<(), RevisionError> {
    if record.status != Status::Contested {
        return Err(RevisionError::NotContested {
            id: record.id.clone(),
        });
    }
    set_status(record, Status::Active);
    record.audit_log.push(by.entry(AuditAction::Revise, now));
    record.updated_at = now;
    Ok(())
}

/// Salience up by the record's reinforcement gain, capped at `max`.
pub fn reinforce(record: &mut MemoryRecord, max: f64, by: &Attribution, now: Timestamp) {
    let gain = record.lifecycle.decay.reinforcement_gain;
    record.salience = (record.salience + gain).min(max.max(record.salience));
    record.lifecycle.last_reinforced_at = now;
    record.audit_log.push(by.entry(AuditAction::Reinforce, now));
    record.updated_at = now;
}

/// Salience down by `amount`, floored at the record's minimum.
pub fn penalize(record: &mut MemoryRecord, amount: f64, by: &Attribution, now: Timestamp) {
    let floor = record.lifecycle.decay.min_salience.min(record.salience);
    record.salience = (record.salience - amount).max(floor);
    record.audit_log.push(by.entry(AuditAction::Decay, now));
    record.updated_at = now;
}

fn relation(predicate: &str, target_id: &str, now: Timestamp) -> Relation {
    Relation {
        predicate: predicate.to_string(),
        target_id: target_id.to_string(),
        weight: 1.0,
        created_at: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::policy::Policy;
    use crate::domain::time::parse_rfc3339;
    use serde_json::json;

    fn now() -> Timestamp {
        parse_rfc3339("2026-04-01T00:00:00Z").unwrap()
    }

    fn stored(id: &str, body: serde_json::Value) -> MemoryRecord {
        let new: NewRecord = serde_json::from_value(body).unwrap();
        new.into_record(
            &Policy::default(),
            &Attribution::new("t", "t"),
            now(),
            || id.into(),
        )
        .unwrap()
    }

    fn fact(id: &str) -> MemoryRecord {
        stored(
            id,
            json!({"type": "semantic", "sensitivity": "low", "salience": 0.8,
            "payload": {"kind": "semantic", "subject": "go", "predicate": "version", "object": "1.21"}}),
        )
    }

    #[test]
    fn supersede_retracts_the_old_and_links_both_ways() {
        let by = Attribution::new("updater", "Go 1.22 released");
        let mut old = fact("old");
        let mut new = fact("new");
        supersede(&mut old, &mut new, &by, now());
        assert_eq!(old.salience, 0.0);
        assert_eq!(old.status, Status::Retracted);
        let Payload::Semantic(old_payload) = &old.payload else {
            panic!()
        };
        assert_eq!(old_payload.revision.superseded_by.as_deref(), Some("new"));
        assert_eq!(old_payload.revision.status, Status::Retracted);
        assert_eq!(old.audit_log.last().unwrap().action, AuditAction::Revise);
        assert_eq!(old.audit_log.last().unwrap().rationale, "Go 1.22 released");
        assert_eq!(new.relations[0].predicate, SUPERSEDES);
        assert_eq!(new.provenance.sources.last().unwrap().reference, "old");
        let Payload::Semantic(new_payload) = &new.payload else {
            panic!()
        };
        assert_eq!(new_payload.revision.supersedes.as_deref(), Some("old"));
    }

    #[test]
    fn episodic_records_are_immutable() {
        let episode = stored(
            "e",
            json!({"type": "episodic", "sensitivity": "low", "payload": {"kind": "episodic"}}),
        );
        assert!(matches!(
            check_revisable("id", &episode),
            Err(RevisionError::Immutable { .. })
        ));
        assert!(check_revisable("id", &fact("f")).is_ok());
    }

    #[test]
    fn contest_and_resolve_round_trip() {
        let by = Attribution::new("checker", "conflicting evidence");
        let mut record = fact("f");
        assert!(resolve_contest(&mut record, &by, now()).is_err());
        contest(&mut record, Some("other"), &by, now());
        assert_eq!(record.status, Status::Contested);
        assert_eq!(record.relations[0].predicate, CONTESTED_BY);
        resolve_contest(&mut record, &by, now()).unwrap();
        assert_eq!(record.status, Status::Active);
        assert_eq!(record.audit_log.len(), 3);
    }

    #[test]
    fn reinforcement_is_capped_and_penalty_floored() {
        let by = Attribution::new("a", "r");
        let mut record = fact("f");
        reinforce(&mut record, 1.0, &by, now());
        assert!((record.salience - 0.9).abs() < 1e-12);
        reinforce(&mut record, 1.0, &by, now());
        reinforce(&mut record, 1.0, &by, now());
        assert_eq!(record.salience, 1.0);
        record.lifecycle.decay.min_salience = 0.3;
        penalize(&mut record, 0.5, &by, now());
        assert_eq!(record.salience, 0.5);
        penalize(&mut record, 5.0, &by, now());
        assert_eq!(record.salience, 0.3);
        assert_eq!(record.audit_log.last().unwrap().action, AuditAction::Decay);
    }
}
