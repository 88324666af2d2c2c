//! A seeded fuzz run against the real server: thousands of generated
//! requests across every endpoint — valid ones, structurally mutated ones
//! (a field dropped, retyped, nested, oversized) and byte-mutated ones —
//! then checks that nothing answered 5xx, nothing panicked, the database
//! is intact and its invariants hold.
//!
//! `ENGRAM_FUZZ_SEED` and `ENGRAM_FUZZ_REQUESTS` change the run; a failure
//! prints the seed and the request that caused it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chrono::Duration;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const SENSITIVITIES: [&str; 5] = ["public", "low", "medium", "high", "hyper"];
const TYPES: [&str; 5] = [
    "episodic",
    "working",
    "semantic",
    "competence",
    "plan_graph",
];

/// Strings that have broken parsers before: empty, blank, control
/// characters, the service's own actor, escapes, long, non-ASCII.
fn nasty(rng: &mut Rng) -> Value {
    let options = [
        json!(""),
        json!("   "),
        json!("a\u{0}b"),
        json!("tab\tnewline\n"),
        json!("engram:scheduler"),
        json!("%FF%00"),
        json!("\u{FFFD}"),
        json!("x".repeat(300)),
        json!("ünïcødé ✓ 🧠"),
        json!(1e308),
        json!(-1),
        json!(9_223_372_036_854_775_807_i64),
        json!(u64::MAX),
        json!(0.5),
        json!(true),
        json!(null),
        json!([]),
        json!({}),
        json!([[[[[[[[[[1]]]]]]]]]]),
        json!("2999-01-01T00:00:00Z"),
        json!("not a time"),
    ];
    rng.pick(&options).clone()
}

fn trust(rng: &mut Rng) -> Value {
    let mut scopes = Vec::new();
    for _ in 0..rng.below(3) {
        scopes.push(json!(rng.pick(&["a", "b", "team"]).to_string()));
    }
    json!({"max_sensitivity": rng.pick(&SENSITIVITIES), "scopes": scopes})
}

fn scope(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 => Value::Null,
        i => json!(["a", "b", "team"][i - 1]),
    }
}

fn id(rng: &mut Rng, ids: &[String]) -> String {
    if ids.is_empty() || rng.chance(10) {
        format!("missing-{}", rng.below(1000))
    } else {
        rng.pick(ids).clone()
    }
}

fn payload(rng: &mut Rng, kind: &str) -> Value {
    match kind {
        "episodic" => json!({"kind": "episodic",
            "timeline": [{"t": "2025-12-31T00:00:00Z", "event_kind": "e", "ref": "r", "summary": "s"}],
            "tool_graph": [{"id": "n1", "tool": "read", "args": {}, "result": {}, "timestamp": "2025-12-31T00:00:00Z"}],
            "outcome": rng.pick(&["success", "failure"])}),
        "working" => {
            json!({"kind": "working", "thread_id": format!("t{}", rng.below(5)), "state": "executing"})
        }
        "semantic" => {
            json!({"kind": "semantic", "subject": "s", "predicate": "p", "object": rng.below(3),
            "evidence": [{"source_type": "doc", "source_id": "d"}]})
        }
        "competence" => json!({"kind": "competence", "skill_name": "k",
            "performance": {"success_count": rng.below(10), "failure_count": rng.below(10)}}),
        _ => {
            json!({"kind": "plan_graph", "plan_id": "p", "nodes": [{"id": "a", "op": "x"}, {"id": "b", "op": "y"}],
            "edges": [{"from": "a", "to": "b", "kind": "data"}]})
        }
    }
}

fn whole_record(rng: &mut Rng) -> Value {
    let kind = *rng.pick(&TYPES);
    json!({"type": kind, "sensitivity": rng.pick(&SENSITIVITIES), "scope": scope(rng),
           "salience": rng.below(11) as f64 / 10.0, "tags": ["fuzz"],
           "provenance": {"sources": [{"kind": "artifact", "ref": "fuzz", "timestamp": "2025-12-31T00:00:00Z"}]},
           "payload": payload(rng, kind)})
}

