//! Ingest: new records from the five ingest kinds, batches of them, whole
//! records, and outcomes reported on episodes.

use super::job::Job;
use super::{check_embedding, check_relation_targets, insert_new, load, place_new, ServiceError};
use crate::domain::ingest::{Candidate, OutcomeUpdate};
use crate::domain::payload::Payload;
use crate::domain::record::{Attribution, AuditAction, MemoryRecord};
use crate::domain::revision;
use crate::domain::search::analyse_ahead;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::domain::validate::RESERVED_ACTOR_PREFIX;
use crate::store::{SalienceChange, StoreError, Transaction};

/// Stores a validated ingest: a new record, or an outcome on an episode.
pub fn ingest(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    candidate: Candidate,
) -> Result<MemoryRecord, ServiceError> {
    match prepare(tx, caller, now, candidate)? {
        Prepared::New(record) => {
            tx.insert_record(&record)?;
            Ok(record)
        }
        Prepared::Done(record) => Ok(record),
    }
}

/// An ingest with everything but its new record written.
enum Prepared {
    /// A new record, still to be stored (the thread's state it supersedes
    /// is retracted already).
    New(MemoryRecord),
    /// An episode with its outcome, stored.
    Done(MemoryRecord),
}

fn prepare(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    candidate: Candidate,
) -> Result<Prepared, ServiceError> {
    match candidate {
        Candidate::Create(record) => prepare_new(tx, caller, now, record).map(Prepared::New),
        Candidate::Outcome(update) => record_outcome(tx, caller, now, &update).map(Prepared::Done),
    }
}

/// A new record placed for `caller`, with the thread's state it
/// supersedes retracted: all but storing it.
pub fn prepare_new(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    mut record: Box<MemoryRecord>,
) -> Result<MemoryRecord, ServiceError> {
    place_new(caller, "", &mut record)?;
    check_embedding(tx, "embedding", record.embedding.as_ref())?;
    supersede_current_state(tx, caller, now, &mut record)?;
    Ok(*record)
}

/// How a single ingest is written.
pub enum Route {
    /// A record that only adds itself ([`Candidate::adds_only`]), placed
    /// for the caller: stored as it is, with the other new records of its
    /// transaction, since storing it reads nothing.
    Insert(Box<MemoryRecord>),
    /// A working state without a vector, with its thread: the writer runs
    /// [`prepare_new`], then stores the record with the other new records
    /// of its transaction.
    State(String, PrepareState),
    /// Anything else: [`ingest`], the job as it is.
    Write(Ingest),
}

/// Stores every item or none: the first failure undoes the batch, its
/// message naming the item. New records are stored together, in one
/// statement where the backend can: at the end, or before an item that
/// reads one of them (an outcome, or a working state of a thread with a
/// new state waiting).
pub fn ingest_batch(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    candidates: Vec<Candidate>,
) -> Result<Vec<MemoryRecord>, ServiceError> {
    let mut stored = Vec::with_capacity(candidates.len());
    // Items of `stored` whose record is still to be stored.
    let mut waiting = Vec::new();
    for (i, candidate) in candidates.into_iter().enumerate() {
        if reads_waiting(&candidate, &stored, &waiting) {
            store_waiting(tx, &stored, &mut waiting)?;
        }
        match prepare(tx, caller, now, candidate).map_err(|e| in_item(e, i))? {
            Prepared::New(record) => {
                waiting.push(i);
                stored.push(record);
            }
            Prepared::Done(record) => stored.push(record),
        }
    }
    store_waiting(tx, &stored, &mut waiting)?;
    Ok(stored)
}

/// Whether storing `candidate` may read a record still waiting.
fn reads_waiting(candidate: &Candidate, stored: &[MemoryRecord], waiting: &[usize]) -> bool {
    waiting.iter().any(|&i| candidate.may_read(&stored[i]))
}

