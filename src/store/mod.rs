//! Storage: what the service asks of a database, as one trait
//! ([`Transaction`]), and its SQLite implementation in [`sqlite`].
//!
//! The service layer sees only [`Transaction`], [`WriteConnection`] (the
//! writer's control of group-committed transactions) and [`ReadPool`]; no
//! SQL and no SQLite type leaves this module. Every guarantee the service
//! relies on is part of the trait's contract rather than of there being
//! one writer: [`Transaction::update_record`] refuses a record that changed
//! since it was read (row version), the decay writes are conditional on the
//! version their scan saw, and audit entries are appended as given, never
//! by counting what is stored. A second backend with several writers keeps
//! them by implementing the same statements.

/// The [`Transaction`] of a backend: each method calls the function of the
/// same name in the backend's module for its area (`records`, `ranking`,
/// `vectors`, `maintenance`, `consolidation`, `keys`, `topics`, `stats`),
/// which take the connection first. Both backends are laid out alike, so
/// one list serves both.
macro_rules! delegate_transaction {
    ($backend:ty) => {
        impl $crate::store::Transaction for $backend {
            fn get_record(
                &mut self,
                id: &str,
                now: Timestamp,
            ) -> Result<Option<MemoryRecord>, StoreError> {
                records::get_record(self, id, now)
            }

            fn get_for_update(
                &mut self,
                id: &str,
                now: Timestamp,
            ) -> Result<Option<Loaded>, StoreError> {
                records::get_for_update(self, id, now)
            }

            fn payload_bytes(&mut self, ids: &[String]) -> Result<u64, StoreError> {
                records::payload_bytes(self, ids)
            }

            fn load_records(
                &mut self,
                keys: &[i64],
                now: Timestamp,
            ) -> Result<Vec<MemoryRecord>, StoreError> {
                records::load_records(self, keys, now)
            }

            fn retract_current_states(
                &mut self,
                thread_id: &str,
                scope: Option<&str>,
                up_to: Sensitivity,
                entry: &AuditEntry,
                now: Timestamp,
            ) -> Result<Vec<String>, StoreError> {
                records::retract_current_states(self, thread_id, scope, up_to, entry, now)
            }

            fn record_visibility(
                &mut self,
                id: &str,
            ) -> Result<Option<(Sensitivity, Option<String>)>, StoreError> {
                records::record_visibility(self, id)
            }

            fn insert_record(&mut self, record: &MemoryRecord) -> Result<(), StoreError> {
                records::insert_record(self, record).map(|_| ())
            }

            fn insert_records(&mut self, records: &[&MemoryRecord]) -> Result<(), StoreError> {
                records::insert_records(self, records).map(|_| ())
            }

            fn update_record(
                &mut self,
                version: &Version,
                record: &MemoryRecord,
                salience: SalienceChange,
            ) -> Result<(), StoreError> {
                records::update_record(self, version, record, salience)
            }

            fn query_records(
                &mut self,
                query: &RecordQuery,
                now: Timestamp,
            ) -> Result<RecordPage, StoreError> {
                ranking::query_records(self, query, now)
            }

            fn supersession_chain(
                &mut self,
                id: &str,
                now: Timestamp,
            ) -> Result<Option<Vec<MemoryRecord>>, StoreError> {
                records::supersession_chain(self, id, now)
            }

            fn memory_stats(&mut self, now: Timestamp) -> Result<MemoryStats, StoreError> {
                stats::memory_stats(self, now)
            }

            fn ping(&mut self) -> Result<(), StoreError> {
                records::ping(self)
            }

            fn vector_dimensions(&mut self) -> Result<Option<usize>, StoreError> {
                vectors::dimensions(self)
            }

            fn to_embed(
                &mut self,
                after_key: i64,
                limit: usize,
                now: Timestamp,
            ) -> Result<Vec<ToEmbed>, StoreError> {
                vectors::to_embed(self, after_key, limit, now)
            }

            fn store_embedded(&mut self, embedded: &Embedded) -> Result<bool, StoreError> {
                vectors::store_embedded(self, embedded)
            }

            fn scan_for_decay(
                &mut self,
                after_key: i64,
                limit: usize,
            ) -> Result<Vec<DecayRow>, StoreError> {
                maintenance::scan_for_decay(self, after_key, limit)
            }

            fn apply_decay(
                &mut self,
                changes: &[DecayChange],
                now: Timestamp,
            ) -> Result<usize, StoreError> {
                maintenance::apply_decay(self, changes, now)
            }

            fn prune(&mut self, candidates: &[DecayChange]) -> Result<usize, StoreError> {
                maintenance::prune(self, candidates)
            }

            fn unmarked_episodes(
                &mut self,
                step: Step,
                created_before: Timestamp,
                after_key: i64,
                limit: usize,
            ) -> Result<Vec<(i64, String)>, StoreError> {
                consolidation::unmarked_episodes(self, step, created_before, after_key, limit)
            }

            fn mark(&mut self, key: i64, step: Step) -> Result<(), StoreError> {
                consolidation::mark(self, key, step)
            }

            fn add_sighting(
                &mut self,
                step: Step,
                group_key: &str,
                key: i64,
                detail: Option<&str>,
            ) -> Result<(), StoreError> {
                consolidation::add_sighting(self, step, group_key, key, detail)
            }

            fn sightings(
                &mut self,
                step: Step,
                group_key: &str,
            ) -> Result<Vec<(i64, Option<String>)>, StoreError> {
                consolidation::sightings(self, step, group_key)
            }

            fn output(
                &mut self,
                step: Step,
                group_key: &str,
            ) -> Result<Option<String>, StoreError> {
                consolidation::output(self, step, group_key)
            }

            fn set_output(
                &mut self,
                step: Step,
                group_key: &str,
                id: &str,
            ) -> Result<(), StoreError> {
                consolidation::set_output(self, step, group_key, id)
            }

            fn move_outputs(&mut self, from_id: &str, to_id: &str) -> Result<(), StoreError> {
                consolidation::move_outputs(self, from_id, to_id)
            }

            fn duplicate_fact_groups(&mut self) -> Result<Vec<Vec<String>>, StoreError> {
                consolidation::duplicate_fact_groups(self)
            }

            fn job_settings(&mut self) -> Result<Vec<JobSetting>, StoreError> {
                maintenance::job_settings(self)
            }

            fn save_job_setting(
                &mut self,
                setting: &JobSetting,
                now: Timestamp,
            ) -> Result<(), StoreError> {
                maintenance::save_job_setting(self, setting, now)
            }

            fn recent_job_runs(&mut self, per_job: usize) -> Result<Vec<JobRunRecord>, StoreError> {
                maintenance::recent_job_runs(self, per_job)
            }

            fn save_job_run(&mut self, run: &JobRunRecord, keep: usize) -> Result<(), StoreError> {
                maintenance::save_job_run(self, run, keep)
            }

            fn claim_job(&mut self, claim: &JobClaim) -> Result<bool, StoreError> {
                maintenance::claim_job(self, claim)
            }

            fn release_job(&mut self, name: &str, holder: &str) -> Result<(), StoreError> {
                maintenance::release_job(self, name, holder)
            }

            fn held_jobs(
                &mut self,
                now: Timestamp,
                live_since: Timestamp,
            ) -> Result<Vec<$crate::store::HeldJob>, StoreError> {
                maintenance::held_jobs(self, now, live_since)
            }

            fn heartbeat(
                &mut self,
                instance: &str,
                at: Timestamp,
                live_since: Timestamp,
                forget_before: Timestamp,
            ) -> Result<usize, StoreError> {
                maintenance::heartbeat(self, instance, at, live_since, forget_before)
            }

            fn insert_key(&mut self, key: &ApiKey, hash: &[u8]) -> Result<(), StoreError> {
                keys::insert_key(self, key, hash)
            }

            fn any_key(&mut self) -> Result<bool, StoreError> {
                keys::any_key(self)
            }

            fn list_keys(&mut self) -> Result<Vec<ApiKey>, StoreError> {
                keys::list_keys(self)
            }

            fn active_key(&mut self, hash: &[u8]) -> Result<Option<ApiKey>, StoreError> {
                keys::active_key(self, hash)
            }

            fn revoke_key(&mut self, name: &str, now: Timestamp) -> Result<bool, StoreError> {
                keys::revoke_key(self, name, now)
            }

            fn insert_topic(&mut self, topic: &Topic) -> Result<i64, StoreError> {
                topics::insert_topic(self, topic)
            }

            fn update_topic(&mut self, key: i64, topic: &Topic) -> Result<(), StoreError> {
                topics::update_topic(self, key, topic)
            }

            fn index_topic(
                &mut self,
                key: i64,
                text: String,
                fresh: bool,
            ) -> Result<(), StoreError> {
                topics::index_topic(self, key, text, fresh)
            }

            fn set_topic_words(
                &mut self,
                key: i64,
                old: &BTreeSet<String>,
                new: &BTreeSet<String>,
            ) -> Result<(), StoreError> {
                topics::set_topic_words(self, key, old, new)
            }

            fn topics_sharing(
                &mut self,
                words: &BTreeSet<String>,
                per_word: usize,
            ) -> Result<Vec<(i64, usize)>, StoreError> {
                topics::topics_sharing(self, words, per_word)
            }

            fn topic_by_id(&mut self, id: &str) -> Result<Option<(i64, Topic)>, StoreError> {
                topics::topic_by_id(self, id)
            }

            fn topic_by_key(&mut self, key: i64) -> Result<Option<Topic>, StoreError> {
                topics::topic_by_key(self, key)
            }

            fn topics_to_index(&mut self) -> Result<Vec<i64>, StoreError> {
                topics::topics_to_index(self)
            }

            fn topics_indexed(&mut self, keys: &[i64]) -> Result<(), StoreError> {
                topics::topics_indexed(self, keys)
            }

            fn topics_titled(
                &mut self,
                title: &str,
                scope: Option<&str>,
            ) -> Result<Vec<(i64, Topic)>, StoreError> {
                topics::topics_titled(self, title, scope)
            }

            fn search_topics(
                &mut self,
                text: &str,
                trust: &TrustContext,
                kind: Option<&str>,
                limit: usize,
            ) -> Result<Vec<(i64, Topic, f64)>, StoreError> {
                topics::search_topics(self, text, trust, kind, limit)
            }

            fn recent_topics(
                &mut self,
                trust: &TrustContext,
                kind: Option<&str>,
                limit: usize,
            ) -> Result<Vec<(i64, Topic)>, StoreError> {
                topics::recent_topics(self, trust, kind, limit)
            }

            fn field_heads(
                &mut self,
                key: i64,
                at: Option<Timestamp>,
            ) -> Result<Vec<FieldVersion>, StoreError> {
                topics::field_heads(self, key, at)
            }

            fn field_versions(
                &mut self,
                key: i64,
                name: &str,
            ) -> Result<Vec<FieldVersion>, StoreError> {
                topics::field_versions(self, key, name)
            }

            fn add_version(&mut self, key: i64, version: &FieldVersion) -> Result<(), StoreError> {
                topics::add_version(self, key, version)
            }

            fn topic_of_record(&mut self, record_id: &str) -> Result<Option<i64>, StoreError> {
                topics::topic_of_record(self, record_id)
            }

            fn trim_versions(
                &mut self,
                key: i64,
                name: &str,
                keep: usize,
            ) -> Result<usize, StoreError> {
                topics::trim_versions(self, key, name, keep)
            }

            fn add_edge(
                &mut self,
                from: i64,
                to: i64,
                kind: &str,
                now: Timestamp,
            ) -> Result<bool, StoreError> {
                topics::add_edge(self, from, to, kind, now)
            }

            fn remove_edge(
                &mut self,
                from: i64,
                to: i64,
                kind: &str,
                now: Timestamp,
            ) -> Result<bool, StoreError> {
                topics::remove_edge(self, from, to, kind, now)
            }

            fn edges_of(
                &mut self,
                key: i64,
                at: Option<Timestamp>,
            ) -> Result<Vec<(i64, TopicEdge)>, StoreError> {
                topics::edges_of(self, key, at)
            }

            fn put_topic_vector(
                &mut self,
                key: i64,
                embedding: &Embedding,
            ) -> Result<(), StoreError> {
                topics::put_topic_vector(self, key, embedding)
            }

            fn nearest_topics(
                &mut self,
                query: &QueryVector,
                trust: &TrustContext,
                kind: Option<&str>,
                limit: usize,
            ) -> Result<Vec<(i64, f64)>, StoreError> {
                topics::nearest_topics(self, query, trust, kind, limit)
            }

            fn topic_similarity(
                &mut self,
                key: i64,
                query: &QueryVector,
            ) -> Result<Option<f64>, StoreError> {
                topics::topic_similarity(self, key, query)
            }

            fn drop_versions(&mut self, key: i64, name: &str) -> Result<(), StoreError> {
                topics::drop_versions(self, key, name)
            }

            fn fading_topics(&mut self, below: f64, limit: usize) -> Result<Vec<i64>, StoreError> {
                topics::fading_topics(self, below, limit)
            }

            fn active_topics(&mut self) -> Result<u64, StoreError> {
                topics::active_topics(self)
            }

            fn topic_decay_chunk(
                &mut self,
                after_key: i64,
                limit: usize,
            ) -> Result<Vec<TopicDecay>, StoreError> {
                topics::topic_decay_chunk(self, after_key, limit)
            }

            fn set_topic_salience(
                &mut self,
                key: i64,
                anchor_at: Timestamp,
                salience: f64,
            ) -> Result<(), StoreError> {
                topics::set_topic_salience(self, key, anchor_at, salience)
            }
        }
    };
}
pub(crate) use delegate_transaction;

