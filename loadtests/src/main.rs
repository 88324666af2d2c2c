//! `loadtests`: drives an engram server with concurrent clients and
//! reports throughput, latency percentiles and errors, then checks that
//! every acknowledged write can be read back with the content sent.
//!
//! Clients run closed-loop (each sends its next request when the previous
//! one is answered) on one thread; run several processes for more load.

mod workload;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use workload::{ingest_request, Write};

const USAGE: &str = "\
Usage: loadtests ingest [options]

Scenarios:
  ingest              single-record ingests: events, tool outputs,
                      observations and working states

Options:
  --url URL           engram base URL (default http://127.0.0.1:8080)
  --clients N         concurrent clients (default 16)
  --requests N        total requests (default 10000)
  --duration SECS     run for this many seconds instead of a request count
  --seed N            workload seed (default 1)
  --json              print the final report as JSON on stdout
  --no-verify         skip reading every acknowledged write back";

#[derive(Debug, Clone)]
struct Options {
    url: String,
    clients: usize,
    requests: u64,
    duration: Option<Duration>,
    seed: u64,
    json: bool,
    verify: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    match args.next().as_deref() {
        Some("ingest") => {}
        Some("-h") | Some("--help") | None => return Err(USAGE.to_string()),
        Some(other) => return Err(format!("unknown scenario {other:?}\n\n{USAGE}")),
    }
    let mut options = Options {
        url: "http://127.0.0.1:8080".into(),
        clients: 16,
        requests: 10_000,
        duration: None,
        seed: 1,
        json: false,
        verify: true,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--url" => options.url = value("--url")?.trim_end_matches('/').to_string(),
            "--clients" => {
                options.clients = number(&value("--clients")?, "--clients")?.max(1) as usize
            }
            "--requests" => options.requests = number(&value("--requests")?, "--requests")?,
            "--duration" => {
                options.duration = Some(Duration::from_secs(number(
                    &value("--duration")?,
                    "--duration",
                )?))
            }
            "--seed" => options.seed = number(&value("--seed")?, "--seed")?,
            "--json" => options.json = true,
            "--no-verify" => options.verify = false,
            other => return Err(format!("unknown option {other:?}\n\n{USAGE}")),
        }
    }
    Ok(options)
}

fn number(text: &str, name: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("{name} takes a whole number, got {text:?}"))
}

/// What the clients share while the run goes on.
struct Run {
    options: Options,
    started: Instant,
    next_index: u64,
    completed: u64,
    latency_us: Histogram<u64>,
    errors: BTreeMap<String, u64>,
    acknowledged: Vec<(String, u64)>,
}

impl Run {
    /// The next request index, or `None` when the run is over.
    fn claim(&mut self) -> Option<u64> {
        let over = match self.options.duration {
            Some(limit) => self.started.elapsed() >= limit,
            None => self.next_index >= self.options.requests,
        };
        if over {
            return None;
        }
        self.next_index += 1;
        Some(self.next_index - 1)
    }
}

fn client() -> awc::Client {
    awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .connector(awc::Connector::new().limit(0))
        .finish()
}

async fn post(client: &awc::Client, url: &str, body: &Value) -> Result<(u16, Value), String> {
    let mut response = client
        .post(url)
        .send_json(body)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let bytes = response
        .body()
        .limit(64 << 20)
        .await
        .map_err(|e| e.to_string())?;
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok((status, value))
}

async fn drive(run: Rc<RefCell<Run>>, client: awc::Client) {
    let (url, seed) = {
        let run = run.borrow();
        (run.options.url.clone(), run.options.seed)
    };
    loop {
        let Some(index) = run.borrow_mut().claim() else {
            break;
        };
        let write = ingest_request(seed, index);
        let sent = Instant::now();
        let answer = post(&client, &format!("{url}{}", write.path), &write.body).await;
        let micros = sent.elapsed().as_micros() as u64;
        let mut run = run.borrow_mut();
        run.completed += 1;
        let _ = run.latency_us.record(micros.max(1));
        match answer {
            Ok((status, body)) if (200..300).contains(&status) => {
                match body.pointer("/record/id").and_then(Value::as_str) {
                    Some(id) => run.acknowledged.push((id.to_string(), index)),
                    None => {
                        *run.errors
                            .entry("2xx without a record id".into())
                            .or_default() += 1
                    }
                }
            }
            Ok((status, _)) => *run.errors.entry(status.to_string()).or_default() += 1,
            Err(e) => *run.errors.entry(format!("transport: {e}")).or_default() += 1,
        }
    }
}

async fn progress(run: Rc<RefCell<Run>>) {
    let mut last = 0;
    loop {
        actix_rt::time::sleep(Duration::from_secs(1)).await;
        let run = run.borrow();
        let done = run.completed;
        eprintln!(
            "[{:>5.1}s] {done} requests, {} req/s, {} errors",
            run.started.elapsed().as_secs_f64(),
            done - last,
            run.errors.values().sum::<u64>()
        );
        last = done;
    }
}