/// Stores the records of the `waiting` items of `stored`.
fn store_waiting(
    tx: &mut dyn Transaction,
    stored: &[MemoryRecord],
    waiting: &mut Vec<usize>,
) -> Result<(), ServiceError> {
    if waiting.is_empty() {
        return Ok(());
    }
    let records: Vec<&MemoryRecord> = waiting.iter().map(|&i| &stored[i]).collect();
    if let Err(e) = tx.insert_records(&records) {
        let item = match &e {
            StoreError::AlreadyExists(id) => waiting.iter().copied().find(|&i| &stored[i].id == id),
            _ => None,
        };
        let e = ServiceError::from(e);
        return Err(match item {
            Some(i) => in_item(e, i),
            None => e,
        });
    }
    waiting.clear();
    Ok(())
}

/// Stores a whole record a client sent; its relations must point at
/// stored records.
pub fn create_record(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    mut record: MemoryRecord,
) -> Result<MemoryRecord, ServiceError> {
    place_new(caller, "", &mut record)?;
    check_embedding(tx, "embedding", record.embedding.as_ref())?;
    check_relation_targets(tx, caller, &record)?;
    supersede_current_state(tx, caller, now, &mut record)?;
    insert_new(tx, &mut record, now)?;
    Ok(record)
}

/// A thread has one current working state (per scope): a new one
/// supersedes the one it has, so retrieval shows the latest and `history`
/// how it got there.
fn supersede_current_state(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    record: &mut MemoryRecord,
) -> Result<(), ServiceError> {
    let Payload::Working(state) = &record.payload else {
        return Ok(());
    };
    // States the caller may not see are left alone.
    if !caller.trust.allows_scope(record.scope.as_deref()) {
        return Ok(());
    }
    let actor = match &record.provenance.created_by {
        Some(claimed) => caller.actor(claimed),
        None => format!("{RESERVED_ACTOR_PREFIX}ingest"),
    };
    let by = Attribution::new(
        actor,
        format!(
            "superseded by a newer working state of thread {}",
            state.thread_id
        ),
    );
    // What a supersede revision does, without reading the old states
    // whole: retracting them changes their rows and audit trails only.
    let replaced = tx.retract_current_states(
        &state.thread_id,
        record.scope.as_deref(),
        caller.trust.max_sensitivity,
        &by.entry(AuditAction::Revise, now),
        now,
    )?;
    for id in &replaced {
        revision::link_to_superseded(record, id, &by, now);
    }
    Ok(())
}

/// Sets the outcome of an episode.
pub fn record_outcome(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    update: &OutcomeUpdate,
) -> Result<MemoryRecord, ServiceError> {
    let mut loaded = load(
        tx,
        caller,
        "target_record_id",
        &update.target_record_id,
        now,
    )?;
    update.apply(&mut loaded.record, now).map_err(|e| {
        ServiceError::FailedPrecondition(format!(
            "target_record_id: record {} is {} memory; outcomes apply only to episodic records",
            e.id, e.actual
        ))
    })?;
    check_embedding(tx, "embedding", loaded.record.embedding.as_ref())?;
    tx.update_record(&loaded.version, &loaded.record, SalienceChange::Unchanged)?;
    Ok(loaded.record)
}

/// Names the batch item an error came from.
fn in_item(error: ServiceError, index: usize) -> ServiceError {
    let prefix = |message: String| format!("items[{index}].{message}");
    match error {
        ServiceError::NotFound(m) => ServiceError::NotFound(prefix(m)),
        ServiceError::FailedPrecondition(m) => ServiceError::FailedPrecondition(prefix(m)),
        ServiceError::Conflict(m) => ServiceError::Conflict(prefix(m)),
        ServiceError::PermissionDenied(m) => ServiceError::PermissionDenied(prefix(m)),
        ServiceError::Invalid(e) => ServiceError::Invalid(e.within(&format!("items[{index}]"))),
        other => other,
    }
}

/// One ingest item as a write job: [`ingest`], unless [`Ingest::route`]
/// finds a cheaper way to the same result.
pub struct Ingest {
    pub caller: Caller,
    pub now: Timestamp,
    pub candidate: Candidate,
}

