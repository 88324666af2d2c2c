//! Builds the service: storage, actors, HTTP server. `Application::build`
//! binds the listener before returning, so the port is known (tests bind
//! port 0) and the server is ready to accept connections.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, SyncArbiter};
use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};

use crate::actors::consolidation::Consolidator;
use crate::actors::decay::Decayer;
use crate::actors::ingestion::Ingestor;
use crate::actors::retrieval::{ReadGate, Retriever};
use crate::actors::revision::Reviser;
use crate::actors::scheduler::{JobsError, Scheduler, SchedulerDeps, StopSchedule};
use crate::actors::storage::{Reader, StorageWriter, StoreReader, WriterOptions};
use crate::actors::workers::{WorkerArbiters, Workers};
use crate::clock::Clock;
use crate::config::Settings;
use crate::http::{self, AppState};
use crate::metrics::Metrics;
use crate::store::{self, ConnectionOptions, StoreError};
use crate::telemetry;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot open the database {path}: {source}")]
    Database { path: String, source: StoreError },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Jobs(#[from] JobsError),
}

pub struct Application {
    addr: SocketAddr,
    server: Server,
    writer: StorageWriter,
    reader: Reader,
    read_gate: ReadGate,
    scheduler: Addr<Scheduler>,
    arbiters: WorkerArbiters,
}

/// Threads for the request actors: as many as HTTP workers.
fn worker_count(settings: &Settings) -> usize {
    match settings.server.workers {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    }
}

impl Application {
    /// Must be called inside an actix `System` (e.g. `#[actix_web::main]`).
    pub async fn build(settings: Settings, clock: Clock) -> Result<Application, StartupError> {
        let storage = &settings.storage;
        let db_error = |source: StoreError| StartupError::Database {
            path: storage.db_path.display().to_string(),
            source,
        };
        let busy_timeout = Duration::from_millis(storage.busy_timeout_ms);
        let opened = store::open(
            &storage.db_path,
            storage.pool_size,
            ConnectionOptions {
                busy_timeout,
                cache_size_kib: storage.writer_cache_size_kib,
            },
            ConnectionOptions {
                busy_timeout,
                cache_size_kib: storage.reader_cache_size_kib,
            },
        )
        .map_err(db_error)?;
        if !opened.applied_migrations.is_empty() {
            tracing::info!(versions = ?opened.applied_migrations, "applied schema migrations");
        }
        let mut writer_conn = opened.writer;
        let stored_jobs = writer_conn.transaction().job_settings().map_err(db_error)?;
        let last_runs = writer_conn
            .transaction()
            .last_job_runs()
            .map_err(db_error)?;
        let writer = StorageWriter::start(
            writer_conn,
            WriterOptions {
                capacity: storage.write_queue_capacity,
                max_per_transaction: storage.max_writes_per_transaction,
                timeout: Duration::from_millis(storage.write_timeout_ms),
            },
        );
        let pool = opened.readers;
        let reader_addr = SyncArbiter::start(storage.pool_size as usize, move || {
            StoreReader::new(pool.clone())
        });
        let reader = Reader::new(reader_addr, Duration::from_millis(storage.read_timeout_ms));

        let arbiters = WorkerArbiters::start(worker_count(&settings));
        let (policy, w, c) = (settings.policy.clone(), writer.clone(), clock.clone());
        let ingestor = Workers::start(&arbiters, move || {
            Ingestor::new(policy.clone(), w.clone(), c.clone())
        });
        let (policy, w, c) = (settings.policy.clone(), writer.clone(), clock.clone());
        let reviser = Workers::start(&arbiters, move || {
            Reviser::new(policy.clone(), w.clone(), c.clone())
        });
        let read_gate = ReadGate::new(settings.retrieval.max_reads_in_flight);
        let retriever_prototype = Retriever::new(
            reader.clone(),
            clock.clone(),
            read_gate.clone(),
            settings.retrieval.max_limit,
            settings.retrieval.selection_confidence_threshold,
        );
        let retriever = Workers::start(&arbiters, move || retriever_prototype.clone());

        let decayer = Decayer::new(
            reader.clone(),
            writer.clone(),
            settings.jobs.decay_chunk_size,
        )
        .start();
        let consolidator = Consolidator::new(
            settings.policy.clone(),
            reader.clone(),
            writer.clone(),
            settings.jobs.compress_after_hours,
        )
        .start();
        let metrics = Arc::new(Metrics::default());
        let scheduler = Scheduler::start(
            &settings.jobs,
            stored_jobs,
            last_runs,
            SchedulerDeps {
                decayer,
                consolidator,
                writer: writer.clone(),
                clock: clock.clone(),
                metrics: metrics.clone(),
            },
        )
        .await?;
        let state = web::Data::new(AppState {
            ingestor,
            retriever,
            reviser,
            reader: reader.clone(),
            read_gate: read_gate.clone(),
            writer: writer.clone(),
            scheduler: scheduler.clone(),
            metrics,
            clock,
            max_body_bytes: settings.server.max_body_bytes,
        });

        let addr = settings.listen_addr();
        let listener =
            TcpListener::bind(addr).map_err(|source| StartupError::Listen { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| StartupError::Listen { addr, source })?;
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .wrap(from_fn(telemetry::access_log))
                .configure(http::configure)
                .default_service(web::to(http::route_not_found))
        })
        .shutdown_timeout(settings.server.shutdown_timeout_seconds);
        if settings.server.workers > 0 {
            server = server.workers(settings.server.workers);
        }
        let server = server
            .listen(listener)
            .map_err(|source| StartupError::Listen { addr, source })?
            .run();
        tracing::info!(addr = %local, db = %storage.db_path.display(), "engram listening");
        Ok(Application {
            addr: local,
            server,
            writer,
            reader,
            read_gate,
            scheduler,
            arbiters,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The single writer, shared with the actors.
    pub fn writer(&self) -> StorageWriter {
        self.writer.clone()
    }

    /// The way to the read pool, shared with the actors.
    pub fn reader(&self) -> Reader {
        self.reader.clone()
    }

    /// The bound on reads in flight, shared with the retrievers.
    pub fn read_gate(&self) -> ReadGate {
        self.read_gate.clone()
    }

    /// Stops the server from elsewhere (tests, signal handlers).
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped (SIGINT/SIGTERM or the handle), then lets
    /// queued writes commit and checkpoints the database.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        let _ = self.scheduler.send(StopSchedule).await;
        let writer = self.writer;
        let arbiters = self.arbiters;
        let _ = actix_web::rt::task::spawn_blocking(move || {
            arbiters.stop();
            writer.shutdown();
        })
        .await;
        result
    }
}
