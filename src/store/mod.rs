//! Storage: what the service asks of a database, one trait per area
//! (`RecordStore`, `TopicStore`, `DecayStore`, `JobStore`,
//! `ConsolidationStore`, `KeyStore`, `VectorStore`, `StatsStore`, each in the
//! file of its area here), all of them together a [`Transaction`]; and the
//! two backends, [`sqlite`] and [`postgres`], each implementing an area in
//! its file of the same name, beside the SQL.
//!
//! The service layer sees only [`Transaction`], [`WriteConnection`] (the
//! writer's control of group-committed transactions) and [`ReadPool`]; no
//! SQL and no backend type leaves this module. Every guarantee the service
//! relies on is part of the traits' contract rather than of there being
//! one writer: [`RecordStore::update_record`] refuses a record that changed
//! since it was read (row version), the decay writes are conditional on the
//! version their scan saw, and audit entries are appended as given, never
//! by counting what is stored. A backend with several writers (PostgreSQL)
//! keeps them by implementing the same statements.

pub mod budget;
mod consolidation;
pub mod conversations;
mod erasure;
mod keys;
mod maintenance;
pub mod postgres;
mod ranking;
mod records;
pub(crate) mod rows;
pub mod sqlite;
mod stats;
pub mod term_counts;
mod topic_names;
mod topics;
mod vectors;

pub use consolidation::{ConsolidationStore, Episode, Sighting, Step};
pub use conversations::ConversationStore;
pub use erasure::{
    ChainNeighbours, Erasable, ErasureEntry, ErasureStore, LogPlace, LogReach, Tombstone,
    BULK_ERASURE,
};
pub use keys::KeyStore;
pub(crate) use keys::StoredKey;
pub use maintenance::{
    DecayChange, DecayRow, DecayStore, HeldJob, JobClaim, JobRunRecord, JobSetting, JobStore,
};
pub(crate) use records::walk_chain;
pub use records::{Loaded, RecordPage, RecordStore, SalienceChange, Version, Visibility};
pub use sqlite::ConnectionOptions;
pub use stats::{Activity, MemoryStats, StatsStore, RECENT_ACTIVITY, SALIENCE_BUCKETS};
pub use topic_names::{SummaryVersion, TopicNameStore};
pub use topics::{
    EdgeEnd, FieldVersion, FoundTopic, KeyedTopic, ScoredKey, SharedWords, TopicDecay, TopicEdge,
    TopicStore, WordReach,
};
pub use vectors::{Embedded, ToEmbed, VectorStore};

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
    /// The read's budget ran out ([`budget`]): its deadline passed or its
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

/// An opened database: the writer's connection (migrated), the further
/// writers' (PostgreSQL; none on SQLite, which has one writer), the pool
/// of read connections, the key lookups' connection, and the schema
/// versions applied now.
pub struct Opened {
    pub writer: Box<dyn WriteConnection>,
    pub more_writers: Vec<Box<dyn WriteConnection>>,
    pub readers: ReadPool,
    pub applied_migrations: Vec<i64>,
}

/// Opens the database the settings name, SQLite or PostgreSQL, and brings
/// its schema up to date. `embedding_dimensions`: the configured
/// dimensions of vectors, fixed in the database; `encryption_key`: the
/// SQLite file's key (`StorageSettings::encryption_key`).
pub fn open(
    storage: &crate::config::StorageSettings,
    embedding_dimensions: Option<usize>,
    encryption_key: Option<String>,
) -> Result<Opened, StoreError> {
    match storage.backend {
        crate::config::Backend::Sqlite => {
            let busy_timeout = std::time::Duration::from_millis(storage.busy_timeout_ms);
            let options = |cache_size_kib| ConnectionOptions {
                busy_timeout,
                cache_size_kib,
                mmap_size_mib: storage.mmap_size_mib,
            };
            sqlite::open(
                &storage.db_path,
                storage.pool_size,
                options(storage.writer_cache_size_kib),
                options(storage.reader_cache_size_kib),
                embedding_dimensions,
                encryption_key,
            )
        }
        crate::config::Backend::Postgres => postgres::open(
            &postgres::PgOptions {
                url: storage.postgres_url.clone().unwrap_or_default(),
                writers: storage.postgres_writers,
                statement_timeout: std::time::Duration::from_millis(storage.read_timeout_ms),
                ca_file: storage.postgres_ca_file.clone(),
            },
            embedding_dimensions,
        ),
    }
}