/// Reads every acknowledged write back; answers (verified, missing,
/// different).
async fn verify(options: &Options, acknowledged: &[(String, u64)]) -> (u64, u64, u64) {
    let next = Rc::new(RefCell::new(0usize));
    let counts = Rc::new(RefCell::new((0u64, 0u64, 0u64)));
    let acknowledged = Rc::new(acknowledged.to_vec());
    let mut tasks = Vec::new();
    for _ in 0..options.clients {
        let (next, counts, acknowledged) = (next.clone(), counts.clone(), acknowledged.clone());
        let (url, seed) = (options.url.clone(), options.seed);
        tasks.push(actix_rt::spawn(async move {
            let client = client();
            loop {
                let i = {
                    let mut next = next.borrow_mut();
                    *next += 1;
                    *next - 1
                };
                let Some((id, index)) = acknowledged.get(i) else {
                    break;
                };
                let Write { expect, .. } = ingest_request(seed, *index);
                let trust = json!({"trust": {"max_sensitivity": "hyper", "actor_id": "loadtests"}});
                let answer = post(&client, &format!("{url}/v1/retrieve/{id}"), &trust).await;
                let mut counts = counts.borrow_mut();
                match answer {
                    Ok((200, body)) => {
                        let record = &body["record"];
                        if expect
                            .iter()
                            .all(|(pointer, value)| record.pointer(pointer) == Some(value))
                        {
                            counts.0 += 1;
                        } else {
                            counts.2 += 1;
                        }
                    }
                    _ => counts.1 += 1,
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let counts = *counts.borrow();
    counts
}

fn main() {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let ok = actix_rt::System::new().block_on(async move { run(options).await });
    std::process::exit(if ok { 0 } else { 1 });
}

async fn run(options: Options) -> bool {
    let run = Rc::new(RefCell::new(Run {
        options: options.clone(),
        started: Instant::now(),
        next_index: 0,
        completed: 0,
        latency_us: Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds"),
        errors: BTreeMap::new(),
        acknowledged: Vec::new(),
    }));
    eprintln!(
        "ingest against {} with {} clients, seed {}",
        options.url, options.clients, options.seed
    );
    let ticker = actix_rt::spawn(progress(run.clone()));
    let clients: Vec<_> = (0..options.clients)
        .map(|_| actix_rt::spawn(drive(run.clone(), client())))
        .collect();
    for c in clients {
        let _ = c.await;
    }
    ticker.abort();
    let elapsed = run.borrow().started.elapsed();
    let acknowledged = std::mem::take(&mut run.borrow_mut().acknowledged);
    let verified = if options.verify {
        Some(verify(&options, &acknowledged).await)
    } else {
        None
    };
    let run = run.borrow();
    let h = &run.latency_us;
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let report = json!({
        "scenario": "ingest",
        "url": options.url,
        "clients": options.clients,
        "seed": options.seed,
        "requests": run.completed,
        "acknowledged": acknowledged.len(),
        "elapsed_seconds": elapsed.as_secs_f64(),
        "throughput_per_second": run.completed as f64 / elapsed.as_secs_f64().max(1e-9),
        "latency_ms": {"p50": ms(0.50), "p90": ms(0.90), "p99": ms(0.99), "p99_9": ms(0.999), "max": h.max() as f64 / 1000.0},
        "errors": run.errors,
        "verification": verified.map(|(ok, missing, different)| json!({"verified": ok, "missing": missing, "different": different})),
    });
    if options.json {
        println!("{report:#}");
    } else {
        print_report(&report);
    }
    let lost = verified.is_some_and(|(_, missing, different)| missing + different > 0);
    run.errors.is_empty() && !lost
}

fn print_report(report: &Value) {
    let latency = &report["latency_ms"];
    println!("requests      {}", report["requests"]);
    println!(
        "elapsed       {:.2} s",
        report["elapsed_seconds"].as_f64().unwrap_or(0.0)
    );
    println!(
        "throughput    {:.0} req/s",
        report["throughput_per_second"].as_f64().unwrap_or(0.0)
    );
    println!(
        "latency (ms)  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}",
        latency["p50"].as_f64().unwrap_or(0.0),
        latency["p90"].as_f64().unwrap_or(0.0),
        latency["p99"].as_f64().unwrap_or(0.0),
        latency["p99_9"].as_f64().unwrap_or(0.0),
        latency["max"].as_f64().unwrap_or(0.0),
    );
    println!("errors        {}", report["errors"]);
    match report["verification"].as_object() {
        Some(v) => println!(
            "verification  {} verified, {} missing, {} different",
            v["verified"], v["missing"], v["different"]
        ),
        None => println!("verification  skipped"),
    }
}
