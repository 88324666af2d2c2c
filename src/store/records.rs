//! Records as storage keeps them: what the service may ask of a backend
//! about records ([`RecordReads`], [`RecordStore`]), and the shapes of its
//! answers.

use super::rows::Columns;
use crate::domain::decay::{salience_at, Anchor, DecayState};
use crate::domain::record::MemoryRecord;
use crate::domain::record::Sensitivity;
use crate::domain::record::{
    AuditAction, AuditEntry, DeletionPolicy, Lifecycle, Provenance, ProvenanceKind,
    ProvenanceSource, Relation, Status,
};
use crate::domain::relevance::Score;
use crate::domain::retrieval::Cursor;
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;

/// Where a record stands in storage when it is read for a change: its key,
/// its row version, and how many audit entries it had. An update names it,
/// so storage can refuse the update if the record changed meanwhile and
/// append exactly the audit entries the change added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub key: i64,
    pub number: i64,
    pub audit_len: usize,
}

/// A record read for a change, with the version the change is made against.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub record: MemoryRecord,
    pub version: Version,
}

/// One page of a retrieval: the records, and where the answer continues
/// when the byte budget cut it short.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordPage {
    pub records: Vec<MemoryRecord>,
    /// One per record, in the same order.
    pub scores: Vec<Score>,
    pub next: Option<Cursor>,
}

/// What a change did to salience, which decides where decay is measured
/// from afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SalienceChange {
    /// Salience was not touched: the record keeps decaying from its anchor.
    Unchanged,
    /// Salience was set (reinforced, penalised, retracted, compressed): the
    /// record now decays from its new value, starting at this moment.
    SetAt(Timestamp),
}

/// Longest supersession chain walked: a guard against cycles a client
/// could build with hand-made `supersedes` relations.
const MAX_CHAIN: usize = 10_000;

/// The keys of the supersession chain through record `key` (id `id`),
/// oldest first: `older(key)` finds the record a record supersedes,
/// `newer(id)` the one superseding it (each as key and id). Stops at a
/// cycle.
pub(crate) fn walk_chain(
    key: i64,
    id: &str,
    mut older: impl FnMut(i64) -> Result<Option<(i64, String)>, StoreError>,
    mut newer: impl FnMut(&str) -> Result<Option<(i64, String)>, StoreError>,
) -> Result<Vec<i64>, StoreError> {
    let mut seen = std::collections::HashSet::from([key]);
    let mut back = Vec::new();
    let mut current = key;
    while let Some((previous, _)) = older(current)? {
        // A long chain is many small statements: a read stopped by its
        // budget stops here too.
        super::budget::check()?;
        if !seen.insert(previous) || seen.len() > MAX_CHAIN {
            break;
        }
        back.push(previous);
        current = previous;
    }
    let mut forward = Vec::new();
    let mut current_id = id.to_string();
    while let Some((next, next_id)) = newer(&current_id)? {
        super::budget::check()?;
        if !seen.insert(next) || seen.len() > MAX_CHAIN {
            break;
        }
        forward.push(next);
        current_id = next_id;
    }
    back.reverse();
    back.push(key);
    back.extend(forward);
    Ok(back)
}

/// What decides who may see a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Visibility {
    pub sensitivity: Sensitivity,
    pub scope: Option<String>,
}

/// Records read: one by id (for a change too, with its version), many by
/// key, a supersession chain, what loading some would cost.
pub trait RecordReads {
    /// The record `id`, or `None`.
    fn get_record(&mut self, id: &str, now: Timestamp) -> Result<Option<MemoryRecord>, StoreError>;
    /// The record `id` with the version a change must be made against.
    fn get_for_update(&mut self, id: &str, now: Timestamp) -> Result<Option<Loaded>, StoreError>;
    /// The serialised size, in bytes, of the payloads of the records with
    /// these ids (missing ones count 0): what loading them would cost.
    fn payload_bytes(&mut self, ids: &[String]) -> Result<u64, StoreError>;
    /// The records with these keys, in the order given (missing ones left out).
    fn load_records(
        &mut self,
        keys: &[i64],
        now: Timestamp,
    ) -> Result<Vec<MemoryRecord>, StoreError>;
    /// What decides who may see record `id`: its sensitivity and scope;
    /// `None` when there is no such record.
    fn record_visibility(&mut self, id: &str) -> Result<Option<Visibility>, StoreError>;
    /// The supersession chain through `id`, oldest first; `None` when there
    /// is no such record. Stops at a cycle.
    fn supersession_chain(
        &mut self,
        id: &str,
        now: Timestamp,
    ) -> Result<Option<Vec<MemoryRecord>>, StoreError>;
    /// A cheap query that proves the database answers.
    fn ping(&mut self) -> Result<(), StoreError>;
}

