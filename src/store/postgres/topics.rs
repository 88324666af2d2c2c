//! Topics on PostgreSQL: the topic rows with their stemmed search text,
//! each field's versions in order, the edges between topics, the index of
//! the words of their titles, their vectors.

use std::collections::{BTreeMap, BTreeSet};

use super::connection::Pg;
use crate::domain::analysis;
use crate::domain::decay::Anchor;
use crate::domain::search::TextQuery;
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::domain::topic::{normalize_title, Topic};
use crate::domain::trust::TrustContext;
use crate::domain::vector::{Embedding, QueryVector};
use crate::store::error::StoreError;
use crate::store::topics::{
    read_topic, read_version, EdgeEnd, FieldVersion, FoundTopic, KeyedTopic, ScoredKey,
    SharedWords, TopicDecay, TopicEdge, TopicStore, WordReach,
};

pub(super) const COLUMNS: &str =
    "t.key, t.id, t.title, t.summary, t.kind, t.sensitivity, t.scope, \
                       t.tags_json, t.salience, t.archived, t.created_at, t.updated_at, \
                       t.anchor_salience, t.anchor_at";

fn tags_json(topic: &Topic) -> Result<String, StoreError> {
    serde_json::to_string(&topic.tags).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The visibility conditions of topic reads: `$1` the highest
/// sensitivity, `$2` the scopes (`NULL`: every one), `$3` the kind.
const VISIBLE: &str = "NOT t.archived AND t.sensitivity <= $1
     AND ($2::text[] IS NULL OR t.scope IS NULL OR t.scope = ANY($2))
     AND ($3::text IS NULL OR t.kind = $3)";

impl TopicStore for Pg {
    fn insert_topic(&mut self, topic: &Topic) -> Result<i64, StoreError> {
        Ok(self
            .query_one(
                "INSERT INTO topics (id, title, norm_title, summary, kind, sensitivity, scope,
                                     tags_json, salience, archived, created_at, updated_at,
                                     anchor_salience, anchor_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                 RETURNING key",
                &[
                    &topic.id,
                    &topic.title,
                    &normalize_title(&topic.title),
                    &topic.summary,
                    &topic.kind,
                    &(topic.sensitivity.rank() as i64),
                    &topic.scope,
                    &tags_json(topic)?,
                    &topic.salience,
                    &topic.archived,
                    &to_micros(&topic.created_at),
                    &to_micros(&topic.updated_at),
                    &topic.anchor.salience,
                    &to_micros(&topic.anchor.at),
                ],
            )?
            .try_get(0)?)
    }

    fn update_topic(&mut self, key: i64, topic: &Topic) -> Result<(), StoreError> {
        self.execute(
            "UPDATE topics SET title = $2, norm_title = $3, summary = $4, kind = $5, tags_json = $6,
                               salience = $7, archived = $8, updated_at = $9,
                               anchor_salience = $10, anchor_at = $11
             WHERE key = $1",
            &[
                &key,
                &topic.title,
                &normalize_title(&topic.title),
                &topic.summary,
                &topic.kind,
                &tags_json(topic)?,
                &topic.salience,
                &topic.archived,
                &to_micros(&topic.updated_at),
                &topic.anchor.salience,
                &to_micros(&topic.anchor.at),
            ],
        )?;
        Ok(())
    }

    /// Sets topic `key`'s search text (its terms now; `fresh` makes no
    /// difference here).
    fn index_topic(&mut self, key: i64, text: String, _fresh: bool) -> Result<(), StoreError> {
        self.execute(
            "UPDATE topics SET search = to_tsvector('simple', $2) WHERE key = $1",
            &[&key, &analysis::indexed(&text)],
        )?;
        Ok(())
    }

    fn set_topic_words(
        &mut self,
        key: i64,
        topic: &Topic,
        old: &BTreeSet<String>,
        new: &BTreeSet<String>,
    ) -> Result<(), StoreError> {
        let scope = topic.scope.as_deref().unwrap_or("");
        let gone: Vec<&String> = old.difference(new).collect();
        if !gone.is_empty() {
            self.execute(
                "DELETE FROM topic_words WHERE topic_key = $1 AND scope = $2 AND word = ANY($3)",
                &[&key, &scope, &gone],
            )?;
        }
        let added: Vec<&String> = new.difference(old).collect();
        if !added.is_empty() {
            self.execute(
                "INSERT INTO topic_words (word, scope, topic_key, sensitivity)
                 SELECT w, $2, $1, $4 FROM unnest($3::text[]) w
                 ON CONFLICT DO NOTHING",
                &[&key, &scope, &added, &(topic.sensitivity.rank() as i64)],
            )?;
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
        let words: Vec<&String> = words.iter().collect();
        let sensitivity = reach.max_sensitivity.rank() as i64;
        let limit = per_word as i64;
        let rows = match &reach.scopes {
            Some(scopes) => self.query(
                "SELECT k.topic_key FROM unnest($1::text[]) w CROSS JOIN unnest($4::text[]) s
                 CROSS JOIN LATERAL (SELECT topic_key FROM topic_words
                                     WHERE word = w AND scope = s AND sensitivity <= $2
                                     ORDER BY topic_key DESC LIMIT $3) k",
                &[&words, &sensitivity, &limit, scopes],
            )?,
            None => self.query(
                "SELECT k.topic_key FROM unnest($1::text[]) w
                 CROSS JOIN LATERAL (SELECT topic_key FROM topic_words
                                     WHERE word = w AND sensitivity <= $2
                                     ORDER BY topic_key DESC LIMIT $3) k",
                &[&words, &sensitivity, &limit],
            )?,
        };
        let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
        for row in rows {
            *counts.entry(row.try_get(0)?).or_default() += 1;
        }
        let mut shared: Vec<(i64, usize)> = counts.into_iter().collect();
        shared.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
        Ok(shared
            .into_iter()
            .map(|(key, shared)| SharedWords { key, shared })
            .collect())
    }

    fn topic_by_id(&mut self, id: &str) -> Result<Option<KeyedTopic>, StoreError> {
        self.query_opt(
            &format!("SELECT {COLUMNS} FROM topics t WHERE t.id = $1"),
            &[&id],
        )?
        .map(|row| read_topic(&row).map(|(key, topic)| KeyedTopic { key, topic }))
        .transpose()
    }

    fn topic_by_key(&mut self, key: i64) -> Result<Option<Topic>, StoreError> {
        self.query_opt(
            &format!("SELECT {COLUMNS} FROM topics t WHERE t.key = $1"),
            &[&key],
        )?
        .map(|row| read_topic(&row).map(|(_, topic)| topic))
        .transpose()
    }

    fn topics_to_index(&mut self) -> Result<Vec<i64>, StoreError> {
        self.query(
            "SELECT topic_key FROM topics_to_index ORDER BY topic_key",
            &[],
        )?
        .iter()
        .map(|row| Ok(row.try_get(0)?))
        .collect()
    }

    fn topics_indexed(&mut self, keys: &[i64]) -> Result<(), StoreError> {
        self.execute(
            "DELETE FROM topics_to_index WHERE topic_key = ANY($1)",
            &[&keys],
        )?;
        Ok(())
    }

    fn topics_titled(
        &mut self,
        title: &str,
        scope: Option<&str>,
    ) -> Result<Vec<KeyedTopic>, StoreError> {
        self.query(
            &format!(
                "SELECT {COLUMNS} FROM topics t
                 WHERE t.norm_title = $1 AND t.scope IS NOT DISTINCT FROM $2 AND NOT t.archived
                 ORDER BY t.key"
            ),
            &[&normalize_title(title), &scope],
        )?
        .iter()
        .map(|row| read_topic(row).map(|(key, topic)| KeyedTopic { key, topic }))
        .collect()
    }

    fn search_topics(
        &mut self,
        text: &str,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<FoundTopic>, StoreError> {
        let Some(query) = TextQuery::new(text) else {
            return Ok(Vec::new());
        };
        let terms: Vec<String> = query
            .terms()
            .iter()
            .map(|term| format!("'{}'", term.trim_matches('"').replace('\'', "''")))
            .collect();
        self.query(
            &format!(
                "SELECT {COLUMNS}, ts_rank_cd(t.search, q)::float8 AS rank
                 FROM topics t, to_tsquery('simple', $4) q
                 WHERE t.search @@ q AND {VISIBLE}
                 ORDER BY rank DESC, t.key DESC LIMIT $5"
            ),
            &[
                &(trust.max_sensitivity.rank() as i64),
                &trust.scope_filter(),
                &kind,
                &terms.join(" | "),
                &(limit as i64),
            ],
        )?
        .iter()
        .map(|row| {
            let (key, topic) = read_topic(row)?;
            Ok(FoundTopic {
                key,
                topic,
                score: row.try_get(14)?,
            })
        })
        .collect()
    }

    fn recent_topics(
        &mut self,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<KeyedTopic>, StoreError> {
        self.query(
            &format!(
                "SELECT {COLUMNS} FROM topics t WHERE {VISIBLE}
                 ORDER BY t.updated_at DESC, t.key DESC LIMIT $4"
            ),
            &[
                &(trust.max_sensitivity.rank() as i64),
                &trust.scope_filter(),
                &kind,
                &(limit as i64),
            ],
        )?
        .iter()
        .map(|row| read_topic(row).map(|(key, topic)| KeyedTopic { key, topic }))
        .collect()
    }

    fn field_heads(
        &mut self,
        key: i64,
        at: Option<Timestamp>,
    ) -> Result<Vec<FieldVersion>, StoreError> {
        self.query(
            "SELECT DISTINCT ON (v.name) v.name, v.seq, r.id, v.valid_from, v.why_changed,
                    v.value_json, v.source, r.status = 'retracted', v.ended
             FROM topic_versions v JOIN records r ON r.key = v.record_key
             WHERE v.topic_key = $1 AND ($2::bigint IS NULL OR v.valid_from <= $2)
             ORDER BY v.name, v.seq DESC",
            &[&key, &at.as_ref().map(to_micros)],
        )?
        .iter()
        .map(read_version)
        .collect()
    }

    fn field_versions(&mut self, key: i64, name: &str) -> Result<Vec<FieldVersion>, StoreError> {
        self.query(
            "SELECT v.name, v.seq, r.id, v.valid_from, v.why_changed, v.value_json, v.source,
                    r.status = 'retracted', v.ended
             FROM topic_versions v JOIN records r ON r.key = v.record_key
             WHERE v.topic_key = $1 AND v.name = $2 ORDER BY v.seq",
            &[&key, &name],
        )?
        .iter()
        .map(read_version)
        .collect()
    }

    fn add_version(&mut self, key: i64, version: &FieldVersion) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO topic_versions (topic_key, name, seq, record_key, valid_from, why_changed,
                                         value_json, source, ended)
             SELECT $1, $2, $3, key, $4, $5, $7, $8, $9 FROM records WHERE id = $6",
            &[
                &key,
                &version.name,
                &version.seq,
                &to_micros(&version.valid_from),
                &version.why_changed,
                &version.record_id,
                &version.value.to_string(),
                &version.source,
                &version.ended,
            ],
        )?;
        Ok(())
    }

    fn topic_of_record(&mut self, record_id: &str) -> Result<Option<i64>, StoreError> {
        self.query_opt(
            "SELECT v.topic_key FROM records r JOIN topic_versions v ON v.record_key = r.key
             WHERE r.id = $1 LIMIT 1",
            &[&record_id],
        )?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(StoreError::from)
    }

    fn trim_versions(&mut self, key: i64, name: &str, keep: usize) -> Result<usize, StoreError> {
        Ok(self.execute(
            "DELETE FROM topic_versions WHERE topic_key = $1 AND name = $2 AND seq <= (
                 SELECT MAX(seq) FROM topic_versions WHERE topic_key = $1 AND name = $2) - $3",
            &[&key, &name, &(keep as i64)],
        )? as usize)
    }

    fn add_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.execute(
            "INSERT INTO topic_edges (from_key, to_key, kind, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
            &[&from, &to, &kind, &to_micros(&now)],
        )? > 0)
    }

    fn remove_edge(
        &mut self,
        from: i64,
        to: i64,
        kind: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.execute(
            "UPDATE topic_edges SET removed_at = $4
             WHERE from_key = $1 AND to_key = $2 AND kind = $3 AND removed_at IS NULL",
            &[&from, &to, &kind, &to_micros(&now)],
        )? > 0)
    }

    fn edges_of(&mut self, key: i64, at: Option<Timestamp>) -> Result<Vec<EdgeEnd>, StoreError> {
        self.query(
            "SELECT e.to_key, f.id, t.id, e.kind, e.created_at
             FROM topic_edges e JOIN topics f ON f.key = e.from_key JOIN topics t ON t.key = e.to_key
             WHERE e.from_key = $1 AND ($2::bigint IS NULL AND e.removed_at IS NULL
                   OR $2 IS NOT NULL AND e.created_at <= $2 AND (e.removed_at IS NULL OR e.removed_at > $2))
             UNION ALL
             SELECT e.from_key, f.id, t.id, e.kind, e.created_at
             FROM topic_edges e JOIN topics f ON f.key = e.from_key JOIN topics t ON t.key = e.to_key
             WHERE e.to_key = $1 AND e.from_key <> $1 AND ($2 IS NULL AND e.removed_at IS NULL
                   OR $2 IS NOT NULL AND e.created_at <= $2 AND (e.removed_at IS NULL OR e.removed_at > $2))",
            &[&key, &at.as_ref().map(to_micros)],
        )?
        .iter()
        .map(|row| {
            Ok(EdgeEnd {
                other: row.try_get(0)?,
                edge: TopicEdge {
                    from_topic_id: row.try_get(1)?,
                    to_topic_id: row.try_get(2)?,
                    kind: row.try_get(3)?,
                    created_at: from_micros(row.try_get(4)?),
                },
            })
        })
        .collect()
    }

    fn put_topic_vector(&mut self, key: i64, embedding: &Embedding) -> Result<(), StoreError> {
        super::vectors::fits(self, embedding)?;
        self.execute(
            "INSERT INTO topic_vectors (topic_key, norm, vector) VALUES ($1, $2, $3)
             ON CONFLICT (topic_key) DO UPDATE SET norm = excluded.norm, vector = excluded.vector",
            &[&key, &embedding.norm(), &embedding.to_bytes()],
        )?;
        Ok(())
    }

    fn nearest_topics(
        &mut self,
        query: &QueryVector,
        trust: &TrustContext,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ScoredKey>, StoreError> {
        let mut found = Vec::new();
        for row in self.query(
            &format!(
                "SELECT v.topic_key, v.norm, v.vector FROM topic_vectors v
                 JOIN topics t ON t.key = v.topic_key WHERE {VISIBLE}"
            ),
            &[
                &(trust.max_sensitivity.rank() as i64),
                &trust.scope_filter(),
                &kind,
            ],
        )? {
            let bytes: &[u8] = row.try_get(2)?;
            if let Some(similarity) = query.signal(bytes, row.try_get(1)?) {
                found.push((row.try_get::<_, i64>(0)?, similarity));
            }
        }
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(limit);
        Ok(found
            .into_iter()
            .map(|(key, score)| ScoredKey { key, score })
            .collect())
    }

    fn topic_similarity(
        &mut self,
        key: i64,
        query: &QueryVector,
    ) -> Result<Option<f64>, StoreError> {
        let Some(row) = self.query_opt(
            "SELECT norm, vector FROM topic_vectors WHERE topic_key = $1",
            &[&key],
        )?
        else {
            return Ok(None);
        };
        let bytes: &[u8] = row.try_get(1)?;
        Ok(query.signal(bytes, row.try_get(0)?))
    }

    fn drop_versions(&mut self, key: i64, name: &str) -> Result<(), StoreError> {
        self.execute(
            "DELETE FROM topic_versions WHERE topic_key = $1 AND name = $2",
            &[&key, &name],
        )?;
        Ok(())
    }

    fn fading_topics(&mut self, below: f64, limit: usize) -> Result<Vec<i64>, StoreError> {
        self.query(
            "SELECT key FROM topics WHERE NOT archived AND salience < $1
             ORDER BY salience, key LIMIT $2",
            &[&below, &(limit as i64)],
        )?
        .iter()
        .map(|row| Ok(row.try_get(0)?))
        .collect()
    }

    fn active_topics(&mut self) -> Result<u64, StoreError> {
        let count: i64 = self
            .query_one("SELECT COUNT(*) FROM topics WHERE NOT archived", &[])?
            .try_get(0)?;
        Ok(count.max(0) as u64)
    }

    fn topic_decay_chunk(
        &mut self,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<TopicDecay>, StoreError> {
        self.query(
            "SELECT key, salience, anchor_salience, anchor_at, created_at FROM topics
             WHERE key > $1 AND NOT archived ORDER BY key LIMIT $2",
            &[&after_key, &(limit as i64)],
        )?
        .iter()
        .map(|row| {
            Ok(TopicDecay {
                key: row.try_get(0)?,
                stored: row.try_get(1)?,
                anchor: Anchor {
                    salience: row.try_get(2)?,
                    at: from_micros(row.try_get(3)?),
                },
                created_at: from_micros(row.try_get(4)?),
            })
        })
        .collect()
    }

    fn set_topic_salience(
        &mut self,
        key: i64,
        anchor_at: Timestamp,
        salience: f64,
    ) -> Result<(), StoreError> {
        self.execute(
            "UPDATE topics SET salience = $3 WHERE key = $1 AND anchor_at = $2",
            &[&key, &to_micros(&anchor_at), &salience],
        )?;
        Ok(())
    }
}
