//! Process metrics: HTTP requests per route (count and latency histogram)
//! and job runs, rendered with the memory aggregates and the writer queue
//! depth in the Prometheus text format.
//!
//! Routes are labelled by their pattern (`/v1/records/{id}/reinforce`), not
//! the path, so ids do not multiply the series.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::store::MemoryStats;

/// How much the writers have worked since the service started.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriterStats {
    /// Writes waiting in the queues now.
    pub queue_depth: usize,
    /// Seconds spent in transactions and scrubs, all writers together.
    pub busy_seconds: f64,
    pub transactions: u64,
}

/// Upper bounds of the latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        for (bucket, bound) in self.buckets.iter_mut().zip(LATENCY_BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }
}

#[derive(Default)]
struct JobStats {
    succeeded: u64,
    failed: u64,
    seconds: f64,
}

#[derive(Default)]
pub struct Metrics {
    /// (method, route, status) -> requests.
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    /// (method, route) -> latency.
    latency: Mutex<BTreeMap<(String, String), Histogram>>,
    jobs: Mutex<BTreeMap<String, JobStats>>,
    embedder: EmbedderStats,
}

/// What the embedder did, when there is one.
#[derive(Default)]
struct EmbedderStats {
    stored: AtomicU64,
    /// Requests that failed and will be tried again.
    retried: AtomicU64,
    /// Texts the endpoint refused (left without a vector).
    refused: AtomicU64,
}

/// One step of the embedder, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderEvent {
    Stored(u64),
    Retried,
    Refused(u64),
}