fn ingest_item(rng: &mut Rng, ids: &[String]) -> (String, Value) {
    let common = |rng: &mut Rng| {
        json!({"source": format!("agent-{}", rng.below(3)), "sensitivity": rng.pick(&SENSITIVITIES),
               "scope": scope(rng), "tags": ["fuzz"]})
    };
    let mut body = common(rng);
    let (path, fields) = match rng.below(5) {
        0 => (
            "event",
            json!({"event_kind": "user_input", "ref": "m", "summary": format!("s{}", rng.below(4))}),
        ),
        1 => (
            "tool-output",
            json!({"tool_name": rng.pick(&["read", "edit"]), "args": {"p": 1}, "result": "ok"}),
        ),
        2 => (
            "observation",
            json!({"subject": "user", "predicate": "likes", "object": rng.below(3)}),
        ),
        3 => (
            "outcome",
            json!({"target_record_id": id(rng, ids), "outcome_status": rng.pick(&["success", "failure", "partial"])}),
        ),
        _ => (
            "working-state",
            json!({"thread_id": format!("t{}", rng.below(5)), "state": rng.pick(&["planning", "done"])}),
        ),
    };
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    (path.to_string(), body)
}

/// A valid-looking request: method, path, body.
fn request(rng: &mut Rng, ids: &[String]) -> (&'static str, String, Option<Value>) {
    let by =
        |rng: &mut Rng| json!({"actor": format!("agent-{}", rng.below(3)), "rationale": "fuzz"});
    let with = |mut base: Value, extra: Value| {
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        base
    };
    match rng.below(26) {
        0..=4 => {
            let (path, body) = ingest_item(rng, ids);
            ("POST", format!("/v1/ingest/{path}"), Some(body))
        }
        5 => {
            let items: Vec<Value> = (0..1 + rng.below(5))
                .map(|_| {
                    let (path, mut body) = ingest_item(rng, ids);
                    body["kind"] = json!(path.replace('-', "_"));
                    body
                })
                .collect();
            (
                "POST",
                "/v1/ingest/batch".into(),
                Some(json!({"items": items})),
            )
        }
        6 | 7 => ("POST", "/v1/records".into(), Some(whole_record(rng))),
        8 | 9 => {
            let types: Vec<&str> = TYPES.iter().copied().filter(|_| rng.chance(50)).collect();
            let body = json!({"trust": trust(rng), "memory_types": types, "limit": rng.below(30),
                              "min_salience": rng.below(5) as f64 / 10.0, "task_descriptor": "fix"});
            ("POST", "/v1/retrieve".into(), Some(body))
        }
        10 => (
            "POST",
            format!("/v1/retrieve/{}", id(rng, ids)),
            Some(json!({"trust": trust(rng)})),
        ),
        11 => (
            "POST",
            format!("/v1/records/{}/history", id(rng, ids)),
            Some(json!({"trust": trust(rng)})),
        ),
        12 => (
            "POST",
            format!("/v1/records/{}/reinforce", id(rng, ids)),
            Some(by(rng)),
        ),
        13 => (
            "POST",
            format!("/v1/records/{}/penalize", id(rng, ids)),
            Some(with(by(rng), json!({"amount": rng.below(5) as f64 / 10.0}))),
        ),
        14 => {
            let new_record = whole_record(rng);
            let body = with(
                by(rng),
                json!({"old_id": id(rng, ids), "new_record": new_record}),
            );
            ("POST", "/v1/revisions/supersede".into(), Some(body))
        }
        15 => {
            let forked = whole_record(rng);
            let body = with(
                by(rng),
                json!({"source_id": id(rng, ids), "forked_record": forked}),
            );
            ("POST", "/v1/revisions/fork".into(), Some(body))
        }
        16 => {
            let body = with(by(rng), json!({"id": id(rng, ids)}));
            ("POST", "/v1/revisions/retract".into(), Some(body))
        }
        17 => {
            let merge_ids: Vec<String> = (0..1 + rng.below(3)).map(|_| id(rng, ids)).collect();
            let merged = whole_record(rng);
            let body = with(by(rng), json!({"ids": merge_ids, "merged_record": merged}));
            ("POST", "/v1/revisions/merge".into(), Some(body))
        }
        18 => {
            let body = with(
                by(rng),
                json!({"id": id(rng, ids), "resolve": rng.chance(30)}),
            );
            ("POST", "/v1/revisions/contest".into(), Some(body))
        }
        19 => {
            let job = *rng.pick(&["decay", "consolidation", "nope"]);
            if rng.chance(50) {
                ("POST", format!("/v1/jobs/{job}/run"), None)
            } else {
                let body = json!({"schedule": rng.pick(&["0 0 * * * *", "0 */5 * * * *", "* * * * * *", "0 0 0 31 2 *"]),
                                  "enabled": rng.chance(80)});
                ("PUT", format!("/v1/jobs/{job}"), Some(body))
            }
        }
        20 => (
            "GET",
            rng.pick(&["/v1/jobs", "/v1/metrics", "/metrics", "/healthz", "/readyz"])
                .to_string(),
            None,
        ),
        21 | 22 => {
            let fields: Vec<Value> = (0..rng.below(4))
                .map(|i| json!({"name": format!("f{}", (i + rng.below(3)) % 4), "value": rng.below(3)}))
                .collect();
            let edges: Vec<Value> = (0..rng.below(2))
                .map(|_| json!({"to_topic_id": id(rng, ids), "kind": rng.pick(&["depends_on", "related"])}))
                .collect();
            let body = json!({
                "placement": rng.pick(&["auto", "auto", "new_topic", "extend_topic", "version_field", "elsewhere"]),
                "topic_id": id(rng, ids), "title": format!("topic {}", rng.below(6)),
                "summary": rng.pick(&["", "a thing", "another thing"]), "source": "fuzz",
                "fields": fields, "edges": edges, "suggest_similar": rng.chance(50),
                "sensitivity": rng.pick(&SENSITIVITIES), "scope": rng.pick(&[Value::Null, json!("a")]),
                "embedding": rng.pick(&[Value::Null, json!([1.0, 0.0]), json!([0.5, 0.5, 0.5])]),
                "trust": trust(rng),
            });
            ("POST", "/v1/topics/ingest".into(), Some(body))
        }
        23 => {
            let body = json!({"trust": trust(rng), "text": rng.pick(&["topic", "thing 3", ""]),
                              "hops": rng.below(5), "limit": rng.below(120),
                              "include_history": rng.chance(30),
                              "as_of": rng.pick(&[Value::Null, json!("2026-01-01T00:00:00Z"), json!("yesterday")])});
            ("POST", "/v1/topics/query".into(), Some(body))
        }
        24 => {
            let topic = id(rng, ids);
            match rng.below(4) {
                0 => (
                    "POST",
                    format!("/v1/topics/{topic}/view"),
                    Some(json!({"trust": trust(rng)})),
                ),
                1 => (
                    "POST",
                    format!("/v1/topics/{topic}/fields/f{}/history", rng.below(4)),
                    Some(json!({"trust": trust(rng)})),
                ),
                2 => (
                    "POST",
                    format!("/v1/topics/{topic}/archive"),
                    Some(json!({"trust": trust(rng)})),
                ),
                _ => (
                    *rng.pick(&["POST", "DELETE"]),
                    format!("/v1/topics/{topic}/edges"),
                    Some(
                        json!({"to_topic_id": id(rng, ids), "kind": "related", "trust": trust(rng)}),
                    ),
                ),
            }
        }
        25 => {
            let body = json!({"trust": trust(rng), "task_descriptor": "topic thing",
                              "max_hops": rng.below(5), "node_limit": rng.below(60), "edge_limit": rng.below(120)});
            ("POST", "/v1/retrieve/graph".into(), Some(body))
        }
        _ => ("DELETE", "/v1/records".into(), None),
    }
}