impl Ingest {
    /// `candidate`, sent by `caller` at `now`, with a new record's search
    /// text analysed here, on the caller's thread, so that the one writer
    /// need not.
    pub fn new(caller: Caller, now: Timestamp, mut candidate: Candidate) -> Self {
        ahead(&mut candidate);
        Ingest {
            caller,
            now,
            candidate,
        }
    }

    /// How it is to be written: a record that only adds itself is placed
    /// now and stored with the other new records of its transaction; a
    /// working state without a vector is prepared by [`prepare_new`] and
    /// then stored the same way; anything else runs [`ingest`].
    pub fn route(self) -> Result<Route, ServiceError> {
        let Ingest {
            caller,
            now,
            candidate,
        } = self;
        let adds_only = candidate.adds_only();
        let Candidate::Create(mut record) = candidate else {
            return Ok(Route::Write(Ingest {
                caller,
                now,
                candidate,
            }));
        };
        if adds_only {
            place_new(&caller, "", &mut record)?;
            return Ok(Route::Insert(record));
        }
        match record.payload.thread() {
            Some(thread) if record.embedding.is_none() => Ok(Route::State(
                thread.to_string(),
                PrepareState {
                    caller,
                    now,
                    record,
                },
            )),
            _ => Ok(Route::Write(Ingest {
                caller,
                now,
                candidate: Candidate::Create(record),
            })),
        }
    }
}

impl Job for Ingest {
    type Output = MemoryRecord;
    const NAME: &'static str = "ingest";

    fn run(self, tx: &mut dyn Transaction) -> Result<MemoryRecord, ServiceError> {
        ingest(tx, &self.caller, self.now, self.candidate)
    }
}

/// [`prepare_new`] as a write job: its record is stored with the others
/// of its transaction (see `StorageWriter::write_then_insert`).
pub struct PrepareState {
    pub caller: Caller,
    pub now: Timestamp,
    pub record: Box<MemoryRecord>,
}

impl Job for PrepareState {
    type Output = MemoryRecord;
    const NAME: &'static str = "prepare_state";

    fn run(self, tx: &mut dyn Transaction) -> Result<MemoryRecord, ServiceError> {
        prepare_new(tx, &self.caller, self.now, self.record)
    }
}

/// [`ingest_batch`] as a write job.
pub struct StoreBatch {
    pub caller: Caller,
    pub now: Timestamp,
    pub candidates: Vec<Candidate>,
}

impl StoreBatch {
    /// `candidates`, sent by `caller` at `now`, with new records' search
    /// texts analysed here, as [`Ingest::new`] does.
    pub fn new(caller: Caller, now: Timestamp, mut candidates: Vec<Candidate>) -> Self {
        candidates.iter_mut().for_each(ahead);
        StoreBatch {
            caller,
            now,
            candidates,
        }
    }
}

impl Job for StoreBatch {
    type Output = Vec<MemoryRecord>;
    const NAME: &'static str = "store_batch";

    fn adds_only(&self) -> bool {
        self.candidates.iter().all(Candidate::adds_only)
    }

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<MemoryRecord>, ServiceError> {
        ingest_batch(tx, &self.caller, self.now, self.candidates)
    }
}

/// [`create_record`] as a write job.
pub struct StoreRecord {
    pub caller: Caller,
    pub now: Timestamp,
    pub record: MemoryRecord,
}

impl StoreRecord {
    /// `record`, sent by `caller` at `now`, with its search text analysed
    /// here, as [`Ingest::new`] does.
    pub fn new(caller: Caller, now: Timestamp, mut record: MemoryRecord) -> Self {
        analyse_ahead(&mut record);
        StoreRecord {
            caller,
            now,
            record,
        }
    }
}

/// A new record's search text analysed on the caller's thread, before
/// its job is queued, so that the one writer need not.
fn ahead(candidate: &mut Candidate) {
    if let Candidate::Create(record) = candidate {
        analyse_ahead(record);
    }
}

impl Job for StoreRecord {
    type Output = MemoryRecord;
    const NAME: &'static str = "store_record";

    fn run(self, tx: &mut dyn Transaction) -> Result<MemoryRecord, ServiceError> {
        create_record(tx, &self.caller, self.now, self.record)
    }
}
