//! The PostgreSQL backend: several engram instances on one database.
//!
//! The service's storage calls are synchronous (the writer threads and the
//! reader threads block on them), and tokio-postgres is asynchronous. A
//! reading thread has a connection of its own on a runtime of its own,
//! whose I/O it drives while it waits on a statement ([`ThreadReads`]).
//! The writers' and the key lookups' connections live on a shared runtime
//! ([`Runtime`]): their I/O tasks run on its threads, and a thread waits
//! on each statement with [`Runtime::wait`], which parks the thread rather
//! than entering the runtime, so it works from any thread, an actix
//! worker's included.
//!
//! Everything a guarantee rests on is in the statements themselves, as on
//! SQLite: updates are conditional on the row version read, so a change
//! another instance made meanwhile fails the second one with `Changed`;
//! audit entries are appended, never counted.

pub mod consolidation;
pub mod conversations;
mod counted;
pub mod erasure;
pub mod import;
pub mod keys;
pub mod maintenance;
pub mod migrations;
pub mod ranking;
pub mod record_reads;
pub mod records;
pub mod stats;
pub mod tls;
pub mod topic_names;
pub mod topics;
pub mod vectors;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row, Statement};

use crate::store::error::StoreError;
use crate::store::transaction::{self, Opened, Readers, Reads, Transaction, WriteConnection};

/// A parameter list of a statement.
pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Whether the server's `code` means it is away or gave the statement up
/// for reasons of its own, not of the statement: connection exceptions
/// (08), a shutdown or restart (57P01–57P03), a statement timeout or
/// cancellation (57014), no resources (53: disk, memory, connections).
fn server_unavailable(code: &SqlState) -> bool {
    let code = code.code();
    code.starts_with("08") || code.starts_with("53") || code.starts_with("57P") || code == "57014"
}

/// Whether a client-side error is the connection failing: closed, or an
/// I/O error anywhere in its causes (refused, reset, timed out).
fn connection_failed(error: &tokio_postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        if inner.is::<std::io::Error>() {
            return true;
        }
        cause = inner.source();
    }
    false
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        if error.as_db_error().is_none() && connection_failed(&error) {
            return StoreError::Unavailable(with_causes(&error));
        }
        match error.as_db_error() {
            Some(db) if server_unavailable(db.code()) => {
                StoreError::Unavailable(format!("{}: {}", db.code().code(), db.message()))
            }
            Some(db)
                if [
                    SqlState::T_R_DEADLOCK_DETECTED,
                    SqlState::T_R_SERIALIZATION_FAILURE,
                ]
                .contains(db.code()) =>
            {
                StoreError::Contended(db.message().to_string())
            }
            // The server's own message says what went wrong; the client's
            // `Display` of it is only "db error".
            Some(db) => StoreError::Database(format!("{}: {}", db.code().code(), db.message())),
            None => StoreError::Database(with_causes(&error)),
        }
    }
}

impl super::rows::Columns for tokio_postgres::Row {
    fn at<T: super::rows::Value>(&self, column: usize) -> Result<T, StoreError> {
        Ok(self.try_get(column)?)
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        // No connection to be had (a timeout, a refused connection): the
        // database is away for now.
        StoreError::Unavailable(with_causes(&error))
    }
}

/// An error's message followed by its causes' (a failed TLS handshake
/// says why only in its cause).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let text = inner.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = inner.source();
    }
    message
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

