//! `loadtests recall`: how well retrieval finds what a task needs. Loads a
//! dataset's records into a running engram, asks its queries, and scores
//! the answers against the expected records: recall@k, precision@k, MRR@k
//! and NDCG@k, averaged over the queries.
//!
//! The dataset is JSON lines. A record line:
//! `{"type": "record", "key", "memory_type", "text", "sensitivity", "scope",
//! "tags", "embedding", …type fields…}`, where the type fields are
//! episodic `event_kind`, `tools`, `outcome`; semantic `subject`,
//! `predicate`, `object`; working `thread_id`, `state`, `next_actions`,
//! `open_questions`; competence `skill_name`, `triggers`, `steps`,
//! `failure_modes`; plan_graph `intent`, `nodes` (op names). `text` goes
//! where the type keeps free text: an episode's event summary, a fact's
//! object (when none is given), a working state's context summary, a
//! skill's name or else a trigger, a plan's intent or else a node.
//! A query line: `{"type": "query", "key", "text", "expected": [keys], "k",
//! "trust", "memory_types", "query_embedding"}`.

use serde_json::{json, Map, Value};

use crate::http::{client, post};

pub struct RecallOptions {
    pub url: String,
    pub dataset: std::path::PathBuf,
    pub headers: Vec<(String, String)>,
    /// Leave `embedding` and `query_embedding` out, to measure text alone.
    pub no_vectors: bool,
    /// Give records and queries that have no vector one made by
    /// [`crate::embed::embed`] from their text.
    pub test_embedder: bool,
}

/// One query's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub key: String,
    pub k: usize,
    pub recall: f64,
    pub precision: f64,
    pub reciprocal_rank: f64,
    pub ndcg: f64,
    pub found: Vec<String>,
    pub expected: Vec<String>,
}

/// The figures of one query: `found` is the answer's keys in order (only
/// the first `k` count), `expected` the keys that should be among them.
pub fn score(key: &str, found: &[String], expected: &[String], k: usize) -> Scored {
    let top = &found[..found.len().min(k)];
    let hits = top.iter().filter(|f| expected.contains(f)).count();
    let first = top.iter().position(|f| expected.contains(f));
    let dcg: f64 = top
        .iter()
        .enumerate()
        .filter(|(_, f)| expected.contains(f))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..expected.len().min(k))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    Scored {
        key: key.to_string(),
        k,
        recall: ratio(hits as f64, expected.len().min(k) as f64),
        precision: ratio(hits as f64, k as f64),
        reciprocal_rank: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
        ndcg: ratio(dcg, ideal),
        found: top.to_vec(),
        expected: expected.to_vec(),
    }
}

/// The means over all queries.
pub fn summary(scored: &[Scored]) -> Value {
    let mean = |f: fn(&Scored) -> f64| {
        if scored.is_empty() {
            0.0
        } else {
            scored.iter().map(f).sum::<f64>() / scored.len() as f64
        }
    };
    json!({
        "queries": scored.len(),
        "recall_at_k": mean(|s| s.recall),
        "precision_at_k": mean(|s| s.precision),
        "mrr_at_k": mean(|s| s.reciprocal_rank),
        "ndcg_at_k": mean(|s| s.ndcg),
    })
}

