//! Logging: `tracing` to stderr, text or JSON, filtered by `RUST_LOG`
//! (default `info`).
//!
//! Each request runs in a span of its own (`request`: method, route, the
//! key's name once known; `http::access_log` makes it) and with a
//! [`Trace`]: the actors' messages and
//! the storage jobs a request causes carry it, enter its span, and add the
//! time they waited in a queue and the time they worked to it. A request
//! slower than `telemetry.slow_request_ms` is logged as `slow request` with
//! that split, so its time can be followed past the HTTP worker.
//!
//! Each actor that handles a request's work does so in an `actor` span
//! (debug) within the request's, and each storage job in a `job` span
//! within that: with `telemetry.otlp_endpoint` set, [`otlp`] sends them
//! all to a collector.

mod conventions;
pub mod otlp;
mod protobuf;

use std::future::Future;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::{LogFormat, TelemetrySettings};

/// Installs the global subscriber: the log, and the span exporter when
/// `settings` name a collector. A second call is a no-op, so tests may call
/// it freely.
pub fn init(format: LogFormat, settings: &TelemetrySettings) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,tokio_cron_scheduler=warn"));
    let export = otlp::ExportOptions::from_settings(settings)
        .filter(|_| !tracing::dispatcher::has_been_set())
        .and_then(otlp::start);
    let Some(export) = export else {
        // The log alone, its filter for every span: what it leaves out
        // costs nothing.
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr);
        let _ = match format {
            LogFormat::Text => builder.try_init(),
            LogFormat::Json => builder.json().try_init(),
        };
        return;
    };
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let log = match format {
        LogFormat::Text => log.with_filter(filter).boxed(),
        LogFormat::Json => log.json().with_filter(filter).boxed(),
    };
    // Each its own filter: the exporter takes engram's spans down to debug
    // (actors, jobs) whatever `RUST_LOG` keeps for the log, and no events,
    // so no debug event is made for it.
    let export = export.with_filter(tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span()
            && meta.target().starts_with("engram")
            && *meta.level() <= tracing::Level::DEBUG
    }));
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(export)
        .try_init();
}

tokio::task_local! {
    /// The trace of the request this task works for.
    static TRACE: Trace;
}

/// Where a request's time goes beyond its HTTP worker: its span, and the
/// time the work it caused waited in actors' and storage queues and spent
/// running there. Cloning shares the counts.
#[derive(Clone)]
pub struct Trace {
    span: tracing::Span,
    timing: Arc<Timing>,
}

#[derive(Default)]
struct Timing {
    queued_us: AtomicU64,
    working_us: AtomicU64,
}

impl Trace {
    /// A request's trace, in its span.
    pub fn new(span: tracing::Span) -> Trace {
        Trace {
            span,
            timing: Arc::default(),
        }
    }

    /// The trace of the request this task works for; outside one (a
    /// scheduled job), the current span's, counted nowhere.
    pub fn current() -> Trace {
        TRACE
            .try_with(Trace::clone)
            .unwrap_or_else(|_| Trace::new(tracing::Span::current()))
    }

    /// `work`, run with this trace in scope and inside its span.
    pub fn scope<F: Future>(self, work: F) -> impl Future<Output = F::Output> {
        let span = self.span.clone();
        TRACE.scope(self, work.instrument(span))
    }

    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Time the request's work waited in a queue.
    pub fn queued(&self, waited: Duration) {
        self.timing
            .queued_us
            .fetch_add(micros(waited), Ordering::Relaxed);
    }

    /// Time the request's work ran off the HTTP worker.
    pub fn worked(&self, ran: Duration) {
        self.timing
            .working_us
            .fetch_add(micros(ran), Ordering::Relaxed);
    }

    /// Milliseconds the request's work waited in queues, and ran.
    pub fn split_ms(&self) -> (f64, f64) {
        let ms = |us: &AtomicU64| us.load(Ordering::Relaxed) as f64 / 1000.0;
        (ms(&self.timing.queued_us), ms(&self.timing.working_us))
    }
}

/// Work handed to a queue on a request's behalf (a storage job): the
/// request's trace, and when the work was queued.
pub struct Handoff {
    trace: Trace,
    at: Instant,
}

impl Handoff {
    /// Work queued now, for the request this task works for.
    pub fn now() -> Handoff {
        Handoff {
            trace: Trace::current(),
            at: Instant::now(),
        }
    }

    /// `actor` took the work (its `message`) from its queue at `started`:
    /// what follows runs in a span of the actor's within the request's,
    /// which says how long the work waited.
    pub fn started(&mut self, actor: &'static str, message: &'static str, started: Instant) {
        let waited = started.saturating_duration_since(self.at);
        self.trace.queued(waited);
        let span = tracing::debug_span!(
            parent: &self.trace.span,
            "actor",
            actor,
            message,
            queued_ms = waited.as_secs_f64() * 1000.0,
        );
        // Unless something follows actors' spans, the work goes on in the
        // request's, which the log shows.
        if !span.is_disabled() {
            self.trace.span = span;
        }
    }

    /// The work ran for `ran`.
    pub fn worked(&self, ran: Duration) {
        self.trace.worked(ran);
    }

    /// The request's span, to run the work in.
    pub fn span(&self) -> &tracing::Span {
        &self.trace.span
    }

    /// The request's trace, for work the handed-off work goes on with.
    pub fn into_trace(self) -> Trace {
        self.trace
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// Names the key a request is made with in the request's span.
pub fn record_key(name: &str) {
    tracing::Span::current().record("key", name);
}

/// How many records a request returned or wrote, in the request's span.
pub fn record_count(records: usize) {
    tracing::Span::current().record("records", records);
}

/// The MCP method a request calls, in the request's span.
pub fn record_mcp_method(method: &str) {
    tracing::Span::current().record("mcp_method", method);
}

/// The MCP tool a request calls, in the request's span.
pub fn record_tool(name: &str) {
    tracing::Span::current().record("tool", name);
}

/// What a route or an MCP tool does to memory, as the GenAI semantic
/// conventions name it (`gen_ai.operation.name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryOperation {
    Create,
    /// Makes or replaces what is current (a thread's working state, a
    /// topic placed by its title).
    Upsert,
    Search,
    Update,
    Delete,
}

impl MemoryOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryOperation::Create => "create_memory",
            MemoryOperation::Upsert => "upsert_memory",
            MemoryOperation::Search => "search_memory",
            MemoryOperation::Update => "update_memory",
            MemoryOperation::Delete => "delete_memory",
        }
    }
}

/// The memory operation a request performs, in the request's span (an
/// MCP tool's replaces its route's, which has none).
pub fn record_operation(operation: MemoryOperation) {
    tracing::Span::current().record("operation", operation.as_str());
}