/// A runtime database connections run on: the shared one, two threads
/// whatever the number of threads waiting on them, or a reading thread's
/// own. Shut down with the last connection, pool or writer holding it.
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
        Runtime::built(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("engram-pg"),
        )
    }

    /// A runtime for one thread, run only while that thread waits on it.
    fn for_this_thread() -> Result<Runtime, StoreError> {
        Runtime::built(&mut tokio::runtime::Builder::new_current_thread())
    }

    fn built(builder: &mut tokio::runtime::Builder) -> Result<Runtime, StoreError> {
        builder
            .enable_io()
            .enable_time()
            .build()
            .map(|rt| Runtime(Arc::new(OwnedRuntime(Some(rt)))))
            .map_err(|e| StoreError::Database(format!("cannot start the database runtime: {e}")))
    }

    /// The tokio runtime, there until the last holder drops it.
    fn tokio(&self) -> &tokio::runtime::Runtime {
        self.0 .0.as_ref().expect("dropped only at the end")
    }

    /// Runs `future` to completion from a blocking thread; connections it
    /// opens and timers it sets belong to this runtime.
    pub(crate) fn wait<F: Future>(&self, future: F) -> F::Output {
        let tokio = self.tokio();
        match tokio.handle().runtime_flavor() {
            // A reading thread's own runtime: the thread drives its
            // connection's I/O itself while it waits, so an answer wakes
            // no other thread on its way.
            tokio::runtime::RuntimeFlavor::CurrentThread => tokio.block_on(future),
            _ => {
                let _context = tokio.enter();
                block_on(future)
            }
        }
    }
}

/// What engram needs to open a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgOptions {
    pub url: String,
    /// Connections that write (group-committed transactions), at least one.
    pub writers: u32,
    /// How long a statement may run before the server cancels it.
    pub statement_timeout: Duration,
    /// The authorities the server's certificate must be signed by: TLS
    /// required; `None`: no TLS.
    pub ca_file: Option<std::path::PathBuf>,
}

/// A connection's client: pooled (the key lookups'), or held by one
/// writer or reading thread for good.
enum Client {
    Pooled(deadpool_postgres::Object),
    Held(deadpool_postgres::ClientWrapper),
}

impl std::ops::Deref for Client {
    type Target = deadpool_postgres::ClientWrapper;

    fn deref(&self) -> &deadpool_postgres::ClientWrapper {
        match self {
            Client::Pooled(object) => object,
            Client::Held(client) => client,
        }
    }
}

/// One connection to the database, in use by one thread at a time: a
/// writer's, a reading thread's, or the key lookups'.
pub struct Pg {
    client: Client,
    /// The runtime the connection's I/O runs on.
    runtime: Runtime,
    /// The decay bounds (per layer: longest half-life, highest floor) this
    /// connection has seen stored; they only grow, so a record they cover
    /// needs no write to them. Forgotten when a transaction or savepoint
    /// is rolled back (what it wrote is gone).
    bounds: std::cell::RefCell<std::collections::HashMap<i64, (i64, f64)>>,
    /// Transaction control the writer asked for (BEGIN, SAVEPOINT,
    /// RELEASE) not sent yet: it goes with the next statement, pipelined,
    /// so a write job costs the round trips of its own statements only.
    pending: std::cell::RefCell<Vec<&'static str>>,
    /// An erasure of many records deleted through this connection: the
    /// scrub that ends it vacuums the tables (smaller ones are left to
    /// autovacuum, so an erasure's cost follows what it erases).
    vacuum_due: std::cell::Cell<bool>,
    /// The terms this database's retrievals asked to be counted.
    wanted: counted::Wanted,
}

impl Pg {
    /// A connection from the pool, for as long as the `Pg` lives.
    fn pooled(pool: &Pool, shared: &Shared) -> Result<Pg, StoreError> {
        let object = shared.runtime.wait(pool.get())?;
        Ok(Pg::on(
            Client::Pooled(object),
            shared.runtime.clone(),
            shared.wanted.clone(),
        ))
    }

    fn on(client: Client, runtime: Runtime, wanted: counted::Wanted) -> Pg {
        Pg {
            client,
            runtime,
            bounds: Default::default(),
            pending: Default::default(),
            vacuum_due: Default::default(),
            wanted,
        }
    }

