//! Topics (migrations 0010 and 0011): the topic rows, each field's
//! versions in order, the edges between topics, the topic search index and
//! the index of the words of their titles.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{params, Connection, OptionalExtension};

use super::search;
use crate::domain::decay::Anchor;
use crate::domain::record::Sensitivity;
use crate::domain::search::TextQuery;
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::domain::topic::{index_words, normalize_title, Topic};
use crate::domain::trust::TrustContext;
use crate::domain::vector::{Embedding, QueryVector};
use crate::store::error::StoreError;
use crate::store::topics::{
    read_topic, read_version, EdgeEnd, FieldVersion, FoundTopic, KeyedTopic, ScoredKey,
    SharedWords, TopicDecay, TopicEdge, TopicStore, WordReach,
};

pub(super) const COLUMNS: &str =
    "key, id, title, summary, kind, sensitivity, scope, tags_json, salience, \
                       archived, created_at, updated_at, anchor_salience, anchor_at";

fn tags_json(topic: &Topic) -> Result<String, StoreError> {
    serde_json::to_string(&topic.tags).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Fills the word index from the topics stored: run once, when migration
/// 0011 is applied. Answers how many topics.
pub fn backfill_words(conn: &Connection) -> Result<usize, StoreError> {
    let topics: Vec<(i64, String)> = conn
        .prepare("SELECT key, title || ' ' || summary FROM topics")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    // The word index as migration 0011 made it (no scope yet: migration
    // 0020 adds it from the topics).
    let mut add =
        conn.prepare_cached("INSERT OR IGNORE INTO topic_words (word, topic_key) VALUES (?1, ?2)")?;
    for (key, text) in &topics {
        for word in index_words(text) {
            add.execute(params![word, key])?;
        }
    }
    Ok(topics.len())
}

/// Which topics a listing may return: up to a sensitivity, unscoped or
/// in `scopes` (`None`: every scope), of `kind` when given.
pub struct Visible<'a> {
    pub max_sensitivity: Sensitivity,
    pub scopes: Option<Vec<String>>,
    pub kind: Option<&'a str>,
}

impl Visible<'_> {
    /// What `trust` may see, of `kind` when given.
    pub fn of<'a>(trust: &TrustContext, kind: Option<&'a str>) -> Visible<'a> {
        Visible {
            max_sensitivity: trust.max_sensitivity,
            scopes: trust.scope_filter(),
            kind,
        }
    }

    fn scopes_json(&self) -> Result<Option<String>, StoreError> {
        self.scopes
            .as_ref()
            .map(|s| serde_json::to_string(s).map_err(|e| StoreError::Corrupt(e.to_string())))
            .transpose()
    }
}

