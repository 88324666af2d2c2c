//! Topics in storage ([`TopicStore`]): fields as versions, edges, words,
//! vectors and salience.

use super::rows::Columns;
use crate::domain::decay::Anchor;
use crate::domain::record::Sensitivity;
use crate::domain::time::Timestamp;
use crate::domain::topic::Topic;
use crate::domain::trust::TrustContext;
use crate::domain::vector::Embedding;
use crate::domain::vector::QueryVector;
use crate::store::error::StoreError;
use std::collections::BTreeSet;

/// What a decay sweep reads of a topic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopicDecay {
    pub key: i64,
    /// The salience stored (as of the last sweep or reinforcement).
    pub stored: f64,
    pub anchor: crate::domain::decay::Anchor,
    pub created_at: Timestamp,
}

/// One version of a topic's field: the record holding it, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldVersion {
    pub name: String,
    pub seq: i64,
    pub record_id: String,
    pub valid_from: Timestamp,
    /// The value the record holds, copied.
    pub value: serde_json::Value,
    /// Who set it, as the request said.
    pub source: String,
    pub why_changed: Option<String>,
    /// The record was retracted (through the revisions API): the field has
    /// no value standing until a new version is made.
    pub retracted: bool,
    /// The field ended here: its record was superseded by one that no
    /// longer states it. No value from `valid_from` on.
    pub ended: bool,
}

/// A typed link between two topics.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct TopicEdge {
    pub from_topic_id: String,
    pub to_topic_id: String,
    pub kind: String,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

/// A topic as stored, with its key.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedTopic {
    pub key: i64,
    pub topic: Topic,
}

/// A topic found by the words of a query: its text score, higher better.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundTopic {
    pub key: i64,
    pub topic: Topic,
    pub score: f64,
}

/// A topic's key and a score (a cosine).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredKey {
    pub key: i64,
    pub score: f64,
}

/// How many of some words a topic's text has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedWords {
    pub key: i64,
    pub shared: usize,
}

/// The topics a word lookup ([`TopicStore::topics_sharing`]) reads: at
/// most `max_sensitivity`, and of `scopes` as the word index keeps them
/// (`""` for unscoped topics; `None`: every scope). Archived topics have
/// no words there.
#[derive(Debug, Clone, PartialEq)]
pub struct WordReach {
    pub scopes: Option<Vec<String>>,
    pub max_sensitivity: Sensitivity,
}

impl WordReach {
    /// The topics `trust` may see; with `only`, just those of that scope
    /// (`Some(None)`: the unscoped ones), and none when `trust` may not
    /// see it.
    pub fn of(trust: &TrustContext, only: Option<Option<&str>>) -> WordReach {
        let scopes = match only {
            Some(scope) if trust.allows_scope(scope) => Some(vec![scope.unwrap_or("").to_string()]),
            Some(_) => Some(Vec::new()),
            None if trust.every_scope() => None,
            None => Some(
                std::iter::once(String::new())
                    .chain(trust.scopes.iter().cloned())
                    .collect(),
            ),
        };
        WordReach {
            scopes,
            max_sensitivity: trust.max_sensitivity,
        }
    }
}

/// An edge of a topic, and the key of the topic at its other end.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeEnd {
    pub other: i64,
    pub edge: TopicEdge,
}