    /// Waits for `statement`, sending the pending transaction control
    /// ahead of it on the same connection (one round trip for both).
    fn run<T>(
        &self,
        statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, tokio_postgres::Error> {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        if pending.is_empty() {
            return self.runtime.wait(statement);
        }
        let control = pending.join("; ");
        // `join` polls the control first, so it is queued first.
        let (control, result) = self.runtime.wait(futures_util::future::join(
            self.client.batch_execute(&control),
            statement,
        ));
        control?;
        result
    }

    /// Ends a read-only transaction. One that sent nothing never began.
    fn end_read(&self) -> Result<(), StoreError> {
        let mut pending = self.pending.borrow_mut();
        if !pending.is_empty() {
            pending.clear();
            return Ok(());
        }
        drop(pending);
        self.batch("COMMIT")
    }

    /// Queues transaction control to go with the next statement.
    fn defer(&self, control: &'static str) {
        self.pending.borrow_mut().push(control);
    }

    /// Whether the bounds seen for `layer` cover `(half_life, floor)`.
    pub(crate) fn bounds_cover(&self, layer: i64, (half_life, floor): (i64, f64)) -> bool {
        self.bounds
            .borrow()
            .get(&layer)
            .is_some_and(|(h, f)| *h >= half_life && *f >= floor)
    }

    pub(crate) fn saw_bounds(&self, layer: i64, bounds: (i64, f64)) {
        self.bounds.borrow_mut().insert(layer, bounds);
    }

    fn forget_bounds(&self) {
        self.bounds.borrow_mut().clear();
    }

    fn statement(&self, sql: &str) -> Result<Statement, StoreError> {
        // A read whose budget is spent sends nothing more (each statement
        // alone is bounded by the statement timeout).
        super::budget::check()?;
        Ok(self.runtime.wait(self.client.prepare_cached(sql))?)
    }

    /// Runs `sql` (prepared once per connection) and answers its rows.
    pub(crate) fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.run(self.client.query(&statement, params))?)
    }

    /// Runs statements one after the other without waiting for each
    /// answer (pipelined on the connection: one round trip for all);
    /// answers each one's rows, in order.
    pub(crate) fn query_all(
        &self,
        statements: &[(&str, Params<'_>)],
    ) -> Result<Vec<Vec<Row>>, StoreError> {
        let prepared = statements
            .iter()
            .map(|(sql, _)| self.statement(sql))
            .collect::<Result<Vec<_>, _>>()?;
        let queries = prepared
            .iter()
            .zip(statements)
            .map(|(statement, (_, params))| self.client.query(statement, params));
        Ok(self.run(futures_util::future::try_join_all(queries))?)
    }

    pub(crate) fn query_opt(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.run(self.client.query_opt(&statement, params))?)
    }

    pub(crate) fn query_one(&self, sql: &str, params: Params<'_>) -> Result<Row, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.run(self.client.query_one(&statement, params))?)
    }

    /// Runs `sql`; answers how many rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.run(self.client.execute(&statement, params))?)
    }

    /// Runs statements without parameters, unprepared (after the pending
    /// transaction control).
    pub(crate) fn batch(&self, sql: &str) -> Result<(), StoreError> {
        let mut statements = std::mem::take(&mut *self.pending.borrow_mut());
        statements.push(sql);
        Ok(self
            .runtime
            .wait(self.client.batch_execute(&statements.join("; ")))?)
    }
}

/// Connects, brings the schema up to date (one instance at a time), and
/// opens the pools.
pub fn open(
    options: &PgOptions,
    embedding_dimensions: Option<usize>,
) -> Result<Opened, StoreError> {
    let (pool, shared) = pool(options)?;
    let writer = PgWriter::new(&pool, &shared)?;
    let applied_migrations = migrations::run(&writer.pg)?;
    if let Some(configured) = embedding_dimensions {
        vectors::fix_dimensions(&writer.pg, configured)?;
    }
    let mut more_writers: Vec<Box<dyn WriteConnection>> = Vec::new();
    for _ in 1..options.writers {
        more_writers.push(Box::new(PgWriter::new(&pool, &shared)?));
    }
    Ok(Opened {
        writer: Box::new(writer),
        more_writers,
        readers: transaction::ReadPool::new(ReadPool {
            pool,
            wanted: shared.wanted.clone(),
        }),
        applied_migrations,
    })
}