/// The `POST /v1/records` body for a dataset record line, stored under
/// `id`.
pub fn record_body(line: &Map<String, Value>, id: &str, vectors: Vectors) -> Result<Value, String> {
    let text = line.get("text").and_then(Value::as_str).unwrap_or("");
    let field = |name: &str| line.get(name).cloned();
    let strings = |name: &str| -> Vec<Value> {
        line.get(name)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let memory_type = line
        .get("memory_type")
        .and_then(Value::as_str)
        .ok_or("a record needs memory_type")?;
    let t = "2026-01-01T00:00:00Z";
    let payload = match memory_type {
        "episodic" => {
            let mut payload = json!({"kind": "episodic", "timeline": [{
                "t": t,
                "event_kind": field("event_kind").unwrap_or(json!("note")),
                "ref": id,
                "summary": text,
            }]});
            let tools: Vec<Value> = strings("tools")
                .into_iter()
                .enumerate()
                .map(|(i, tool)| json!({"id": format!("n{i}"), "tool": tool, "timestamp": t}))
                .collect();
            if !tools.is_empty() {
                payload["tool_graph"] = Value::Array(tools);
            }
            if let Some(outcome) = field("outcome") {
                payload["outcome"] = outcome;
            }
            payload
        }
        "semantic" => json!({
            "kind": "semantic",
            "subject": field("subject").unwrap_or(json!("note")),
            "predicate": field("predicate").unwrap_or(json!("says")),
            "object": field("object").unwrap_or(json!(text)),
        }),
        "working" => json!({
            "kind": "working",
            "thread_id": field("thread_id").unwrap_or(json!(id)),
            "state": field("state").unwrap_or(json!("executing")),
            "next_actions": strings("next_actions"),
            "open_questions": strings("open_questions"),
            "context_summary": text,
        }),
        "competence" => {
            let mut triggers = strings("triggers");
            let skill_name = match field("skill_name") {
                Some(name) => {
                    if !text.is_empty() {
                        triggers.push(json!(text));
                    }
                    name
                }
                None => json!(text),
            };
            json!({
                "kind": "competence",
                "skill_name": skill_name,
                "triggers": triggers.into_iter().map(|s| json!({"signal": s})).collect::<Vec<_>>(),
                "recipe": strings("steps").into_iter().map(|s| json!({"step": s})).collect::<Vec<_>>(),
                "failure_modes": strings("failure_modes"),
            })
        }
        "plan_graph" => {
            let mut ops = strings("nodes");
            let intent = match field("intent") {
                Some(intent) => {
                    if !text.is_empty() {
                        ops.push(json!(text));
                    }
                    intent
                }
                None => json!(text),
            };
            json!({
                "kind": "plan_graph",
                "plan_id": id,
                "intent": intent,
                "nodes": ops.into_iter().enumerate()
                    .map(|(i, op)| json!({"id": format!("n{i}"), "op": op}))
                    .collect::<Vec<_>>(),
            })
        }
        other => return Err(format!("unknown memory_type {other:?}")),
    };
    let mut body = json!({
        "id": id,
        "type": memory_type,
        "sensitivity": field("sensitivity").unwrap_or(json!("low")),
        "payload": payload,
        "provenance": {"created_by": "recall-dataset"},
    });
    for name in ["scope", "tags"] {
        if let Some(value) = field(name) {
            body[name] = value;
        }
    }
    if let Some(embedding) = vectors.of(line.get("embedding"), || record_text(line)) {
        body["embedding"] = embedding;
    }
    Ok(body)
}

/// Which vectors go with the records and queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vectors {
    None,
    /// The dataset's own.
    Given,
    /// The dataset's own, or the test embedder's.
    Made,
}

impl Vectors {
    pub fn new(options: &RecallOptions) -> Vectors {
        match (options.no_vectors, options.test_embedder) {
            (true, _) => Vectors::None,
            (false, false) => Vectors::Given,
            (false, true) => Vectors::Made,
        }
    }

    /// The vector to send: the `given` one, or one made from `text`.
    fn of(self, given: Option<&Value>, text: impl FnOnce() -> String) -> Option<Value> {
        match (self, given) {
            (Vectors::None, _) => None,
            (_, Some(given)) => Some(given.clone()),
            (Vectors::Given, None) => None,
            (Vectors::Made, None) => Some(json!(crate::embed::embed(
                &text(),
                crate::embed::DIMENSIONS
            ))),
        }
    }
}

/// Every text of a record line (strings and lists of strings), what the
/// record is about.
fn record_text(line: &Map<String, Value>) -> String {
    let mut parts = Vec::new();
    for (name, value) in line {
        if matches!(
            name.as_str(),
            "type" | "key" | "memory_type" | "sensitivity" | "scope" | "embedding"
        ) {
            continue;
        }
        match value {
            Value::String(text) => parts.push(text.clone()),
            Value::Array(items) => {
                parts.extend(items.iter().filter_map(Value::as_str).map(str::to_string))
            }
            _ => {}
        }
    }
    parts.join(" ")
}

