//! One connection to PostgreSQL ([`Pg`]), as every statement of the
//! backend runs on it: its client, the runtime its I/O runs on, the
//! transaction control it sends ahead of the next statement, and what it
//! remembers between statements. And what a server's errors mean to the
//! service ([`StoreError`]).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use crate::store::error::StoreError;
use crate::store::term_counts::take_some;

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

impl crate::store::rows::Columns for tokio_postgres::Row {
    fn at<T: crate::store::rows::Value>(&self, column: usize) -> Result<T, StoreError> {
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
    pub(super) fn new() -> Result<Runtime, StoreError> {
        Runtime::built(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("engram-pg"),
        )
    }

    /// A runtime for one thread, run only while that thread waits on it.
    pub(super) fn for_this_thread() -> Result<Runtime, StoreError> {
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

/// A connection's client: pooled (the key lookups'), or held by one
/// writer or reading thread for good.
pub(super) enum Client {
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
    pub(super) client: Client,
    /// The runtime the connection's I/O runs on.
    pub(super) runtime: Runtime,
    /// The decay bounds (per layer: longest half-life, highest floor) this
    /// connection has seen stored; they only grow, so a record they cover
    /// needs no write to them. Forgotten when a transaction or savepoint
    /// is rolled back (what it wrote is gone).
    bounds: std::cell::RefCell<std::collections::HashMap<i64, (i64, f64)>>,
    /// Transaction control the writer asked for (BEGIN, SAVEPOINT,
    /// RELEASE) not sent yet: it goes with the next statement, pipelined,
    /// so a write job costs the round trips of its own statements only.
    pub(super) pending: std::cell::RefCell<Vec<&'static str>>,
    /// An erasure of many records deleted through this connection: the
    /// scrub that ends it vacuums the tables (smaller ones are left to
    /// autovacuum, so an erasure's cost follows what it erases).
    pub(super) vacuum_due: std::cell::Cell<bool>,
    /// The terms this database's retrievals asked to be counted.
    pub(super) wanted: Wanted,
}

impl Pg {
    pub(super) fn on(client: Client, runtime: Runtime, wanted: Wanted) -> Pg {
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
    pub(super) fn end_read(&self) -> Result<(), StoreError> {
        let mut pending = self.pending.borrow_mut();
        if !pending.is_empty() {
            pending.clear();
            return Ok(());
        }
        drop(pending);
        self.batch("COMMIT")
    }

    /// Queues transaction control to go with the next statement.
    pub(super) fn defer(&self, control: &'static str) {
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

    pub(super) fn forget_bounds(&self) {
        self.bounds.borrow_mut().clear();
    }

    fn statement(&self, sql: &str) -> Result<Statement, StoreError> {
        // A read whose budget is spent sends nothing more (each statement
        // alone is bounded by the statement timeout).
        crate::store::budget::check()?;
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

/// The terms retrievals found in many records but not counted, shared by
/// one database's readers and writers.
#[derive(Clone, Default)]
pub(crate) struct Wanted(Arc<Mutex<BTreeSet<String>>>);

impl Wanted {
    pub(super) fn want<'a>(&self, terms: impl IntoIterator<Item = &'a String>) {
        let mut wanted = self.0.lock().unwrap_or_else(|e| e.into_inner());
        wanted.extend(terms.into_iter().cloned());
    }

    pub(super) fn take(&self) -> Vec<String> {
        let mut wanted = self.0.lock().unwrap_or_else(|e| e.into_inner());
        take_some(&mut wanted)
    }
}