/// One connection to the database, its schema brought up to date
/// (`engram migrate`).
pub fn connect(options: &PgOptions) -> Result<Pg, StoreError> {
    let (pool, shared) = pool(options)?;
    let pg = Pg::pooled(&pool, &shared)?;
    migrations::run(&pg)?;
    Ok(pg)
}

/// What the connections to one database share: the runtime their I/O
/// runs on.
#[derive(Clone)]
struct Shared {
    runtime: Runtime,
    wanted: counted::Wanted,
}

/// The connection pool of `options` and what its connections share.
fn pool(options: &PgOptions) -> Result<(Pool, Shared), StoreError> {
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
    // A connection a failed transaction left behind is rolled back by the
    // server when it closes; one that is merely reused has had its
    // transaction ended by whoever used it.
    let recycling = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = match &options.ca_file {
        Some(authorities) => {
            let tls = crate::tls::client_config(authorities)
                .map_err(|e| StoreError::Database(e.to_string()))?;
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
            Manager::from_config(config, tls::MakeRustls::new(tls), recycling)
        }
        None => Manager::from_config(config, NoTls, recycling),
    };
    let pool = Pool::builder(manager)
        .max_size(1)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(10)))
        .build()
        .map_err(|e| StoreError::Pool(e.to_string()))?;
    Ok((
        pool,
        Shared {
            runtime,
            wanted: counted::Wanted::default(),
        },
    ))
}

/// A connection made as the pool makes its own, but held by its maker
/// for good; its I/O runs on `runtime`.
fn held(pool: &Pool, runtime: &Runtime) -> Result<Client, StoreError> {
    let made = runtime.wait(deadpool::managed::Manager::create(pool.manager()))?;
    Ok(Client::Held(made))
}

/// What reading threads make their connections from; cheap to clone.
#[derive(Clone)]
pub struct ReadPool {
    pool: Pool,
    wanted: counted::Wanted,
}

impl Readers for ReadPool {
    fn for_thread(&self) -> Box<dyn Reads> {
        Box::new(ThreadReads {
            from: self.clone(),
            own: None,
        })
    }
}

/// The reads of one thread, on a connection of its own whose I/O the
/// thread drives while it waits (see [`Runtime::wait`]): a round trip
/// wakes no other thread. The connection is made when first needed, and
/// again once the server closed it.
pub struct ThreadReads {
    from: ReadPool,
    own: Option<Pg>,
}

impl Reads for ThreadReads {
    /// Runs `work` in one read-only transaction at one snapshot
    /// (repeatable read): a retrieval ranks and loads the same records,
    /// whatever commits meanwhile.
    fn read(&mut self, work: &mut dyn FnMut(&mut dyn Transaction)) -> Result<(), StoreError> {
        let pg = self.connection()?;
        pg.defer("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
        work(pg);
        if pg.end_read().is_err() || pg.client.is_closed() {
            // What the work read stands; the connection is made anew.
            self.own = None;
        }
        Ok(())
    }
}

impl ThreadReads {
    fn connection(&mut self) -> Result<&mut Pg, StoreError> {
        if let Some(pg) = &self.own {
            // Its I/O ran only while the thread waited: the connection
            // now handles what came meanwhile (the server closing it, say).
            // A first turn polls the socket, a second runs the connection.
            pg.runtime.wait(async {
                tokio::task::yield_now().await;
                tokio::task::yield_now().await;
            });
            if pg.client.is_closed() {
                self.own = None;
            }
        }
        let pg = match self.own.take() {
            Some(pg) => pg,
            None => {
                let runtime = Runtime::for_this_thread()?;
                let client = held(&self.from.pool, &runtime)?;
                Pg::on(client, runtime, self.from.wanted.clone())
            }
        };
        Ok(self.own.insert(pg))
    }
}

/// The tables whose rows hold a record's content, vacuumed after an
/// erasure.
const ERASED_TABLES_VACUUM: &str = "VACUUM records, decay_profiles, payloads, tags, \
     provenance_sources, relations, record_citations, conversation_turns, audit_log, \
     record_vectors, topic_versions, topics, topic_words, topic_edges";

/// A writer's connection: group-committed transactions, each job in a
/// savepoint. Held for good, and made again once the server closed it
/// (a restart, a terminated backend), so writes go on when it is back.
struct PgWriter {
    pg: Pg,
    pool: Pool,
    shared: Shared,
}

impl PgWriter {
    fn new(pool: &Pool, shared: &Shared) -> Result<PgWriter, StoreError> {
        let client = held(pool, &shared.runtime)?;
        Ok(PgWriter {
            pg: Pg::on(client, shared.runtime.clone(), shared.wanted.clone()),
            pool: pool.clone(),
            shared: shared.clone(),
        })
    }
}

impl WriteConnection for PgWriter {
    fn begin(&mut self) -> Result<(), StoreError> {
        if self.pg.client.is_closed() {
            tracing::warn!("a writer's database connection was closed; connecting again");
            *self = PgWriter::new(&self.pool, &self.shared)?;
        }
        // Terms retrievals asked for are counted first, in a transaction
        // of their own (see `counted::count_wanted`).
        if let Err(e) = counted::count_wanted(&self.pg) {
            tracing::warn!(error = %e, "counting the terms retrievals asked for failed");
        }
        self.pg.defer("BEGIN");
        Ok(())
    }

