//! `loadtests tenants`: many tenants in one memory. Loads records of
//! generated dialogue and notes (names, numbers, services, common words;
//! sentences of varied length) spread over `--scopes` scopes, with mixed
//! types, sensitivities, tags and threads; then times text-ranked
//! retrievals for callers that see different slices of it: everything,
//! one scope, nothing, each with and without filters. What a query costs
//! should follow what its caller can see, not what everyone else wrote.

use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::workload::Rng;
use loadtests::dialogue::{question, utterance, TAGS, THINGS};
use loadtests::embed::embed;

pub struct TenantOptions {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Records to add before timing (0: time what is there).
    pub records: u64,
    /// The index of the first record added: a later run goes on where an
    /// earlier one stopped, so a database grows in steps.
    pub from: u64,
    pub scopes: u64,
    /// Requests timed per caller, and the clients sending them; a caller
    /// is timed for `per_caller` at most (a slow one gets fewer requests).
    pub requests: u64,
    pub per_caller: Duration,
    pub clients: usize,
    /// Dimensions of the records' and queries' vectors (0: none, and the
    /// vector caller is left out).
    pub vectors: usize,
    pub seed: u64,
    /// The callers to time, by name (empty: every one).
    pub only: Vec<String>,
}

fn scope(i: u64) -> String {
    format!("tenant-{i}")
}

/// The `index`-th record: its batch item.
pub fn item(seed: u64, index: u64, scopes: u64, vectors: usize) -> Value {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let scope = scope(rng.below(scopes));
    let sensitivity = match rng.below(10) {
        0 => "high",
        1 | 2 => "medium",
        _ => "low",
    };
    let mut tags: Vec<&str> = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let tag = *rng.pick(TAGS);
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    let text = utterance(&mut rng);
    let mut item = match rng.below(10) {
        0..=5 => {
            json!({"kind": "event", "event_kind": "user_input", "ref": format!("turn-{index}"),
                        "summary": text})
        }
        6 | 7 => json!({"kind": "observation", "subject": rng.pick(THINGS), "predicate": "note",
                        "object": text}),
        8 => json!({"kind": "working_state", "thread_id": format!("thread-{}", rng.below(50)),
                    "state": "executing", "context_summary": text}),
        _ => json!({"kind": "tool_output", "tool_name": "shell", "args": {"command": text},
                    "result": {"lines": rng.below(200)}}),
    };
    let fields = item.as_object_mut().expect("an object");
    fields.insert("source".into(), json!(format!("agent-{}", rng.below(40))));
    fields.insert("scope".into(), json!(scope));
    fields.insert("sensitivity".into(), json!(sensitivity));
    fields.insert("tags".into(), json!(tags));
    if vectors > 0 {
        fields.insert("embedding".into(), json!(embed(&text, vectors)));
    }
    item
}

/// A kind of caller: what it asks with besides the question.
struct Caller {
    name: &'static str,
    /// Its trust and filters, for request `i`.
    shape: fn(&mut Rng, u64) -> Value,
    vector: bool,
}

fn one_scope(rng: &mut Rng, scopes: u64) -> Value {
    json!({"max_sensitivity": "medium", "scopes": [scope(rng.below(scopes))]})
}

const NOBODY: &str = "tenant-nobody";

const CALLERS: &[Caller] = &[
    Caller {
        name: "sees everything",
        shape: |_, _| json!({"trust": {"max_sensitivity": "medium"}}),
        vector: false,
    },
    Caller {
        name: "everything + memory_types",
        shape: |_, _| json!({"trust": {"max_sensitivity": "medium"}, "memory_types": ["episodic"]}),
        vector: false,
    },
    Caller {
        name: "one scope",
        shape: |rng, scopes| json!({"trust": one_scope(rng, scopes)}),
        vector: false,
    },
    Caller {
        name: "one scope + memory_types",
        shape: |rng, scopes| json!({"trust": one_scope(rng, scopes), "memory_types": ["episodic"]}),
        vector: false,
    },
    Caller {
        name: "one scope + tags",
        shape: |rng, scopes| json!({"trust": one_scope(rng, scopes), "tags": [rng.pick(TAGS)]}),
        vector: false,
    },
    Caller {
        name: "one scope + thread_id",
        shape: |rng, scopes| json!({"trust": one_scope(rng, scopes), "thread_id": format!("thread-{}", rng.below(50))}),
        vector: false,
    },
    Caller {
        name: "one scope + query vector",
        shape: |rng, scopes| json!({"trust": one_scope(rng, scopes)}),
        vector: true,
    },
    Caller {
        name: "sees nothing",
        shape: |_, _| json!({"trust": {"max_sensitivity": "medium", "scopes": [NOBODY]}}),
        vector: false,
    },
    Caller {
        name: "nothing + memory_types",
        shape: |_, _| json!({"trust": {"max_sensitivity": "medium", "scopes": [NOBODY]}, "memory_types": ["episodic"]}),
        vector: false,
    },
];

