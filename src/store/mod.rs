//! Storage: what the service asks of a database, one trait per area
//! (`RecordReads`, `RecordStore`, `TopicStore`, `DecayStore`, `JobStore`,
//! `ConsolidationStore`, `KeyStore`, `VectorStore`, `StatsStore`, each in the
//! file of its area here), all of them together a [`Transaction`]; the
//! ranking engine retrieval enters ([`ranking::query_records`]); and the
//! two backends, [`sqlite`] and [`postgres`], each implementing an area in
//! its file of the same name, beside the SQL.
//!
//! This file is the face of storage: its modules, what the rest of engram
//! uses of them, and [`open`]. Below it the backends, then
//! `transaction.rs`, the ranking engine, the areas and `error.rs`; each
//! file imports only from its layer and those below (docs/architecture.md,
//! "Inside storage").
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
mod error;
mod keys;
mod maintenance;
pub mod postgres;
pub mod ranking;
mod records;
pub(crate) mod rows;
pub mod sqlite;
mod stats;
pub mod term_counts;
mod topic_names;
mod topics;
mod transaction;
mod vectors;

pub use consolidation::{ConsolidationStore, Episode, Sighting, Step};
pub use conversations::ConversationStore;
pub use erasure::{
    ChainNeighbours, Erasable, ErasureEntry, ErasureStore, LogPlace, LogReach, Tombstone,
    BULK_ERASURE,
};
pub use error::StoreError;
pub use keys::KeyStore;
pub use maintenance::{
    DecayChange, DecayRow, DecayStore, HeldJob, JobClaim, JobRunRecord, JobSetting, JobStore,
};
pub use records::{
    Loaded, RecordPage, RecordReads, RecordStore, SalienceChange, Version, Visibility,
};
pub use sqlite::ConnectionOptions;
pub use stats::{Activity, MemoryStats, StatsStore, RECENT_ACTIVITY, SALIENCE_BUCKETS};
pub use topic_names::{SummaryVersion, TopicNameStore};
pub use topics::{
    EdgeEnd, FieldVersion, FoundTopic, KeyedTopic, ScoredKey, SharedWords, TopicDecay, TopicEdge,
    TopicStore, WordReach,
};
pub use transaction::{
    Opened, ReadPool, Readers, Reads, ThreadReads, Transaction, WriteConnection,
};
pub use vectors::{Embedded, ToEmbed, VectorStore};

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