/// What reading threads read through; cheap to clone.
#[derive(Clone)]
pub enum ReadPool {
    Sqlite(sqlite::ReadPool),
    Postgres(postgres::ReadPool),
}

impl ReadPool {
    /// The reads of the calling thread, to be made on it: on SQLite from
    /// the pool's connections, on PostgreSQL on a connection of the
    /// thread's own.
    pub fn for_thread(&self) -> ThreadReads {
        match self {
            ReadPool::Sqlite(pool) => ThreadReads::Sqlite(pool.clone()),
            ReadPool::Postgres(pool) => ThreadReads::Postgres(Box::new(pool.for_thread())),
        }
    }
}

/// One thread's reads.
pub enum ThreadReads {
    Sqlite(sqlite::ReadPool),
    Postgres(Box<postgres::ThreadReads>),
}

impl ThreadReads {
    /// Runs `work` in one read transaction (one snapshot). Blocks: call it
    /// from a thread made for blocking work, outside any async runtime.
    pub fn read<T>(
        &mut self,
        work: impl FnOnce(&mut dyn Transaction) -> T,
    ) -> Result<T, StoreError> {
        match self {
            ThreadReads::Sqlite(pool) => pool.read(work),
            ThreadReads::Postgres(reads) => reads.read(work),
        }
    }
}

/// One unit of work against the database: the writer's shared transaction
/// (each job isolated in a savepoint), or a pooled read connection. It is
/// every area's store at once; each backend implements the areas in the
/// file of the same name (`sqlite/records.rs`, `postgres/topics.rs`, ...).
/// Saliences returned are decayed to the `now` given.
pub trait Transaction:
    RecordStore
    + ConversationStore
    + StatsStore
    + VectorStore
    + DecayStore
    + ConsolidationStore
    + JobStore
    + KeyStore
    + TopicStore
    + TopicNameStore
    + ErasureStore
{
}

impl<
        T: RecordStore
            + ConversationStore
            + StatsStore
            + VectorStore
            + DecayStore
            + ConsolidationStore
            + JobStore
            + KeyStore
            + TopicStore
            + TopicNameStore
            + ErasureStore
            + ?Sized,
    > Transaction for T
{
}

/// The writer's connection: group-committed transactions, each job in a
/// savepoint of its own so a failed job is undone alone.
pub trait WriteConnection: Send {
    fn begin(&mut self) -> Result<(), StoreError>;
    fn savepoint(&mut self) -> Result<(), StoreError>;
    /// Keeps what was done since the savepoint.
    fn release(&mut self) -> Result<(), StoreError>;
    /// Undoes what was done since the savepoint.
    fn rollback_to_savepoint(&mut self) -> Result<(), StoreError>;
    fn commit(&mut self) -> Result<(), StoreError>;
    fn rollback(&mut self);
    /// The open transaction, for the jobs to run in.
    fn transaction(&mut self) -> &mut dyn Transaction;
    /// Called once when the writer stops: flush whatever the backend keeps
    /// aside (SQLite's WAL).
    fn close(&mut self) -> Result<(), StoreError>;
    /// Outside a transaction, after an erasure: leaves no copy of what was
    /// deleted where the backend keeps one aside — on SQLite, the WAL
    /// (copied into the database and truncated). Nothing on PostgreSQL,
    /// whose dead rows wait for `VACUUM`.
    fn scrub(&mut self) -> Result<(), StoreError>;
    /// Outside a transaction, when no write has come for a moment: what
    /// the backend keeps up to date in the background (the counts of the
    /// terms retrievals found common). Answers whether it did anything.
    fn upkeep(&mut self) -> Result<bool, StoreError>;
}