/// Replaces, drops, retypes or adds one value somewhere in `value`.
fn mutate_structure(rng: &mut Rng, value: &mut Value) {
    match value {
        Value::Object(map) if !map.is_empty() && rng.chance(70) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(5) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(key, nasty(rng));
                }
                2 => {
                    map.insert(format!("unknown_{}", rng.below(10)), nasty(rng));
                }
                3 => {
                    let inner = map.remove(&key).unwrap();
                    map.insert(key, json!([inner]));
                }
                _ => mutate_structure(rng, map.get_mut(&key).unwrap()),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.chance(70) => {
            let i = rng.below(items.len());
            if rng.chance(30) {
                items[i] = nasty(rng);
            } else {
                mutate_structure(rng, &mut items[i]);
            }
        }
        _ => *value = nasty(rng),
    }
}

/// Flips, inserts, deletes or truncates bytes.
fn mutate_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if bytes.is_empty() {
            bytes.push(b'{');
        }
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => bytes[at] ^= 1 << rng.below(8),
            1 => bytes.insert(at, *rng.pick(b"{}[]\",:\\\0\xff0e-")),
            2 => {
                bytes.remove(at);
            }
            _ => bytes.truncate(at),
        }
    }
}

struct Outcome {
    status: u16,
    created: Option<String>,
}

async fn send(app: &TestApp, method: &str, path: &str, body: Option<Vec<u8>>) -> Outcome {
    let url = format!("{}{}", app.address, path);
    let request = match method {
        "GET" => app.client.get(&url),
        "PUT" => app.client.put(&url),
        "DELETE" => app.client.delete(&url),
        _ => app.client.post(&url),
    }
    .insert_header(("content-type", "application/json"));
    let response = match body {
        Some(body) => request.send_body(body).await,
        None => request.send().await,
    };
    let mut response = response.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = response.status().as_u16();
    let bytes = response.body().limit(64 << 20).await.unwrap_or_default();
    let created = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| {
        v["record"]["id"]
            .as_str()
            .or(v["topic_id"].as_str())
            .map(str::to_string)
    });
    Outcome { status, created }
}