impl TopicStore for Connection {
    /// Stores a new topic and indexes its text; answers its key.
    fn insert_topic(&mut self, topic: &Topic) -> Result<i64, StoreError> {
        self.prepare_cached(
            "INSERT INTO topics (id, title, norm_title, summary, kind, sensitivity, scope, tags_json,
                                 salience, archived, created_at, updated_at, anchor_salience,
                                 anchor_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            topic.id,
            topic.title,
            normalize_title(&topic.title),
            topic.summary,
            topic.kind,
            topic.sensitivity.rank(),
            topic.scope,
            tags_json(topic)?,
            topic.salience,
            topic.archived,
            to_micros(&topic.created_at),
            to_micros(&topic.updated_at),
            topic.anchor.salience,
            to_micros(&topic.anchor.at),
        ])?;
        Ok(self.last_insert_rowid())
    }

    /// Writes a topic's changeable parts back.
    fn update_topic(&mut self, key: i64, topic: &Topic) -> Result<(), StoreError> {
        self.prepare_cached(
            "UPDATE topics SET title = ?2, norm_title = ?3, summary = ?4, kind = ?5, tags_json = ?6,
                               salience = ?7, archived = ?8, updated_at = ?9,
                               anchor_salience = ?10, anchor_at = ?11
             WHERE key = ?1",
        )?
        .execute(params![
            key,
            topic.title,
            normalize_title(&topic.title),
            topic.summary,
            topic.kind,
            tags_json(topic)?,
            topic.salience,
            topic.archived,
            to_micros(&topic.updated_at),
            topic.anchor.salience,
            to_micros(&topic.anchor.at),
        ])?;
        Ok(())
    }

    /// Queues the search text of topic `key` (see `search`), and keeps its
    /// terms in the topic's row, which the index's row is deleted with later
    /// (`fresh`: the topic has no row in the index yet).
    fn index_topic(&mut self, key: i64, text: String, fresh: bool) -> Result<(), StoreError> {
        let stored = if fresh {
            None
        } else {
            search::stored_topic(self, key)?
        };
        let analysed = crate::domain::analysis::indexed(&text);
        self.prepare_cached("UPDATE topics SET search_text = ?2 WHERE key = ?1")?
            .execute(params![key, analysed])?;
        search::set_topic(key, analysed, stored);
        Ok(())
    }

    /// Replaces words `old` of topic `key` in the word index by `new`.
    fn set_topic_words(
        &mut self,
        key: i64,
        topic: &Topic,
        old: &BTreeSet<String>,
        new: &BTreeSet<String>,
    ) -> Result<(), StoreError> {
        let scope = topic.scope.as_deref().unwrap_or("");
        let mut remove = self.prepare_cached(
            "DELETE FROM topic_words WHERE word = ?1 AND scope = ?2 AND topic_key = ?3",
        )?;
        for word in old.difference(new) {
            remove.execute(params![word, scope, key])?;
        }
        let mut add = self.prepare_cached(
            "INSERT OR IGNORE INTO topic_words (word, scope, topic_key, sensitivity)
             VALUES (?1, ?2, ?3, ?4)",
        )?;
        for word in new.difference(old) {
            add.execute(params![word, scope, key, topic.sensitivity.rank()])?;
        }
        Ok(())
    }

    /// The topics within `reach` having any of `words`, each with how many of
    /// them it has, most first (at most `per_word` topics read per word and
    /// scope, newest first).
    fn topics_sharing(
        &mut self,
        words: &BTreeSet<String>,
        reach: &WordReach,
        per_word: usize,
    ) -> Result<Vec<SharedWords>, StoreError> {
        let sensitivity = reach.max_sensitivity.rank() as i64;
        let limit = per_word as i64;
        let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
        let mut count = |keys: &mut dyn Iterator<Item = rusqlite::Result<i64>>| {
            for key in keys {
                *counts.entry(key?).or_default() += 1;
            }
            Ok::<_, StoreError>(())
        };
        match &reach.scopes {
            Some(scopes) => {
                let mut stmt = self.prepare_cached(
                    "SELECT topic_key FROM topic_words WHERE word = ?1 AND scope = ?2
                       AND sensitivity <= ?3
                     ORDER BY topic_key DESC LIMIT ?4",
                )?;
                for word in words {
                    for scope in scopes {
                        count(
                            &mut stmt
                                .query_map(params![word, scope, sensitivity, limit], |row| {
                                    row.get(0)
                                })?,
                        )?;
                    }
                }
            }
            None => {
                let mut stmt = self.prepare_cached(
                    "SELECT topic_key FROM topic_words WHERE word = ?1 AND sensitivity <= ?2
                     ORDER BY topic_key DESC LIMIT ?3",
                )?;
                for word in words {
                    count(
                        &mut stmt.query_map(params![word, sensitivity, limit], |row| row.get(0))?,
                    )?;
                }
            }
        }
        let mut shared: Vec<(i64, usize)> = counts.into_iter().collect();
        shared.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
        Ok(shared
            .into_iter()
            .map(|(key, shared)| SharedWords { key, shared })
            .collect())
    }

    fn topic_by_id(&mut self, id: &str) -> Result<Option<KeyedTopic>, StoreError> {
        self.prepare_cached(&format!("SELECT {COLUMNS} FROM topics WHERE id = ?1"))?
            .query_row([id], |row| {
                Ok(read_topic(row).map(|(key, topic)| KeyedTopic { key, topic }))
            })
            .optional()?
            .transpose()
    }

    fn topic_by_key(&mut self, key: i64) -> Result<Option<Topic>, StoreError> {
        self.prepare_cached(&format!("SELECT {COLUMNS} FROM topics WHERE key = ?1"))?
            .query_row([key], |row| Ok(read_topic(row)))
            .optional()?
            .transpose()
            .map(|found| found.map(|(_, topic)| topic))
    }

    fn topics_to_index(&mut self) -> Result<Vec<i64>, StoreError> {
        Ok(self
            .prepare("SELECT topic_key FROM topics_to_index ORDER BY topic_key")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?)
    }

    fn topics_indexed(&mut self, keys: &[i64]) -> Result<(), StoreError> {
        let mut done = self.prepare_cached("DELETE FROM topics_to_index WHERE topic_key = ?1")?;
        for key in keys {
            done.execute([key])?;
        }
        Ok(())
    }

    /// Topics not archived with this title (compared normalised) in `scope`.
    fn topics_titled(
        &mut self,
        title: &str,
        scope: Option<&str>,
    ) -> Result<Vec<KeyedTopic>, StoreError> {
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM topics
             WHERE norm_title = ?1 AND scope IS ?2 AND archived = 0 ORDER BY key"
        ))?;
        let rows = stmt.query_map(params![normalize_title(title), scope], |row| {
            Ok(read_topic(row))
        })?;
        rows.map(|row| row?.map(|(key, topic)| KeyedTopic { key, topic }))
            .collect()
    }

    /// Topics not archived whose text has any word of `text`, best BM25 first,
    /// at most `limit`, with the visibility filter applied in SQL: sensitivity
    /// at most `max_sensitivity`, and scope unscoped or in `scopes` (`None`:
    /// every scope).
    fn search_topics(
        &mut self,
        text: &str,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<FoundTopic>, StoreError> {
        let visible = &Visible::of(trust, kind);
        let Some(query) = TextQuery::new(text) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {COLUMNS}, s.rank FROM topic_search s JOIN topics t ON t.key = s.rowid
             WHERE topic_search MATCH ?1 AND t.archived = 0 AND t.sensitivity <= ?2
               AND (?3 IS NULL OR t.scope IS NULL OR t.scope IN (SELECT value FROM json_each(?3)))
               AND (?4 IS NULL OR t.kind = ?4)
             ORDER BY s.rank LIMIT ?5"
        ))?;
        let rows = stmt.query_map(
            params![
                query.any(),
                visible.max_sensitivity.rank(),
                visible.scopes_json()?,
                visible.kind,
                limit as i64
            ],
            |row| {
                let rank: f64 = row.get(14)?;
                Ok(read_topic(row).map(|(key, topic)| FoundTopic {
                    key,
                    topic,
                    score: -rank,
                }))
            },
        )?;
        rows.map(|row| row?).collect()
    }

    /// Topics not archived that `visible` allows, most recently changed
    /// first, at most `limit`.
    fn recent_topics(
        &mut self,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<KeyedTopic>, StoreError> {
        let visible = &Visible::of(trust, kind);
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM topics t
             WHERE t.archived = 0 AND t.sensitivity <= ?1
               AND (?2 IS NULL OR t.scope IS NULL OR t.scope IN (SELECT value FROM json_each(?2)))
               AND (?3 IS NULL OR t.kind = ?3)
             ORDER BY t.updated_at DESC, t.key DESC LIMIT ?4"
        ))?;
        let rows = stmt.query_map(
            params![
                visible.max_sensitivity.rank(),
                visible.scopes_json()?,
                visible.kind,
                limit as i64
            ],
            |row| Ok(read_topic(row)),
        )?;
        rows.map(|row| row?.map(|(key, topic)| KeyedTopic { key, topic }))
            .collect()
    }

    /// The newest version of each field of topic `key` that was valid at `at`
    /// (`None`: now), by field name.
    fn field_heads(
        &mut self,
        key: i64,
        at: Option<Timestamp>,
    ) -> Result<Vec<FieldVersion>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT v.name, v.seq, r.id, v.valid_from, v.why_changed, v.value_json, v.source,
                    r.status = 'retracted', v.ended
             FROM topic_versions v JOIN records r ON r.key = v.record_key
             WHERE v.topic_key = ?1 AND v.seq = (
                 SELECT MAX(w.seq) FROM topic_versions w
                 WHERE w.topic_key = v.topic_key AND w.name = v.name
                   AND (?2 IS NULL OR w.valid_from <= ?2))
             ORDER BY v.name",
        )?;
        let rows = stmt.query_map(params![key, at.as_ref().map(to_micros)], |row| {
            Ok(read_version(row))
        })?;
        rows.map(|row| row?).collect()
    }

    /// Every kept version of field `name` of topic `key`, oldest first.
    fn field_versions(&mut self, key: i64, name: &str) -> Result<Vec<FieldVersion>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT v.name, v.seq, r.id, v.valid_from, v.why_changed, v.value_json, v.source,
                    r.status = 'retracted', v.ended
             FROM topic_versions v JOIN records r ON r.key = v.record_key
             WHERE v.topic_key = ?1 AND v.name = ?2 ORDER BY v.seq",
        )?;
        let rows = stmt.query_map(params![key, name], |row| Ok(read_version(row)))?;
        rows.map(|row| row?).collect()
    }

    /// Records that record `record_id` is version `seq` of field `name`.
    fn add_version(&mut self, key: i64, version: &FieldVersion) -> Result<(), StoreError> {
        self.prepare_cached(
            "INSERT INTO topic_versions (topic_key, name, seq, record_key, valid_from, why_changed,
                                         value_json, source, ended)
             SELECT ?1, ?2, ?3, key, ?4, ?5, ?7, ?8, ?9 FROM records WHERE id = ?6",
        )?
        .execute(params![
            key,
            version.name,
            version.seq,
            to_micros(&version.valid_from),
            version.why_changed,
            version.record_id,
            version.value.to_string(),
            version.source,
            version.ended,
        ])?;
        Ok(())
    }

    /// The topic record `record_id` is a field version of, if any.
    fn topic_of_record(&mut self, record_id: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .prepare_cached(
                "SELECT v.topic_key FROM records r JOIN topic_versions v ON v.record_key = r.key
                 WHERE r.id = ?1 LIMIT 1",
            )?
            .query_row([record_id], |row| row.get(0))
            .optional()?)
    }

    /// Keeps the newest `keep` versions of a field in its history; answers
    /// how many were dropped.
    fn trim_versions(&mut self, key: i64, name: &str, keep: usize) -> Result<usize, StoreError> {
        Ok(self
            .prepare_cached(
                "DELETE FROM topic_versions WHERE topic_key = ?1 AND name = ?2 AND seq <= (
                     SELECT MAX(seq) FROM topic_versions WHERE topic_key = ?1 AND name = ?2) - ?3",
            )?
            .execute(params![key, name, keep as i64])?)
    }

    /// Adds an edge unless the same one stands; answers whether it was added.
    fn add_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self
            .prepare_cached(
                "INSERT OR IGNORE INTO topic_edges (from_key, to_key, kind, created_at)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![from, to, kind, to_micros(&now)])?
            > 0)
    }

    /// Ends a standing edge; answers whether there was one.
    fn remove_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self
            .prepare_cached(
                "UPDATE topic_edges SET removed_at = ?4
                 WHERE from_key = ?1 AND to_key = ?2 AND kind = ?3 AND removed_at IS NULL",
            )?
            .execute(params![from, to, kind, to_micros(&now)])?
            > 0)
    }

    /// The edges from and to topic `key` that stood at `at` (`None`: now),
    /// with the key of the topic at their other end.
    fn edges_of(&mut self, key: i64, at: Option<Timestamp>) -> Result<Vec<EdgeEnd>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT e.to_key, f.id, t.id, e.kind, e.created_at
             FROM topic_edges e JOIN topics f ON f.key = e.from_key JOIN topics t ON t.key = e.to_key
             WHERE e.from_key = ?1 AND (?2 IS NULL AND e.removed_at IS NULL
                   OR ?2 IS NOT NULL AND e.created_at <= ?2 AND (e.removed_at IS NULL OR e.removed_at > ?2))
             UNION ALL
             SELECT e.from_key, f.id, t.id, e.kind, e.created_at
             FROM topic_edges e JOIN topics f ON f.key = e.from_key JOIN topics t ON t.key = e.to_key
             WHERE e.to_key = ?1 AND e.from_key <> ?1 AND (?2 IS NULL AND e.removed_at IS NULL
                   OR ?2 IS NOT NULL AND e.created_at <= ?2 AND (e.removed_at IS NULL OR e.removed_at > ?2))",
        )?;
        let rows = stmt.query_map(params![key, at.as_ref().map(to_micros)], |row| {
            Ok(EdgeEnd {
                other: row.get(0)?,
                edge: TopicEdge {
                    from_topic_id: row.get(1)?,
                    to_topic_id: row.get(2)?,
                    kind: row.get(3)?,
                    created_at: from_micros(row.get(4)?),
                },
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores `embedding` as topic `key`'s vector (replacing any).
    fn put_topic_vector(&mut self, key: i64, embedding: &Embedding) -> Result<(), StoreError> {
        super::vectors::fits(self, embedding)?;
        self.prepare_cached(
            "INSERT INTO topic_vectors (topic_key, norm, vector) VALUES (?1, ?2, ?3)
             ON CONFLICT (topic_key) DO UPDATE SET norm = excluded.norm, vector = excluded.vector",
        )?
        .execute(params![key, embedding.norm(), embedding.to_bytes()])?;
        Ok(())
    }

    /// The topics not archived that `visible` allows, with a vector, by
    /// cosine with `query` (below 0 as 0), most similar first, at most
    /// `limit`. Every such vector is compared: a scan.
    fn nearest_topics(
        &mut self,
        query: &QueryVector,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ScoredKey>, StoreError> {
        let visible = &Visible::of(trust, kind);
        let mut stmt = self.prepare_cached(
            "SELECT v.topic_key, v.norm, v.vector FROM topic_vectors v JOIN topics t ON t.key = v.topic_key
             WHERE t.archived = 0 AND t.sensitivity <= ?1
               AND (?2 IS NULL OR t.scope IS NULL OR t.scope IN (SELECT value FROM json_each(?2)))
               AND (?3 IS NULL OR t.kind = ?3)",
        )?;
        let mut rows = stmt.query(params![
            visible.max_sensitivity.rank(),
            visible.scopes_json()?,
            visible.kind
        ])?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            let bytes = row.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
            if let Some(similarity) = query.signal(bytes, row.get(1)?) {
                found.push((row.get::<_, i64>(0)?, similarity));
            }
        }
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(limit);
        Ok(found
            .into_iter()
            .map(|(key, score)| ScoredKey { key, score })
            .collect())
    }

    /// The cosine of topic `key`'s vector with `query` (below 0 as 0); `None`
    /// without a vector.
    fn topic_similarity(
        &mut self,
        key: i64,
        query: &QueryVector,
    ) -> Result<Option<f64>, StoreError> {
        let stored: Option<(f64, Vec<u8>)> = self
            .prepare_cached("SELECT norm, vector FROM topic_vectors WHERE topic_key = ?1")?
            .query_row([key], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        Ok(stored.and_then(|(norm, bytes)| query.signal(&bytes, norm)))
    }

    /// Drops every kept version of field `name` of topic `key` from its
    /// history (the records stay).
    fn drop_versions(&mut self, key: i64, name: &str) -> Result<(), StoreError> {
        self.prepare_cached("DELETE FROM topic_versions WHERE topic_key = ?1 AND name = ?2")?
            .execute(params![key, name])?;
        Ok(())
    }

    /// Topics not archived whose stored salience is below `below`, least
    /// salient first, at most `limit`.
    fn fading_topics(&mut self, below: f64, limit: usize) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT key FROM topics WHERE archived = 0 AND salience < ?1
             ORDER BY salience, key LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![below, limit as i64], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many topics are not archived.
    fn active_topics(&mut self) -> Result<u64, StoreError> {
        let count: i64 = self
            .prepare_cached("SELECT COUNT(*) FROM topics WHERE archived = 0")?
            .query_row([], |row| row.get(0))?;
        Ok(count as u64)
    }

    /// Topics not archived after `after_key`, in key order, at most `limit`:
    /// what a decay sweep needs of each.
    fn topic_decay_chunk(
        &mut self,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<TopicDecay>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT key, salience, anchor_salience, anchor_at, created_at FROM topics
             WHERE key > ?1 AND archived = 0 ORDER BY key LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![after_key, limit as i64], |row| {
            Ok(TopicDecay {
                key: row.get(0)?,
                stored: row.get(1)?,
                anchor: Anchor {
                    salience: row.get(2)?,
                    at: from_micros(row.get(3)?),
                },
                created_at: from_micros(row.get(4)?),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores the salience a sweep computed from the anchor of `anchor_at`,
    /// unless the topic was reinforced since (the anchor stays).
    fn set_topic_salience(
        &mut self,
        key: i64,
        anchor_at: Timestamp,
        salience: f64,
    ) -> Result<(), StoreError> {
        self.prepare_cached("UPDATE topics SET salience = ?3 WHERE key = ?1 AND anchor_at = ?2")?
            .execute(params![key, to_micros(&anchor_at), salience])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::now;
    use super::*;
    use crate::domain::record::Sensitivity;

    fn topic(title: &str, scope: Option<&str>, sensitivity: Sensitivity) -> Topic {
        Topic {
            id: uuid::Uuid::now_v7().to_string(),
            sensitivity,
            ..Topic::sample(title, scope, now())
        }
    }

    #[test]
    fn migration_20_keys_the_stored_words_by_scope_and_leaves_archived_topics_out() {
        let mut conn = Connection::open_in_memory().unwrap();
        let migrations = super::super::migrations::MIGRATIONS;
        for m in &migrations[..19] {
            conn.execute_batch(m.sql).unwrap();
        }
        let scoped = conn
            .insert_topic(&topic("Ledger", Some("a"), Sensitivity::Low))
            .unwrap();
        let open = conn
            .insert_topic(&topic("Ledger", None, Sensitivity::Low))
            .unwrap();
        let mut faded = topic("Ledger", Some("b"), Sensitivity::Low);
        faded.archived = true;
        let faded = conn.insert_topic(&faded).unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO topic_words (word, topic_key)
             VALUES ('ledger', {scoped}), ('ledger', {open}), ('ledger', {faded})"
        ))
        .unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch(migrations[19].sql).unwrap();
        tx.commit().unwrap();
        let rows: Vec<(String, i64, i64)> = conn
            .prepare(
                "SELECT scope, topic_key, sensitivity FROM topic_words
                 WHERE word = 'ledger' ORDER BY scope",
            )
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let low = Sensitivity::Low.rank() as i64;
        assert_eq!(
            rows,
            [(String::new(), open, low), ("a".to_string(), scoped, low)]
        );
    }
}