/// Topics: their fields as versions, their edges, their words and vectors, their salience.
pub trait TopicStore {
    /// Stores a new topic; answers its key.
    fn insert_topic(&mut self, topic: &Topic) -> Result<i64, StoreError>;
    fn update_topic(&mut self, key: i64, topic: &Topic) -> Result<(), StoreError>;
    /// Sets the search text of topic `key` (title, summary and current
    /// values; `fresh`: it has none yet). Searches see it once the
    /// transaction commits.
    fn index_topic(&mut self, key: i64, text: String, fresh: bool) -> Result<(), StoreError>;
    /// Replaces words `old` of topic `key`'s title and summary in the word
    /// index by `new` (kept under `topic`'s scope and sensitivity).
    fn set_topic_words(
        &mut self,
        key: i64,
        topic: &Topic,
        old: &BTreeSet<String>,
        new: &BTreeSet<String>,
    ) -> Result<(), StoreError>;
    /// The topics within `reach` whose title and summary have any of
    /// `words`, with how many, most first (at most `per_word` topics per
    /// word and scope, newest first). Topics beyond `reach` are never read,
    /// so they take no place among those found.
    fn topics_sharing(
        &mut self,
        words: &BTreeSet<String>,
        reach: &WordReach,
        per_word: usize,
    ) -> Result<Vec<SharedWords>, StoreError>;
    fn topic_by_id(&mut self, id: &str) -> Result<Option<KeyedTopic>, StoreError>;
    fn topic_by_key(&mut self, key: i64) -> Result<Option<Topic>, StoreError>;
    /// Topics whose search text a schema change left to be made again.
    fn topics_to_index(&mut self) -> Result<Vec<i64>, StoreError>;
    /// These topics' search text is made.
    fn topics_indexed(&mut self, keys: &[i64]) -> Result<(), StoreError>;
    /// Topics not archived with this title (normalised) in `scope`.
    fn topics_titled(
        &mut self,
        title: &str,
        scope: Option<&str>,
    ) -> Result<Vec<KeyedTopic>, StoreError>;
    /// Topics not archived that `trust` may see (of `kind`, when given)
    /// whose text has a word of `text`, best first, with their text scores
    /// (higher is better).
    fn search_topics(
        &mut self,
        text: &str,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<FoundTopic>, StoreError>;
    /// Topics not archived that `trust` may see (of `kind`, when given),
    /// most recently changed first.
    fn recent_topics(
        &mut self,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<KeyedTopic>, StoreError>;
    /// The newest version of each field valid at `at` (`None`: now).
    fn field_heads(
        &mut self,
        key: i64,
        at: Option<Timestamp>,
    ) -> Result<Vec<FieldVersion>, StoreError>;
    /// The kept versions of one field, oldest first.
    fn field_versions(&mut self, key: i64, name: &str) -> Result<Vec<FieldVersion>, StoreError>;
    fn add_version(&mut self, key: i64, version: &FieldVersion) -> Result<(), StoreError>;
    /// The key of the topic record `record_id` is a field version of.
    fn topic_of_record(&mut self, record_id: &str) -> Result<Option<i64>, StoreError>;
    /// Keeps a field's newest `keep` versions in its history.
    fn trim_versions(&mut self, key: i64, name: &str, keep: usize) -> Result<usize, StoreError>;
    /// Adds an edge unless it stands already; answers whether it was added.
    fn add_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Ends a standing edge; answers whether there was one.
    fn remove_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// The edges from and to topic `key` standing at `at` (`None`: now),
    /// each with the key of the topic at its other end.
    fn edges_of(&mut self, key: i64, at: Option<Timestamp>) -> Result<Vec<EdgeEnd>, StoreError>;
    /// Stores a topic's vector (replacing any); `Dimensions` when it does
    /// not fit the database's.
    fn put_topic_vector(&mut self, key: i64, embedding: &Embedding) -> Result<(), StoreError>;
    /// Topics not archived that `trust` may see (of `kind`, when given),
    /// with a vector, most similar to `query` first, with the cosine.
    fn nearest_topics(
        &mut self,
        query: &QueryVector,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ScoredKey>, StoreError>;
    /// The cosine of topic `key`'s vector with `query`; `None` without one.
    fn topic_similarity(
        &mut self,
        key: i64,
        query: &QueryVector,
    ) -> Result<Option<f64>, StoreError>;
    /// Drops every kept version of one field from its history.
    fn drop_versions(&mut self, key: i64, name: &str) -> Result<(), StoreError>;
    /// Topics not archived whose stored salience is below `below`, least
    /// salient first.
    fn fading_topics(&mut self, below: f64, limit: usize) -> Result<Vec<i64>, StoreError>;
    /// How many topics are not archived.
    fn active_topics(&mut self) -> Result<u64, StoreError>;
    /// Topics not archived after `after_key`, in key order.
    fn topic_decay_chunk(
        &mut self,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<TopicDecay>, StoreError>;
    /// Stores a topic's salience as a decay sweep computed it from the
    /// anchor of `anchor_at`, unless it was reinforced since.
    fn set_topic_salience(
        &mut self,
        key: i64,
        anchor_at: Timestamp,
        salience: f64,
    ) -> Result<(), StoreError>;
}

/// A topic and its key from a row of the backends' topic `COLUMNS`: key,
/// id, title, summary, kind, sensitivity, scope, tags JSON, salience,
/// archived, created at, updated at, and the salience and time decay is
/// measured from.
pub(crate) fn read_topic(row: &impl Columns) -> Result<(i64, Topic), StoreError> {
    Ok((
        row.at(0)?,
        Topic {
            id: row.at(1)?,
            title: row.at(2)?,
            summary: row.at(3)?,
            kind: row.at(4)?,
            sensitivity: row.sensitivity(5)?,
            scope: row.at(6)?,
            tags: row.json(7, "topic tags")?,
            salience: row.at(8)?,
            archived: row.at(9)?,
            created_at: row.time(10)?,
            updated_at: row.time(11)?,
            anchor: Anchor {
                salience: row.at(12)?,
                at: row.time(13)?,
            },
        },
    ))
}

/// A field version from a row of: name, seq, record id, valid from, why
/// changed, value JSON, source, retracted, ended.
pub(crate) fn read_version(row: &impl Columns) -> Result<FieldVersion, StoreError> {
    Ok(FieldVersion {
        name: row.at(0)?,
        seq: row.at(1)?,
        record_id: row.at(2)?,
        valid_from: row.time(3)?,
        why_changed: row.at(4)?,
        value: row.json(5, "field value")?,
        source: row.at(6)?,
        retracted: row.at(7)?,
        ended: row.at(8)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(reach: WordReach) -> Option<Vec<String>> {
        reach.scopes
    }

    #[test]
    fn a_word_lookup_reaches_the_scopes_the_caller_may_see() {
        let everything = TrustContext::stated(Sensitivity::High, &[]);
        let two = TrustContext::stated(Sensitivity::Low, &["a", "b"]);
        let mut narrowed = TrustContext::stated(Sensitivity::Low, &[]);
        narrowed.scopes_narrowed = true;
        assert_eq!(scopes(WordReach::of(&everything, None)), None);
        assert_eq!(
            WordReach::of(&everything, None).max_sensitivity,
            Sensitivity::High
        );
        assert_eq!(
            scopes(WordReach::of(&two, None)),
            Some(vec![String::new(), "a".into(), "b".into()])
        );
        assert_eq!(
            scopes(WordReach::of(&narrowed, None)),
            Some(vec![String::new()])
        );
        // One scope: that one, if the caller may see it.
        assert_eq!(
            scopes(WordReach::of(&two, Some(Some("b")))),
            Some(vec!["b".into()])
        );
        assert_eq!(
            scopes(WordReach::of(&two, Some(None))),
            Some(vec![String::new()])
        );
        assert_eq!(scopes(WordReach::of(&two, Some(Some("c")))), Some(vec![]));
        assert_eq!(
            scopes(WordReach::of(&everything, Some(Some("c")))),
            Some(vec!["c".into()])
        );
    }
}