pub mod budget;
pub mod postgres;
mod ranking;
pub mod sqlite;
mod stats;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::domain::access::ApiKey;
use crate::domain::decay::Anchor;
use crate::domain::record::{
    AuditEntry, DecayProfile, DeletionPolicy, MemoryRecord, MemoryType, Sensitivity, Status,
};
use crate::domain::relevance::Score;
use crate::domain::retrieval::{Cursor, RecordQuery};
use crate::domain::time::Timestamp;
use crate::domain::topic::Topic;
use crate::domain::trust::TrustContext;
use crate::domain::vector::{Embedding, QueryVector};

pub use sqlite::ConnectionOptions;

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
    pub key_lookup: KeyLookup,
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

/// The connection for the reads authentication makes on every request
/// (does any key exist, which key has this hash): point reads, made on
/// the request's thread.
pub enum KeyLookup {
    Sqlite(sqlite::KeyLookup),
    Postgres(postgres::KeyLookup),
}

impl KeyLookup {
    pub fn read<T, E: From<StoreError>>(
        &self,
        work: impl FnOnce(&mut dyn Transaction) -> Result<T, E>,
    ) -> Result<T, E> {
        match self {
            KeyLookup::Sqlite(lookup) => lookup.read(work),
            KeyLookup::Postgres(lookup) => lookup.read(work)?,
        }
    }
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
        budget::check()?;
        if !seen.insert(previous) || seen.len() > MAX_CHAIN {
            break;
        }
        back.push(previous);
        current = previous;
    }
    let mut forward = Vec::new();
    let mut current_id = id.to_string();
    while let Some((next, next_id)) = newer(&current_id)? {
        budget::check()?;
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

/// An API key's row, as either backend stores it (see the SQLite
/// migration 0009).
pub(crate) struct StoredKey {
    pub name: String,
    /// Comma-separated role names.
    pub roles: String,
    pub max_sensitivity: i64,
    /// JSON array of scope names; `[]`: every scope.
    pub scopes_json: String,
    pub rate: Option<f64>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

impl StoredKey {
    pub fn into_key(self) -> Result<ApiKey, StoreError> {
        let name = self.name;
        let corrupt = |what: &str| StoreError::Corrupt(format!("api key {name}: {what}"));
        let roles = self
            .roles
            .split(',')
            .filter(|r| !r.is_empty())
            .map(|r| {
                crate::domain::access::Role::parse(r)
                    .ok_or_else(|| corrupt(&format!("unknown role {r:?}")))
            })
            .collect::<Result<_, _>>()?;
        let max_sensitivity = Sensitivity::from_rank(self.max_sensitivity)
            .ok_or_else(|| corrupt("bad sensitivity"))?;
        let scopes = serde_json::from_str(&self.scopes_json).map_err(|_| corrupt("bad scopes"))?;
        Ok(ApiKey {
            grant: crate::domain::access::Grant {
                max_sensitivity,
                scopes,
                roles,
            },
            rate: self.rate,
            created_at: crate::domain::time::from_micros(self.created_at),
            revoked_at: self.revoked_at.map(crate::domain::time::from_micros),
            name,
        })
    }

    /// The row of `key`.
    pub fn of(key: &ApiKey) -> Result<StoredKey, StoreError> {
        let roles: Vec<&str> = key.grant.roles.iter().map(|r| r.as_str()).collect();
        Ok(StoredKey {
            name: key.name.clone(),
            roles: roles.join(","),
            max_sensitivity: key.grant.max_sensitivity.rank() as i64,
            scopes_json: serde_json::to_string(&key.grant.scopes)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?,
            rate: key.rate,
            created_at: crate::domain::time::to_micros(&key.created_at),
            revoked_at: key.revoked_at.as_ref().map(crate::domain::time::to_micros),
        })
    }
}

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

/// A record the embedder is to make a vector for: its search text, as of
/// the row version read.
#[derive(Debug, Clone, PartialEq)]
pub struct ToEmbed {
    pub key: i64,
    pub version: i64,
    pub text: String,
}

/// A vector the embedder made for a [`ToEmbed`].
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub key: i64,
    pub version: i64,
    pub text: String,
    pub embedding: Embedding,
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

/// What the decay sweep needs of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayRow {
    pub key: i64,
    /// The row version the scan saw; writes for this row are conditional
    /// on it.
    pub version: i64,
    pub stored_salience: f64,
    pub status: Status,
    pub created_at: Timestamp,
    pub profile: DecayProfile,
    pub pinned: bool,
    pub deletion_policy: DeletionPolicy,
    pub anchor: Anchor,
}

/// A stored salience to move to its decayed value, or a record to prune,
/// as of the row version the scan saw: if the record changed since, the
/// write is skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayChange {
    pub key: i64,
    pub version: i64,
    pub salience: f64,
}

