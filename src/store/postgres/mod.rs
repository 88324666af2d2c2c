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

pub mod connection;
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

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::store::error::StoreError;
use crate::store::transaction::{self, Opened, Readers, Reads, Transaction, WriteConnection};
use connection::{Client, Pg, Runtime, Wanted};

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
    // A connection from the pool, for as long as the `Pg` lives.
    let object = shared.runtime.wait(pool.get())?;
    let pg = Pg::on(
        Client::Pooled(object),
        shared.runtime.clone(),
        shared.wanted.clone(),
    );
    migrations::run(&pg)?;
    Ok(pg)
}

/// What the connections to one database share: the runtime their I/O
/// runs on.
#[derive(Clone)]
struct Shared {
    runtime: Runtime,
    wanted: Wanted,
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
            wanted: Wanted::default(),
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
    wanted: Wanted,
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
