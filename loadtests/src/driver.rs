//! The load driver: sends a scenario's requests closed-loop (each client
//! sends its next request when the last is answered) or open-loop (a fixed
//! arrival rate, latency measured from when each request was due, so a slow
//! server cannot hide its queueing), then reads every acknowledged write
//! back.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use loadtests::embed;
pub use loadtests::http::{client, post};

use crate::workload::{
    batch_request, ingest_request, narrow_retrieval, search_retrieval, topic_fact, topic_fill,
    topic_observation, topic_query, varied_retrieval, Rng,
};

#[derive(Debug, Clone, PartialEq)]
pub enum Scenario {
    /// Single-record ingests.
    Ingest,
    /// `ingest/batch` with this many items.
    Batch { size: u64 },
    /// Ingests and retrievals under varied trust; `read_ratio` of requests
    /// are reads.
    Mixed { read_ratio: f64 },
    /// Retrievals only: limit 20, a trust context that sees about 10%.
    Retrieve,
    /// The same, ranked by a three-word query.
    Search,
    /// The same, ranked by the vector of a three-word query, and by its
    /// text too when `text`.
    Vector { text: bool },
    /// Many clients superseding the same few facts.
    Revise { topics: usize },
    /// Ingests while runs of these jobs (decay, consolidation) are
    /// triggered.
    DuringMaintenance { every: Duration, jobs: Vec<String> },
    /// `auto` topics ingests of 5-field observations.
    Topics,
    /// `new_topic` ingests, one topic per request.
    TopicsFill,
    /// Topic queries by two title words, one hop.
    TopicsQuery,
}

impl Scenario {
    pub fn name(&self) -> &'static str {
        match self {
            Scenario::Ingest => "ingest",
            Scenario::Batch { .. } => "batch",
            Scenario::Mixed { .. } => "mixed",
            Scenario::Retrieve => "retrieve",
            Scenario::Search => "search",
            Scenario::Vector { text: false } => "vector",
            Scenario::Vector { text: true } => "hybrid",
            Scenario::Revise { .. } => "revise",
            Scenario::DuringMaintenance { .. } => "during-maintenance",
            Scenario::Topics => "topics",
            Scenario::TopicsFill => "topics-fill",
            Scenario::TopicsQuery => "topics-query",
        }
    }
}

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub url: String,
    pub clients: usize,
    pub requests: u64,
    pub duration: Option<Duration>,
    /// Open loop at this many requests per second; closed loop when `None`.
    pub rate: Option<f64>,
    pub seed: u64,
    pub verify: bool,
    pub progress: bool,
    /// Extra headers on every request (e.g. an API key).
    pub headers: Vec<(String, String)>,
    /// Dimensions of the vectors records and queries carry; 0: none
    /// (vector queries then use [`embed::DIMENSIONS`]).
    pub vectors: usize,
}

