//! `loadtests erase`: erasing single records, then one tenant of a shared
//! memory, while the others go on writing. Loads `--records` records, a
//! tenth of them in the scope to erase; while `--clients` clients ingest
//! single records into another scope, measures their latency alone for
//! 3 s, then erases 20 records one request each, then (the clients paused)
//! 20 more, measuring the writer's time for each from `GET /metrics`, then
//! the whole scope through `POST /v1/erase`; prints how long each took and
//! the ingest latencies of each phase.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use loadtests::http::{client, metric, post};

pub struct EraseOptions {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub records: u64,
    pub clients: usize,
}

const SCOPES: u64 = 10;
const BATCH: u64 = 500;

fn item(n: u64) -> Value {
    json!({"kind": "event", "source": "loadtests", "event_kind": "user_input",
           "ref": format!("erase-{n}"), "scope": format!("tenant-{}", n % SCOPES),
           "summary": format!("tenant note {n}: the billing service was slow at {}", n % 97)})
}

/// Loads the records, 500 to a batch from 4 clients.
async fn load(options: &EraseOptions, http: &awc::Client) -> Result<(), String> {
    let next = Rc::new(Cell::new(0u64));
    let url = format!("{}/v1/ingest/batch", options.url);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (http, url, next, total) = (http.clone(), url.clone(), next.clone(), options.records);
        tasks.push(actix_rt::spawn(async move {
            loop {
                let from = next.get();
                if from >= total {
                    return Ok::<_, String>(());
                }
                let to = (from + BATCH).min(total);
                next.set(to);
                let items: Vec<Value> = (from..to).map(item).collect();
                let (status, answer) = post(&http, &url, &json!({"items": items})).await?;
                if status != 201 {
                    return Err(format!("a batch answered {status}: {answer}"));
                }
            }
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// What the ingesting clients are measuring: ingests alone, then during
/// the erasures of one record each, then (after a pause, when they send
/// nothing) during the scope's erasure.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Baseline = 0,
    Singles = 1,
    Scope = 2,
    Paused = 3,
    Done = 4,
}

/// How many records are erased one by one, each by its own request.
const SINGLES: usize = 20;

fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap()
}

/// p50, p99 and max of `h`, in ms.
fn summary(h: &Histogram<u64>) -> String {
    let ms = |v: u64| v as f64 / 1000.0;
    format!(
        "{} ingests, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        h.len(),
        ms(h.value_at_quantile(0.5)),
        ms(h.value_at_quantile(0.99)),
        ms(h.max())
    )
}

/// The ids of `count` records of `scope`.
async fn ids_in(
    http: &awc::Client,
    url: &str,
    scope: &str,
    count: usize,
) -> Result<Vec<String>, String> {
    let query = json!({"trust": {"max_sensitivity": "hyper", "scopes": [scope]}, "limit": count});
    let (status, answer) = post(http, &format!("{url}/v1/retrieve"), &query).await?;
    if status != 200 {
        return Err(format!("a retrieval answered {status}: {answer}"));
    }
    Ok(answer["records"]
        .as_array()
        .map(|records| {
            records
                .iter()
                .filter_map(|r| r["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// Erases each of `ids` by its own request; answers the client's latency
/// and the server's `took_ms` of each, in microseconds.
async fn erase_each(
    http: &awc::Client,
    url: &str,
    ids: &[String],
) -> Result<(Histogram<u64>, Histogram<u64>), String> {
    let (mut client, mut server) = (histogram(), histogram());
    for id in ids {
        let sent = Instant::now();
        let (status, answer) = post(
            http,
            &format!("{url}/v1/erase"),
            &json!({"ids": [id], "actor": "loadtests", "rationale": "asked to forget"}),
        )
        .await?;
        if status != 200 {
            return Err(format!(
                "an erasure of one record answered {status}: {answer}"
            ));
        }
        client.record(sent.elapsed().as_micros().max(1) as u64).ok();
        server
            .record(answer["took_ms"].as_u64().unwrap_or(0).max(1) * 1000)
            .ok();
    }
    Ok((client, server))
}

pub async fn run(options: EraseOptions) -> Result<String, String> {
    let http = client(&options.headers);
    let started = Instant::now();
    load(&options, &http).await?;
    let loaded = started.elapsed();
    let singles = ids_in(&http, &options.url, "tenant-1", SINGLES).await?;
    let quiet = ids_in(&http, &options.url, "tenant-2", SINGLES).await?;
    let phase = Rc::new(Cell::new(Phase::Baseline));
    let mut writers = Vec::new();
    for c in 0..options.clients {
        let (http, phase) = (http.clone(), phase.clone());
        let url = format!("{}/v1/ingest/event", options.url);
        writers.push(actix_rt::spawn(async move {
            let mut latency = [histogram(), histogram(), histogram()];
            let mut n = 0u64;
            loop {
                let now = phase.get();
                match now {
                    Phase::Done => break,
                    Phase::Paused => {
                        actix_rt::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                    _ => {}
                }
                let body = json!({"source": "loadtests", "event_kind": "user_input",
                                  "ref": format!("w{c}-{n}"), "scope": "tenant-live",
                                  "summary": "written while a tenant is erased"});
                let sent = Instant::now();
                let (status, answer) = post(&http, &url, &body).await?;
                if status != 201 {
                    return Err(format!("an ingest answered {status}: {answer}"));
                }
                latency[now as usize]
                    .record(sent.elapsed().as_micros().max(1) as u64)
                    .ok();
                n += 1;
            }
            Ok::<_, String>(latency)
        }));
    }
    let outcome = phases(&options, &http, &phase, &singles, &quiet).await;
    phase.set(Phase::Done);
    let mut latency = [histogram(), histogram(), histogram()];
    for writer in writers {
        let theirs = writer.await.map_err(|e| e.to_string())??;
        for (all, one) in latency.iter_mut().zip(theirs.iter()) {
            all.add(one).map_err(|e| e.to_string())?;
        }
    }
    let Phases {
        single,
        single_server,
        writer_ms,
        scope_took,
        report,
    } = outcome?;
    let ms = |v: u64| v as f64 / 1000.0;
    Ok(format!(
        "loaded {} records in {:.1} s\n\
         ingests alone (3 s, {} clients): {}\n\
         erased {} records one at a time: each p50 {:.2} ms, max {:.2} ms (server's took_ms: p50 {:.0}, max {:.0})\n\
         ingests meanwhile: {}\n\
         erased {} more alone: writer time each p50 {:.2} ms, max {:.2} ms\n\
         erased {} (+{} derived) of scope tenant-0 in {:.2} s (server: {} ms)\n\
         ingests meanwhile: {}\n",
        options.records,
        loaded.as_secs_f64(),
        options.clients,
        summary(&latency[Phase::Baseline as usize]),
        single.len(),
        ms(single.value_at_quantile(0.5)),
        ms(single.max()),
        ms(single_server.value_at_quantile(0.5)),
        ms(single_server.max()),
        summary(&latency[Phase::Singles as usize]),
        writer_ms.len(),
        ms(writer_ms.value_at_quantile(0.5)),
        ms(writer_ms.max()),
        report["erased"],
        report["derived_erased"],
        scope_took.as_secs_f64(),
        report["took_ms"],
        summary(&latency[Phase::Scope as usize]),
    ))
}

/// What the erasures measured.
struct Phases {
    single: Histogram<u64>,
    single_server: Histogram<u64>,
    /// The writer's time for each erasure made while nothing else writes.
    writer_ms: Histogram<u64>,
    scope_took: Duration,
    report: Value,
}

async fn phases(
    options: &EraseOptions,
    http: &awc::Client,
    phase: &Cell<Phase>,
    singles: &[String],
    quiet: &[String],
) -> Result<Phases, String> {
    // Ingest alone first: the baseline the rest is compared with.
    actix_rt::time::sleep(Duration::from_secs(3)).await;
    phase.set(Phase::Singles);
    let (single, single_server) = erase_each(http, &options.url, singles).await?;
    // With the clients paused (their last ingests given time to commit),
    // the writer's busy time across one erasure is that erasure's.
    phase.set(Phase::Paused);
    actix_rt::time::sleep(Duration::from_millis(500)).await;
    let busy = "engram_writer_busy_seconds_total";
    let mut writer_ms = histogram();
    for id in quiet {
        let before = metric(http, &options.url, busy).await?;
        erase_each(http, &options.url, std::slice::from_ref(id)).await?;
        let after = metric(http, &options.url, busy).await?;
        writer_ms
            .record((((after - before) * 1e6) as u64).max(1))
            .ok();
    }
    phase.set(Phase::Scope);
    let erase_started = Instant::now();
    let (status, report) = post(
        http,
        &format!("{}/v1/erase", options.url),
        &json!({"scope": "tenant-0", "actor": "loadtests", "rationale": "tenant left"}),
    )
    .await?;
    let scope_took = erase_started.elapsed();
    if status != 200 {
        return Err(format!("the erasure answered {status}: {report}"));
    }
    Ok(Phases {
        single,
        single_server,
        writer_ms,
        scope_took,
        report,
    })
}
