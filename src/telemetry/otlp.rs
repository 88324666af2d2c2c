//! Spans sent to an OpenTelemetry collector over OTLP/HTTP (protobuf), when
//! `telemetry.otlp_endpoint` is set.
//!
//! [`OtlpLayer`] follows engram's own spans (the request, the actors that
//! handle its messages, the storage jobs) and, as each closes, offers it to
//! a bounded queue: a full queue drops the span and counts it, so a slow or
//! absent collector never holds up a request nor grows memory. One thread
//! sends the queue in batches. The names and attributes are the
//! OpenTelemetry semantic conventions' (`conventions`): HTTP server spans,
//! and the GenAI memory operation a route performs. A span never carries a
//! secret, a query's text or a record's content: only routes, methods,
//! statuses, key names, counts and queue times.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use super::conventions::{describe, Fields};
use super::protobuf::{export_request, SpanData, Value};
use crate::config::TelemetrySettings;

/// How the exporter was asked to work (from `[telemetry]`).
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub endpoint: String,
    pub service_name: String,
    pub every: Duration,
    pub max_queue: usize,
    pub max_batch: usize,
    pub timeout: Duration,
}

impl ExportOptions {
    /// The options `settings` give, or none when no endpoint is set.
    pub fn from_settings(settings: &TelemetrySettings) -> Option<ExportOptions> {
        Some(ExportOptions {
            endpoint: settings.otlp_endpoint.clone()?,
            service_name: settings.otlp_service_name.clone(),
            every: Duration::from_millis(settings.otlp_export_ms),
            max_queue: settings.otlp_max_queue,
            max_batch: settings.otlp_max_batch,
            timeout: Duration::from_millis(settings.otlp_timeout_ms),
        })
    }
}

/// What the exporter has done since the service started.
#[derive(Debug, Default)]
pub struct ExportStats {
    pub exported: AtomicU64,
    /// Spans the full queue had no room for, or whose batch the collector
    /// did not take.
    pub dropped: AtomicU64,
    pub failed_batches: AtomicU64,
}

/// Why the exporter should send now rather than when its time comes.
enum Wake {
    /// A batch is waiting.
    Batch,
    /// Send what is queued now, then say so.
    Flush(std::sync::mpsc::Sender<()>),
}

/// What the layer and the exporter share. Finished spans wait in `queue`;
/// the exporter is woken only when a batch is full (or to flush), not for
/// each span, which would cost a thread switch per span.
struct Shared {
    queue: SyncSender<SpanData>,
    /// Spans in the queue.
    queued: AtomicUsize,
    wake: SyncSender<Wake>,
    max_batch: usize,
    stats: ExportStats,
}

static EXPORTER: OnceLock<Arc<Shared>> = OnceLock::new();

/// The exporter's counts, when spans are exported.
pub fn stats() -> Option<&'static ExportStats> {
    EXPORTER.get().map(|shared| &shared.stats)
}

/// Whether spans are exported: fields only a collector wants are recorded
/// then.
pub fn enabled() -> bool {
    EXPORTER.get().is_some()
}

/// Sends the spans queued so far, waiting at most `within`; at shutdown,
/// so the last requests' spans are not lost.
pub fn flush(within: Duration) {
    let Some(shared) = EXPORTER.get() else {
        return;
    };
    let (done, sent) = std::sync::mpsc::channel();
    let deadline = Instant::now() + within;
    let mut message = Wake::Flush(done);
    loop {
        match shared.wake.try_send(message) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                message = back;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return,
        }
    }
    let _ = sent.recv_timeout(deadline.saturating_duration_since(Instant::now()));
}

/// Starts the exporting thread and answers the layer that feeds it; the
/// first call only (one exporter per process).
pub fn start(options: ExportOptions) -> Option<OtlpLayer> {
    let (queue, inbox) = sync_channel(options.max_queue.max(1));
    let (wake, woken) = sync_channel(4);
    let shared = Arc::new(Shared {
        queue,
        queued: AtomicUsize::new(0),
        wake,
        max_batch: options.max_batch.max(1),
        stats: ExportStats::default(),
    });
    EXPORTER.set(shared.clone()).ok()?;
    let exporter = Exporter::new(options, shared.clone());
    std::thread::Builder::new()
        .name("otlp-exporter".to_string())
        .spawn(move || exporter.run(inbox, woken))
        .expect("the exporter thread starts");
    Some(OtlpLayer { shared })
}