/// A consolidation step, recorded per record once it has used it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Compressed,
    Semantic,
    Competence,
    PlanGraph,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Compressed => "compressed",
            Step::Semantic => "semantic",
            Step::Competence => "competence",
            Step::PlanGraph => "plan_graph",
        }
    }
}

/// A schedule an operator set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSetting {
    pub name: String,
    pub schedule: String,
    pub enabled: bool,
}

/// A run's claim on a job (see [`Transaction::claim_job`]).
#[derive(Debug, Clone, PartialEq)]
pub struct JobClaim {
    pub name: String,
    /// Who runs it: the process's instance id.
    pub holder: String,
    pub now: Timestamp,
    /// The lease ends then, if the run has not given it back.
    pub until: Timestamp,
    /// Processes whose heartbeat is older than this (wall-clock time) are
    /// dead: a lease they hold is taken over, and a scheduled run they
    /// did not finish may be made again.
    pub live_since: Timestamp,
    /// A scheduled run: the scheduled time it is for. `None`: run on
    /// demand.
    pub tick: Option<Timestamp>,
}

/// A job lease not given back nor expired (see [`Transaction::held_jobs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HeldJob {
    pub name: String,
    pub holder: String,
    /// The holder's heartbeat is recent: it is still running the job.
    /// Otherwise it died in the run, and the job waits for another.
    pub live: bool,
}

