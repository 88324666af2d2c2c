//! `loadtests erase`: erasing one tenant of a shared memory while the
//! others go on writing. Loads `--records` records, a tenth of them in the
//! scope to erase, then erases that scope through `POST /v1/erase` while
//! `--clients` clients ingest single records into other scopes; prints how
//! long the erasure took and the ingest latencies while it ran.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use loadtests::http::{client, post};

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

pub async fn run(options: EraseOptions) -> Result<String, String> {
    let http = client(&options.headers);
    let started = Instant::now();
    load(&options, &http).await?;
    let loaded = started.elapsed();
    let erasing = Rc::new(Cell::new(true));
    let mut writers = Vec::new();
    for c in 0..options.clients {
        let (http, erasing) = (http.clone(), erasing.clone());
        let url = format!("{}/v1/ingest/event", options.url);
        writers.push(actix_rt::spawn(async move {
            let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            let mut n = 0u64;
            while erasing.get() {
                let body = json!({"source": "loadtests", "event_kind": "user_input",
                                  "ref": format!("w{c}-{n}"), "scope": "tenant-live",
                                  "summary": "written while a tenant is erased"});
                let sent = Instant::now();
                let (status, answer) = post(&http, &url, &body).await?;
                if status != 201 {
                    return Err(format!("an ingest answered {status}: {answer}"));
                }
                latency
                    .record(sent.elapsed().as_micros().max(1) as u64)
                    .ok();
                n += 1;
            }
            Ok::<_, String>(latency)
        }));
    }
    // The writers are going before the erasure starts.
    actix_rt::time::sleep(Duration::from_millis(500)).await;
    let erase_started = Instant::now();
    let (status, report) = post(
        &http,
        &format!("{}/v1/erase", options.url),
        &json!({"scope": "tenant-0", "actor": "loadtests", "rationale": "tenant left"}),
    )
    .await?;
    let took = erase_started.elapsed();
    erasing.set(false);
    if status != 200 {
        return Err(format!("the erasure answered {status}: {report}"));
    }
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for writer in writers {
        latency
            .add(writer.await.map_err(|e| e.to_string())??)
            .map_err(|e| e.to_string())?;
    }
    let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1000.0;
    Ok(format!(
        "loaded {} records in {:.1} s\n\
         erased {} (+{} derived) of scope tenant-0 in {:.2} s (server: {} ms)\n\
         ingests meanwhile: {} at {} clients, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms\n",
        options.records,
        loaded.as_secs_f64(),
        report["erased"],
        report["derived_erased"],
        took.as_secs_f64(),
        report["took_ms"],
        latency.len(),
        options.clients,
        ms(0.5),
        ms(0.99),
        latency.max() as f64 / 1000.0
    ))
}
