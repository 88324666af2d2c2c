//! `loadtests`: drives an engram server with concurrent clients, reports
//! throughput, latency percentiles and errors, and checks that every
//! acknowledged write can be read back with the content sent. Also: the
//! bare SQLite baseline the write targets are measured against, the
//! targets themselves, and the crash-safety cycles.

mod baseline;
mod baseline_pg;
mod crash;
mod driver;
mod erase;
mod targets;
mod tenants;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use driver::{LoadOptions, Scenario};
use loadtests::{conversations, placement, recall};

const USAGE: &str = "\
Usage: loadtests <command> [options]

Scenarios (against a running engram):
  ingest              single-record ingests: events, tool outputs,
                      observations and working states
  batch               POST /v1/ingest/batch with --batch-size items
  mixed               ingests and retrievals under varied trust contexts,
                      --read-ratio of them reads
  retrieve            retrievals only: limit 20, a trust context that sees
                      about a tenth of what the ingest scenarios write
  search              the same retrievals, ranked by a three-word query
  vector              the same retrievals, ranked by the query's vector
                      (--vectors dimensions, default 384)
  hybrid              the same retrievals, ranked by text and vector
  revise              many clients superseding the same --topics facts
  during-maintenance  ingests while decay and consolidation runs are
                      triggered every --maintenance-every seconds
  topics              auto-placed topics ingests of 5-field observations
                      over 100,000 titles (new topics, then extensions)
  topics-fill         new_topic ingests of the same observations, request N
                      making topic N (fills a database for topics-query)
  topics-query        topic queries by two title words, one hop

