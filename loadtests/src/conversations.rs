//! `loadtests conversations`: how well retrieval finds the turns of a
//! conversation that answer a question. Ingests a set's conversations
//! through `POST /v1/ingest/conversation` (each conversation in a scope of
//! its own, one request per session), asks each question as a
//! `task_descriptor` (episodic memory, limit 10, the conversation's scope)
//! and scores the turns found against the question's evidence turns:
//! recall@5, recall@10 (the share of the evidence in the top k) and
//! MRR@10, overall and by category. The same questions are ranked by a
//! plain BM25 over the same turns, computed here, as the baseline.
//!
//! The set is a directory with `conversations.jsonl` (one conversation a
//! line: `conversation_id`, `sessions: [{session_id, turns: [{speaker,
//! text, at, ref, attachments}]}]`) and `questions.jsonl`
//! (`conversation_id`, `question`, `category`, `evidence: [ref]`).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use crate::http::{client, post};

pub struct ConversationOptions {
    pub url: String,
    pub dataset: PathBuf,
    pub headers: Vec<(String, String)>,
    /// Give each turn and question a vector of [`crate::embed::embed`].
    pub test_embedder: bool,
    /// Every conversation in one scope: each question is asked among the
    /// turns of all of them (the others' turns as distractors, and words
    /// common enough to be counted), the baseline likewise.
    pub one_scope: bool,
    /// Turns of other talk (`tenants` dialogue) added to the one scope
    /// before the questions, in conversations of their own.
    pub distractors: u64,
}

/// A turn as the set has it.
#[derive(Debug, Clone)]
struct Turn {
    reference: String,
    /// What is searched: speaker, text and captions.
    text: String,
}

/// A question and the refs of the turns that answer it.
#[derive(Debug, Clone)]
struct Question {
    conversation: String,
    text: String,
    category: String,
    evidence: Vec<String>,
}

/// The figures of a system over some questions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    pub questions: usize,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr_at_10: f64,
}

impl Figures {
    fn add(&mut self, found: &[String], evidence: &[String]) {
        let share = |k: usize| {
            let top = &found[..found.len().min(k)];
            evidence.iter().filter(|e| top.contains(e)).count() as f64 / evidence.len() as f64
        };
        let first = found
            .iter()
            .take(10)
            .position(|f| evidence.contains(f))
            .map_or(0.0, |i| 1.0 / (i + 1) as f64);
        self.questions += 1;
        self.recall_at_5 += share(5);
        self.recall_at_10 += share(10);
        self.mrr_at_10 += first;
    }

    fn mean(self) -> Figures {
        let n = self.questions.max(1) as f64;
        Figures {
            questions: self.questions,
            recall_at_5: self.recall_at_5 / n,
            recall_at_10: self.recall_at_10 / n,
            mrr_at_10: self.mrr_at_10 / n,
        }
    }

    fn json(self) -> Value {
        json!({"questions": self.questions, "recall_at_5": self.recall_at_5,
               "recall_at_10": self.recall_at_10, "mrr_at_10": self.mrr_at_10})
    }
}

/// Figures overall and by category.
#[derive(Default)]
struct Tally {
    all: Figures,
    by_category: BTreeMap<String, Figures>,
}

impl Tally {
    fn add(&mut self, category: &str, found: &[String], evidence: &[String]) {
        self.all.add(found, evidence);
        self.by_category
            .entry(category.to_string())
            .or_default()
            .add(found, evidence);
    }

    fn json(&self) -> Value {
        let mut value = self.all.mean().json();
        value["by_category"] = self
            .by_category
            .iter()
            .map(|(c, f)| (c.clone(), f.mean().json()))
            .collect::<serde_json::Map<_, _>>()
            .into();
        value
    }
}

fn read_lines(path: &PathBuf) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))
        })
        .collect()
}

fn text_of(turn: &Value) -> String {
    let mut text = format!(
        "{}: {}",
        turn["speaker"].as_str().unwrap_or(""),
        turn["text"].as_str().unwrap_or("")
    );
    for attachment in turn["attachments"].as_array().into_iter().flatten() {
        text.push(' ');
        text.push_str(attachment["caption"].as_str().unwrap_or(""));
    }
    text
}

