//! What a record is about, as text for the full-text index, and a
//! client's free text turned into a query that index can never fail on.

use std::sync::Arc;

use serde_json::Value;

use super::analysis::{self, Analysed};
use super::conversation::Turn;
use super::payload::{Payload, TaskState};
use super::record::MemoryRecord;

/// Most words of a client's text used in a query.
pub const MAX_QUERY_TERMS: usize = 32;

/// Longest text a JSON value (a fact's object) contributes.
const MAX_VALUE_TEXT: usize = 4096;

/// The record's search text: the fields that say what it is about, by
/// type, then its tags. Episodic: event kinds, refs, summaries, tool
/// names, a turn's speaker, text and captions; semantic: subject, predicate, object; working: thread, state,
/// next actions, open questions, context; competence: skill name, trigger
/// signals, recipe steps, failure modes; plan_graph: intent, node ops.
pub fn search_text(record: &MemoryRecord) -> String {
    let mut parts: Vec<String> = Vec::new();
    match &record.payload {
        Payload::Episodic(p) => {
            for event in &p.timeline {
                parts.push(event.event_kind.clone());
                parts.push(event.reference.clone());
                parts.extend(event.summary.clone());
            }
            parts.extend(p.tool_graph.iter().map(|node| node.tool.clone()));
            parts.extend(p.turn.as_ref().map(Turn::search_text));
        }
        Payload::Semantic(p) => {
            parts.push(p.subject.clone());
            parts.push(p.predicate.clone());
            let mut object = String::new();
            value_text(&p.object, &mut object);
            parts.push(object);
        }
        Payload::Working(p) => {
            parts.push(p.thread_id.clone());
            parts.push(task_state(p.state).to_string());
            parts.extend(p.next_actions.iter().cloned());
            parts.extend(p.open_questions.iter().cloned());
            parts.extend(p.context_summary.clone());
        }
        Payload::Competence(p) => {
            parts.push(p.skill_name.clone());
            parts.extend(p.triggers.iter().map(|t| t.signal.clone()));
            parts.extend(p.recipe.iter().map(|step| step.step.clone()));
            parts.extend(p.failure_modes.iter().cloned());
        }
        Payload::PlanGraph(p) => {
            parts.extend(p.intent.clone());
            parts.extend(p.nodes.iter().map(|node| node.op.clone()));
        }
    }
    parts.extend(record.tags.iter().cloned());
    parts.retain(|part| !part.trim().is_empty());
    parts.join("\n")
}

fn task_state(state: TaskState) -> &'static str {
    match state {
        TaskState::Planning => "planning",
        TaskState::Executing => "executing",
        TaskState::Blocked => "blocked",
        TaskState::Waiting => "waiting",
        TaskState::Done => "done",
    }
}

/// The strings and numbers of a JSON value, keys included, space
/// separated, up to [`MAX_VALUE_TEXT`] bytes.
fn value_text(value: &Value, out: &mut String) {
    if out.len() >= MAX_VALUE_TEXT {
        return;
    }
    match value {
        Value::String(s) => push_word(out, s),
        Value::Number(n) => push_word(out, &n.to_string()),
        Value::Bool(b) => push_word(out, if *b { "true" } else { "false" }),
        Value::Null => {}
        Value::Array(items) => items.iter().for_each(|item| value_text(item, out)),
        Value::Object(map) => {
            for (key, item) in map {
                push_word(out, key);
                value_text(item, out);
            }
        }
    }
}

fn push_word(out: &mut String, word: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    let room = MAX_VALUE_TEXT.saturating_sub(out.len());
    let mut end = word.len().min(room);
    while !word.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&word[..end]);
}

/// English function words left out of queries: they say nothing about
/// what a record is about, and each matches most of the index, which costs
/// time in proportion to the whole table.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or",
    "our", "should", "so", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "to", "up", "us", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "would", "you", "your",
];

/// A client's free text as full-text query terms: its words as the
/// analyser makes them (`domain::analysis`: runs of letters and digits,
/// folded, stemmed), each quoted, so no operator, quote, `*`, `NEAR`, `-`
/// or parenthesis the client typed is ever taken as query syntax. Stop
/// words are dropped unless the text has nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextQuery {
    terms: Vec<String>,
    /// Whether it asks when something happened ("when", "what year",
    /// "how long ago"): turns that say when are favoured.
    asks_when: bool,
}

/// Words after which a question asks for a time ("what year", "which
/// month").
const TIME_NOUNS: &[&str] = &[
    "time", "date", "day", "week", "month", "year", "weekday", "season",
];

