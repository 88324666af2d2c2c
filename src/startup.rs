//! Builds the service: storage, actors, HTTP server. `Application::build`
//! binds the listener before returning, so the port is known (tests bind
//! port 0) and the server is ready to accept connections.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, SyncArbiter};
use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::{from_fn, Condition};
use actix_web::{web, App, HttpServer};

use crate::actors::consolidation::Consolidator;
use crate::actors::decay::Decayer;
use crate::actors::embedder::Embedder;
use crate::actors::scheduler::{self, JobName, JobsError, Scheduler, SchedulerDeps, StopSchedule};
use crate::actors::storage::{ReadGate, Reader, StorageWriter, StoreReader, WriterOptions};
use crate::auth;
use crate::auth::gate::{self, Protection, Unprotected};
use crate::auth::secret::SecretError;
use crate::clock::Clock;
use crate::config::{Backend, Settings};
use crate::domain::retrieval::Ranking;
use crate::http::auth::Gatekeeper;
use crate::http::body::BodyBudget;
use crate::http::key_check::KeyCheck;
use crate::http::{self, AppState, ReadSettings};
use crate::metrics::Metrics;
use crate::service::schedule;
use crate::service::topics::TopicRules;
use crate::store::{self, StoreError};

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
    #[error(transparent)]
    Unprotected(#[from] Unprotected),
    #[error(transparent)]
    Pepper(#[from] SecretError),
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

/// This process among those sharing a database: host, process id and a
/// random part (a restarted process is another instance).
fn instance_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "engram".to_string());
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}:{}:{}", std::process::id(), &random[..8])
}

pub struct Application {
    addr: SocketAddr,
    server: Server,
    writer: StorageWriter,
    reader: Reader,
    read_gate: ReadGate,
    scheduler: Addr<Scheduler>,
}

