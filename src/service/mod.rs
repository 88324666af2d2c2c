//! The memory operations, one function each: ingest (each kind, batch,
//! whole record), outcome, the revisions, retrieval, history, and every
//! step of decay and consolidation.
//!
//! Each takes a storage [`Transaction`], the [`Caller`] (identity and
//! effective trust) and `now`, plus a request that was validated before the
//! function runs. Nothing here knows of HTTP, actors or SQL: the actors run
//! these functions on the writer (writes) or the read pool (reads), and any
//! entry point — the JSON API, the CLI through it, the scheduled jobs —
//! reaches the same code.

pub mod consolidation;
pub mod conversations;
pub mod decay;
pub mod embedding;
pub mod erasure;
pub mod graph;
pub mod ingest;
pub mod job;
pub mod keys;
pub mod retrieval;
pub mod revise;
pub mod revision;
pub mod schedule;
pub mod stats;
pub mod topic_upkeep;
pub mod topics;

use crate::domain::record::{MemoryRecord, Sensitivity};
use crate::domain::revision::RevisionError;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::domain::validate::ValidationError;
use crate::domain::vector::{check_dimensions, dimensions_mismatch, Embedding};
use crate::store::{Loaded, StoreError, Transaction};

/// Why an operation was not done.
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
    /// `auto` placement could not tell which topic an observation names,
    /// and was asked not to guess: the topics it could name.
    #[error("{message}")]
    Ambiguous {
        message: String,
        similar_topic_ids: Vec<String>,
    },
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("{0}")]
    Overloaded(String),
    #[error("{0}")]
    Unavailable(String),
    /// A failure inside the service (a panicking operation); the message is
    /// for the log.
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for ServiceError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound(id) => ServiceError::NotFound(format!("record {id} not found")),
            StoreError::AlreadyExists(_) => {
                ServiceError::Conflict("id: a record with this id already exists".to_string())
            }
            StoreError::Changed(id) => ServiceError::Conflict(format!(
                "record {id} was changed by a concurrent operation; read it again and retry"
            )),
            StoreError::Contended(_) => {
                ServiceError::Unavailable(format!("{error}; retry shortly"))
            }
            // What the driver said stays in the log: clients learn only
            // that the database is away for now.
            StoreError::Unavailable(_) | StoreError::Pool(_) => {
                tracing::warn!(error = %error, "the database is unavailable");
                ServiceError::Unavailable("the database is unavailable; retry shortly".to_string())
            }
            StoreError::Stopped => ServiceError::Unavailable(format!("{error}; retry shortly")),
            StoreError::Dimensions { given, expected } => ServiceError::FailedPrecondition(
                dimensions_mismatch("embedding", given, expected).to_string(),
            ),
            other => ServiceError::Store(other),
        }
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
            RevisionError::TypeMismatch {
                field,
                id,
                actual,
                expected,
            } => ServiceError::Invalid(ValidationError::new(
                field,
                format!("record {id} is {actual} memory but the new record is {expected}"),
            )),
        }
    }
}

/// The stored record `id`, read for a change: `NotFound` naming the
/// request field when there is none or the caller may not see it (the
/// same answer, so ids cannot be probed).
pub(crate) fn load(
    tx: &mut dyn Transaction,
    caller: &Caller,
    field: &str,
    id: &str,
    now: Timestamp,
) -> Result<Loaded, ServiceError> {
    tx.get_for_update(id, now)?
        .filter(|loaded| caller.may_see(&loaded.record))
        .ok_or_else(|| not_found(field, "record"))
}

/// What a caller is told of a record that does not exist or that it may
/// not see: the same, naming the request field, and without the id, so no
/// answer about an invisible record ever carries it.
/// `what` is the kind of thing (`record`, `topic`).
fn not_found(field: &str, what: &str) -> ServiceError {
    if field.is_empty() {
        ServiceError::NotFound(format!("{what} not found"))
    } else {
        ServiceError::NotFound(format!("{field}: {what} not found"))
    }
}

/// Record `id` exists and the caller may see it; `NotFound` otherwise.
fn check_visible(
    tx: &mut dyn Transaction,
    caller: &Caller,
    field: &str,
    id: &str,
) -> Result<(), ServiceError> {
    match tx.record_visibility(id)? {
        Some(seen)
            if caller
                .trust
                .allows_parts(seen.sensitivity, seen.scope.as_deref()) =>
        {
            Ok(())
        }
        _ => Err(not_found(field, "record")),
    }
}

/// A new record goes where the caller may write: without a scope, into
/// the caller's default scope (a scoped key's first); then it must be
/// within the caller's trust. `at` is the record's field path (`""` or
/// `"new_record."`).
fn place_new(caller: &Caller, at: &str, record: &mut MemoryRecord) -> Result<(), ServiceError> {
    place(caller, at, record.sensitivity, &mut record.scope)
}

/// [`place_new`] for anything with a sensitivity and a scope.
fn place(
    caller: &Caller,
    at: &str,
    sensitivity: Sensitivity,
    scope: &mut Option<String>,
) -> Result<(), ServiceError> {
    if scope.is_none() {
        scope.clone_from(&caller.default_scope);
    }
    let most = caller.trust.max_sensitivity;
    if sensitivity > most {
        return Err(ServiceError::PermissionDenied(format!(
            "{at}sensitivity: this caller may write records up to sensitivity {most}, not {sensitivity}"
        )));
    }
    if !caller.trust.allows_parts(sensitivity, scope.as_deref()) {
        return Err(ServiceError::PermissionDenied(format!(
            "{at}scope: this caller may not write into scope {:?}",
            scope.as_deref().unwrap_or_default()
        )));
    }
    Ok(())
}

/// A vector a client sent (`field`) must have the dimensions of the
/// database's vectors, once they are fixed: a well-formed vector of
/// another length conflicts with what the database holds (409), which no
/// schema of the request can state.
fn check_embedding(
    tx: &mut dyn Transaction,
    field: &str,
    embedding: Option<&Embedding>,
) -> Result<(), ServiceError> {
    let Some(embedding) = embedding else {
        return Ok(());
    };
    if let Some(expected) = tx.vector_dimensions()? {
        check_dimensions(field, embedding.dimensions(), expected)
            .map_err(|e| ServiceError::FailedPrecondition(e.to_string()))?;
    }
    Ok(())
}

/// Relations a client sends must point at stored records it may see.
fn check_relation_targets(
    tx: &mut dyn Transaction,
    caller: &Caller,
    record: &MemoryRecord,
) -> Result<(), ServiceError> {
    for (i, relation) in record.relations.iter().enumerate() {
        if relation.target_id != record.id {
            let field = format!("relations[{i}].target_id");
            check_visible(tx, caller, &field, &relation.target_id)?;
        }
    }
    Ok(())
}

/// Stores a new record; afterwards it carries the salience it has now (it
/// is stored as its value at its last reinforcement, which a client may
/// date in the past), so the answer matches a read.
pub fn insert_new(
    tx: &mut dyn Transaction,
    record: &mut MemoryRecord,
    now: Timestamp,
) -> Result<(), ServiceError> {
    tx.insert_record(record)?;
    record.salience = crate::domain::decay::salience_of_new(record, now);
    Ok(())
}