    fn savepoint(&mut self) -> Result<(), StoreError> {
        self.pg.defer("SAVEPOINT write_job");
        Ok(())
    }

    fn release(&mut self) -> Result<(), StoreError> {
        self.pg.defer("RELEASE write_job");
        Ok(())
    }

    fn rollback_to_savepoint(&mut self) -> Result<(), StoreError> {
        self.pg.forget_bounds();
        let mut pending = self.pg.pending.borrow_mut();
        if pending.last() == Some(&"SAVEPOINT write_job") {
            // The job sent nothing: there is nothing to undo.
            pending.pop();
            return Ok(());
        }
        drop(pending);
        self.pg.batch("ROLLBACK TO write_job; RELEASE write_job")
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.pg.batch("COMMIT")
    }

    fn rollback(&mut self) {
        self.pg.forget_bounds();
        self.pg.pending.borrow_mut().clear();
        let _ = self.pg.batch("ROLLBACK");
    }

    fn transaction(&mut self) -> &mut dyn Transaction {
        &mut self.pg
    }

    fn close(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    fn upkeep(&mut self) -> Result<bool, StoreError> {
        counted::count_wanted(&self.pg)
    }

    /// Dead rows stay on disk until `VACUUM`: after an erasure of many
    /// records ([`crate::store::erasure::BULK_ERASURE`]) one runs on the tables it
    /// deleted from, in the background on a connection of its own (it
    /// cannot run in a transaction, and the writer goes on meanwhile). A
    /// smaller erasure leaves its few dead rows to autovacuum: a `VACUUM`
    /// reads whole tables, far more than one record's erasure costs.
    /// PostgreSQL's write-ahead log is its own to recycle.
    fn scrub(&mut self) -> Result<(), StoreError> {
        if !self.pg.vacuum_due.replace(false) {
            return Ok(());
        }
        let (pool, shared) = (self.pool.clone(), self.shared.clone());
        let spawned = std::thread::Builder::new()
            .name("engram-vacuum".to_string())
            .spawn(move || {
                let vacuumed = held(&pool, &shared.runtime).and_then(|client| {
                    Pg::on(client, shared.runtime.clone(), shared.wanted.clone())
                        .batch(ERASED_TABLES_VACUUM)
                });
                match vacuumed {
                    Ok(()) => tracing::info!("vacuumed the tables an erasure deleted from"),
                    Err(e) => tracing::warn!(error = %e, "vacuum after an erasure failed"),
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start the vacuum after an erasure");
        }
        Ok(())
    }
}