/// The outcome of one job run.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRunRecord {
    pub name: String,
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
    pub duration_ms: i64,
    /// The result JSON, or the error message.
    pub outcome: Result<serde_json::Value, String>,
}

impl JobRunRecord {
    /// The outcome as stored: the result JSON, or the error message.
    pub(crate) fn outcome_columns(&self) -> (Option<String>, Option<String>) {
        match &self.outcome {
            Ok(value) => (Some(value.to_string()), None),
            Err(error) => (None, Some(error.clone())),
        }
    }

    /// The outcome from its stored columns.
    pub(crate) fn outcome_of(
        result: Option<String>,
        error: Option<String>,
    ) -> Result<Result<serde_json::Value, String>, StoreError> {
        Ok(match (result, error) {
            (_, Some(error)) => Err(error),
            (Some(json), None) => Ok(serde_json::from_str::<serde_json::Value>(&json)
                .map_err(|e| StoreError::Corrupt(format!("job result: {e}")))?),
            (None, None) => Ok(serde_json::Value::Null),
        })
    }
}

/// Aggregates over the whole memory for `GET /v1/metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MemoryStats {
    pub total_records: u64,
    /// Every memory type, zero when there are none.
    pub records_by_type: BTreeMap<&'static str, u64>,
    /// Over the salience stored at the last decay sweep.
    pub avg_salience: f64,
    pub avg_confidence: f64,
    /// Records per salience range, each 0.2 wide; the last includes 1.0
    /// and anything above.
    pub salience_distribution: BTreeMap<&'static str, u64>,
    pub active_records: u64,
    pub pinned_records: u64,
    pub total_audit_entries: u64,
    /// Share of records created in the last 24 hours.
    pub growth_rate: f64,
    /// Share of audit actions that are reinforcements.
    pub retrieval_usefulness: f64,
    /// Successes over all recorded runs of competence records.
    pub competence_success_rate: f64,
    /// Mean `metrics.execution_count` of plan graphs.
    pub plan_reuse_frequency: f64,
    /// Share of audit actions that revise knowledge (revise, fork, merge,
    /// delete).
    pub revision_rate: f64,
    /// Every sensitivity level, zero when there are none.
    pub records_by_sensitivity: BTreeMap<&'static str, u64>,
    /// Every status, zero when there are none.
    pub records_by_status: BTreeMap<&'static str, u64>,
    /// The newest audit entries, newest first (at most
    /// [`RECENT_ACTIVITY`]): what happened, by whom, to what kind of
    /// record. No record ids or rationales: metrics are not trust-gated.
    pub recent_activity: Vec<Activity>,
}

