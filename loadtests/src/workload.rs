//! Deterministic request generation: the same seed gives the same
//! sequence of requests, so a run can be repeated exactly.

use serde_json::{json, Value};

pub use loadtests::dialogue::Rng;

const WORDS: &[&str] = &[
    "agent", "deploy", "build", "auth", "module", "refactor", "test", "cache", "query", "index",
    "latency", "error", "retry", "schema", "token", "user", "session", "plan", "tool", "result",
];
const TAGS: &[&str] = &[
    "ops", "dev", "prod", "auth", "build", "infra", "ui", "db", "perf", "docs",
];
pub const SCOPES: &[&str] = &["project-alpha", "project-beta", "project-gamma"];
pub const SENSITIVITIES: &[&str] = &["public", "low", "low", "medium", "high"];

/// Words in the vocabulary texts are drawn from: [`WORDS`] are the most
/// common, the rest made of syllables.
const VOCABULARY: u64 = 4096;
const SYLLABLES: [&str; 16] = [
    "ka", "to", "mi", "re", "su", "la", "no", "pe", "di", "fu", "go", "bi", "ze", "ro", "ha", "vu",
];

/// A word of the vocabulary, by rank: frequent ones first, as in real
/// text, where a few words are everywhere and most are rare.
pub fn word(rank: u64) -> String {
    match WORDS.get(rank as usize) {
        Some(word) => word.to_string(),
        None => (0..3)
            .map(|i| SYLLABLES[(rank >> (4 * i)) as usize % 16])
            .collect(),
    }
}

/// A rank with probability about proportional to 1/rank (Zipf's law).
pub fn zipf_rank(rng: &mut Rng) -> u64 {
    let u = rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
    ((VOCABULARY as f64).powf(u) as u64).clamp(1, VOCABULARY) - 1
}

