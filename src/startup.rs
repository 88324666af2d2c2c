//! Builds the service: storage, actors, HTTP server. `Application::build`
//! binds the listener before returning, so the port is known (tests bind
//! port 0) and the server is ready to accept connections.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, SyncArbiter};
use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};

use crate::actors::consolidation::Consolidator;
use crate::actors::decay::Decayer;
use crate::actors::ingestion::Ingestor;
use crate::actors::retrieval::Retriever;
use crate::actors::revision::Reviser;
use crate::actors::storage::{StorageWriter, StoreReader};
use crate::clock::Clock;
use crate::config::Settings;
use crate::http::{self, AppState};
use crate::jobs::{Jobs, JobsError};
use crate::metrics::Metrics;
use crate::store::{self, maintenance, migrations, ConnectionOptions, StoreError};
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

/// Reads allowed in flight per reader thread before retrieval answers 503.
const READS_IN_FLIGHT_PER_READER: usize = 256;

pub struct Application {
    addr: SocketAddr,
    server: Server,
    writer: StorageWriter,
    jobs: Jobs,
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
        let reader_options = ConnectionOptions {
            busy_timeout,
            cache_size_kib: storage.reader_cache_size_kib,
        };
        let writer_options = ConnectionOptions {
            busy_timeout,
            cache_size_kib: storage.writer_cache_size_kib,
        };
        // The writer connection comes first: it switches the file to WAL
        // and migrates before any reader opens.
        let mut writer_conn =
            store::open_connection(&storage.db_path, writer_options).map_err(db_error)?;
        let applied = migrations::run(&mut writer_conn).map_err(db_error)?;
        if !applied.is_empty() {
            tracing::info!(versions = ?applied, "applied schema migrations");
        }
        let stored_jobs = maintenance::job_settings(&writer_conn).map_err(db_error)?;
        let last_runs = maintenance::last_job_runs(&writer_conn).map_err(db_error)?;
        let pool = store::open_pool(&storage.db_path, storage.pool_size, reader_options)
            .map_err(db_error)?;
        let writer = StorageWriter::start(
            writer_conn,
            storage.write_queue_capacity,
            storage.max_writes_per_transaction,
        );
        let readers = storage.pool_size as usize;
        let reader_pool = pool.clone();
        let reader = SyncArbiter::start(readers, move || StoreReader::new(reader_pool.clone()));
        let ingestor =
            Ingestor::new(settings.policy.clone(), writer.clone(), clock.clone()).start();
        let reviser = Reviser::new(settings.policy.clone(), writer.clone(), clock.clone()).start();
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
        let jobs = Jobs::start(
            &settings.jobs,
            stored_jobs,
            last_runs,
            decayer,
            consolidator,
            writer.clone(),
            clock.clone(),
            metrics.clone(),
        )
        .await?;
        let retriever = Retriever::new(
            reader.clone(),
            clock.clone(),
            settings.retrieval.selection_confidence_threshold,
            readers * READS_IN_FLIGHT_PER_READER,
        )
        .start();
        let state = web::Data::new(AppState {
            ingestor,
            retriever,
            reviser,
            reader,
            writer: writer.clone(),
            jobs: jobs.clone(),
            metrics,
            clock,
            max_limit: settings.retrieval.max_limit,
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
            jobs,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The single writer, shared with the actors.
    pub fn writer(&self) -> StorageWriter {
        self.writer.clone()
    }

    /// Stops the server from elsewhere (tests, signal handlers).
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped (SIGINT/SIGTERM or the handle), then lets
    /// queued writes commit and checkpoints the database.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        self.jobs.shutdown().await;
        let writer = self.writer;
        let _ = actix_web::rt::task::spawn_blocking(move || writer.shutdown()).await;
        result
    }
}