/// Loads the dataset, asks every query, prints per-query misses and the
/// means; answers the summary.
pub async fn run(options: RecallOptions) -> Result<Value, String> {
    let text = std::fs::read_to_string(&options.dataset)
        .map_err(|e| format!("{}: {e}", options.dataset.display()))?;
    let mut records = Vec::new();
    let mut queries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let Value::Object(map) = value else {
            return Err(format!("line {}: not a JSON object", n + 1));
        };
        match map.get("type").and_then(Value::as_str) {
            Some("record") => records.push(map),
            Some("query") => queries.push(map),
            other => return Err(format!("line {}: unknown type {other:?}", n + 1)),
        }
    }
    let known: Vec<&str> = records
        .iter()
        .filter_map(|r| r.get("key").and_then(Value::as_str))
        .collect();
    for line in &queries {
        for expected in line
            .get("expected")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !expected.as_str().is_some_and(|e| known.contains(&e)) {
                return Err(format!(
                    "query {}: expected {expected} is no record of the dataset",
                    line.get("key").unwrap_or(&Value::Null)
                ));
            }
        }
    }
    let client = client(&options.headers);
    let vectors = Vectors::new(&options);
    // Ids unique to this run, so a dataset can be loaded again into the
    // same service; anything else the service holds counts as a miss.
    let prefix = format!("recall-{}-", uuid::Uuid::new_v4().simple());
    for line in &records {
        let key = line
            .get("key")
            .and_then(Value::as_str)
            .ok_or("a record needs a key")?;
        let body = record_body(line, &format!("{prefix}{key}"), vectors)
            .map_err(|e| format!("record {key}: {e}"))?;
        let (status, answer) = post(&client, &format!("{}/v1/records", options.url), &body).await?;
        if status != 201 {
            return Err(format!("record {key}: {status} {answer}"));
        }
    }
    let mut scored = Vec::new();
    for line in &queries {
        let key = line.get("key").and_then(Value::as_str).unwrap_or("?");
        let k = line.get("k").and_then(Value::as_u64).unwrap_or(5).max(1) as usize;
        let expected: Vec<String> = line
            .get("expected")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("query {key} needs expected"))?
            .iter()
            .filter_map(|e| e.as_str().map(str::to_string))
            .collect();
        let mut body = json!({
            "trust": line.get("trust").cloned().unwrap_or(json!({"max_sensitivity": "hyper"})),
            "task_descriptor": line.get("text").cloned().unwrap_or(Value::Null),
            "limit": k,
        });
        if let Some(types) = line.get("memory_types") {
            body["memory_types"] = types.clone();
        }
        let text = || {
            line.get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        if let Some(embedding) = vectors.of(line.get("query_embedding"), text) {
            body["query_embedding"] = embedding;
        }
        let (status, answer) =
            post(&client, &format!("{}/v1/retrieve", options.url), &body).await?;
        if status != 200 {
            return Err(format!("query {key}: {status} {answer}"));
        }
        let found: Vec<String> = answer["records"]
            .as_array()
            .map(|records| {
                records
                    .iter()
                    .filter_map(|r| r["id"].as_str())
                    .map(|id| id.strip_prefix(&prefix).unwrap_or("(other)").to_string())
                    .collect()
            })
            .unwrap_or_default();
        scored.push(score(key, &found, &expected, k));
    }
    let mut result = summary(&scored);
    result["records"] = json!(records.len());
    result["misses"] = scored
        .iter()
        .filter(|s| s.recall < 1.0 || s.reciprocal_rank < 1.0)
        .map(|s| json!({"key": s.key, "k": s.k, "expected": s.expected, "found": s.found}))
        .collect();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_figures_of_one_query() {
        let perfect = score("q", &keys(&["a", "b", "x"]), &keys(&["a", "b"]), 3);
        assert_eq!(perfect.recall, 1.0);
        assert!((perfect.precision - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(perfect.reciprocal_rank, 1.0);
        assert!((perfect.ndcg - 1.0).abs() < 1e-12);

        let second = score("q", &keys(&["x", "a"]), &keys(&["a"]), 2);
        assert_eq!(second.recall, 1.0);
        assert_eq!(second.reciprocal_rank, 0.5);
        assert!((second.ndcg - 1.0 / 3f64.log2()).abs() < 1e-12);

        // Beyond k does not count.
        let missed = score("q", &keys(&["x", "y", "a"]), &keys(&["a"]), 2);
        assert_eq!(missed.recall, 0.0);
        assert_eq!(missed.reciprocal_rank, 0.0);
        assert_eq!(missed.ndcg, 0.0);
        assert_eq!(missed.found, keys(&["x", "y"]));

        // More expected than k: recall is over what k can hold.
        let many = score("q", &keys(&["a"]), &keys(&["a", "b", "c"]), 1);
        assert_eq!(many.recall, 1.0);
    }

    #[test]
    fn means_over_queries() {
        let all = [
            score("1", &keys(&["a"]), &keys(&["a"]), 1),
            score("2", &keys(&["x"]), &keys(&["a"]), 1),
        ];
        let s = summary(&all);
        assert_eq!(s["recall_at_k"], 0.5);
        assert_eq!(s["mrr_at_k"], 0.5);
        assert_eq!(s["queries"], 2);
    }

    #[test]
    fn every_memory_type_becomes_a_record_body() {
        for (line, path, expected) in [
            (
                json!({"memory_type": "episodic", "text": "deploy failed", "event_kind": "error", "tools": ["kubectl"]}),
                "/payload/timeline/0/summary",
                json!("deploy failed"),
            ),
            (
                json!({"memory_type": "semantic", "text": "helix", "subject": "user", "predicate": "prefers editor"}),
                "/payload/object",
                json!("helix"),
            ),
            (
                json!({"memory_type": "working", "text": "halfway", "thread_id": "t1"}),
                "/payload/context_summary",
                json!("halfway"),
            ),
            (
                json!({"memory_type": "competence", "text": "go cache error", "skill_name": "fix go cache", "steps": ["go clean -cache"]}),
                "/payload/triggers/0/signal",
                json!("go cache error"),
            ),
            (
                json!({"memory_type": "plan_graph", "text": "ship a release", "nodes": ["tag", "build"]}),
                "/payload/intent",
                json!("ship a release"),
            ),
        ] {
            let map = line.as_object().unwrap();
            let body = record_body(map, "id-1", Vectors::Given).unwrap();
            assert_eq!(body.pointer(path), Some(&expected), "{body}");
            assert_eq!(body["id"], "id-1");
        }
        let bad = json!({"memory_type": "dream"});
        assert!(record_body(bad.as_object().unwrap(), "x", Vectors::Given).is_err());
    }
}