#[actix_web::test]
async fn ten_thousand_generated_requests_break_nothing() {
    let seed: u64 = std::env::var("ENGRAM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_121);
    let total: usize = std::env::var("ENGRAM_FUZZ_REQUESTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let panics = Arc::new(AtomicUsize::new(0));
    let counted = panics.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Only the service's own code counts: under `cargo test` other
        // tests share the process, and some panic on purpose.
        if info
            .location()
            .is_some_and(|l| l.file().starts_with("src/"))
        {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));

    let app = spawn_app().await;
    let mut rng = Rng(seed);
    let mut ids: Vec<String> = Vec::new();
    let mut statuses: std::collections::BTreeMap<u16, usize> = Default::default();
    let mut sent = 0;
    while sent < total {
        // A few requests at a time, so revisions race each other.
        let mut batch = Vec::new();
        for _ in 0..8.min(total - sent) {
            let (method, path, body) = request(&mut rng, &ids);
            let body = body.map(|mut body| {
                let roll = rng.below(100);
                if roll < 25 {
                    mutate_structure(&mut rng, &mut body);
                }
                let mut bytes = serde_json::to_vec(&body).unwrap();
                if roll >= 85 {
                    mutate_bytes(&mut rng, &mut bytes);
                }
                bytes
            });
            batch.push((method, path, body));
            sent += 1;
        }
        let outcomes = futures_util::stream::iter(batch.iter().cloned())
            .map(|(method, path, body)| {
                let app = &app;
                async move { send(app, method, &path, body).await }
            })
            .buffered(8)
            .collect::<Vec<_>>()
            .await;
        for ((method, path, body), outcome) in batch.iter().zip(outcomes) {
            *statuses.entry(outcome.status).or_default() += 1;
            assert!(
                outcome.status < 500,
                "seed {seed}: {method} {path} answered {}; body: {}",
                outcome.status,
                body.as_deref()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default()
            );
            if let Some(id) = outcome.created {
                ids.push(id);
            }
        }
        // Time passes, so decay and consolidation have work.
        if sent % 800 == 0 {
            app.clock.advance(Duration::hours(3));
        }
    }
    eprintln!("seed {seed}: {total} requests, answers by status {statuses:?}");
    assert_eq!(panics.load(Ordering::SeqCst), 0, "seed {seed}: a panic");
    let created = statuses.get(&201).copied().unwrap_or(0);
    assert!(
        created > total / 20,
        "seed {seed}: too few writes succeeded: {statuses:?}"
    );

    if crate::helpers::postgres_admin_url().is_none() {
        let integrity = app.sql_number(
            "SELECT COUNT(*) FROM pragma_integrity_check WHERE integrity_check <> 'ok'",
            &[],
        );
        assert_eq!(integrity, 0, "seed {seed}: the SQLite file is damaged");
    }
    // No superseded record is active, and no record is superseded twice:
    // one active head per chain.
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM relations rel JOIN records r ON r.id = rel.target_id
             WHERE rel.predicate = 'supersedes' AND r.status = 'active'",
            &[],
        ),
        0,
        "seed {seed}: an active record that was superseded"
    );
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM (SELECT target_id FROM relations WHERE predicate = 'supersedes'
                                   GROUP BY target_id HAVING COUNT(*) > 1) AS twice",
            &[],
        ),
        0,
        "seed {seed}: a record superseded twice"
    );
    // An audit entry for every change: a create entry of the service's
    // own on every record, and at least one more for each change since.
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM records r WHERE NOT EXISTS
               (SELECT 1 FROM audit_log a WHERE a.record_key = r.key AND a.action = 'create' AND NOT a.imported)",
            &[],
        ),
        0,
        "seed {seed}: a record without its create entry"
    );
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM records r WHERE
               (SELECT COUNT(*) FROM audit_log a WHERE a.record_key = r.key AND NOT a.imported) < 1 + r.version",
            &[],
        ),
        0,
        "seed {seed}: a change without an audit entry"
    );
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM records r WHERE r.status <> 'active' AND NOT EXISTS
               (SELECT 1 FROM audit_log a WHERE a.record_key = r.key AND NOT a.imported
                  AND a.action IN ('revise', 'merge', 'delete'))",
            &[],
        ),
        0,
        "seed {seed}: a status change without an audit entry"
    );
}