impl Metrics {
    /// Metrics for a service with these jobs: their series exist, at 0,
    /// before a first run, so a dashboard or alert sees "never ran" rather
    /// than "no data".
    pub fn with_jobs<'a>(jobs: impl IntoIterator<Item = &'a str>) -> Self {
        let metrics = Metrics::default();
        metrics.jobs.lock().expect("metrics lock").extend(
            jobs.into_iter()
                .map(|job| (job.to_string(), JobStats::default())),
        );
        metrics
    }

    pub fn request_finished(&self, method: &str, route: &str, status: u16, seconds: f64) {
        *self
            .requests
            .lock()
            .expect("metrics lock")
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        self.latency
            .lock()
            .expect("metrics lock")
            .entry((method.to_string(), route.to_string()))
            .or_default()
            .observe(seconds);
    }

    pub fn job_finished(&self, job: &str, succeeded: bool, seconds: f64) {
        let mut jobs = self.jobs.lock().expect("metrics lock");
        let stats = jobs.entry(job.to_string()).or_default();
        if succeeded {
            stats.succeeded += 1;
        } else {
            stats.failed += 1;
        }
        stats.seconds += seconds;
    }

    pub fn embedder(&self, event: EmbedderEvent) {
        let stats = &self.embedder;
        match event {
            EmbedderEvent::Stored(n) => stats.stored.fetch_add(n, Ordering::Relaxed),
            EmbedderEvent::Retried => stats.retried.fetch_add(1, Ordering::Relaxed),
            EmbedderEvent::Refused(n) => stats.refused.fetch_add(n, Ordering::Relaxed),
        };
    }

    /// The Prometheus text exposition of everything.
    pub fn render(
        &self,
        memory: &MemoryStats,
        writer: WriterStats,
        reads_in_flight: usize,
    ) -> String {
        let mut out = String::new();
        let gauge = |out: &mut String, name: &str, help: &str, value: f64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        };
        gauge(
            &mut out,
            "engram_records",
            "Records stored.",
            memory.total_records as f64,
        );
        let _ = writeln!(out, "# HELP engram_records_by_type Records stored per memory type.\n# TYPE engram_records_by_type gauge");
        for (memory_type, count) in &memory.records_by_type {
            let _ = writeln!(
                out,
                "engram_records_by_type{{type=\"{memory_type}\"}} {count}"
            );
        }
        let _ = writeln!(out, "# HELP engram_records_by_salience Records per salience range (as of the last sweep).\n# TYPE engram_records_by_salience gauge");
        for (range, count) in &memory.salience_distribution {
            let _ = writeln!(
                out,
                "engram_records_by_salience{{range=\"{range}\"}} {count}"
            );
        }
        gauge(
            &mut out,
            "engram_salience_average",
            "Mean salience (as of the last sweep).",
            memory.avg_salience,
        );
        gauge(
            &mut out,
            "engram_confidence_average",
            "Mean confidence.",
            memory.avg_confidence,
        );
        gauge(
            &mut out,
            "engram_records_active",
            "Records with status active.",
            memory.active_records as f64,
        );
        gauge(
            &mut out,
            "engram_records_pinned",
            "Pinned records.",
            memory.pinned_records as f64,
        );
        gauge(
            &mut out,
            "engram_audit_entries",
            "Audit log entries.",
            memory.total_audit_entries as f64,
        );
        gauge(
            &mut out,
            "engram_growth_rate",
            "Share of records created in the last 24 hours.",
            memory.growth_rate,
        );
        gauge(
            &mut out,
            "engram_retrieval_usefulness",
            "Share of audit actions that are reinforcements.",
            memory.retrieval_usefulness,
        );
        gauge(
            &mut out,
            "engram_competence_success_rate",
            "Successes over all recorded competence runs.",
            memory.competence_success_rate,
        );
        gauge(
            &mut out,
            "engram_plan_reuse_frequency",
            "Mean execution count of plan graphs.",
            memory.plan_reuse_frequency,
        );
        gauge(
            &mut out,
            "engram_revision_rate",
            "Share of audit actions that revise knowledge.",
            memory.revision_rate,
        );
        gauge(
            &mut out,
            "engram_writer_queue_depth",
            "Writes waiting for the writer.",
            writer.queue_depth as f64,
        );
        let counter = |out: &mut String, name: &str, help: &str, value: f64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        };
        counter(
            &mut out,
            "engram_writer_busy_seconds_total",
            "Time the writers spent in transactions and scrubs.",
            writer.busy_seconds,
        );
        counter(
            &mut out,
            "engram_writer_transactions_total",
            "Write transactions, each holding one or more writes.",
            writer.transactions as f64,
        );
        gauge(
            &mut out,
            "engram_reads_in_flight",
            "Reads in progress (retrievals, lookups by id, histories).",
            reads_in_flight as f64,
        );

        if let Some(spans) = crate::telemetry::otlp::stats() {
            let count = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed) as f64;
            counter(
                &mut out,
                "engram_trace_spans_exported_total",
                "Spans the collector took.",
                count(&spans.exported),
            );
            counter(
                &mut out,
                "engram_trace_spans_dropped_total",
                "Spans dropped: the queue to the collector was full, or the collector did not take their batch.",
                count(&spans.dropped),
            );
            counter(
                &mut out,
                "engram_trace_export_failures_total",
                "Batches of spans the collector did not take.",
                count(&spans.failed_batches),
            );
        }

        let _ = writeln!(out, "# HELP engram_http_requests_total HTTP requests by route and status.\n# TYPE engram_http_requests_total counter");
        for ((method, route, status), count) in self.requests.lock().expect("metrics lock").iter() {
            let _ = writeln!(out, "engram_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {count}");
        }
        let _ = writeln!(out, "# HELP engram_http_request_duration_seconds HTTP request latency by route.\n# TYPE engram_http_request_duration_seconds histogram");
        for ((method, route), histogram) in self.latency.lock().expect("metrics lock").iter() {
            let labels = format!("method=\"{method}\",route=\"{route}\"");
            for (bound, count) in LATENCY_BUCKETS.iter().zip(histogram.buckets) {
                let _ = writeln!(out, "engram_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {count}");
            }
            let _ = writeln!(
                out,
                "engram_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                histogram.count
            );
            let _ = writeln!(
                out,
                "engram_http_request_duration_seconds_sum{{{labels}}} {}",
                histogram.sum
            );
            let _ = writeln!(
                out,
                "engram_http_request_duration_seconds_count{{{labels}}} {}",
                histogram.count
            );
        }
        let jobs = self.jobs.lock().expect("metrics lock");
        let _ = writeln!(out, "# HELP engram_job_runs_total Maintenance job runs by outcome.\n# TYPE engram_job_runs_total counter");
        for (job, stats) in jobs.iter() {
            let _ = writeln!(
                out,
                "engram_job_runs_total{{job=\"{job}\",outcome=\"succeeded\"}} {}",
                stats.succeeded
            );
            let _ = writeln!(
                out,
                "engram_job_runs_total{{job=\"{job}\",outcome=\"failed\"}} {}",
                stats.failed
            );
        }
        let _ = writeln!(out, "# HELP engram_job_duration_seconds_total Time spent in maintenance job runs.\n# TYPE engram_job_duration_seconds_total counter");
        for (job, stats) in jobs.iter() {
            let _ = writeln!(
                out,
                "engram_job_duration_seconds_total{{job=\"{job}\"}} {}",
                stats.seconds
            );
        }
        let embedder = &self.embedder;
        for (name, help, counter) in [
            (
                "engram_embeddings_stored_total",
                "Vectors the embedder stored.",
                &embedder.stored,
            ),
            (
                "engram_embedding_requests_retried_total",
                "Embedding requests that failed and are retried.",
                &embedder.retried,
            ),
            (
                "engram_embedding_texts_refused_total",
                "Texts the embeddings endpoint refused.",
                &embedder.refused,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                counter.load(Ordering::Relaxed)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_lands_in_every_bucket_at_or_above_it() {
        let mut h = Histogram::default();
        h.observe(0.003);
        assert_eq!(h.buckets[0], 0);
        assert_eq!(h.buckets[1], 0);
        assert_eq!(h.buckets[2], 1);
        assert_eq!(*h.buckets.last().unwrap(), 1);
        assert_eq!(h.count, 1);
    }
}