Other commands:
  targets             bare baselines, then ingest (64 clients) and batch
                      against --url, with each target's ratio; with
                      --backend postgres the baselines are tokio-postgres
                      loops on --database-url (the server's database)
  baseline            the bare SQLite baseline alone (--records,
                      --per-transaction, --db)
  crash               SIGKILL/restart cycles against --engram PATH
  recall              loads --dataset FILE into engram, asks its queries
                      and prints recall@k, precision@k, MRR@k, NDCG@k
  conversations       ingests the conversations of --dataset DIR (default
                      tests/data/conversations) and asks their questions;
                      prints turn-level recall@5, recall@10 and MRR@10 of
                      engram and of a plain BM25 over the same turns
  conversation-ingest --requests requests of --batch-size turns each (a
                      new session each) from --clients clients; prints
                      turns per second and request latency
  erase               loads --records records over 10 scopes; while
                      --clients clients ingest into another scope, erases
                      20 records one at a time, 20 more with the writer's
                      time of each, then one scope (a tenth); prints how
                      long each took and the ingest latencies alone and
                      meanwhile
  placement           runs the topic placement cases of --dataset FILE
                      (default tests/data/placement.jsonl), each in a
                      scope of its own, and prints accuracy, and precision
                      and recall of attaching to a known topic
  tenants             loads --records records of dialogue over --scopes
                      scopes (from record --from), then times text
                      retrievals for callers that see everything, one
                      scope or nothing, with and without filters
                      (--requests each, for --duration at most, 60 s
                      by default; --clients at once; --vectors N adds a
                      query-vector caller)

Options:
  --url URL               engram base URL (default http://127.0.0.1:8080)
  --clients N             concurrent clients (default 16)
  --requests N            total requests (default 10000)
  --duration SECS         run for this long instead of a request count
  --rate N                open loop: N requests per second, latency from
                          when each was due (default: closed loop)
  --seed N                workload seed (default 1)
  --header 'Name: value'  extra header on every request (repeatable)
  --batch-size N          items per batch (default 100)
  --read-ratio R          share of reads in mixed (default 0.5)
  --topics N              facts revised concurrently in revise (default 8)
  --maintenance-every S   seconds between job runs (default 2)
  --jobs a,b              jobs during-maintenance triggers
                          (default decay,consolidation)
  --json                  print the report as JSON on stdout
  --no-verify             skip reading acknowledged writes back
  --quiet                 no progress lines
  --records N             baseline: records per run (default 50000);
                          tenants: records to add (default none)
  --per-transaction N     baseline: records per transaction (default 64)
  --db PATH               baseline: database file (default a temp file)
  --backend B             targets: sqlite (default) or postgres
  --database-url URL      targets --backend postgres: the PostgreSQL
                          database (default ENGRAM_DATABASE_URL)
  --engram PATH           crash: the engram binary
  --cycles N              crash: kill/restart cycles (default 20)
  --vectors N             ingest, batch, mixed: each record carries an
                          N-dimension vector from the test embedder;
                          vector, hybrid: query vectors of N (default 384)
  --scopes N              tenants: scopes the records are spread over
                          (default 100)
  --from N                tenants: index of the first record added
                          (default 0; a later run goes on growing)
  --caller NAME           tenants: time only this caller, e.g. 'one scope'
                          (repeatable)
  --dataset FILE          recall, placement: the JSONL dataset
  --no-vectors            recall: leave the dataset's embeddings out
  --test-embedder         recall: records and queries without a vector get
                          one from the deterministic test embedder
  --one-scope             conversations: every conversation in one scope
  --distractors N         conversations: and N turns of other talk with them";

struct Args {
    command: String,
    load: LoadOptions,
    json: bool,
    batch_size: u64,
    read_ratio: f64,
    topics: usize,
    maintenance_every: u64,
    jobs: Vec<String>,
    records: u64,
    per_transaction: u64,
    db: Option<PathBuf>,
    backend: String,
    database_url: Option<String>,
    engram: Option<PathBuf>,
    cycles: u32,
    dataset: Option<PathBuf>,
    no_vectors: bool,
    test_embedder: bool,
    one_scope: bool,
    distractors: u64,
    scopes: u64,
    from: u64,
    callers: Vec<String>,
    /// `--records` was given (tenants loads none otherwise).
    records_given: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let command = match args.next() {
        Some(c) if c == "-h" || c == "--help" => return Err(USAGE.to_string()),
        Some(c) => c,
        None => return Err(USAGE.to_string()),
    };
    let mut parsed = Args {
        command,
        load: LoadOptions {
            url: "http://127.0.0.1:8080".into(),
            clients: 16,
            requests: 10_000,
            duration: None,
            rate: None,
            seed: 1,
            verify: true,
            progress: true,
            headers: Vec::new(),
            vectors: 0,
        },
        json: false,
        batch_size: 100,
        read_ratio: 0.5,
        topics: 8,
        maintenance_every: 2,
        jobs: vec!["decay".to_string(), "consolidation".to_string()],
        records: 50_000,
        per_transaction: 64,
        db: None,
        backend: "sqlite".to_string(),
        database_url: std::env::var("ENGRAM_DATABASE_URL").ok(),
        engram: None,
        cycles: 20,
        dataset: None,
        no_vectors: false,
        test_embedder: false,
        one_scope: false,
        distractors: 0,
        scopes: 100,
        from: 0,
        callers: Vec::new(),
        records_given: false,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |text: String, name: &str| -> Result<u64, String> {
            text.parse()
                .map_err(|_| format!("{name} takes a whole number, got {text:?}"))
        };
        match arg.as_str() {
            "--url" => parsed.load.url = value("--url")?.trim_end_matches('/').to_string(),
            "--clients" => {
                parsed.load.clients = number(value("--clients")?, "--clients")?.max(1) as usize
            }
            "--requests" => parsed.load.requests = number(value("--requests")?, "--requests")?,
            "--duration" => {
                parsed.load.duration = Some(Duration::from_secs(number(
                    value("--duration")?,
                    "--duration",
                )?))
            }
            "--rate" => {
                let text = value("--rate")?;
                let rate: f64 = text
                    .parse()
                    .map_err(|_| format!("--rate takes a number, got {text:?}"))?;
                if !(rate.is_finite() && rate > 0.0) {
                    return Err("--rate must be > 0".into());
                }
                parsed.load.rate = Some(rate);
            }
            "--seed" => parsed.load.seed = number(value("--seed")?, "--seed")?,
            "--header" => {
                let text = value("--header")?;
                let (name, value) = text.split_once(':').ok_or("--header takes 'Name: value'")?;
                parsed
                    .load
                    .headers
                    .push((name.trim().to_string(), value.trim().to_string()));
            }
            "--batch-size" => {
                parsed.batch_size = number(value("--batch-size")?, "--batch-size")?.clamp(1, 1000)
            }
            "--read-ratio" => {
                let text = value("--read-ratio")?;
                parsed.read_ratio = text
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| {
                        format!("--read-ratio takes a number in [0, 1], got {text:?}")
                    })?;
            }
            "--topics" => parsed.topics = number(value("--topics")?, "--topics")?.max(1) as usize,
            "--maintenance-every" => {
                parsed.maintenance_every =
                    number(value("--maintenance-every")?, "--maintenance-every")?
            }
            "--jobs" => {
                parsed.jobs = value("--jobs")?
                    .split(',')
                    .map(|j| j.trim().to_string())
                    .filter(|j| !j.is_empty())
                    .collect();
            }
            "--json" => parsed.json = true,
            "--no-verify" => parsed.load.verify = false,
            "--quiet" => parsed.load.progress = false,
            "--records" => {
                parsed.records = number(value("--records")?, "--records")?;
                parsed.records_given = true;
            }
            "--scopes" => parsed.scopes = number(value("--scopes")?, "--scopes")?.max(1),
            "--from" => parsed.from = number(value("--from")?, "--from")?,
            "--caller" => parsed.callers.push(value("--caller")?),
            "--per-transaction" => {
                parsed.per_transaction =
                    number(value("--per-transaction")?, "--per-transaction")?.max(1)
            }
            "--db" => parsed.db = Some(PathBuf::from(value("--db")?)),
            "--backend" => {
                parsed.backend = value("--backend")?;
                if !matches!(parsed.backend.as_str(), "sqlite" | "postgres") {
                    return Err("--backend takes sqlite or postgres".to_string());
                }
            }
            "--database-url" => parsed.database_url = Some(value("--database-url")?),
            "--engram" => parsed.engram = Some(PathBuf::from(value("--engram")?)),
            "--cycles" => parsed.cycles = number(value("--cycles")?, "--cycles")? as u32,
            "--vectors" => parsed.load.vectors = number(value("--vectors")?, "--vectors")? as usize,
            "--dataset" => parsed.dataset = Some(PathBuf::from(value("--dataset")?)),
            "--no-vectors" => parsed.no_vectors = true,
            "--test-embedder" => parsed.test_embedder = true,
            "--one-scope" => parsed.one_scope = true,
            "--distractors" => {
                parsed.distractors = number(value("--distractors")?, "--distractors")?
            }
            other => return Err(format!("unknown option {other:?}\n\n{USAGE}")),
        }
    }
    Ok(parsed)
}

fn main() {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let ok = actix_rt::System::new().block_on(run(args));
    std::process::exit(if ok { 0 } else { 1 });
}

async fn run(args: Args) -> bool {
    let scenario = match args.command.as_str() {
        "ingest" => Some(Scenario::Ingest),
        "batch" => Some(Scenario::Batch {
            size: args.batch_size,
        }),
        "mixed" => Some(Scenario::Mixed {
            read_ratio: args.read_ratio,
        }),
        "retrieve" => Some(Scenario::Retrieve),
        "topics" => Some(Scenario::Topics),
        "topics-fill" => Some(Scenario::TopicsFill),
        "topics-query" => Some(Scenario::TopicsQuery),
        "search" => Some(Scenario::Search),
        "vector" => Some(Scenario::Vector { text: false }),
        "hybrid" => Some(Scenario::Vector { text: true }),
        "revise" => Some(Scenario::Revise {
            topics: args.topics,
        }),
        "during-maintenance" => Some(Scenario::DuringMaintenance {
            every: Duration::from_secs(args.maintenance_every),
            jobs: args.jobs.clone(),
        }),
        _ => None,
    };
    if let Some(scenario) = scenario {
        eprintln!(
            "{} against {} with {} clients{}, seed {}",
            scenario.name(),
            args.load.url,
            args.load.clients,
            args.load
                .rate
                .map_or(String::new(), |r| format!(" at {r} req/s")),
            args.load.seed
        );
        return match driver::run(scenario, args.load).await {
            Ok(report) => {
                if args.json {
                    println!("{:#}", report.to_json());
                } else {
                    report.print();
                }
                report.ok()
            }
            Err(e) => {
                eprintln!("loadtests: {e}");
                false
            }
        };
    }
    match args.command.as_str() {
        "baseline" => {
            let path = args.db.unwrap_or_else(|| {
                std::env::temp_dir().join(format!("engram-baseline-{}.db", std::process::id()))
            });
            match baseline::run(
                &path,
                args.records.max(1),
                args.per_transaction,
                args.load.seed,
            ) {
                Ok(result) => {
                    println!(
                        "baseline: {} records at {} per transaction in {:.2} s: {:.0} records/s",
                        result.records,
                        result.per_transaction,
                        result.elapsed.as_secs_f64(),
                        result.records_per_second()
                    );
                    true
                }
                Err(e) => {
                    eprintln!("loadtests: baseline: {e}");
                    false
                }
            }
        }
        "targets" => {
            let postgres = match args.backend.as_str() {
                "postgres" => match args.database_url {
                    Some(url) => Some(url),
                    None => {
                        eprintln!(
                            "loadtests: targets --backend postgres needs --database-url (or \
                             ENGRAM_DATABASE_URL): the database the server runs on"
                        );
                        return false;
                    }
                },
                _ => None,
            };
            let options = targets::TargetOptions {
                postgres,
                load: LoadOptions {
                    duration: args.load.duration.or(Some(Duration::from_secs(20))),
                    ..args.load
                },
                baseline_records: args.records.max(1),
                batch_size: args.batch_size,
                batch_clients: 8,
            };
            match targets::run(options).await {
                Ok(summary) => {
                    if args.json {
                        println!("{summary:#}");
                    }
                    summary["targets"].as_array().is_some_and(|t| {
                        t.iter()
                            .all(|r| r["report"]["errors"] == serde_json::json!({}))
                    })
                }
                Err(e) => {
                    eprintln!("loadtests: {e}");
                    false
                }
            }
        }
        "recall" => {
            let Some(dataset) = args.dataset else {
                eprintln!("loadtests: recall needs --dataset FILE");
                return false;
            };
            let options = recall::RecallOptions {
                url: args.load.url,
                dataset,
                headers: args.load.headers,
                no_vectors: args.no_vectors,
                test_embedder: args.test_embedder,
            };
            match recall::run(options).await {
                Ok(result) => {
                    if args.json {
                        println!("{result:#}");
                    } else {
                        for miss in result["misses"].as_array().into_iter().flatten() {
                            println!(
                                "miss {}: expected {} in the top {}, got {}",
                                miss["key"], miss["expected"], miss["k"], miss["found"]
                            );
                        }
                        println!(
                            "{} records, {} queries: recall@k {:.3}  precision@k {:.3}  MRR@k {:.3}  NDCG@k {:.3}",
                            result["records"],
                            result["queries"],
                            result["recall_at_k"].as_f64().unwrap_or(0.0),
                            result["precision_at_k"].as_f64().unwrap_or(0.0),
                            result["mrr_at_k"].as_f64().unwrap_or(0.0),
                            result["ndcg_at_k"].as_f64().unwrap_or(0.0),
                        );
                    }
                    true
                }
                Err(e) => {
                    eprintln!("loadtests: recall: {e}");
                    false
                }
            }
        }
        "conversations" => {
            let options = conversations::ConversationOptions {
                url: args.load.url,
                dataset: args
                    .dataset
                    .unwrap_or_else(|| "tests/data/conversations".into()),
                headers: args.load.headers,
                test_embedder: args.test_embedder,
                one_scope: args.one_scope || args.distractors > 0,
                distractors: args.distractors,
            };
            match conversations::run(options).await {
                Ok(result) => {
                    if args.json {
                        println!("{result:#}");
                    } else {
                        print!("{}", conversations::report(&result));
                    }
                    true
                }
                Err(e) => {
                    eprintln!("loadtests: conversations: {e}");
                    false
                }
            }
        }
        "conversation-ingest" => {
            match conversations::ingest_throughput(
                &args.load.url,
                &args.load.headers,
                args.load.clients,
                args.load.requests,
                args.batch_size,
            )
            .await
            {
                Ok(text) => {
                    print!("{text}");
                    true
                }
                Err(e) => {
                    eprintln!("loadtests: conversation-ingest: {e}");
                    false
                }
            }
        }
        "erase" => {
            let options = erase::EraseOptions {
                url: args.load.url,
                headers: args.load.headers,
                records: args.records,
                clients: args.load.clients,
            };
            match erase::run(options).await {
                Ok(text) => {
                    print!("{text}");
                    true
                }
                Err(e) => {
                    eprintln!("loadtests: erase: {e}");
                    false
                }
            }
        }
        "placement" => {
            let options = placement::PlacementOptions {
                url: args.load.url,
                dataset: args
                    .dataset
                    .unwrap_or_else(|| PathBuf::from("tests/data/placement.jsonl")),
                headers: args.load.headers,
            };
            match placement::run(options).await {
                Ok((tally, wrong)) => {
                    for line in &wrong {
                        println!("wrong {line}");
                    }
                    println!(
                        "{} cases: accuracy {:.3}  attach precision {:.3}  attach recall {:.3}  wrong attaches across kinds {}",
                        tally.cases,
                        tally.accuracy(),
                        tally.precision(),
                        tally.recall(),
                        tally.wrong_kind
                    );
                    true
                }
                Err(e) => {
                    eprintln!("loadtests: placement: {e}");
                    false
                }
            }
        }
        "tenants" => {
            let options = tenants::TenantOptions {
                url: args.load.url,
                headers: args.load.headers,
                records: if args.records_given { args.records } else { 0 },
                from: args.from,
                scopes: args.scopes,
                requests: args.load.requests,
                per_caller: args.load.duration.unwrap_or(Duration::from_secs(60)),
                clients: args.load.clients,
                vectors: args.load.vectors,
                seed: args.load.seed,
                only: args.callers,
            };
            match tenants::run(options).await {
                Ok(summary) => {
                    if args.json {
                        println!("{summary:#}");
                    }
                    summary["callers"]
                        .as_array()
                        .is_some_and(|c| c.iter().all(|r| r["errors"] == 0))
                }
                Err(e) => {
                    eprintln!("loadtests: tenants: {e}");
                    false
                }
            }
        }
        "crash" => {
            let Some(engram) = args.engram else {
                eprintln!("loadtests: crash needs --engram PATH");
                return false;
            };
            let options = crash::CrashOptions {
                engram,
                cycles: args.cycles,
                clients: args.load.clients,
                seed: args.load.seed,
            };
            match crash::run(options).await {
                Ok(summary) => {
                    println!("{summary:#}");
                    summary["lost_acknowledged_writes"] == 0 && summary["integrity_failures"] == 0
                }
                Err(e) => {
                    eprintln!("loadtests: crash: {e}");
                    false
                }
            }
        }
        other => {
            eprintln!("unknown command {other:?}\n\n{USAGE}");
            false
        }
    }
}