impl Application {
    /// Must be called inside an actix `System` (e.g. `#[actix_web::main]`).
    pub async fn build(settings: Settings, clock: Clock) -> Result<Application, StartupError> {
        let storage = &settings.storage;
        let db_error = |source: StoreError| StartupError::Database {
            path: storage.database_name(),
            source,
        };
        let opened = store::open(
            storage,
            settings.retrieval.embedding_dimensions(),
            storage.encryption_key()?,
        )
        .map_err(db_error)?;
        if !opened.applied_migrations.is_empty() {
            tracing::info!(versions = ?opened.applied_migrations, "applied schema migrations");
        }
        let mut writer_conn = opened.writer;
        let keys_exist = writer_conn.transaction().any_key().map_err(db_error)?;
        let addr = settings.listen_addr();
        let protection = gate::protection(settings.auth.mode, addr, keys_exist)?;
        tracing::info!(
            mode = ?settings.auth.mode,
            keys_required = protection == Protection::Keys,
            "authentication"
        );
        let instance = instance_id();
        let live = schedule::heartbeat(writer_conn.transaction(), &instance, &settings.jobs)
            .map_err(db_error)?;
        let instances = Arc::new(AtomicUsize::new(live));
        if settings.storage.backend == Backend::Sqlite {
            let left = schedule::release_leases_left(writer_conn.transaction(), clock.now())
                .map_err(db_error)?;
            if left > 0 {
                tracing::warn!(
                    leases = left,
                    "gave back job leases an earlier process left"
                );
            }
        }
        writer_conn.begin().map_err(db_error)?;
        match crate::service::topics::index_pending(writer_conn.transaction()) {
            Ok(indexed) => {
                writer_conn.commit().map_err(db_error)?;
                if indexed > 0 {
                    tracing::info!(topics = indexed, "made the search text of topics again");
                }
            }
            Err(e) => {
                writer_conn.rollback();
                return Err(db_error(StoreError::Database(e.to_string())));
            }
        }
        let stored_jobs = writer_conn.transaction().job_settings().map_err(db_error)?;
        let recent_runs = writer_conn
            .transaction()
            .recent_job_runs(scheduler::RUNS_KEPT)
            .map_err(db_error)?;
        let writer = StorageWriter::start_many(
            writer_conn,
            opened.more_writers,
            WriterOptions {
                capacity: storage.write_queue_capacity,
                max_per_transaction: storage.max_writes_per_transaction,
                timeout: Duration::from_millis(storage.write_timeout_ms),
            },
        );
        let pool = opened.readers;
        let reader_addr =
            SyncArbiter::start(storage.pool_size as usize, move || StoreReader::new(&pool));
        let reader = Reader::new(reader_addr, Duration::from_millis(storage.read_timeout_ms));
        let pepper = Arc::new(auth::pepper(&settings)?);
        let gatekeeper = web::Data::new(Gatekeeper::new(
            settings.auth.mode,
            keys_exist,
            KeyCheck::new(pepper.clone(), reader.clone()),
            settings.auth.default_rate,
            instances.clone(),
        ));
        Gatekeeper::watch_for_keys(gatekeeper.clone());

        let read_gate = ReadGate::new(settings.retrieval.max_reads_in_flight);
        let topic_rules = TopicRules::new(settings.topics, &settings.policy);
        let decayer = Decayer::new(
            reader.clone(),
            writer.clone(),
            settings.jobs.decay_chunk_size,
            topic_rules.decay.clone(),
        )
        .start();
        let consolidator = Consolidator::new(
            settings.policy.clone(),
            reader.clone(),
            writer.clone(),
            settings.jobs.compress_after_hours,
            topic_rules.clone(),
            clock.clone(),
        )
        .start();
        let metrics = Arc::new(Metrics::with_jobs(JobName::ALL.map(JobName::as_str)));
        if let Some(embedding) = &settings.embedding {
            Embedder::new(
                embedding.clone(),
                reader.clone(),
                writer.clone(),
                clock.clone(),
                metrics.clone(),
            )
            .start();
        }
        let scheduler = Scheduler::start(
            &settings.jobs,
            stored_jobs,
            recent_runs,
            SchedulerDeps {
                decayer,
                consolidator: consolidator.clone(),
                writer: writer.clone(),
                reader: reader.clone(),
                clock: clock.clone(),
                metrics: metrics.clone(),
                instance,
                instances,
            },
        )
        .await?;
        let state = web::Data::new(AppState {
            policy: settings.policy.clone(),
            reader: reader.gated(read_gate.clone()),
            read_gate: read_gate.clone(),
            writer: writer.clone(),
            scheduler: scheduler.clone(),
            metrics,
            clock,
            read_settings: ReadSettings {
                max_limit: settings.retrieval.max_limit,
                selection_threshold: settings.retrieval.selection_confidence_threshold,
                ranking: Ranking {
                    weights: settings.retrieval.weights,
                    bm25: settings.retrieval.bm25(),
                    turns: settings.retrieval.turns,
                    max_salience: settings.policy.max_salience,
                    max_response_bytes: settings.retrieval.max_response_bytes,
                    scan_records: settings.retrieval.scan_records,
                },
            },
            max_body_bytes: settings.server.max_body_bytes,
            body_budget: BodyBudget::new(settings.server.max_body_bytes_in_flight),
            body_read_timeout: Duration::from_millis(settings.server.body_read_timeout_ms),
            slow_request: Duration::from_millis(settings.telemetry.slow_request_ms),
            topics: topic_rules,
            sealer: Arc::new(pepper.sealer()),
            pepper,
            topics_touched: consolidator.clone().recipient(),
            session_gap: settings.conversations.session_gap(),
            topics_read: consolidator.recipient(),
            request_limits: http::RequestLimits {
                deadline: Duration::from_millis(
                    settings
                        .storage
                        .read_timeout_ms
                        .max(settings.storage.write_timeout_ms),
                ),
                max_answer_bytes: settings.retrieval.max_response_bytes,
            },
        });

        let listener =
            TcpListener::bind(addr).map_err(|source| StartupError::Listen { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| StartupError::Listen { addr, source })?;
        // Each HTTP worker is an arbiter of its own, one per core (unless
        // configured): a request's handler checks it and builds its job on
        // the thread that parsed it.
        let cors_origins = settings.server.cors_origins.clone();
        let origins = http::origin::OriginRules::new(
            local,
            &settings.server.allowed_hosts,
            &cors_origins,
            settings.server.tls_cert.is_some(),
        );
        let mut server = HttpServer::new(move || {
            let origins = origins.clone();
            App::new()
                .app_data(state.clone())
                .app_data(gatekeeper.clone())
                .wrap(from_fn(http::auth::authenticate))
                .wrap(from_fn(move |req, next| {
                    http::origin::guard(origins.clone(), req, next)
                }))
                .wrap(from_fn(http::disconnect::watch))
                .wrap(from_fn(http::access_log::access_log))
                // Outermost: a browser's preflight carries no key.
                .wrap(Condition::new(
                    !cors_origins.is_empty(),
                    http::cors(&cors_origins),
                ))
                .configure(http::configure)
                .default_service(web::to(http::route_not_found))
        })
        .on_connect(http::disconnect::on_connect)
        .shutdown_timeout(settings.server.shutdown_timeout_seconds)
        // actix stops at once on SIGINT; engram treats it as SIGTERM (see
        // `run_until_stopped`).
        .disable_signals();
        if settings.server.workers > 0 {
            server = server.workers(settings.server.workers);
        }
        let https = match (&settings.server.tls_cert, &settings.server.tls_key) {
            (Some(cert), Some(key)) => Some(crate::tls::server_config(cert, key)?),
            _ => None,
        };
        let scheme = if https.is_some() { "https" } else { "http" };
        let server = match https {
            Some(config) => server.listen_rustls_0_23(listener, config),
            None => server.listen(listener),
        }
        .map_err(|source| StartupError::Listen { addr, source })?
        .run();
        tracing::info!(
            addr = %local,
            scheme,
            db = %storage.database_name(),
            "engram listening"
        );
        Ok(Application {
            addr: local,
            server,
            writer,
            reader,
            read_gate,
            scheduler,
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
        let handle = self.server.handle();
        let signals = actix_web::rt::spawn(async move {
            let name = stop_signal().await;
            tracing::info!(
                signal = name,
                "stopping gracefully: in-flight requests and queued writes finish"
            );
            handle.stop(true).await;
        });
        let result = self.server.await;
        signals.abort();
        let _ = self.scheduler.send(StopSchedule).await;
        let writer = self.writer;
        let _ = actix_web::rt::task::spawn_blocking(move || writer.shutdown()).await;
        result
    }
}

/// Waits for SIGINT or SIGTERM (Ctrl-C elsewhere); answers which came.
async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                let interrupted = Box::pin(interrupt.recv());
                let terminated = Box::pin(terminate.recv());
                match futures_util::future::select(interrupted, terminated).await {
                    futures_util::future::Either::Left(_) => "SIGINT",
                    futures_util::future::Either::Right(_) => "SIGTERM",
                }
            }
            _ => {
                tracing::warn!("cannot listen for SIGINT/SIGTERM; stop the service with SIGKILL");
                std::future::pending().await
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = actix_web::rt::signal::ctrl_c().await;
        "Ctrl-C"
    }
}