/// Whether `words` (folded, in order) ask when something happened.
fn asks_when(words: &[String]) -> bool {
    words.iter().enumerate().any(|(i, w)| {
        let next = words.get(i + 1).map(String::as_str);
        let after = words.get(i + 2).map(String::as_str);
        match w.as_str() {
            "when" => true,
            "what" | "which" => next.is_some_and(|n| TIME_NOUNS.contains(&n)),
            "how" => next == Some("long") && after == Some("ago"),
            _ => false,
        }
    })
}

impl TextQuery {
    /// `None` when the text has no words.
    pub fn new(text: &str) -> Option<TextQuery> {
        let words = analysis::words(text);
        let mut kept: Vec<&String> = words
            .iter()
            .filter(|w| !STOP_WORDS.contains(&w.as_str()))
            .collect();
        if kept.is_empty() {
            kept = words.iter().collect();
        }
        let mut terms: Vec<String> = Vec::new();
        for word in kept {
            let term = analysis::stem(word);
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        terms.truncate(MAX_QUERY_TERMS);
        if terms.is_empty() {
            return None;
        }
        Some(TextQuery {
            terms: terms.iter().map(|term| format!("\"{term}\"")).collect(),
            asks_when: asks_when(&words),
        })
    }

    /// Whether the text asks when something happened.
    pub fn asks_when(&self) -> bool {
        self.asks_when
    }

    /// Each word as a query of its own.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Records with any of the words: BM25 ranks them by how many and how
    /// rare the words they have are.
    pub fn any(&self) -> String {
        any_of(&self.terms)
    }

    /// Records with every word.
    pub fn all(&self) -> String {
        self.terms.join(" AND ")
    }
}

/// Records with any of these terms (of a [`TextQuery`]).
pub fn any_of(terms: &[impl AsRef<str>]) -> String {
    terms
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// A record's search text, analysed, and the text's hash.
#[derive(Debug, Clone)]
pub struct Searchable {
    pub hash: i64,
    pub analysed: Arc<Analysed>,
    /// The search text it was made from.
    text: Arc<str>,
}

impl Searchable {
    /// `record`'s, made now.
    pub fn analyse(record: &MemoryRecord) -> Searchable {
        Searchable::of_text(search_text(record))
    }

    /// `record`'s: the one made ahead of storing it
    /// ([`MemoryRecord::searchable`]) while the record's text is still the
    /// one it was made from, else made now.
    pub fn of(record: &MemoryRecord) -> Searchable {
        let text = search_text(record);
        match &record.searchable.0 {
            Some(ahead) if *ahead.text == *text => ahead.clone(),
            _ => Searchable::of_text(text),
        }
    }

    fn of_text(text: String) -> Searchable {
        Searchable {
            hash: text_hash(&text),
            analysed: Arc::new(analysis::analyse(&text)),
            text: text.into(),
        }
    }
}

/// Analyses `record`'s search text now, ahead of storing it.
pub fn analyse_ahead(record: &mut MemoryRecord) {
    record.searchable = Ahead(Some(Searchable::analyse(record)));
}

/// [`Searchable`] made ahead of storing a record, off the writer's thread.
/// Derived from the record, so no part of what it is: any two are equal.
#[derive(Debug, Clone, Default)]
pub struct Ahead(pub Option<Searchable>);

impl PartialEq for Ahead {
    fn eq(&self, _: &Ahead) -> bool {
        true
    }
}

/// A stable 64-bit hash (FNV-1a) of a search text: what an embedding made
/// from the text remembers of it, to tell when the text has changed.
pub fn text_hash(text: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query of [`TextQuery::any`] for a client's text, or `None`.
    fn any_words(text: &str) -> Option<String> {
        TextQuery::new(text).map(|q| q.any())
    }
    use crate::domain::new_record::NewRecord;
    use crate::domain::policy::Policy;
    use crate::domain::record::Attribution;
    use crate::domain::time::parse_rfc3339;
    use serde_json::json;

    fn record(body: Value) -> MemoryRecord {
        let new: NewRecord = serde_json::from_value(body).unwrap();
        new.into_record(
            &Policy::default(),
            &Attribution::new("t", "test"),
            parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
            || "id".into(),
        )
        .unwrap()
    }

    #[test]
    fn an_analysis_made_ahead_stands_only_for_the_text_it_was_made_from() {
        let mut fact = record(json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "deployments", "predicate": "run", "object": "nightly"}}));
        analyse_ahead(&mut fact);
        let ahead = fact.searchable.0.clone().unwrap();
        assert!(Arc::ptr_eq(
            &Searchable::of(&fact).analysed,
            &ahead.analysed
        ));
        assert_eq!(ahead.hash, text_hash(&search_text(&fact)));
        assert_eq!(*ahead.analysed, analysis::analyse(&search_text(&fact)));
        // Changed after it was made: made again, from the text now.
        fact.tags.push("policies".into());
        let now = Searchable::of(&fact);
        assert!(!Arc::ptr_eq(&now.analysed, &ahead.analysed));
        assert_eq!(*now.analysed, analysis::analyse(&search_text(&fact)));
        assert!(now.analysed.distinct.contains("polici"));
        // Not part of what the record is.
        let mut plain = fact.clone();
        plain.searchable = Ahead::default();
        assert_eq!(plain, fact);
    }

    #[test]
    fn each_type_says_what_it_is_about() {
        let episode = record(
            json!({"type": "episodic", "sensitivity": "low", "tags": ["ci"],
            "payload": {"kind": "episodic",
                "timeline": [{"t": "2025-01-01T00:00:00Z", "event_kind": "build_failure", "ref": "job-7", "summary": "Go linker cache corrupted"}],
                "tool_graph": [{"id": "n", "tool": "go_build", "timestamp": "2025-01-01T00:00:00Z", "args": {"secret": "x"}}]}}),
        );
        let text = search_text(&episode);
        for word in [
            "build_failure",
            "job-7",
            "Go linker cache corrupted",
            "go_build",
            "ci",
        ] {
            assert!(text.contains(word), "{word} in {text:?}");
        }
        assert!(!text.contains("secret"), "tool args are not searched");

        let fact = record(json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "user", "predicate": "prefers_editor",
                        "object": {"name": "helix", "since": 2024}}}));
        assert_eq!(
            search_text(&fact),
            "user\nprefers_editor\nname helix since 2024"
        );

        let working = record(json!({"type": "working", "sensitivity": "low",
            "payload": {"kind": "working", "thread_id": "t-1", "state": "blocked",
                        "next_actions": ["ask for access"], "open_questions": ["which repo?"],
                        "context_summary": "migrating auth"}}));
        assert_eq!(
            search_text(&working),
            "t-1\nblocked\nask for access\nwhich repo?\nmigrating auth"
        );

        let skill = record(json!({"type": "competence", "sensitivity": "low",
            "payload": {"kind": "competence", "skill_name": "fix_go_build",
                "triggers": [{"signal": "compilation_error"}], "recipe": [{"step": "clear the cache"}],
                "failure_modes": ["no network"]}}));
        assert_eq!(
            search_text(&skill),
            "fix_go_build\ncompilation_error\nclear the cache\nno network"
        );

        let plan = record(json!({"type": "plan_graph", "sensitivity": "low",
            "payload": {"kind": "plan_graph", "plan_id": "p", "intent": "release a version",
                "nodes": [{"id": "a", "op": "tag"}, {"id": "b", "op": "publish"}]}}));
        assert_eq!(search_text(&plan), "release a version\ntag\npublish");
    }

    #[test]
    fn a_large_object_contributes_a_bounded_text() {
        let fact = record(json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "s", "predicate": "p",
                        "object": ["é".repeat(10_000), "more"]}}));
        let text = search_text(&fact);
        assert!(text.len() <= MAX_VALUE_TEXT + 10, "{}", text.len());
    }

    #[test]
    fn free_text_becomes_quoted_terms_and_nothing_else() {
        assert_eq!(
            any_words("How do I fix a Go linker-cache error?").unwrap(),
            r#""fix" OR "go" OR "linker" OR "cach" OR "error""#
        );
        assert_eq!(
            any_words(r#"a NEAR(b c) "x* -y" (unbalanced AND OR NOT"#).unwrap(),
            r#""near" OR "b" OR "c" OR "x" OR "y" OR "unbalanc""#
        );
        // Only stop words: they are all there is to search for.
        assert_eq!(
            any_words("Who are you?").unwrap(),
            r#""who" OR "are" OR "you""#
        );
        // Forms of a word are one term.
        assert_eq!(
            any_words("deployments deployed, Déploy").unwrap(),
            r#""deploy""#
        );
        assert_eq!(any_words("  ?!* () \"\" "), None);
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(
            any_words(&many).unwrap().matches(" OR ").count(),
            MAX_QUERY_TERMS - 1
        );
    }

    #[test]
    fn the_text_hash_is_stable_and_tells_texts_apart() {
        assert_eq!(text_hash(""), 0xcbf2_9ce4_8422_2325u64 as i64);
        assert_eq!(text_hash("go build"), text_hash("go build"));
        assert_ne!(text_hash("go build"), text_hash("go built"));
    }
}