pub fn sentence(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| word(zipf_rank(rng)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One ingest request: where it goes, what is sent, and which parts of the
/// stored record must equal what was sent.
#[derive(Debug, Clone)]
pub struct Write {
    pub path: &'static str,
    pub body: Value,
    /// (JSON pointer into the stored record, expected value).
    pub expect: Vec<(&'static str, Value)>,
}

/// The `index`-th request of the `ingest` scenario for `seed`: a mix of
/// events, tool outputs, observations and working states of realistic size
/// (payloads of a few hundred bytes, three tags).
pub fn ingest_request(seed: u64, index: u64) -> Write {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407));
    let source = format!("load-agent-{}", rng.below(64));
    let tags: Vec<&str> = (0..3).map(|_| *rng.pick(TAGS)).collect();
    let mut tags_unique: Vec<&str> = Vec::new();
    for tag in tags {
        if !tags_unique.contains(&tag) {
            tags_unique.push(tag);
        }
    }
    let scope = *rng.pick(SCOPES);
    let sensitivity = *rng.pick(SENSITIVITIES);
    let common = |mut body: Value| {
        let object = body.as_object_mut().expect("object");
        object.insert("source".into(), json!(source));
        object.insert("tags".into(), json!(tags_unique));
        object.insert("scope".into(), json!(scope));
        object.insert("sensitivity".into(), json!(sensitivity));
        body
    };
    let shared = vec![
        ("/tags", json!(tags_unique)),
        ("/scope", json!(scope)),
        ("/sensitivity", json!(sensitivity)),
    ];
    match rng.below(4) {
        0 => {
            let reference = format!("msg-{seed}-{index}");
            let summary = sentence(&mut rng, 40);
            let mut expect = shared;
            expect.push(("/payload/timeline/0/ref", json!(reference)));
            expect.push(("/payload/timeline/0/summary", json!(summary)));
            Write {
                path: "/v1/ingest/event",
                body: common(
                    json!({"event_kind": "user_input", "ref": reference, "summary": summary}),
                ),
                expect,
            }
        }
        1 => {
            let args = json!({"path": format!("/src/{}.rs", rng.pick(WORDS)), "query": sentence(&mut rng, 8)});
            let result = json!({"lines": rng.below(5000), "content": sentence(&mut rng, 30)});
            let tool = format!("tool_{}", rng.pick(WORDS));
            let mut expect = shared;
            expect.push(("/payload/tool_graph/0/tool", json!(tool)));
            expect.push(("/payload/tool_graph/0/args", args.clone()));
            expect.push(("/payload/tool_graph/0/result", result.clone()));
            Write {
                path: "/v1/ingest/tool-output",
                body: common(json!({"tool_name": tool, "args": args, "result": result})),
                expect,
            }
        }
        2 => {
            let subject = format!("{}-{}", rng.pick(WORDS), rng.below(1000));
            let object = json!({"value": sentence(&mut rng, 30), "n": rng.below(100)});
            let mut expect = shared;
            expect.push(("/payload/subject", json!(subject)));
            expect.push(("/payload/object", object.clone()));
            Write {
                path: "/v1/ingest/observation",
                body: common(
                    json!({"subject": subject, "predicate": "observed_as", "object": object}),
                ),
                expect,
            }
        }
        _ => {
            let thread = format!("thread-{}", rng.below(256));
            let summary = sentence(&mut rng, 35);
            let mut expect = shared;
            expect.push(("/payload/thread_id", json!(thread)));
            expect.push(("/payload/context_summary", json!(summary)));
            Write {
                path: "/v1/ingest/working-state",
                body: common(json!({
                    "thread_id": thread, "state": "executing", "context_summary": summary,
                    "next_actions": [sentence(&mut rng, 4), sentence(&mut rng, 4)]
                })),
                expect,
            }
        }
    }
}

/// A batch of `size` ingest items; item `j` expects what
/// `ingest_request(seed, first + j)` expects.
pub fn batch_request(seed: u64, first: u64, size: u64) -> (Value, Vec<Vec<(&'static str, Value)>>) {
    let mut items = Vec::with_capacity(size as usize);
    let mut expects = Vec::with_capacity(size as usize);
    for index in first..first + size {
        let write = ingest_request(seed, index);
        let kind = match write.path {
            "/v1/ingest/event" => "event",
            "/v1/ingest/tool-output" => "tool_output",
            "/v1/ingest/observation" => "observation",
            _ => "working_state",
        };
        let mut item = write.body;
        item["kind"] = json!(kind);
        items.push(item);
        expects.push(write.expect);
    }
    (json!({ "items": items }), expects)
}

/// A retrieval under a varied trust context: any sensitivity ceiling, and
/// no scopes, one, or two of them.
pub fn varied_retrieval(rng: &mut Rng) -> Value {
    let ceiling = *rng.pick(&["public", "low", "medium", "high", "hyper"]);
    let scopes: Vec<&str> = match rng.below(3) {
        0 => vec![],
        1 => vec![*rng.pick(SCOPES)],
        _ => vec![SCOPES[0], *rng.pick(&SCOPES[1..])],
    };
    json!({
        "trust": {"max_sensitivity": ceiling, "authenticated": true, "actor_id": "loadtests", "scopes": scopes},
        "limit": 20,
        "min_salience": 0.0
    })
}

/// The retrieval of the retrieval target: limit 20, a trust context that
/// sees about a tenth of what `ingest_request` writes (public records of
/// two of the three scopes: 1/5 x 2/3).
pub fn narrow_retrieval() -> Value {
    json!({
        "trust": {"max_sensitivity": "public", "authenticated": true, "actor_id": "loadtests",
                  "scopes": [SCOPES[0], SCOPES[1]]},
        "limit": 20
    })
}

/// [`narrow_retrieval`] with a query of three words drawn as the texts
/// draw theirs: text-ranked, about a tenth of the records visible.
pub fn search_retrieval(rng: &mut Rng) -> Value {
    let mut body = narrow_retrieval();
    body["task_descriptor"] = json!(sentence(rng, 3));
    body
}

/// A fact the `revise` scenario keeps superseding: topic `topic`,
/// version `version`.
/// Distinct topic titles the `topics` scenario draws from.
pub const TOPIC_TITLES: u64 = 100_000;

/// The title of topic `n`: two vocabulary words and the number, so text
/// queries by words match a few topics each.
pub fn topic_title(n: u64) -> String {
    format!("{} {} {n}", word(n % 4096), word((n / 4096 + n * 7) % 4096))
}

/// A 5-field observation of one of [`TOPIC_TITLES`] topics, `auto`
/// placed: a title seen before extends its topic (fields versioned when
/// their drawn value differs, left as they are otherwise), a new one makes
/// it.
pub fn topic_observation(rng: &mut Rng) -> Value {
    let n = rng.below(TOPIC_TITLES);
    topic_ingest(rng, "auto", n)
}

/// A `new_topic` ingest of topic `n` of [`TOPIC_TITLES`] (request `n`
/// makes topic `n`): fills a database with as many topics as requests.
pub fn topic_fill(rng: &mut Rng, n: u64) -> Value {
    topic_ingest(rng, "new_topic", n % TOPIC_TITLES)
}

fn topic_ingest(rng: &mut Rng, placement: &str, n: u64) -> Value {
    let fields: Vec<Value> = ["status", "owner", "version", "region", "note"]
        .iter()
        .map(|name| {
            let value = match *name {
                "status" => json!(*rng.pick(&["green", "amber", "red"])),
                "owner" => json!(format!("team-{}", rng.below(20))),
                "version" => json!(format!("1.{}", rng.below(4))),
                "region" => json!(*rng.pick(&["eu", "us", "ap"])),
                _ => json!(sentence(rng, 6)),
            };
            json!({"name": name, "value": value})
        })
        .collect();
    json!({
        "placement": placement, "title": topic_title(n), "kind": "service",
        "source": "loadtests", "fields": fields,
        "trust": {"max_sensitivity": "hyper", "actor_id": "loadtests"},
    })
}

/// A topic query of two words from the topic titles, one hop.
pub fn topic_query(rng: &mut Rng) -> Value {
    let n = rng.below(TOPIC_TITLES);
    json!({
        "trust": {"max_sensitivity": "hyper", "actor_id": "loadtests"},
        "text": topic_title(n).rsplit_once(' ').map(|(words, _)| words.to_string()),
        "limit": 10, "hops": 1,
    })
}

pub fn topic_fact(topic: usize, version: u64) -> Value {
    json!({
        "type": "semantic", "sensitivity": "low", "scope": SCOPES[topic % SCOPES.len()],
        "payload": {"kind": "semantic", "subject": format!("topic-{topic}"), "predicate": "version",
                    "object": version,
                    "evidence": [{"source_type": "loadtest", "source_id": format!("topic-{topic}-v{version}")}]}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_requests() {
        for i in 0..20 {
            assert_eq!(ingest_request(7, i).body, ingest_request(7, i).body);
        }
        let differ = (0..20).any(|i| ingest_request(7, i).body != ingest_request(8, i).body);
        assert!(differ);
    }

    #[test]
    fn a_batch_is_the_same_writes_with_a_kind() {
        let (body, expects) = batch_request(3, 10, 4);
        assert_eq!(body["items"].as_array().unwrap().len(), 4);
        assert_eq!(expects[2], ingest_request(3, 12).expect);
        assert!(body["items"][0]["kind"].is_string());
    }

    #[test]
    fn every_request_kind_occurs() {
        let paths: std::collections::HashSet<&str> =
            (0..200).map(|i| ingest_request(1, i).path).collect();
        assert_eq!(paths.len(), 4);
    }
}