pub const RECENT_ACTIVITY: usize = 20;

/// One audit entry as the metrics show it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Activity {
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    pub action: String,
    pub actor: String,
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    pub sensitivity: Sensitivity,
}

pub const SALIENCE_BUCKETS: [&str; 5] = ["0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0"];

/// One unit of work against the database: the writer's shared transaction
/// (each job isolated in a savepoint), or a pooled read connection.
/// Saliences returned are decayed to the `now` given.
pub trait Transaction {
    // Records.

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
    fn record_visibility(
        &mut self,
        id: &str,
    ) -> Result<Option<(Sensitivity, Option<String>)>, StoreError>;
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
    /// Stores new records as [`Transaction::insert_record`] does each, in
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
    /// Visible records of the query, best first, within its byte budget.
    fn query_records(
        &mut self,
        query: &RecordQuery,
        now: Timestamp,
    ) -> Result<RecordPage, StoreError>;
    /// The supersession chain through `id`, oldest first; `None` when there
    /// is no such record. Stops at a cycle.
    fn supersession_chain(
        &mut self,
        id: &str,
        now: Timestamp,
    ) -> Result<Option<Vec<MemoryRecord>>, StoreError>;
    fn memory_stats(&mut self, now: Timestamp) -> Result<MemoryStats, StoreError>;
    /// A cheap query that proves the database answers.
    fn ping(&mut self) -> Result<(), StoreError>;