pub async fn run(options: ConversationOptions) -> Result<Value, String> {
    let conversations = read_lines(&options.dataset.join("conversations.jsonl"))?;
    let questions: Vec<Question> = read_lines(&options.dataset.join("questions.jsonl"))?
        .iter()
        .map(|q| Question {
            conversation: q["conversation_id"].as_str().unwrap_or("").to_string(),
            text: q["question"].as_str().unwrap_or("").to_string(),
            category: q["category"].as_str().unwrap_or("").to_string(),
            evidence: q["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().map(str::to_string))
                .collect(),
        })
        .collect();
    let http = client(&options.headers);
    // A scope of this run's own per conversation, so a set can be loaded
    // again into the same service.
    let run = uuid::Uuid::new_v4().simple().to_string();
    let scope_of = |conversation: &str| {
        if options.one_scope {
            format!("conv-{run}")
        } else {
            format!("conv-{run}-{conversation}")
        }
    };
    let mut by_id: HashMap<String, String> = HashMap::new();
    let mut turns_of: HashMap<String, Vec<Turn>> = HashMap::new();
    let mut turns = 0usize;
    let started = Instant::now();
    for conversation in &conversations {
        let id = conversation["conversation_id"]
            .as_str()
            .ok_or("a conversation needs conversation_id")?;
        for session in conversation["sessions"].as_array().into_iter().flatten() {
            let mut sent = Vec::new();
            for turn in session["turns"].as_array().into_iter().flatten() {
                let mut body = json!({"speaker": turn["speaker"], "text": turn["text"],
                                      "at": turn["at"], "ref": turn["ref"]});
                if turn.get("attachments").is_some() {
                    body["attachments"] = turn["attachments"].clone();
                }
                if options.test_embedder {
                    body["embedding"] = json!(crate::embed::embed(
                        &text_of(turn),
                        crate::embed::DIMENSIONS
                    ));
                }
                sent.push(body);
                turns_of.entry(id.to_string()).or_default().push(Turn {
                    reference: turn["ref"].as_str().unwrap_or("").to_string(),
                    text: text_of(turn),
                });
            }
            let (status, answer) = post(
                &http,
                &format!("{}/v1/ingest/conversation", options.url),
                &json!({"source": "loadtests", "conversation_id": id,
                        "session_id": session["session_id"], "scope": scope_of(id),
                        "turns": sent}),
            )
            .await?;
            if status != 201 {
                return Err(format!("conversation {id}: {status} {answer}"));
            }
            for record in answer["records"].as_array().into_iter().flatten() {
                let turn = &record["payload"]["turn"];
                if let (Some(record_id), Some(reference)) =
                    (record["id"].as_str(), turn["ref"].as_str())
                {
                    by_id.insert(record_id.to_string(), reference.to_string());
                    turns += 1;
                }
            }
        }
    }
    let ingest_seconds = started.elapsed().as_secs_f64();
    if options.distractors > 0 {
        add_distractors(&http, &options, &scope_of(""), &mut turns_of).await?;
    }

    let mut engram = Tally::default();
    let mut baseline = Tally::default();
    // The baseline ranks what each question's scope holds.
    let every: Vec<Turn> = turns_of.values().flatten().cloned().collect();
    let all = Bm25::new(&every);
    let indexes: HashMap<&String, Bm25> = if options.one_scope {
        HashMap::new()
    } else {
        turns_of
            .iter()
            .map(|(id, turns)| (id, Bm25::new(turns)))
            .collect()
    };
    let started = Instant::now();
    for question in &questions {
        let mut body = json!({
            "trust": {"max_sensitivity": "hyper", "scopes": [scope_of(&question.conversation)]},
            "task_descriptor": question.text, "memory_types": ["episodic"], "limit": 10,
        });
        if options.test_embedder {
            body["query_embedding"] = json!(crate::embed::embed(
                &question.text,
                crate::embed::DIMENSIONS
            ));
        }
        let (status, answer) = post(&http, &format!("{}/v1/retrieve", options.url), &body).await?;
        if status != 200 {
            return Err(format!("question {:?}: {status} {answer}", question.text));
        }
        let found: Vec<String> = answer["records"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                r["id"]
                    .as_str()
                    .and_then(|id| by_id.get(id))
                    .cloned()
                    .unwrap_or_else(|| "(other)".to_string())
            })
            .collect();
        engram.add(&question.category, &found, &question.evidence);
        let plain = if options.one_scope {
            all.top(&question.text, 10)
        } else {
            indexes
                .get(&question.conversation)
                .map(|index| index.top(&question.text, 10))
                .unwrap_or_default()
        };
        baseline.add(&question.category, &plain, &question.evidence);
    }
    let query_seconds = started.elapsed().as_secs_f64();
    Ok(json!({
        "conversations": conversations.len(),
        "turns": turns,
        "ingest_turns_per_second": turns as f64 / ingest_seconds.max(1e-9),
        "questions_per_second": questions.len() as f64 / query_seconds.max(1e-9),
        "engram": engram.json(),
        "baseline": baseline.json(),
    }))
}

