//! The revisions: supersede, fork, retract, merge, contest (and resolving
//! one), reinforce, penalize. Each runs inside one transaction: every check
//! comes before the first write, and every record changed is written
//! against the version it was read at, so a concurrent change to the same
//! record — whichever process made it — makes this one a conflict instead
//! of being overwritten.

use super::{
    check_embedding, check_relation_targets, check_visible, insert_new, load, place_new,
    ServiceError,
};
use crate::domain::ids::RecordId;
use crate::domain::record::{Attribution, AuditAction, MemoryRecord};
use crate::domain::revision::{self, check_not_retracted, check_revisable, check_same_type};
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::domain::validate::ValidationError;
use crate::store::{SalienceChange, Transaction};

/// Retracts `old_id` in favour of `new_record`, linked both ways.
pub fn supersede(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    old_id: &RecordId,
    mut new_record: MemoryRecord,
) -> Result<MemoryRecord, ServiceError> {
    let mut old = load(tx, caller, "old_id", old_id, now)?;
    check_revisable("old_id", &old.record)?;
    check_not_retracted("old_id", &old.record)?;
    check_same_type("new_record.type", &old.record, &new_record)?;
    place_new(caller, "new_record.", &mut new_record)?;
    check_embedding(tx, "new_record.embedding", new_record.embedding.as_ref())?;
    check_relation_targets(tx, caller, &new_record)?;
    revision::supersede(&mut old.record, &mut new_record, by, now);
    tx.update_record(&old.version, &old.record, SalienceChange::SetAt(now))?;
    insert_new(tx, &mut new_record, now)?;
    Ok(new_record)
}

/// A variant of `source_id` that lives beside it.
pub fn fork(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    source_id: &RecordId,
    mut forked_record: MemoryRecord,
) -> Result<MemoryRecord, ServiceError> {
    let mut source = load(tx, caller, "source_id", source_id, now)?;
    check_revisable("source_id", &source.record)?;
    check_same_type("forked_record.type", &source.record, &forked_record)?;
    place_new(caller, "forked_record.", &mut forked_record)?;
    check_embedding(
        tx,
        "forked_record.embedding",
        forked_record.embedding.as_ref(),
    )?;
    check_relation_targets(tx, caller, &forked_record)?;
    revision::fork(&mut source.record, &mut forked_record, by, now);
    tx.update_record(&source.version, &source.record, SalienceChange::Unchanged)?;
    insert_new(tx, &mut forked_record, now)?;
    Ok(forked_record)
}

/// Withdraws a record: salience 0, status retracted, kept for history.
pub fn retract(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    id: &RecordId,
) -> Result<MemoryRecord, ServiceError> {
    change_one(tx, caller, now, id, SalienceChange::SetAt(now), |record| {
        check_revisable("id", record)?;
        check_not_retracted("id", record)?;
        revision::retract(record, AuditAction::Delete, by, now);
        Ok(())
    })
}

/// Loads record `id` for a change, applies `change` (its checks first),
/// and writes it against the version read.
fn change_one(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    id: &str,
    salience: SalienceChange,
    change: impl FnOnce(&mut MemoryRecord) -> Result<(), ServiceError>,
) -> Result<MemoryRecord, ServiceError> {
    let mut loaded = load(tx, caller, "id", id, now)?;
    change(&mut loaded.record)?;
    tx.update_record(&loaded.version, &loaded.record, salience)?;
    Ok(loaded.record)
}

/// Retracts every record of `ids` into `merged_record`.
pub fn merge(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    ids: &[RecordId],
    mut merged_record: MemoryRecord,
    max_bytes: u64,
) -> Result<MemoryRecord, ServiceError> {
    // Every source must be one the caller may see before their size is
    // told, and the size before anything is loaded.
    for (i, id) in ids.iter().enumerate() {
        check_visible(tx, caller, &format!("ids[{i}]"), id)?;
    }
    if tx.payload_bytes(&ids.iter().map(|id| id.to_string()).collect::<Vec<_>>())? > max_bytes {
        return Err(ValidationError::new(
            "ids",
            format!(
                "the records named are too large to merge together: at most \
                 {max_bytes} bytes of payload in all (policy.max_merge_bytes)"
            ),
        )
        .into());
    }
    let mut sources = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let field = format!("ids[{i}]");
        let source = load(tx, caller, &field, id, now)?;
        check_revisable(&field, &source.record)?;
        check_not_retracted(&field, &source.record)?;
        check_same_type("merged_record.type", &source.record, &merged_record)?;
        sources.push(source);
    }
    place_new(caller, "merged_record.", &mut merged_record)?;
    check_embedding(
        tx,
        "merged_record.embedding",
        merged_record.embedding.as_ref(),
    )?;
    check_relation_targets(tx, caller, &merged_record)?;
    let mut records: Vec<MemoryRecord> = sources.iter().map(|s| s.record.clone()).collect();
    revision::merge(&mut records, &mut merged_record, by, now);
    for (source, record) in sources.iter().zip(&records) {
        tx.update_record(&source.version, record, SalienceChange::SetAt(now))?;
    }
    insert_new(tx, &mut merged_record, now)?;
    Ok(merged_record)
}

/// Flags a record as disputed, optionally naming what disputes it.
pub fn contest(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    id: &RecordId,
    contesting_ref: Option<&str>,
) -> Result<MemoryRecord, ServiceError> {
    change_one(tx, caller, now, id, SalienceChange::Unchanged, |record| {
        check_revisable("id", record)?;
        check_not_retracted("id", record)?;
        revision::contest(record, contesting_ref, by, now);
        Ok(())
    })
}

/// Clears a contest: the record is active again.
pub fn resolve_contest(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    id: &RecordId,
) -> Result<MemoryRecord, ServiceError> {
    change_one(tx, caller, now, id, SalienceChange::Unchanged, |record| {
        check_revisable("id", record)?;
        Ok(revision::resolve_contest(record, by, now)?)
    })
}

/// Salience up by the record's gain, never above `max_salience`.
pub fn reinforce(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    id: &RecordId,
    max_salience: f64,
) -> Result<MemoryRecord, ServiceError> {
    change_one(tx, caller, now, id, SalienceChange::SetAt(now), |record| {
        check_not_retracted("id", record)?;
        revision::reinforce(record, max_salience, by, now);
        Ok(())
    })
}

/// Salience down by `amount`, never below the record's floor.
pub fn penalize(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    by: &Attribution,
    id: &RecordId,
    amount: f64,
) -> Result<MemoryRecord, ServiceError> {
    change_one(tx, caller, now, id, SalienceChange::SetAt(now), |record| {
        check_not_retracted("id", record)?;
        revision::penalize(record, amount, by, now);
        Ok(())
    })
}