/// Records written, each change against the version it was read at.
pub trait RecordStore {
    /// Retracts the working states of `thread_id` in `scope` that are not
    /// retracted and at most `up_to` sensitive, because a newer one
    /// replaces them: salience 0 from `now`, status retracted, `entry`
    /// appended, the rest as it was (a working state's payload has no
    /// status of its own). Answers their ids, oldest first. Where several
    /// writers share the database, the thread stays locked until the
    /// transaction ends.
    fn retract_current_states(
        &mut self,
        thread_id: &str,
        scope: Option<&str>,
        up_to: Sensitivity,
        entry: &AuditEntry,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError>;
    /// Stores a new record with all its parts, its vector too when it
    /// carries one; `AlreadyExists` when the id is taken, `Dimensions` when
    /// the vector does not fit the database's.
    fn insert_record(&mut self, record: &MemoryRecord) -> Result<(), StoreError>;
    /// Stores new records as [`RecordStore::insert_record`] does each, in
    /// order; at once where the backend can. On an error some of them may
    /// be stored: the caller's savepoint undoes them.
    fn insert_records(&mut self, records: &[&MemoryRecord]) -> Result<(), StoreError>;
    /// Rewrites a record read at `version`, appending the audit entries
    /// beyond those it had then; `Changed` if another change was made to it
    /// since, `NotFound` if it is gone. A vector the record carries
    /// replaces its stored one; without one, a vector the embedder made from
    /// a search text the record no longer has is dropped.
    fn update_record(
        &mut self,
        version: &Version,
        record: &MemoryRecord,
        salience: SalienceChange,
    ) -> Result<(), StoreError>;
}

/// A record and its key from a row holding, in this order: key, id, layer,
/// sensitivity, confidence, stored salience, scope, status, created by,
/// created at, updated at, the decay profile (five columns), last
/// reinforced, pinned, deletion policy, payload JSON, and the salience
/// and time decay is measured from. Its salience is decayed to `now`; its
/// tags, sources, relations and audit come from their own tables.
pub(crate) fn read_record(
    row: &impl Columns,
    now: Timestamp,
) -> Result<(i64, MemoryRecord), StoreError> {
    let id: String = row.at(1)?;
    let payload_json: String = row.at(19)?;
    let payload = serde_json::from_str(&payload_json)
        .map_err(|e| StoreError::Corrupt(format!("payload of record {id}: {e}")))?;
    let mut record = MemoryRecord {
        id,
        memory_type: row.memory_type(2)?,
        sensitivity: row.sensitivity(3)?,
        confidence: row.at(4)?,
        salience: row.at(5)?,
        scope: row.at(6)?,
        tags: Vec::new(),
        status: row.parsed(7, Status::parse)?,
        created_at: row.time(9)?,
        updated_at: row.time(10)?,
        lifecycle: Lifecycle {
            decay: row.decay_profile(11)?,
            last_reinforced_at: row.time(16)?,
            pinned: row.at(17)?,
            deletion_policy: row.parsed(18, DeletionPolicy::parse)?,
        },
        provenance: Provenance {
            sources: Vec::new(),
            created_by: row.at(8)?,
        },
        relations: Vec::new(),
        payload,
        audit_log: Vec::new(),
        embedding: None,
        searchable: Default::default(),
    };
    let anchor = Anchor {
        salience: row.at(20)?,
        at: row.time(21)?,
    };
    record.salience = salience_at(
        &DecayState {
            anchor,
            profile: &record.lifecycle.decay,
            pinned: record.lifecycle.pinned,
            created_at: record.created_at,
        },
        now,
    );
    Ok((row.at(0)?, record))
}

/// A provenance source from columns 1 on: kind, ref, hash, created by,
/// timestamp (column 0 is its record's key).
pub(crate) fn read_source(row: &impl Columns) -> Result<ProvenanceSource, StoreError> {
    Ok(ProvenanceSource {
        kind: row.parsed(1, ProvenanceKind::parse)?,
        reference: row.at(2)?,
        hash: row.at(3)?,
        created_by: row.at(4)?,
        timestamp: row.time(5)?,
    })
}

/// A relation from columns 1 on: predicate, target, weight, created at
/// (column 0 is its source record's key).
pub(crate) fn read_relation(row: &impl Columns) -> Result<Relation, StoreError> {
    Ok(Relation {
        predicate: row.at(1)?,
        target_id: row.at(2)?,
        weight: row.at(3)?,
        created_at: row.time(4)?,
    })
}

/// An audit entry from columns 1 on: action, actor, timestamp, rationale,
/// imported (column 0 is its record's key).
pub(crate) fn read_audit(row: &impl Columns) -> Result<AuditEntry, StoreError> {
    Ok(AuditEntry {
        action: row.parsed(1, AuditAction::parse)?,
        actor: row.at(2)?,
        timestamp: row.time(3)?,
        rationale: row.at(4)?,
        imported: row.at(5)?,
    })
}