/// Adds `options.distractors` turns of other talk to `scope`, 100 to a
/// session (their time: now), 10 sessions to a conversation; the
/// baseline gets them too.
async fn add_distractors(
    http: &awc::Client,
    options: &ConversationOptions,
    scope: &str,
    turns_of: &mut HashMap<String, Vec<Turn>>,
) -> Result<(), String> {
    let mut rng = crate::dialogue::Rng::new(0x5eed);
    let speakers = ["Ana", "Bob", "Caro", "Dev"];
    let mut added = 0u64;
    while added < options.distractors {
        let n = (options.distractors - added).min(100);
        let conversation = format!("other-{}", added / 1000);
        let session = format!("s{}", added / 100);
        let mut sent = Vec::new();
        for i in 0..n {
            let speaker = speakers[(i % 4) as usize];
            let text = crate::dialogue::utterance(&mut rng);
            turns_of
                .entry(conversation.clone())
                .or_default()
                .push(Turn {
                    reference: format!("{conversation}:{session}:{i}"),
                    text: format!("{speaker}: {text}"),
                });
            sent.push(json!({"speaker": speaker, "text": text}));
        }
        let (status, answer) = post(
            http,
            &format!("{}/v1/ingest/conversation", options.url),
            &json!({"source": "loadtests", "conversation_id": conversation,
                    "session_id": session, "scope": scope, "turns": sent}),
        )
        .await?;
        if status != 201 {
            return Err(format!("distractors: {status} {answer}"));
        }
        added += n;
    }
    Ok(())
}

/// `loadtests conversation-ingest`: `requests` requests of `turns` turns
/// each, from `clients` clients at once, each request a new session of a
/// conversation of its client's (so they never wait on each other's
/// order); answers the turns stored per second and the request latencies
/// (p50, p99, in ms).
pub async fn ingest_throughput(
    url: &str,
    headers: &[(String, String)],
    clients: usize,
    requests: u64,
    turns: u64,
) -> Result<String, String> {
    let http = client(headers);
    let next = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let run = uuid::Uuid::new_v4().simple().to_string();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (http, next, url, run) = (http.clone(), next.clone(), url.to_string(), run.clone());
        tasks.push(actix_rt::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let n = next.get();
                if n >= requests {
                    return Ok::<_, String>(latencies);
                }
                next.set(n + 1);
                let sent: Vec<Value> = (0..turns)
                    .map(|t| {
                        json!({"speaker": if t % 2 == 0 { "Ann" } else { "Bo" },
                               "text": format!("turn {t} of request {n}: the billing job ran slowly again at {}", t % 97)})
                    })
                    .collect();
                let body = json!({"source": "loadtests", "conversation_id": format!("load-{run}-{c}"),
                                  "session_id": format!("s{n}"), "scope": format!("load-{run}"),
                                  "turns": sent});
                let at = Instant::now();
                let (status, answer) =
                    post(&http, &format!("{url}/v1/ingest/conversation"), &body).await?;
                if status != 201 {
                    return Err(format!("a conversation ingest answered {status}: {answer}"));
                }
                latencies.push(at.elapsed().as_secs_f64() * 1000.0);
            }
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.map_err(|e| e.to_string())??);
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    Ok(format!(
        "{} requests of {turns} turns from {clients} clients in {seconds:.2} s: {:.0} turns/s, \
         request p50 {:.1} ms, p99 {:.1} ms\n",
        latencies.len(),
        (latencies.len() as u64 * turns) as f64 / seconds,
        at(0.5),
        at(0.99)
    ))
}

