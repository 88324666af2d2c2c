//! The PostgreSQL backend: several engram instances on one database.
//!
//! The service's storage calls are synchronous (the writer thread and the
//! reader threads block on them), and tokio-postgres is asynchronous. The
//! connections live on a runtime of their own ([`Runtime`]): their I/O
//! tasks run on its threads, and a storage thread waits on each statement
//! with [`Pg::wait`], which parks the thread rather than entering the
//! runtime, so it works from any thread, an actix worker's included.
//!
//! Everything a guarantee rests on is in the statements themselves, as on
//! SQLite: updates are conditional on the row version read, so a change
//! another instance made meanwhile fails the second one with `Changed`;
//! audit entries are appended, never counted.

pub mod consolidation;
pub mod import;
pub mod keys;
pub mod maintenance;
pub mod migrations;
pub mod ranking;
pub mod records;
pub mod stats;
pub mod topics;
pub mod vectors;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row, Statement};

use std::collections::BTreeSet;

use super::{
    CurrentState, DecayChange, DecayRow, Embedded, FieldVersion, JobClaim, JobRunRecord,
    JobSetting, Loaded, MemoryStats, Opened, RecordPage, SalienceChange, Step, StoreError, ToEmbed,
    TopicDecay, TopicEdge, Transaction, Version, WriteConnection,
};
use crate::domain::access::ApiKey;
use crate::domain::record::{AuditEntry, MemoryRecord, Sensitivity};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::Timestamp;
use crate::domain::topic::Topic;
use crate::domain::trust::TrustContext;
use crate::domain::vector::{Embedding, QueryVector};

/// A parameter list of a statement.
pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        match error.as_db_error() {
            // The server's own message says what went wrong; the client's
            // `Display` of it is only "db error".
            Some(db) => StoreError::Database(format!("{}: {}", db.code().code(), db.message())),
            None => StoreError::Database(error.to_string()),
        }
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        StoreError::Pool(error.to_string())
    }
}

