//! What the service works through: a [`Transaction`] (every area's store
//! at once), the writer's connection that runs them ([`WriteConnection`]),
//! and the readers' ([`ReadPool`]), as a backend opens them ([`Opened`]).

use std::sync::Arc;

use super::consolidation::ConsolidationStore;
use super::conversations::ConversationStore;
use super::erasure::ErasureStore;
use super::error::StoreError;
use super::keys::KeyStore;
use super::maintenance::{DecayStore, JobStore};
use super::ranking::source::RankingSource;
use super::records::{RecordReads, RecordStore};
use super::stats::StatsStore;
use super::topic_names::TopicNameStore;
use super::topics::TopicStore;
use super::vectors::VectorStore;

/// An opened database: the writer's connection (migrated), the further
/// writers' (PostgreSQL; none on SQLite, which has one writer), the pool
/// of read connections, and the schema versions applied now.
pub struct Opened {
    pub writer: Box<dyn WriteConnection>,
    pub more_writers: Vec<Box<dyn WriteConnection>>,
    pub readers: ReadPool,
    pub applied_migrations: Vec<i64>,
}

/// What reading threads read through; cheap to clone.
#[derive(Clone)]
pub struct ReadPool(Arc<dyn Readers>);

impl ReadPool {
    pub fn new(readers: impl Readers + 'static) -> ReadPool {
        ReadPool(Arc::new(readers))
    }

    /// The reads of the calling thread, to be made on it: on SQLite from
    /// the pool's connections, on PostgreSQL on a connection of the
    /// thread's own.
    pub fn for_thread(&self) -> ThreadReads {
        ThreadReads(self.0.for_thread())
    }
}

/// One thread's reads.
pub struct ThreadReads(Box<dyn Reads>);

impl ThreadReads {
    /// Runs `work` in one read transaction (one snapshot). Blocks: call it
    /// from a thread made for blocking work, outside any async runtime.
    pub fn read<T>(
        &mut self,
        work: impl FnOnce(&mut dyn Transaction) -> T,
    ) -> Result<T, StoreError> {
        let mut work = Some(work);
        let mut answer = None;
        self.0.read(&mut |tx| {
            if let Some(work) = work.take() {
                answer = Some(work(tx));
            }
        })?;
        answer.ok_or_else(|| StoreError::Database("the read ended before its work ran".into()))
    }
}

/// A backend's read connections, shared by the reading threads.
pub trait Readers: Send + Sync {
    /// The reads of the calling thread.
    fn for_thread(&self) -> Box<dyn Reads>;
}

/// A backend's reads on one thread.
pub trait Reads {
    /// Runs `work` once, in one read transaction.
    fn read(&mut self, work: &mut dyn FnMut(&mut dyn Transaction)) -> Result<(), StoreError>;
}

/// One unit of work against the database: the writer's shared transaction
/// (each job isolated in a savepoint), or a pooled read connection. It is
/// every area's store at once; each backend implements the areas in the
/// file of the same name (`sqlite/records.rs`, `postgres/topics.rs`, ...),
/// and this trait beside its ranking source. Saliences returned are
/// decayed to the `now` given.
pub trait Transaction:
    RecordReads
    + RecordStore
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
    /// What the ranking engine reads a retrieval through, in this
    /// transaction (`store::ranking::query_records`).
    fn ranking_source(&mut self) -> Box<dyn RankingSource + '_>;
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