/// A span's identity and what it has recorded so far, kept in the span's
/// extensions until it closes.
struct Live {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent: Option<[u8; 8]>,
    remote_parent: bool,
    start: SystemTime,
    fields: Fields,
}

pub struct OtlpLayer {
    shared: Arc<Shared>,
}

impl<S> Layer<S> for OtlpLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let parent = span.parent().and_then(|parent| {
            let extensions = parent.extensions();
            extensions
                .get::<Live>()
                .map(|live| (live.trace_id, live.span_id))
        });
        let (trace_id, parent) = match parent {
            Some((trace_id, parent)) => (trace_id, Some(parent)),
            None => (new_trace_id(), None),
        };
        span.extensions_mut().insert(Live {
            trace_id,
            span_id: new_span_id(),
            parent,
            remote_parent: false,
            start: SystemTime::now(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        let Some(live) = extensions.get_mut::<Live>() else {
            return;
        };
        values.record(&mut live.fields);
        // A caller's trace context joins the request to the caller's trace;
        // recorded before anything runs in the span, so no child has taken
        // the trace id it replaces.
        if let Some(Value::Str(header)) = live.fields.0.remove("traceparent") {
            if let Some((trace_id, parent)) = parse_traceparent(&header) {
                live.trace_id = trace_id;
                live.parent = Some(parent);
                live.remote_parent = true;
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(live) = span.extensions_mut().remove::<Live>() else {
            return;
        };
        let end = SystemTime::now();
        let described = describe(span.name(), &live.fields);
        let data = SpanData {
            trace_id: live.trace_id,
            span_id: live.span_id,
            parent_span_id: live.parent,
            remote_parent: live.remote_parent,
            name: described.name,
            kind: described.kind,
            start_unix_nano: unix_nanos(live.start),
            end_unix_nano: unix_nanos(end),
            attributes: described.attributes,
            error: described.error,
        };
        let shared = &self.shared;
        match shared.queue.try_send(data) {
            Ok(()) => {
                let queued = shared.queued.fetch_add(1, Ordering::Relaxed) + 1;
                if queued.is_multiple_of(shared.max_batch) {
                    let _ = shared.wake.try_send(Wake::Batch);
                }
            }
            Err(_) => {
                shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The trace id and parent span id of a W3C `traceparent` header
/// (`00-<32 hex>-<16 hex>-<2 hex>`), when it is well formed.
pub fn parse_traceparent(header: &str) -> Option<([u8; 16], [u8; 8])> {
    let parts: Vec<&str> = header.trim().split('-').collect();
    let [version, trace, parent, flags, rest @ ..] = parts.as_slice() else {
        return None;
    };
    let lower_hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    // Version ff is invalid; a later version may add fields after these.
    if !lower_hex(version, 2) || *version == "ff" || (*version == "00" && !rest.is_empty()) {
        return None;
    }
    if !lower_hex(trace, 32) || !lower_hex(parent, 16) || !lower_hex(flags, 2) {
        return None;
    }
    let mut trace_id = [0u8; 16];
    let mut parent_id = [0u8; 8];
    hex_into(trace, &mut trace_id);
    hex_into(parent, &mut parent_id);
    if trace_id == [0; 16] || parent_id == [0; 8] {
        return None;
    }
    Some((trace_id, parent_id))
}

fn hex_into(hex: &str, out: &mut [u8]) {
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("checked as hex");
    }
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

thread_local! {
    /// Ids come from a per-thread generator seeded from the system's
    /// randomness: a system call per span would cost more than the span.
    static IDS: Cell<u64> = Cell::new(u64::from_le_bytes(
        uuid::Uuid::new_v4().as_bytes()[..8].try_into().expect("8 bytes"),
    ));
}

/// splitmix64: a different, well-mixed, non-zero value each call.
fn next_id() -> u64 {
    IDS.with(|state| loop {
        let next = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        if z != 0 {
            return z;
        }
    })
}

fn new_span_id() -> [u8; 8] {
    next_id().to_be_bytes()
}

fn new_trace_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&next_id().to_be_bytes());
    id[8..].copy_from_slice(&next_id().to_be_bytes());
    id
}

/// Sends the queue's spans in batches: when a batch is full, or every
/// `every`, whichever comes first.
struct Exporter {
    options: ExportOptions,
    shared: Arc<Shared>,
    resource: Vec<(String, Value)>,
}

/// Tries of one batch before it is dropped (the queue keeps filling, and
/// drops, meanwhile).
const TRIES: u32 = 3;

impl Exporter {
    fn new(options: ExportOptions, shared: Arc<Shared>) -> Exporter {
        let resource = vec![
            (
                "service.name".to_string(),
                Value::Str(options.service_name.clone()),
            ),
            (
                "service.version".to_string(),
                Value::Str(env!("CARGO_PKG_VERSION").to_string()),
            ),
            (
                "service.instance.id".to_string(),
                Value::Str(uuid::Uuid::new_v4().to_string()),
            ),
            (
                "telemetry.sdk.name".to_string(),
                Value::Str("engram".to_string()),
            ),
            (
                "telemetry.sdk.language".to_string(),
                Value::Str("rust".to_string()),
            ),
        ];
        Exporter {
            options,
            shared,
            resource,
        }
    }

    fn run(self, inbox: Receiver<SpanData>, woken: Receiver<Wake>) {
        // awc needs an actix runtime; this thread's is its own, and waiting
        // to be woken blocks nothing else.
        actix_web::rt::System::new().block_on(async move {
            let client = awc::Client::builder()
                .timeout(self.options.timeout)
                .finish();
            let mut batch = Vec::with_capacity(self.options.max_batch);
            let mut due = Instant::now() + self.options.every;
            let mut failing = false;
            loop {
                let flushed =
                    match woken.recv_timeout(due.saturating_duration_since(Instant::now())) {
                        Ok(Wake::Flush(done)) => Some(done),
                        Ok(Wake::Batch) | Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => break,
                    };
                while let Ok(span) = inbox.try_recv() {
                    batch.push(span);
                }
                self.shared.queued.fetch_sub(batch.len(), Ordering::Relaxed);
                for chunk in batch.chunks(self.options.max_batch) {
                    failing = self.export(&client, chunk, failing).await;
                }
                batch.clear();
                due = Instant::now() + self.options.every;
                if let Some(done) = flushed {
                    let _ = done.send(());
                }
            }
        });
    }

    /// Sends `spans`, trying again on the answers the protocol says are
    /// worth it; answers whether this export failed. A failure is logged
    /// when exports start failing and when they recover, not every batch.
    async fn export(&self, client: &awc::Client, spans: &[SpanData], failing: bool) -> bool {
        let body = export_request(&self.resource, ("engram", env!("CARGO_PKG_VERSION")), spans);
        let stats = &self.shared.stats;
        let mut backoff = Duration::from_millis(200);
        let mut why = String::new();
        for attempt in 1..=TRIES {
            let sent = client
                .post(&self.options.endpoint)
                .insert_header(("Content-Type", "application/x-protobuf"))
                .send_body(body.clone())
                .await;
            let retry = match sent {
                Ok(response) if response.status().is_success() => {
                    stats
                        .exported
                        .fetch_add(spans.len() as u64, Ordering::Relaxed);
                    if failing {
                        tracing::info!(endpoint = %self.options.endpoint, "span export recovered");
                    }
                    return false;
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    why = format!("the collector answered {status}");
                    if let Some(after) = response
                        .headers()
                        .get("Retry-After")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                    {
                        backoff = Duration::from_secs(after.min(5));
                    }
                    matches!(status, 429 | 502 | 503 | 504)
                }
                Err(e) => {
                    why = format!("sending failed: {e}");
                    true
                }
            };
            if !retry || attempt == TRIES {
                break;
            }
            actix_web::rt::time::sleep(backoff).await;
            backoff *= 2;
        }
        stats.failed_batches.fetch_add(1, Ordering::Relaxed);
        stats
            .dropped
            .fetch_add(spans.len() as u64, Ordering::Relaxed);
        if !failing {
            tracing::warn!(
                endpoint = %self.options.endpoint,
                spans = spans.len(),
                error = %why,
                "span export failed; spans are dropped until the collector takes them again"
            );
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_taken_only_when_well_formed() {
        let (trace, parent) =
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(trace[0], 0x4b);
        assert_eq!(parent[7], 0xb7);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
        // A later version may carry more.
        assert!(
            parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")
                .is_some()
        );
    }

    #[test]
    fn ids_are_never_zero_and_differ() {
        let a = new_span_id();
        let b = new_span_id();
        assert_ne!(a, [0; 8]);
        assert_ne!(a, b);
        assert_ne!(new_trace_id(), [0; 16]);
    }
}
