//! What a storage call can fail with, for every backend.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("record {0} not found")]
    NotFound(String),
    #[error("a record with id {0} already exists")]
    AlreadyExists(String),
    /// A conditional write found the record changed since it was read.
    #[error("record {0} was changed by another operation since it was read")]
    Changed(String),
    #[error("database error: {0}")]
    Database(String),
    /// The database gave up this statement for a concurrent transaction's
    /// sake (a deadlock between writers); trying again can succeed.
    #[error("the database cancelled the write for a concurrent one: {0}")]
    Contended(String),
    #[error("connection pool error: {0}")]
    Pool(String),
    /// The database cannot be reached, closed the connection, or gave the
    /// statement up (a timeout, a shutdown, no space left): trying again
    /// later can succeed. The text is for the log, never for clients.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The read's budget ran out ([`super::budget`]): its deadline passed or its
    /// client went away, and it stopped before its work was done.
    #[error("the read was stopped: its deadline passed or its client went away")]
    Stopped,
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Schema(String),
    /// A vector with another number of dimensions than the database's.
    #[error("the vector has {given} dimensions, but the vectors of this database have {expected}")]
    Dimensions { given: usize, expected: usize },
    /// The file cannot be read as a database: encrypted with another key,
    /// encrypted with none configured, or not a database at all.
    #[error("{0}")]
    Locked(String),
    /// A backup that cannot be made, or whose copy fails its check.
    #[error("{0}")]
    Backup(String),
    #[error("cannot create the database directory {path}: {source}")]
    Directory {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot create the database file {path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
}