/// The figures of [`run`] as lines of text.
pub fn report(result: &Value) -> String {
    let line = |name: &str, f: &Value| {
        format!(
            "{name:<22} recall@5 {:.3}  recall@10 {:.3}  MRR@10 {:.3}  ({} questions)\n",
            f["recall_at_5"].as_f64().unwrap_or(0.0),
            f["recall_at_10"].as_f64().unwrap_or(0.0),
            f["mrr_at_10"].as_f64().unwrap_or(0.0),
            f["questions"]
        )
    };
    let mut text = format!(
        "{} conversations, {} turns ingested at {:.0} turns/s, {:.0} questions/s\n",
        result["conversations"],
        result["turns"],
        result["ingest_turns_per_second"].as_f64().unwrap_or(0.0),
        result["questions_per_second"].as_f64().unwrap_or(0.0),
    );
    text.push_str(&line("engram", &result["engram"]));
    text.push_str(&line("plain BM25", &result["baseline"]));
    let categories = result["engram"]["by_category"].as_object();
    for (category, figures) in categories.into_iter().flatten() {
        text.push_str(&line(&format!("  engram {category}"), figures));
        text.push_str(&line(
            &format!("  BM25 {category}"),
            &result["baseline"]["by_category"][category],
        ));
    }
    text
}

/// Words that say nothing of what a text is about.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their",
    "them", "then", "there", "they", "this", "to", "up", "us", "was", "we", "were", "what", "when",
    "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Lowercased words, stop words out, a few English suffixes cut.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| {
            for suffix in ["ing", "ed", "es", "s"] {
                if let Some(stem) = w.strip_suffix(suffix) {
                    if stem.len() >= 3 {
                        return stem.to_string();
                    }
                }
            }
            w
        })
        .collect()
}

/// The baseline: plain BM25 (k1 1.2, b 0.75) over one conversation's
/// turns, each a document of its own.
struct Bm25 {
    docs: Vec<(String, HashMap<String, f64>, f64)>,
    df: HashMap<String, f64>,
    average: f64,
}

impl Bm25 {
    fn new(turns: &[Turn]) -> Bm25 {
        let mut df: HashMap<String, f64> = HashMap::new();
        let docs: Vec<(String, HashMap<String, f64>, f64)> = turns
            .iter()
            .map(|t| {
                let words = words(&t.text);
                let mut tf: HashMap<String, f64> = HashMap::new();
                for w in &words {
                    *tf.entry(w.clone()).or_default() += 1.0;
                }
                for w in tf.keys() {
                    *df.entry(w.clone()).or_default() += 1.0;
                }
                (t.reference.clone(), tf, words.len() as f64)
            })
            .collect();
        let average = docs.iter().map(|d| d.2).sum::<f64>() / docs.len().max(1) as f64;
        Bm25 { docs, df, average }
    }

    fn top(&self, query: &str, k: usize) -> Vec<String> {
        let (k1, b) = (1.2, 0.75);
        let n = self.docs.len() as f64;
        let mut terms = words(query);
        terms.sort();
        terms.dedup();
        let mut scored: Vec<(f64, usize)> = self
            .docs
            .iter()
            .enumerate()
            .map(|(i, (_, tf, length))| {
                let score = terms
                    .iter()
                    .filter_map(|t| Some((tf.get(t)?, self.df.get(t)?)))
                    .map(|(&f, &df)| {
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        idf * f * (k1 + 1.0)
                            / (f + k1 * (1.0 - b + b * length / self.average.max(1.0)))
                    })
                    .sum::<f64>();
                (score, i)
            })
            .filter(|(score, _)| *score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(k)
            .map(|(_, i)| self.docs[i].0.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_is_the_share_of_the_evidence_in_the_top_k() {
        let mut f = Figures::default();
        let found: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        f.add(&found, &["t1".into(), "t7".into()]);
        let m = f.mean();
        assert_eq!(m.recall_at_5, 0.5);
        assert_eq!(m.recall_at_10, 1.0);
        assert_eq!(m.mrr_at_10, 0.5);
    }

    #[test]
    fn the_baseline_ranks_by_shared_rare_words() {
        let turns: Vec<Turn> = [
            ("a", "Ann: I bought a cello"),
            ("b", "Bo: the weather is nice"),
            ("c", "Ann: the weather is cold"),
        ]
        .iter()
        .map(|(r, t)| Turn {
            reference: r.to_string(),
            text: t.to_string(),
        })
        .collect();
        let index = Bm25::new(&turns);
        assert_eq!(index.top("who bought the cello?", 10), ["a"]);
        assert_eq!(index.top("cold weather", 10)[0], "c");
    }
}
