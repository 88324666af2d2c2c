//! The actors, and what each owns:
//!
//! - [`ingestion::Ingestor`] turns ingest requests and whole records into
//!   validated records (classification and policy) and hands them to the
//!   writer; it owns the ingestion policy.
//! - [`retrieval::Retriever`] turns retrieval requests into storage queries,
//!   applies the trust context, and runs multi-solution selection; it owns
//!   the read concurrency bound and the selection threshold.
//! - [`storage::StoreReader`] is a `SyncArbiter` pool of threads, one pooled
//!   SQLite connection each, for reads.
//! - [`storage::StorageWriter`] is the single writer: one thread and one
//!   connection, fed by a bounded queue, committing every write waiting in
//!   the queue in one transaction (group commit). A caller is answered only
//!   after its write is committed; a full queue answers `Overloaded` at once.
//!
//! Only the two storage actors touch SQLite, and nothing blocking runs on
//! the async executor.

pub mod ingestion;
pub mod retrieval;
pub mod storage;

use crate::domain::validate::ValidationError;
use crate::store::StoreError;

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
