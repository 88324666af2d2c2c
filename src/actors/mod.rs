//! The actors, and what each owns:
//!
//! - [`ingestion::Ingestor`] turns ingest requests and whole records into
//!   validated records (classification and policy) and hands them to the
//!   writer; it owns the ingestion policy.
//! - [`retrieval::Retriever`] turns retrieval requests into storage queries,
//!   applies the trust context, and runs multi-solution selection; it owns
//!   the read concurrency bound and the selection threshold.
//! - [`revision::Reviser`] runs the revision operations (supersede, fork,
//!   retract, merge, contest, reinforce, penalize), each as one writer job,
//!   so revisions of one record serialise and apply whole or not at all.
//! - [`decay::Decayer`] sweeps salience down to its decayed value and prunes
//!   what decayed away, one chunk per writer job.
//! - [`consolidation::Consolidator`] distils episodes into facts, skills and
//!   plans, compresses old episodes and merges duplicate facts.
//! - [`storage::StoreReader`] is a `SyncArbiter` pool of threads, one pooled
//!   SQLite connection each, for reads.
//! - [`storage::StorageWriter`] is the single writer: one thread and one
//!   connection, fed by a bounded queue, committing every write waiting in
//!   the queue in one transaction (group commit). A caller is answered only
//!   after its write is committed; a full queue answers `Overloaded` at once.
//!
//! Only the two storage actors touch SQLite, and nothing blocking runs on
//! the async executor.

pub mod consolidation;
pub mod decay;
pub mod ingestion;
pub mod retrieval;
pub mod revision;
pub mod storage;

use rusqlite::Connection;

use crate::domain::record::MemoryRecord;
use crate::domain::revision::RevisionError;
use crate::domain::time::Timestamp;
use crate::domain::validate::ValidationError;
use crate::store::{records, StoreError};

/// What an actor answers when a request cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("{0}")]
    Overloaded(String),
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for ServiceError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound(id) => ServiceError::NotFound(format!("record {id} not found")),
            StoreError::AlreadyExists(id) => {
                ServiceError::Conflict(format!("a record with id {id} already exists"))
            }
            other => ServiceError::Store(other),
        }
    }
}

impl From<actix::MailboxError> for ServiceError {
    fn from(error: actix::MailboxError) -> Self {
        ServiceError::Unavailable(format!("service is shutting down: {error}"))
    }
}

impl From<RevisionError> for ServiceError {
    fn from(error: RevisionError) -> Self {
        let message = error.to_string();
        match error {
            RevisionError::Immutable { .. } => ServiceError::FailedPrecondition(message),
            RevisionError::NotActive { .. } | RevisionError::NotContested { .. } => {
                ServiceError::Conflict(message)
            }
            RevisionError::TypeMismatch { field, .. } => ServiceError::Invalid(ValidationError {
                message: message
                    .trim_start_matches(&format!("{field}: "))
                    .to_string(),
                field,
            }),
        }
    }
}

/// The stored record `id`, or `NotFound` naming the request field.
pub(crate) fn load_record(
    conn: &Connection,
    field: &str,
    id: &str,
    now: Timestamp,
) -> Result<MemoryRecord, ServiceError> {
    records::get_record(conn, id, now)?
        .ok_or_else(|| ServiceError::NotFound(format!("{field}: record {id} not found")))
}

/// Relations a client sends must point at stored records.
pub(crate) fn check_relation_targets(
    conn: &Connection,
    record: &MemoryRecord,
) -> Result<(), ServiceError> {
    for (i, relation) in record.relations.iter().enumerate() {
        if relation.target_id != record.id
            && records::record_key(conn, &relation.target_id)?.is_none()
        {
            return Err(ServiceError::NotFound(format!(
                "relations[{i}].target_id: record {} not found",
                relation.target_id
            )));
        }
    }
    Ok(())
}