/// Adds `options.records` records, 500 to a batch from 4 clients.
async fn load(options: &TenantOptions, client: &awc::Client) -> Result<(), String> {
    const BATCH: u64 = 500;
    const CLIENTS: u64 = 4;
    let started = Instant::now();
    let end = options.from + options.records;
    let next = Rc::new(std::cell::Cell::new(options.from));
    let mut senders = Vec::new();
    for _ in 0..CLIENTS {
        let (client, next) = (client.clone(), next.clone());
        let url = format!("{}/v1/ingest/batch", options.url);
        let (seed, scopes, vectors) = (options.seed, options.scopes, options.vectors);
        senders.push(async move {
            loop {
                let first = next.get();
                if first >= end {
                    return Ok::<(), String>(());
                }
                let last = (first + BATCH).min(end);
                next.set(last);
                let items: Vec<Value> = (first..last)
                    .map(|i| item(seed, i, scopes, vectors))
                    .collect();
                let (status, answer) =
                    loadtests::http::post(&client, &url, &json!({"items": items})).await?;
                if status != 201 {
                    return Err(format!("a batch answered {status}: {answer}"));
                }
                if last % 50_000 < BATCH {
                    eprintln!(
                        "loaded {} records in {:.0} s",
                        last - options.from,
                        started.elapsed().as_secs_f64()
                    );
                }
            }
        });
    }
    for result in join_all(senders.into_iter().map(Box::pin).collect()).await {
        result?;
    }
    eprintln!(
        "loaded {} records ({}..{}) in {:.1} s",
        options.records,
        options.from,
        end,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A minimal `join_all`: polls every pending future on each wake-up.
async fn join_all<F: std::future::Future + Unpin>(mut futures: Vec<F>) -> Vec<F::Output> {
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, future) in futures.iter_mut().enumerate() {
            if outputs[i].is_none() {
                match std::pin::Pin::new(future).poll(cx) {
                    std::task::Poll::Ready(output) => outputs[i] = Some(output),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("ready")).collect()
}

/// One caller's figures.
struct Timing {
    name: &'static str,
    histogram: Histogram<u64>,
    errors: u64,
    elapsed: Duration,
    answered: u64,
}

impl Timing {
    fn ms(&self, quantile: f64) -> f64 {
        self.histogram.value_at_quantile(quantile) as f64 / 1000.0
    }
}

async fn time(caller: &Caller, options: &TenantOptions, client: &awc::Client) -> Timing {
    let url = format!("{}/v1/retrieve", options.url);
    let next = Rc::new(std::cell::Cell::new(0u64));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..options.clients {
        let (client, next, url) = (client.clone(), next.clone(), url.clone());
        workers.push(async move {
            let mut histogram = Histogram::<u64>::new(3).expect("a histogram");
            let mut errors = 0;
            loop {
                let i = next.get();
                if i >= options.requests || started.elapsed() >= options.per_caller {
                    return (histogram, errors);
                }
                next.set(i + 1);
                let mut rng = Rng::new(options.seed ^ (i + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
                let question = question(&mut rng);
                let mut body = (caller.shape)(&mut rng, options.scopes);
                body["task_descriptor"] = json!(question);
                body["limit"] = json!(10);
                if caller.vector {
                    body["query_embedding"] = json!(embed(&question, options.vectors));
                }
                let sent = Instant::now();
                match loadtests::http::post(&client, &url, &body).await {
                    Ok((200, _)) => {
                        let _ = histogram.record(sent.elapsed().as_micros() as u64);
                    }
                    _ => errors += 1,
                }
            }
        });
    }
    let mut histogram = Histogram::<u64>::new(3).expect("a histogram");
    let mut errors = 0;
    for (h, e) in join_all(workers.into_iter().map(Box::pin).collect()).await {
        let _ = histogram.add(h);
        errors += e;
    }
    Timing {
        name: caller.name,
        answered: histogram.len(),
        histogram,
        errors,
        elapsed: started.elapsed(),
    }
}

/// Loads, then times every caller; answers the figures as JSON.
pub async fn run(options: TenantOptions) -> Result<Value, String> {
    let client = loadtests::http::client(&options.headers);
    if options.records > 0 {
        load(&options, &client).await?;
    }
    let mut timings = Vec::new();
    for caller in CALLERS {
        if (caller.vector && options.vectors == 0)
            || (!options.only.is_empty() && !options.only.iter().any(|n| n == caller.name))
        {
            continue;
        }
        // A few unmeasured requests first: statements prepared, pages read.
        let warm = TenantOptions {
            requests: 20,
            per_caller: options.per_caller / 10,
            url: options.url.clone(),
            headers: Vec::new(),
            only: Vec::new(),
            ..options
        };
        let _ = time(caller, &warm, &client).await;
        let timing = time(caller, &options, &client).await;
        eprintln!(
            "{:<28} p50 {:>8.2} ms  p99 {:>8.2} ms  ({} answered)",
            timing.name,
            timing.ms(0.5),
            timing.ms(0.99),
            timing.answered
        );
        timings.push(timing);
    }
    // The ratios are to the caller that sees everything, when it was timed.
    let everything = timings
        .iter()
        .find(|t| t.name == CALLERS[0].name)
        .map(|t| t.ms(0.99).max(1e-9));
    let ratio = |t: &Timing| everything.map(|e| t.ms(0.99) / e);
    println!(
        "\n{:<28} {:>9} {:>9} {:>9} {:>10} {:>7} {:>15}",
        "caller", "p50 ms", "p95 ms", "p99 ms", "req/s", "errors", "p99/everything"
    );
    let mut rows = Vec::new();
    for t in &timings {
        let throughput = t.answered as f64 / t.elapsed.as_secs_f64().max(1e-9);
        println!(
            "{:<28} {:>9.2} {:>9.2} {:>9.2} {:>10.1} {:>7} {:>15}",
            t.name,
            t.ms(0.5),
            t.ms(0.95),
            t.ms(0.99),
            throughput,
            t.errors,
            ratio(t).map_or("-".to_string(), |r| format!("{r:.2}"))
        );
        rows.push(json!({"caller": t.name, "answered": t.answered, "p50_ms": t.ms(0.5), "p95_ms": t.ms(0.95), "p99_ms": t.ms(0.99),
                         "requests_per_second": throughput, "errors": t.errors,
                         "p99_ratio_to_everything": ratio(t)}));
    }
    Ok(
        json!({"records_added": options.records, "scopes": options.scopes, "clients": options.clients,
              "requests_per_caller": options.requests, "callers": rows}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_varied_and_the_same_for_the_same_seed() {
        let a = item(7, 1, 100, 0);
        assert_eq!(a, item(7, 1, 100, 0));
        assert_ne!(a, item(7, 2, 100, 0));
        let texts: std::collections::BTreeSet<String> =
            (0..200).map(|i| item(7, i, 100, 0).to_string()).collect();
        assert_eq!(texts.len(), 200);
        let lengths: std::collections::BTreeSet<usize> = (0..200)
            .map(|i| utterance(&mut Rng::new(i)).split(' ').count())
            .collect();
        assert!(lengths.len() > 10, "sentences of many lengths: {lengths:?}");
        let scopes: std::collections::BTreeSet<String> = (0..2000)
            .map(|i| item(7, i, 100, 0)["scope"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(scopes.len(), 100);
        let with_vector = item(7, 1, 100, 16);
        assert_eq!(with_vector["embedding"].as_array().unwrap().len(), 16);
    }

    #[test]
    fn slots_are_all_filled() {
        let mut rng = Rng::new(3);
        for _ in 0..500 {
            let text = utterance(&mut rng) + &question(&mut rng);
            assert!(!text.contains('{') && !text.contains('}'), "{text}");
        }
    }
}
