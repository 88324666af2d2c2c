//! `loadtests targets`: the write-throughput targets, each measured as a
//! ratio against the bare baseline measured in the same run.

use std::time::Duration;

use serde_json::{json, Value};

use crate::driver::{self, LoadOptions, Report, Scenario};
use crate::{baseline, baseline_pg};

pub struct TargetOptions {
    pub load: LoadOptions,
    /// The PostgreSQL database of the server measured: the baselines are
    /// bare tokio-postgres loops on it. `None`: SQLite baselines.
    pub postgres: Option<String>,
    /// Records each baseline run writes.
    pub baseline_records: u64,
    pub batch_size: u64,
    pub batch_clients: usize,
}

fn scratch_dir() -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("engram-baseline-{}-{nanos}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Runs the baselines (1, 64 and 1,000 records per transaction on SQLite;
/// 64 and 1,000 on PostgreSQL), then batches and single-record ingest at 64
/// clients against the server.
pub async fn run(options: TargetOptions) -> Result<Value, String> {
    let dir = scratch_dir();
    let mut baselines = Vec::new();
    let sizes: &[u64] = match options.postgres {
        Some(_) => &[64, 1000],
        None => &[1, 64, 1000],
    };
    for &per_transaction in sizes {
        let result = match &options.postgres {
            Some(url) => baseline_pg::run(
                url,
                options.baseline_records,
                per_transaction,
                options.load.seed,
            )
            .await
            .map_err(|e| format!("baseline: {e}"))?,
            None => baseline::run(
                &dir.join(format!("baseline-{per_transaction}.db")),
                options.baseline_records,
                per_transaction,
                options.load.seed,
            )
            .map_err(|e| format!("baseline: {e}"))?,
        };
        eprintln!(
            "baseline: {} records at {per_transaction} per transaction: {:.0} records/s",
            result.records,
            result.records_per_second()
        );
        baselines.push(result);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let bare = |per: u64| {
        baselines
            .iter()
            .find(|b| b.per_transaction == per)
            .map_or(0.0, |b| b.records_per_second())
    };

    // Batches first: the database is smallest then, as for the baseline.
    let batch = driver::run(
        Scenario::Batch {
            size: options.batch_size,
        },
        LoadOptions {
            clients: options.batch_clients,
            ..options.load.clone()
        },
    )
    .await?;
    let ingest = driver::run(
        Scenario::Ingest,
        LoadOptions {
            clients: 64,
            ..options.load.clone()
        },
    )
    .await?;
    let row = |name: &str, report: &Report, against: u64, p99_limit: Option<f64>| {
        let ratio = report.records_per_second() / bare(against).max(1e-9);
        let p99 = report.latency_ms[2];
        let met = ratio >= 1.0 && p99_limit.is_none_or(|limit| p99 <= limit) && report.ok();
        println!(
            "{name:<34} {:>9.0} records/s  bare@{against:<5} {:>9.0}/s  ratio {ratio:>5.2}  p99 {p99:>7.2} ms{}  {}",
            report.records_per_second(),
            bare(against),
            p99_limit.map_or(String::new(), |l| format!(" (<= {l})")),
            if met { "met" } else { "MISSED" }
        );
        json!({"name": name, "records_per_second": report.records_per_second(), "baseline_per_transaction": against,
               "baseline_records_per_second": bare(against), "ratio": ratio, "p99_ms": p99, "p99_limit_ms": p99_limit,
               "met": met, "report": report.to_json()})
    };
    println!();
    let rows = vec![
        // The p99 target of single-record ingest is SQLite's (one node);
        // on PostgreSQL the target is the ratio alone.
        row(
            "ingest, 64 clients",
            &ingest,
            64,
            options.postgres.is_none().then_some(25.0),
        ),
        row(
            &format!(
                "ingest/batch of {}, {} clients",
                options.batch_size, options.batch_clients
            ),
            &batch,
            1000,
            None,
        ),
    ];
    Ok(json!({
        "baselines": baselines.iter().map(|b| json!({
            "per_transaction": b.per_transaction, "records": b.records, "records_per_second": b.records_per_second()
        })).collect::<Vec<_>>(),
        "targets": rows,
        "duration_seconds": options.load.duration.map(|d: Duration| d.as_secs_f64()),
    }))
}