/// Wakes a thread parked in [`block_on`].
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` to completion on this thread, parking between polls.
/// The I/O it waits for is driven by the runtime the connections were
/// made on, never by this thread.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// The runtime the database connections run on: two threads, whatever the
/// number of storage threads waiting on them. Shut down with the last
/// connection, pool or writer holding it.
#[derive(Clone)]
pub struct Runtime(Arc<OwnedRuntime>);

/// A runtime that may be dropped anywhere, an async context included
/// (start-up fails inside actix's runtime, say): its threads are told to
/// stop rather than waited for.
struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl Runtime {
    fn new() -> Result<Runtime, StoreError> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("engram-pg")
            .enable_io()
            .enable_time()
            .build()
            .map(|rt| Runtime(Arc::new(OwnedRuntime(Some(rt)))))
            .map_err(|e| StoreError::Database(format!("cannot start the database runtime: {e}")))
    }

    /// Runs `future` to completion from a blocking thread; connections it
    /// opens and timers it sets belong to this runtime.
    pub(crate) fn wait<F: Future>(&self, future: F) -> F::Output {
        let _context = self.0 .0.as_ref().expect("dropped only at the end").enter();
        block_on(future)
    }
}

/// What engram needs to open a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgOptions {
    pub url: String,
    /// Pooled connections for reads; the writer and the key lookups get
    /// one more each.
    pub pool_size: u32,
    /// How long a statement may run before the server cancels it.
    pub statement_timeout: Duration,
}

/// One connection to the database, in use by one thread at a time: the
/// writer's, a pooled reader's, or the key lookups'.
pub struct Pg {
    client: deadpool_postgres::Object,
    runtime: Runtime,
}

impl Pg {
    fn statement(&self, sql: &str) -> Result<Statement, StoreError> {
        Ok(self.runtime.wait(self.client.prepare_cached(sql))?)
    }

    /// Runs `sql` (prepared once per connection) and answers its rows.
    pub(crate) fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.runtime.wait(self.client.query(&statement, params))?)
    }

    pub(crate) fn query_opt(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self
            .runtime
            .wait(self.client.query_opt(&statement, params))?)
    }

    pub(crate) fn query_one(&self, sql: &str, params: Params<'_>) -> Result<Row, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self
            .runtime
            .wait(self.client.query_one(&statement, params))?)
    }

    /// Runs `sql`; answers how many rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.runtime.wait(self.client.execute(&statement, params))?)
    }

    /// Runs `sql` as it is given, for transaction control; answers the
    /// error as the client reports it.
    pub(crate) fn execute_raw(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<u64, tokio_postgres::Error> {
        let statement = self.runtime.wait(self.client.prepare_cached(sql))?;
        self.runtime.wait(self.client.execute(&statement, params))
    }

    /// Runs statements without parameters, unprepared.
    pub(crate) fn batch(&self, sql: &str) -> Result<(), StoreError> {
        Ok(self.runtime.wait(self.client.batch_execute(sql))?)
    }
}

/// Connects, brings the schema up to date (one instance at a time), and
/// opens the pools.
pub fn open(
    options: &PgOptions,
    embedding_dimensions: Option<usize>,
) -> Result<Opened, StoreError> {
    let (pool, runtime) = pool(options)?;
    let writer = Pg {
        client: runtime.wait(pool.get())?,
        runtime: runtime.clone(),
    };
    let applied_migrations = migrations::run(&writer)?;
    if let Some(configured) = embedding_dimensions {
        vectors::fix_dimensions(&writer, configured)?;
    }
    Ok(Opened {
        writer: Box::new(PgWriter { pg: writer }),
        readers: super::ReadPool::Postgres(ReadPool {
            pool: pool.clone(),
            runtime: runtime.clone(),
        }),
        key_lookup: super::KeyLookup::Postgres(KeyLookup { pool, runtime }),
        applied_migrations,
    })
}

/// One connection to the database, its schema brought up to date
/// (`engram migrate`).
pub fn connect(options: &PgOptions) -> Result<Pg, StoreError> {
    let (pool, runtime) = pool(options)?;
    let pg = Pg {
        client: runtime.wait(pool.get())?,
        runtime,
    };
    migrations::run(&pg)?;
    Ok(pg)
}

/// The connection pool of `options` and the runtime its connections run on.
fn pool(options: &PgOptions) -> Result<(Pool, Runtime), StoreError> {
    let runtime = Runtime::new()?;
    let mut config: tokio_postgres::Config = options
        .url
        .parse()
        .map_err(|e| StoreError::Database(format!("the database URL is not valid: {e}")))?;
    config.application_name("engram");
    config.options(format!(
        "-c statement_timeout={}",
        options.statement_timeout.as_millis()
    ));
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            // A connection a failed transaction left behind is rolled back
            // by the server when it closes; one that is merely reused has
            // had its transaction ended by whoever used it.
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(options.pool_size as usize + 2)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(10)))
        .build()
        .map_err(|e| StoreError::Pool(e.to_string()))?;
    Ok((pool, runtime))
}

/// Pooled read connections; cheap to clone.
#[derive(Clone)]
pub struct ReadPool {
    pool: Pool,
    runtime: Runtime,
}

impl ReadPool {
    /// Runs `work` in one read-only transaction at one snapshot
    /// (repeatable read): a retrieval ranks and loads the same records,
    /// whatever commits meanwhile.
    pub fn read<T>(&self, work: impl FnOnce(&mut dyn Transaction) -> T) -> Result<T, StoreError> {
        let mut pg = Pg {
            client: self.runtime.wait(self.pool.get())?,
            runtime: self.runtime.clone(),
        };
        pg.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        let result = work(&mut pg);
        pg.batch("COMMIT")?;
        Ok(result)
    }
}

/// The reads authentication makes on every request, on a pooled
/// connection of their own (each read is one statement, no transaction).
pub struct KeyLookup {
    pool: Pool,
    runtime: Runtime,
}

impl KeyLookup {
    pub fn read<T>(&self, work: impl FnOnce(&mut dyn Transaction) -> T) -> Result<T, StoreError> {
        let mut pg = Pg {
            client: self.runtime.wait(self.pool.get())?,
            runtime: self.runtime.clone(),
        };
        Ok(work(&mut pg))
    }
}

/// The writer's connection: group-committed transactions, each job in a
/// savepoint.
struct PgWriter {
    pg: Pg,
}

impl PgWriter {
    fn run(&self, sql: &str) -> Result<(), StoreError> {
        self.pg.execute_raw(sql, &[])?;
        Ok(())
    }
}

impl WriteConnection for PgWriter {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.run("BEGIN")
    }

    fn savepoint(&mut self) -> Result<(), StoreError> {
        self.run("SAVEPOINT write_job")
    }

    fn release(&mut self) -> Result<(), StoreError> {
        self.run("RELEASE write_job")
    }

    fn rollback_to_savepoint(&mut self) -> Result<(), StoreError> {
        self.run("ROLLBACK TO write_job")?;
        self.run("RELEASE write_job")
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.run("COMMIT")
    }

    fn rollback(&mut self) {
        let _ = self.pg.batch("ROLLBACK");
    }

    fn transaction(&mut self) -> &mut dyn Transaction {
        &mut self.pg
    }

    fn close(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl Transaction for Pg {
    fn get_record(&mut self, id: &str, now: Timestamp) -> Result<Option<MemoryRecord>, StoreError> {
        records::get_record(self, id, now)
    }

    fn get_for_update(&mut self, id: &str, now: Timestamp) -> Result<Option<Loaded>, StoreError> {
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

    fn current_states(
        &mut self,
        thread_id: &str,
        scope: Option<&str>,
    ) -> Result<Vec<CurrentState>, StoreError> {
        records::current_states(self, thread_id, scope)
    }

    fn retract_replaced(
        &mut self,
        state: &CurrentState,
        entry: &AuditEntry,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        records::retract_replaced(self, state, entry, now)
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

    fn output(&mut self, step: Step, group_key: &str) -> Result<Option<String>, StoreError> {
        consolidation::output(self, step, group_key)
    }

    fn set_output(&mut self, step: Step, group_key: &str, id: &str) -> Result<(), StoreError> {
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

    fn save_job_setting(&mut self, setting: &JobSetting, now: Timestamp) -> Result<(), StoreError> {
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

    fn held_jobs(&mut self, now: Timestamp) -> Result<Vec<(String, String)>, StoreError> {
        maintenance::held_jobs(self, now)
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

    fn index_topic(&mut self, key: i64, text: String, fresh: bool) -> Result<(), StoreError> {
        let _ = fresh;
        topics::index_topic(self, key, &text)
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

    fn field_versions(&mut self, key: i64, name: &str) -> Result<Vec<FieldVersion>, StoreError> {
        topics::field_versions(self, key, name)
    }

    fn add_version(&mut self, key: i64, version: &FieldVersion) -> Result<(), StoreError> {
        topics::add_version(self, key, version)
    }

    fn topic_of_record(&mut self, record_id: &str) -> Result<Option<i64>, StoreError> {
        topics::topic_of_record(self, record_id)
    }

    fn trim_versions(&mut self, key: i64, name: &str, keep: usize) -> Result<usize, StoreError> {
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

    fn put_topic_vector(&mut self, key: i64, embedding: &Embedding) -> Result<(), StoreError> {
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