/// One request of a scenario.
enum Op {
    /// A write whose records are at these JSON pointers of the answer, each
    /// expected to hold these values.
    Write {
        path: &'static str,
        body: Value,
        records: Vec<(String, Vec<(&'static str, Value)>)>,
    },
    Read {
        path: &'static str,
        body: Value,
    },
    Supersede {
        topic: usize,
    },
}

fn op_for(scenario: &Scenario, seed: u64, index: u64, vectors: usize) -> Op {
    let mut op = op_without_vectors(scenario, seed, index, vectors);
    if vectors > 0 {
        if let Op::Write { body, .. } = &mut op {
            match body.get_mut("items").and_then(Value::as_array_mut) {
                Some(items) => items.iter_mut().for_each(|item| with_vector(item, vectors)),
                None => with_vector(body, vectors),
            }
        }
    }
    op
}

/// Gives an ingest body the test embedder's vector of its text.
fn with_vector(body: &mut Value, dimensions: usize) {
    let vector = embed::embed(&body.to_string(), dimensions);
    body["embedding"] = json!(vector);
}

fn op_without_vectors(scenario: &Scenario, seed: u64, index: u64, vectors: usize) -> Op {
    let mut rng = Rng::new(seed ^ index.rotate_left(17) ^ 0x5EED);
    match scenario {
        Scenario::Ingest | Scenario::DuringMaintenance { .. } => single_write(seed, index),
        Scenario::Batch { size } => {
            let (body, expects) = batch_request(seed, index * size, *size);
            Op::Write {
                path: "/v1/ingest/batch",
                body,
                records: expects
                    .into_iter()
                    .enumerate()
                    .map(|(i, expect)| (format!("/records/{i}"), expect))
                    .collect(),
            }
        }
        Scenario::Mixed { read_ratio } => {
            if (rng.below(1_000_000) as f64) < read_ratio * 1_000_000.0 {
                Op::Read {
                    path: "/v1/retrieve",
                    body: varied_retrieval(&mut rng),
                }
            } else {
                single_write(seed, index)
            }
        }
        Scenario::Topics => Op::Write {
            path: "/v1/topics/ingest",
            body: topic_observation(&mut rng),
            records: Vec::new(),
        },
        Scenario::TopicsFill => Op::Write {
            path: "/v1/topics/ingest",
            body: topic_fill(&mut rng, index),
            records: Vec::new(),
        },
        Scenario::TopicsQuery => Op::Read {
            path: "/v1/topics/query",
            body: topic_query(&mut rng),
        },
        Scenario::Retrieve => Op::Read {
            path: "/v1/retrieve",
            body: narrow_retrieval(),
        },
        Scenario::Search => Op::Read {
            path: "/v1/retrieve",
            body: search_retrieval(&mut rng),
        },
        Scenario::Vector { text } => {
            let mut body = search_retrieval(&mut rng);
            let query = body["task_descriptor"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let dimensions = if vectors > 0 {
                vectors
            } else {
                embed::DIMENSIONS
            };
            body["query_embedding"] = json!(embed::embed(&query, dimensions));
            if !text {
                body.as_object_mut().map(|b| b.remove("task_descriptor"));
            }
            Op::Read {
                path: "/v1/retrieve",
                body,
            }
        }
        Scenario::Revise { topics } => Op::Supersede {
            topic: rng.below(*topics as u64) as usize,
        },
    }
}

fn single_write(seed: u64, index: u64) -> Op {
    let write = ingest_request(seed, index);
    Op::Write {
        path: write.path,
        body: write.body,
        records: vec![("/record".to_string(), write.expect)],
    }
}

/// State shared by the clients of one run (all on one thread).
struct Run {
    scenario: Scenario,
    options: LoadOptions,
    started: Instant,
    next_index: u64,
    completed: u64,
    records_written: u64,
    conflicts: u64,
    latency_us: Histogram<u64>,
    errors: BTreeMap<String, u64>,
    acknowledged: Vec<Acknowledged>,
    /// For `revise`: the newest version of each topic, how many supersedes
    /// of it succeeded, and the next version number.
    heads: Vec<String>,
    superseded: Vec<u64>,
    next_version: Vec<u64>,
    new_versions: Vec<String>,
}

impl Run {
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

    fn error(&mut self, what: impl Into<String>) {
        *self.errors.entry(what.into()).or_default() += 1;
    }
}

async fn execute(run: &Rc<RefCell<Run>>, client: &awc::Client, index: u64, due: Instant) {
    let (url, op) = {
        let run = run.borrow();
        (
            run.options.url.clone(),
            op_for(&run.scenario, run.options.seed, index, run.options.vectors),
        )
    };
    match op {
        Op::Write {
            path,
            body,
            records,
        } => {
            let answer = post(client, &format!("{url}{path}"), &body).await;
            let mut run = run.borrow_mut();
            record_latency(&mut run, due);
            match answer {
                Ok((status, answer)) if (200..300).contains(&status) => {
                    for (pointer, expect) in records {
                        match answer
                            .pointer(&format!("{pointer}/id"))
                            .and_then(Value::as_str)
                        {
                            Some(id) => {
                                run.records_written += 1;
                                run.acknowledged.push((id.to_string(), expect));
                            }
                            None => run.error("2xx without the record"),
                        }
                    }
                }
                Ok((status, _)) => run.error(status.to_string()),
                Err(e) => run.error(format!("transport: {e}")),
            }
        }
        Op::Read { path, body } => {
            let answer = post(client, &format!("{url}{path}"), &body).await;
            let mut run = run.borrow_mut();
            record_latency(&mut run, due);
            match answer {
                Ok((200, _)) => {}
                Ok((status, _)) => run.error(status.to_string()),
                Err(e) => run.error(format!("transport: {e}")),
            }
        }
        Op::Supersede { topic } => supersede(run, client, &url, topic, due).await,
    }
}

fn record_latency(run: &mut Run, due: Instant) {
    run.completed += 1;
    let micros = due.elapsed().as_micros().max(1) as u64;
    let _ = run.latency_us.record(micros);
}

/// Supersedes the newest version of `topic` as this client knows it; a
/// conflict (another client got there first) is expected, and the client
/// looks up the new head in the history.
async fn supersede(
    run: &Rc<RefCell<Run>>,
    client: &awc::Client,
    url: &str,
    topic: usize,
    due: Instant,
) {
    let (head, version) = {
        let mut run = run.borrow_mut();
        run.next_version[topic] += 1;
        (run.heads[topic].clone(), run.next_version[topic])
    };
    let body = json!({"old_id": head, "new_record": topic_fact(topic, version),
                      "actor": "loadtests", "rationale": format!("version {version}")});
    let answer = post(client, &format!("{url}/v1/revisions/supersede"), &body).await;
    let refresh = {
        let mut run = run.borrow_mut();
        record_latency(&mut run, due);
        match answer {
            Ok((201, answer)) => match answer.pointer("/record/id").and_then(Value::as_str) {
                Some(id) => {
                    run.records_written += 1;
                    run.superseded[topic] += 1;
                    run.new_versions.push(id.to_string());
                    if run.heads[topic] == head {
                        run.heads[topic] = id.to_string();
                    }
                    false
                }
                None => {
                    run.error("2xx without the record");
                    false
                }
            },
            Ok((409, _)) => {
                run.conflicts += 1;
                true
            }
            Ok((status, _)) => {
                run.error(status.to_string());
                false
            }
            Err(e) => {
                run.error(format!("transport: {e}"));
                false
            }
        }
    };
    if refresh {
        if let Ok(newest) = newest_version(client, url, &head).await {
            let mut run = run.borrow_mut();
            if run.heads[topic] == head {
                run.heads[topic] = newest;
            }
        }
    }
}

async fn history(client: &awc::Client, url: &str, id: &str) -> Result<Vec<Value>, String> {
    let trust = json!({"trust": {"max_sensitivity": "hyper", "actor_id": "loadtests"}});
    match post(client, &format!("{url}/v1/records/{id}/history"), &trust).await? {
        (200, body) => Ok(body["chain"].as_array().cloned().unwrap_or_default()),
        (status, body) => Err(format!("history of {id}: {status} {body}")),
    }
}

async fn newest_version(client: &awc::Client, url: &str, id: &str) -> Result<String, String> {
    let chain = history(client, url, id).await?;
    chain
        .last()
        .and_then(|r| r["id"].as_str())
        .map(str::to_string)
        .ok_or_else(|| format!("empty history for {id}"))
}

#[derive(Debug, Clone, Default)]
pub struct Verification {
    pub checked: u64,
    pub verified: u64,
    pub missing: u64,
    pub different: u64,
}

/// Reads every acknowledged write back with `clients` concurrent clients.
pub async fn verify_writes(
    url: &str,
    clients: usize,
    headers: &[(String, String)],
    acknowledged: Vec<Acknowledged>,
) -> Verification {
    let acknowledged = Rc::new(acknowledged);
    let next = Rc::new(RefCell::new(0usize));
    let result = Rc::new(RefCell::new(Verification::default()));
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (acknowledged, next, result) = (acknowledged.clone(), next.clone(), result.clone());
        let url = url.to_string();
        let client = client(headers);
        tasks.push(actix_rt::spawn(async move {
            let trust = json!({"trust": {"max_sensitivity": "hyper", "actor_id": "loadtests"}});
            loop {
                let i = {
                    let mut next = next.borrow_mut();
                    *next += 1;
                    *next - 1
                };
                let Some((id, expect)) = acknowledged.get(i) else {
                    break;
                };
                let answer = post(&client, &format!("{url}/v1/retrieve/{id}"), &trust).await;
                let mut result = result.borrow_mut();
                result.checked += 1;
                match answer {
                    Ok((200, body)) => {
                        let record = &body["record"];
                        if expect
                            .iter()
                            .all(|(pointer, value)| record.pointer(pointer) == Some(value))
                        {
                            result.verified += 1;
                        } else {
                            result.different += 1;
                        }
                    }
                    _ => result.missing += 1,
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let result = result.borrow().clone();
    result
}

#[derive(Debug, Clone, Default)]
pub struct MaintenanceRuns {
    pub decay_runs: u64,
    pub consolidation_runs: u64,
    pub longest_decay_ms: i64,
    pub longest_consolidation_ms: i64,
}

/// Triggers runs of `jobs` every `every` until `stop`.
async fn trigger_maintenance(
    url: String,
    every: Duration,
    jobs: Vec<String>,
    headers: Vec<(String, String)>,
    stop: Rc<RefCell<bool>>,
) -> MaintenanceRuns {
    let client = client(&headers);
    let mut runs = MaintenanceRuns::default();
    while !*stop.borrow() {
        for job in &jobs {
            if let Ok((200, body)) =
                post(&client, &format!("{url}/v1/jobs/{job}/run"), &Value::Null).await
            {
                let ms = body["duration_ms"].as_i64().unwrap_or(0);
                if job == "decay" {
                    runs.decay_runs += 1;
                    runs.longest_decay_ms = runs.longest_decay_ms.max(ms);
                } else {
                    runs.consolidation_runs += 1;
                    runs.longest_consolidation_ms = runs.longest_consolidation_ms.max(ms);
                }
            }
        }
        actix_rt::time::sleep(every).await;
    }
    runs
}

#[derive(Debug, Clone)]
pub struct Report {
    pub scenario: &'static str,
    pub options: LoadOptions,
    pub requests: u64,
    pub records_written: u64,
    pub elapsed: Duration,
    pub latency_ms: [f64; 5],
    pub errors: BTreeMap<String, u64>,
    pub conflicts: u64,
    pub verification: Option<Verification>,
    /// For `revise`: whether every topic's history holds exactly the
    /// versions acknowledged, one of them active.
    pub chains_consistent: Option<bool>,
    pub maintenance: Option<MaintenanceRuns>,
}

impl Report {
    pub fn throughput(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn records_per_second(&self) -> f64 {
        self.records_written as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// No failed request, nothing lost or changed, chains consistent.
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
            && self
                .verification
                .as_ref()
                .is_none_or(|v| v.missing + v.different == 0)
            && self.chains_consistent != Some(false)
    }

    pub fn to_json(&self) -> Value {
        let [p50, p90, p99, p999, max] = self.latency_ms;
        json!({
            "scenario": self.scenario,
            "url": self.options.url,
            "clients": self.options.clients,
            "rate": self.options.rate,
            "seed": self.options.seed,
            "requests": self.requests,
            "records_written": self.records_written,
            "elapsed_seconds": self.elapsed.as_secs_f64(),
            "throughput_per_second": self.throughput(),
            "records_per_second": self.records_per_second(),
            "latency_ms": {"p50": p50, "p90": p90, "p99": p99, "p99_9": p999, "max": max},
            "errors": self.errors,
            "conflicts": self.conflicts,
            "verification": self.verification.as_ref().map(|v| json!({
                "checked": v.checked, "verified": v.verified, "missing": v.missing, "different": v.different
            })),
            "chains_consistent": self.chains_consistent,
            "maintenance": self.maintenance.as_ref().map(|m| json!({
                "decay_runs": m.decay_runs, "consolidation_runs": m.consolidation_runs,
                "longest_decay_ms": m.longest_decay_ms, "longest_consolidation_ms": m.longest_consolidation_ms
            })),
        })
    }

    pub fn print(&self) {
        let [p50, p90, p99, p999, max] = self.latency_ms;
        println!("scenario      {}", self.scenario);
        println!("requests      {}", self.requests);
        println!("elapsed       {:.2} s", self.elapsed.as_secs_f64());
        println!(
            "throughput    {:.0} req/s, {:.0} records/s",
            self.throughput(),
            self.records_per_second()
        );
        println!(
            "latency (ms)  p50 {p50:.2}  p90 {p90:.2}  p99 {p99:.2}  p99.9 {p999:.2}  max {max:.2}"
        );
        println!("errors        {:?}", self.errors);
        if self.conflicts > 0 || self.scenario == "revise" {
            println!(
                "conflicts     {} (revisions that lost a race, as expected)",
                self.conflicts
            );
        }
        if let Some(chains) = self.chains_consistent {
            println!(
                "chains        {}",
                if chains { "consistent" } else { "INCONSISTENT" }
            );
        }
        if let Some(m) = &self.maintenance {
            println!(
                "maintenance   {} decay runs (longest {} ms), {} consolidation runs (longest {} ms)",
                m.decay_runs, m.longest_decay_ms, m.consolidation_runs, m.longest_consolidation_ms
            );
        }
        match &self.verification {
            Some(v) => println!(
                "verification  {} of {} acknowledged writes verified, {} missing, {} different",
                v.verified, v.checked, v.missing, v.different
            ),
            None => println!("verification  skipped"),
        }
    }
}

/// Creates the facts the `revise` scenario supersedes.
async fn create_topics(options: &LoadOptions, topics: usize) -> Result<Vec<String>, String> {
    let client = client(&options.headers);
    let mut heads = Vec::with_capacity(topics);
    for topic in 0..topics {
        match post(
            &client,
            &format!("{}/v1/records", options.url),
            &topic_fact(topic, 0),
        )
        .await?
        {
            (201, body) => heads.push(
                body["record"]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
            (status, body) => return Err(format!("creating topic {topic}: {status} {body}")),
        }
    }
    Ok(heads)
}

/// Every topic's history holds its first version plus one per
/// acknowledged supersede, all distinct, and only the newest is active.
async fn check_chains(
    options: &LoadOptions,
    heads: &[String],
    superseded: &[u64],
    new_versions: &[String],
) -> Result<bool, String> {
    let client = client(&options.headers);
    let mut seen = std::collections::HashSet::new();
    for (topic, head) in heads.iter().enumerate() {
        let chain = history(&client, &options.url, head).await?;
        let active = chain.iter().filter(|r| r["status"] == "active").count();
        let newest_active = chain.last().is_some_and(|r| r["status"] == "active");
        if chain.len() as u64 != superseded[topic] + 1 || active != 1 || !newest_active {
            eprintln!(
                "topic {topic}: {} versions in history, {} supersedes acknowledged, {active} active",
                chain.len(),
                superseded[topic]
            );
            return Ok(false);
        }
        for record in &chain {
            if !seen.insert(record["id"].as_str().unwrap_or_default().to_string()) {
                return Ok(false);
            }
        }
    }
    Ok(new_versions.iter().all(|id| seen.contains(id)))
}

async fn progress(run: Rc<RefCell<Run>>) {
    let mut last = 0;
    loop {
        actix_rt::time::sleep(Duration::from_secs(1)).await;
        let run = run.borrow();
        eprintln!(
            "[{:>6.1}s] {} requests, {} req/s, {} errors",
            run.started.elapsed().as_secs_f64(),
            run.completed,
            run.completed - last,
            run.errors.values().sum::<u64>()
        );
        last = run.completed;
    }
}

/// Runs a scenario, then (with `verify`) reads every acknowledged write
/// back; answers the report.
pub async fn run(scenario: Scenario, options: LoadOptions) -> Result<Report, String> {
    let (mut report, acknowledged) = run_collecting(scenario, options.clone()).await?;
    if options.verify && !acknowledged.is_empty() {
        report.verification = Some(
            verify_writes(
                &options.url,
                options.clients,
                &options.headers,
                acknowledged,
            )
            .await,
        );
    }
    Ok(report)
}

/// An acknowledged write: the record id and what it must hold.
pub type Acknowledged = (String, Vec<(&'static str, Value)>);

/// Runs a scenario; answers its report and the writes it got a 2xx for.
pub async fn run_collecting(
    scenario: Scenario,
    options: LoadOptions,
) -> Result<(Report, Vec<Acknowledged>), String> {
    let topics = match &scenario {
        Scenario::Revise { topics } => create_topics(&options, *topics).await?,
        _ => Vec::new(),
    };
    let topic_count = topics.len();
    let run = Rc::new(RefCell::new(Run {
        scenario: scenario.clone(),
        options: options.clone(),
        started: Instant::now(),
        next_index: 0,
        completed: 0,
        records_written: 0,
        conflicts: 0,
        latency_us: Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds"),
        errors: BTreeMap::new(),
        acknowledged: Vec::new(),
        heads: topics,
        superseded: vec![0; topic_count],
        next_version: vec![0; topic_count],
        new_versions: Vec::new(),
    }));
    let ticker = options
        .progress
        .then(|| actix_rt::spawn(progress(run.clone())));
    let stop = Rc::new(RefCell::new(false));
    let maintenance = match &scenario {
        Scenario::DuringMaintenance { every, jobs } => Some(actix_rt::spawn(trigger_maintenance(
            options.url.clone(),
            *every,
            jobs.clone(),
            options.headers.clone(),
            stop.clone(),
        ))),
        _ => None,
    };
    match options.rate {
        None => {
            let clients: Vec<_> = (0..options.clients.max(1))
                .map(|_| {
                    let run = run.clone();
                    let client = client(&options.headers);
                    actix_rt::spawn(async move {
                        loop {
                            let Some(index) = run.borrow_mut().claim() else {
                                break;
                            };
                            execute(&run, &client, index, Instant::now()).await;
                        }
                    })
                })
                .collect();
            for c in clients {
                let _ = c.await;
            }
        }
        Some(rate) => {
            // Requests are due at fixed intervals whatever the answers do;
            // `clients` connections are shared round-robin.
            let pool: Vec<awc::Client> = (0..options.clients.max(1))
                .map(|_| client(&options.headers))
                .collect();
            let interval = Duration::from_secs_f64(1.0 / rate.max(1e-3));
            let start = Instant::now();
            let mut in_flight = Vec::new();
            loop {
                let Some(index) = run.borrow_mut().claim() else {
                    break;
                };
                let due = start + interval.mul_f64(index as f64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    actix_rt::time::sleep(wait).await;
                }
                let run = run.clone();
                let client = pool[index as usize % pool.len()].clone();
                in_flight.push(actix_rt::spawn(async move {
                    execute(&run, &client, index, due).await
                }));
            }
            for task in in_flight {
                let _ = task.await;
            }
        }
    }
    *stop.borrow_mut() = true;
    let elapsed = run.borrow().started.elapsed();
    if let Some(ticker) = ticker {
        ticker.abort();
    }
    let maintenance = match maintenance {
        Some(task) => task.await.ok(),
        None => None,
    };
    let acknowledged = std::mem::take(&mut run.borrow_mut().acknowledged);
    let chains_consistent = if matches!(scenario, Scenario::Revise { .. }) {
        let (heads, superseded, new_versions) = {
            let run = run.borrow();
            (
                run.heads.clone(),
                run.superseded.clone(),
                run.new_versions.clone(),
            )
        };
        Some(check_chains(&options, &heads, &superseded, &new_versions).await?)
    } else {
        None
    };
    let run = run.borrow();
    let h = &run.latency_us;
    let ms = |v: u64| v as f64 / 1000.0;
    let report = Report {
        scenario: scenario.name(),
        options,
        requests: run.completed,
        records_written: run.records_written,
        elapsed,
        latency_ms: [
            ms(h.value_at_quantile(0.5)),
            ms(h.value_at_quantile(0.9)),
            ms(h.value_at_quantile(0.99)),
            ms(h.value_at_quantile(0.999)),
            ms(h.max()),
        ],
        errors: run.errors.clone(),
        conflicts: run.conflicts,
        verification: None,
        chains_consistent,
        maintenance,
    };
    Ok((report, acknowledged))
}