    // Vectors.

    /// The number of dimensions the database's vectors have, once fixed
    /// (by the first vector stored, or the configuration).
    fn vector_dimensions(&mut self) -> Result<Option<usize>, StoreError>;
    /// Up to `limit` records after `after_key`, in key order, that are not
    /// retracted and have no vector.
    fn to_embed(
        &mut self,
        after_key: i64,
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<ToEmbed>, StoreError>;
    /// Stores a vector the embedder made, unless the record changed since
    /// it was read or got a vector meanwhile; answers whether it did.
    fn store_embedded(&mut self, embedded: &Embedded) -> Result<bool, StoreError>;

    // Decay.

    /// Up to `limit` records after `after_key`, in key order.
    fn scan_for_decay(&mut self, after_key: i64, limit: usize)
        -> Result<Vec<DecayRow>, StoreError>;
    /// Writes decayed saliences of rows still at the scanned version, with
    /// one scheduler `decay` audit entry per stretch of decay (the last
    /// entry is updated when it is already one). Answers how many changed.
    fn apply_decay(&mut self, changes: &[DecayChange], now: Timestamp)
        -> Result<usize, StoreError>;
    /// Deletes the candidates still at the scanned version that are no part
    /// of a revision chain. Answers how many were deleted.
    fn prune(&mut self, candidates: &[DecayChange]) -> Result<usize, StoreError>;

    // Consolidation.

    /// Episodes (not retracted, not pinned) `step` has not used, created
    /// before `created_before`, after `after_key` in key order: `(key, id)`.
    fn unmarked_episodes(
        &mut self,
        step: Step,
        created_before: Timestamp,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String)>, StoreError>;
    fn mark(&mut self, key: i64, step: Step) -> Result<(), StoreError>;
    /// Records that episode `key` belongs to group `group_key` of `step`.
    fn add_sighting(
        &mut self,
        step: Step,
        group_key: &str,
        key: i64,
        detail: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Every episode seen in a group: `(key, detail)`, oldest first.
    fn sightings(
        &mut self,
        step: Step,
        group_key: &str,
    ) -> Result<Vec<(i64, Option<String>)>, StoreError>;
    /// The active record consolidation made of a group, if any: its id.
    fn output(&mut self, step: Step, group_key: &str) -> Result<Option<String>, StoreError>;
    fn set_output(&mut self, step: Step, group_key: &str, id: &str) -> Result<(), StoreError>;
    /// A record merged into another hands its groups over to it.
    fn move_outputs(&mut self, from_id: &str, to_id: &str) -> Result<(), StoreError>;
    /// Groups of active facts with the same subject, predicate, object and
    /// scope, oldest first within each: their ids.
    fn duplicate_fact_groups(&mut self) -> Result<Vec<Vec<String>>, StoreError>;

    // Jobs.

    fn job_settings(&mut self) -> Result<Vec<JobSetting>, StoreError>;
    fn save_job_setting(&mut self, setting: &JobSetting, now: Timestamp) -> Result<(), StoreError>;
    /// The newest `per_job` runs of each job: by name, newest first.
    fn recent_job_runs(&mut self, per_job: usize) -> Result<Vec<JobRunRecord>, StoreError>;
    /// Stores a run and forgets that job's runs older than its newest `keep`.
    fn save_job_run(&mut self, run: &JobRunRecord, keep: usize) -> Result<(), StoreError>;
    /// Takes job `claim.name` for `claim.holder` until `claim.until`,
    /// unless another live process holds it (its lease not expired at
    /// `claim.now`, its heartbeat since `claim.live_since`) or, for a
    /// scheduled run, its scheduled time was taken already by a run that
    /// finished or is still going. A lease of the claimant's own (a run
    /// whose lease could not be given back) or of a dead process is taken
    /// over. Answers whether it was taken.
    fn claim_job(&mut self, claim: &JobClaim) -> Result<bool, StoreError>;
    /// Gives job `name` back, if `holder` holds it.
    fn release_job(&mut self, name: &str, holder: &str) -> Result<(), StoreError>;
    /// The leases neither given back nor expired at `now`, with who holds
    /// them and whether it has been seen alive since `live_since`.
    fn held_jobs(
        &mut self,
        now: Timestamp,
        live_since: Timestamp,
    ) -> Result<Vec<HeldJob>, StoreError>;
    /// Records that process `instance` is alive at `at`, and forgets
    /// processes not seen since `forget_before`; answers how many were seen
    /// since `live_since` (itself included).
    fn heartbeat(
        &mut self,
        instance: &str,
        at: Timestamp,
        live_since: Timestamp,
        forget_before: Timestamp,
    ) -> Result<usize, StoreError>;

    // API keys.

    /// Stores a new key under the hash of its secret; `AlreadyExists` when
    /// its name was ever used.
    fn insert_key(&mut self, key: &ApiKey, hash: &[u8]) -> Result<(), StoreError>;
    /// Whether any key was ever made (revoked ones count).
    fn any_key(&mut self) -> Result<bool, StoreError>;
    /// Every key, revoked ones too, by name.
    fn list_keys(&mut self) -> Result<Vec<ApiKey>, StoreError>;
    /// The key, not revoked, whose secret hashes to `hash`.
    fn active_key(&mut self, hash: &[u8]) -> Result<Option<ApiKey>, StoreError>;
    /// Revokes a key: `false` if it was revoked already, `NotFound` if
    /// there is none.
    fn revoke_key(&mut self, name: &str, now: Timestamp) -> Result<bool, StoreError>;

    // Topics.

    /// Stores a new topic; answers its key.
    fn insert_topic(&mut self, topic: &Topic) -> Result<i64, StoreError>;
    fn update_topic(&mut self, key: i64, topic: &Topic) -> Result<(), StoreError>;
    /// Sets the search text of topic `key` (title, summary and current
    /// values; `fresh`: it has none yet). Searches see it once the
    /// transaction commits.
    fn index_topic(&mut self, key: i64, text: String, fresh: bool) -> Result<(), StoreError>;
    /// Replaces words `old` of topic `key`'s title and summary in the word
    /// index by `new`.
    fn set_topic_words(
        &mut self,
        key: i64,
        old: &BTreeSet<String>,
        new: &BTreeSet<String>,
    ) -> Result<(), StoreError>;
    /// The topics whose title and summary have any of `words`, with how
    /// many, most first (at most `per_word` topics per word, newest
    /// first).
    fn topics_sharing(
        &mut self,
        words: &BTreeSet<String>,
        per_word: usize,
    ) -> Result<Vec<(i64, usize)>, StoreError>;
    fn topic_by_id(&mut self, id: &str) -> Result<Option<(i64, Topic)>, StoreError>;
    fn topic_by_key(&mut self, key: i64) -> Result<Option<Topic>, StoreError>;
    /// Topics whose search text a schema change left to be made again.
    fn topics_to_index(&mut self) -> Result<Vec<i64>, StoreError>;
    /// These topics' search text is made.
    fn topics_indexed(&mut self, keys: &[i64]) -> Result<(), StoreError>;
    /// Topics not archived with this title (normalised) in `scope`.
    fn topics_titled(
        &mut self,
        title: &str,
        scope: Option<&str>,
    ) -> Result<Vec<(i64, Topic)>, StoreError>;
    /// Topics not archived that `trust` may see (of `kind`, when given)
    /// whose text has a word of `text`, best first, with their text scores
    /// (higher is better).
    fn search_topics(
        &mut self,
        text: &str,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(i64, Topic, f64)>, StoreError>;
    /// Topics not archived that `trust` may see (of `kind`, when given),
    /// most recently changed first.
    fn recent_topics(
        &mut self,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(i64, Topic)>, StoreError>;
    /// The newest version of each field valid at `at` (`None`: now).
    fn field_heads(
        &mut self,
        key: i64,
        at: Option<Timestamp>,
    ) -> Result<Vec<FieldVersion>, StoreError>;
    /// The kept versions of one field, oldest first.
    fn field_versions(&mut self, key: i64, name: &str) -> Result<Vec<FieldVersion>, StoreError>;
    fn add_version(&mut self, key: i64, version: &FieldVersion) -> Result<(), StoreError>;
    /// The key of the topic record `record_id` is a field version of.
    fn topic_of_record(&mut self, record_id: &str) -> Result<Option<i64>, StoreError>;
    /// Keeps a field's newest `keep` versions in its history.
    fn trim_versions(&mut self, key: i64, name: &str, keep: usize) -> Result<usize, StoreError>;
    /// Adds an edge unless it stands already; answers whether it was added.
    fn add_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Ends a standing edge; answers whether there was one.
    fn remove_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// The edges from and to topic `key` standing at `at` (`None`: now),
    /// each with the key of the topic at its other end.
    fn edges_of(
        &mut self,
        key: i64,
        at: Option<Timestamp>,
    ) -> Result<Vec<(i64, TopicEdge)>, StoreError>;
    /// Stores a topic's vector (replacing any); `Dimensions` when it does
    /// not fit the database's.
    fn put_topic_vector(&mut self, key: i64, embedding: &Embedding) -> Result<(), StoreError>;
    /// Topics not archived that `trust` may see (of `kind`, when given),
    /// with a vector, most similar to `query` first, with the cosine.
    fn nearest_topics(
        &mut self,
        query: &QueryVector,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError>;
    /// The cosine of topic `key`'s vector with `query`; `None` without one.
    fn topic_similarity(
        &mut self,
        key: i64,
        query: &QueryVector,
    ) -> Result<Option<f64>, StoreError>;
    /// Drops every kept version of one field from its history.
    fn drop_versions(&mut self, key: i64, name: &str) -> Result<(), StoreError>;
    /// Topics not archived whose stored salience is below `below`, least
    /// salient first.
    fn fading_topics(&mut self, below: f64, limit: usize) -> Result<Vec<i64>, StoreError>;
    /// How many topics are not archived.
    fn active_topics(&mut self) -> Result<u64, StoreError>;
    /// Topics not archived after `after_key`, in key order.
    fn topic_decay_chunk(
        &mut self,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<TopicDecay>, StoreError>;
    /// Stores a topic's salience as a decay sweep computed it from the
    /// anchor of `anchor_at`, unless it was reinforced since.
    fn set_topic_salience(
        &mut self,
        key: i64,
        anchor_at: Timestamp,
        salience: f64,
    ) -> Result<(), StoreError>;
}

/// What a decay sweep reads of a topic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopicDecay {
    pub key: i64,
    /// The salience stored (as of the last sweep or reinforcement).
    pub stored: f64,
    pub anchor: crate::domain::decay::Anchor,
    pub created_at: Timestamp,
}

/// One version of a topic's field: the record holding it, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldVersion {
    pub name: String,
    pub seq: i64,
    pub record_id: String,
    pub valid_from: Timestamp,
    /// The value the record holds, copied.
    pub value: serde_json::Value,
    /// Who set it, as the request said.
    pub source: String,
    pub why_changed: Option<String>,
    /// The record was retracted (through the revisions API): the field has
    /// no value standing until a new version is made.
    pub retracted: bool,
}

/// A typed link between two topics.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct TopicEdge {
    pub from_topic_id: String,
    pub to_topic_id: String,
    pub kind: String,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
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
}
