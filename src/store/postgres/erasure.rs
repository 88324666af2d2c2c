//! Erasure on PostgreSQL (migration 0008): deleting records with every
//! row that holds their content (the child tables go by `ON DELETE
//! CASCADE`, incoming relations and the text totals by trigger, the search
//! text with the row), topics left with no field, tombstones and the
//! erasure log.

use super::connection::Pg;
use super::record_reads::sensitivity_of;
use crate::domain::erasure::TableCounts;
use crate::domain::record::MemoryType;
use crate::domain::time::to_micros;
use crate::domain::topic::normalize_title;
use crate::domain::trust::TrustContext;
use crate::store::erasure::{
    ChainNeighbours, Erasable, ErasureEntry, ErasureStore, LogPlace, LogReach, Tombstone,
    ERASURE_COLUMNS, TOPIC_PARTS,
};
use crate::store::error::StoreError;

const ERASABLE: &str = Erasable::COLUMNS;

/// The records `sql` (selecting [`ERASABLE`], `$1` the value) finds, those
/// `trust` may see.
fn visible(
    pg: &Pg,
    sql: &str,
    value: &str,
    trust: &TrustContext,
) -> Result<Vec<Erasable>, StoreError> {
    let mut found = Vec::new();
    for row in pg.query(sql, &[&value])? {
        let record = Erasable::read(&row)?;
        if trust.allows_parts(record.sensitivity, record.scope.as_deref()) {
            found.push(record);
        }
    }
    Ok(found)
}

fn count(pg: &Pg, sql: &str, keys: &[i64]) -> Result<u64, StoreError> {
    let n: i64 = pg.query_one(sql, &[&keys])?.try_get(0)?;
    Ok(n as u64)
}

const TOMBSTONE: &str = Tombstone::COLUMNS;

impl ErasureStore for Pg {
    fn erasable_in_scope(
        &mut self,
        scope: &str,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!("SELECT {ERASABLE} FROM records WHERE scope = $1 ORDER BY key");
        visible(self, &sql, scope, trust)
    }

    fn erasable_by_source(
        &mut self,
        source: &str,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!("SELECT {ERASABLE} FROM records WHERE created_by = $1 ORDER BY key");
        visible(self, &sql, source, trust)
    }

    fn erasable_about(
        &mut self,
        about: &str,
        memory_type: MemoryType,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!(
            "SELECT {ERASABLE} FROM records WHERE about = $1 AND layer = {} ORDER BY key",
            memory_type.layer()
        );
        visible(self, &sql, about, trust)
    }

    fn erasable_ids(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError> {
        self.query(
            &format!("SELECT {ERASABLE} FROM records WHERE id = ANY($1) ORDER BY key"),
            &[&ids],
        )?
        .iter()
        .map(Erasable::read)
        .collect()
    }

    fn derived_from_any(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError> {
        self.query(
            &format!(
                "SELECT {ERASABLE} FROM records WHERE key IN (
                     SELECT source_key FROM relations
                     WHERE predicate = 'derived_from' AND target_id = ANY($1)
                     UNION
                     SELECT record_key FROM record_citations WHERE cited_id = ANY($1))
                 ORDER BY key"
            ),
            &[&ids],
        )?
        .iter()
        .map(Erasable::read)
        .collect()
    }

    fn linking_to_any(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError> {
        self.query(
            &format!(
                "SELECT {ERASABLE} FROM records
                 JOIN (SELECT source_key FROM relations WHERE target_id = ANY($1)) l
                   ON l.source_key = records.key"
            ),
            &[&ids],
        )?
        .iter()
        .map(Erasable::read)
        .collect()
    }

    fn chain_neighbours(&mut self, keys: &[i64]) -> Result<Vec<ChainNeighbours>, StoreError> {
        // One statement for all: a round trip per record would be most of
        // a large erasure's time.
        let mut found = Vec::new();
        for row in self.query(
            "SELECT * FROM (
                 SELECT r.key,
                     (SELECT target_id FROM relations
                      WHERE source_key = r.key AND predicate = 'supersedes'
                      ORDER BY id LIMIT 1),
                     (SELECT n.id FROM relations l JOIN records n ON n.key = l.source_key
                      WHERE l.target_id = r.id AND l.predicate = 'supersedes'
                      ORDER BY l.id LIMIT 1)
                 FROM records r WHERE r.key = ANY($1)) c (key, older_id, newer_id)
             WHERE older_id IS NOT NULL OR newer_id IS NOT NULL
             ORDER BY key",
            &[&keys],
        )? {
            found.push(ChainNeighbours {
                key: row.try_get(0)?,
                older_id: row.try_get(1)?,
                newer_id: row.try_get(2)?,
            });
        }
        Ok(found)
    }

    fn topics_of_records(&mut self, keys: &[i64]) -> Result<Vec<i64>, StoreError> {
        self.query(
            "SELECT DISTINCT topic_key FROM topic_versions WHERE record_key = ANY($1)
             ORDER BY topic_key",
            &[&keys],
        )?
        .iter()
        .map(|row| Ok(row.try_get(0)?))
        .collect()
    }

    fn erasure_counts(&mut self, keys: &[i64]) -> Result<TableCounts, StoreError> {
        Ok(TableCounts {
            records: count(
                self,
                "SELECT COUNT(*) FROM records WHERE key = ANY($1)",
                keys,
            )?,
            search: count(
                self,
                "SELECT COUNT(*) FROM records WHERE key = ANY($1) AND search <> ''::tsvector",
                keys,
            )?,
            vectors: count(
                self,
                "SELECT COUNT(*) FROM record_vectors WHERE record_key = ANY($1)",
                keys,
            )?,
            topic_fields: count(
                self,
                "SELECT COUNT(*) FROM topic_versions WHERE record_key = ANY($1)",
                keys,
            )?,
            edges: count(
                self,
                "SELECT COUNT(*) FROM relations WHERE source_key = ANY($1)",
                keys,
            )?,
            audit: count(
                self,
                "SELECT COUNT(*) FROM audit_log WHERE record_key = ANY($1)",
                keys,
            )?,
        })
    }

    fn erase_records(&mut self, keys: &[i64], bulk: bool) -> Result<(), StoreError> {
        self.execute("DELETE FROM records WHERE key = ANY($1)", &[&keys])?;
        if bulk {
            self.vacuum_due.set(true);
        }
        Ok(())
    }

    fn count_topic_vectors(&mut self, keys: &[i64]) -> Result<u64, StoreError> {
        count(
            self,
            "SELECT COUNT(*) FROM topic_vectors WHERE topic_key = ANY($1)",
            keys,
        )
    }

    fn drop_topic_vectors(&mut self, keys: &[i64]) -> Result<(), StoreError> {
        self.execute(
            "DELETE FROM topic_vectors WHERE topic_key = ANY($1)",
            &[&keys],
        )?;
        Ok(())
    }

    fn erase_empty_topics(&mut self, keys: &[i64]) -> Result<(), StoreError> {
        let empty: Vec<i64> = self
            .query(
                "SELECT key FROM topics t WHERE key = ANY($1)
                   AND NOT EXISTS (SELECT 1 FROM topic_versions v WHERE v.topic_key = t.key)",
                &[&keys],
            )?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()?;
        if empty.is_empty() {
            return Ok(());
        }
        self.execute(
            "DELETE FROM topic_edges WHERE from_key = ANY($1) OR to_key = ANY($1)",
            &[&empty],
        )?;
        for table in TOPIC_PARTS {
            self.execute(
                &format!("DELETE FROM {table} WHERE topic_key = ANY($1)"),
                &[&empty],
            )?;
        }
        self.execute("DELETE FROM topics WHERE key = ANY($1)", &[&empty])?;
        Ok(())
    }

    fn topics_titled_any_scope(
        &mut self,
        title: &str,
        trust: &TrustContext,
    ) -> Result<Vec<i64>, StoreError> {
        let mut keys = Vec::new();
        for row in self.query(
            "SELECT key, sensitivity, scope FROM topics WHERE norm_title = $1",
            &[&normalize_title(title)],
        )? {
            let scope: Option<String> = row.try_get(2)?;
            if trust.allows_parts(sensitivity_of(row.try_get(1)?)?, scope.as_deref()) {
                keys.push(row.try_get(0)?);
            }
        }
        Ok(keys)
    }

    fn topic_field_records(&mut self, key: i64) -> Result<Vec<Erasable>, StoreError> {
        self.query(
            &format!(
                "SELECT {ERASABLE} FROM records WHERE key IN (
                     SELECT record_key FROM topic_versions WHERE topic_key = $1)
                 ORDER BY key"
            ),
            &[&key],
        )?
        .iter()
        .map(Erasable::read)
        .collect()
    }

    fn add_tombstone(&mut self, t: &Tombstone) -> Result<(), StoreError> {
        self.execute(
            &format!(
                "INSERT INTO erased_records ({TOMBSTONE})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (id) DO UPDATE SET older_id = excluded.older_id,
                                                newer_id = excluded.newer_id"
            ),
            &[
                &t.id,
                &(t.memory_type.layer() as i64),
                &(t.sensitivity.rank() as i64),
                &t.scope,
                &to_micros(&t.erased_at),
                &t.actor,
                &t.rationale,
                &t.older_id,
                &t.newer_id,
            ],
        )?;
        Ok(())
    }

    fn tombstone(&mut self, id: &str) -> Result<Option<Tombstone>, StoreError> {
        self.query_opt(
            &format!("SELECT {TOMBSTONE} FROM erased_records WHERE id = $1"),
            &[&id],
        )?
        .map(|row| Tombstone::read(&row))
        .transpose()
    }

    fn tombstone_next_to(
        &mut self,
        older: Option<&str>,
        newer: Option<&str>,
    ) -> Result<Option<Tombstone>, StoreError> {
        self.query_opt(
            &format!(
                "SELECT {TOMBSTONE} FROM erased_records
                 WHERE ($1::text IS NOT NULL AND older_id = $1)
                    OR ($2::text IS NOT NULL AND newer_id = $2)
                 LIMIT 1"
            ),
            &[&older, &newer],
        )?
        .map(|row| Tombstone::read(&row))
        .transpose()
    }

    fn log_erasure(&mut self, e: &ErasureEntry) -> Result<(), StoreError> {
        let tables = serde_json::to_string(&e.tables)
            .map_err(|err| StoreError::Corrupt(format!("erasure counts: {err}")))?;
        let grant = e
            .grant_scopes
            .as_ref()
            .map(|scopes| serde_json::Value::from(scopes.clone()).to_string());
        let at = to_micros(&e.at);
        self.execute(
            "INSERT INTO erasures (id, at, actor, rationale, selector, name, ids, erased,
                                   derived_erased, tombstones, tables_json, took_ms,
                                   grant_scopes, max_sensitivity)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            &[
                &e.id,
                &at,
                &e.actor,
                &e.rationale,
                &e.selector,
                &e.name,
                &(e.ids as i64),
                &(e.erased as i64),
                &(e.derived_erased as i64),
                &(e.tombstones as i64),
                &tables,
                &(e.took_ms as i64),
                &grant,
                &(e.max_sensitivity.rank() as i64),
            ],
        )?;
        self.execute(
            "INSERT INTO erasure_scopes (scope, at, erasure_id)
             SELECT DISTINCT s, $2::bigint, $3::text FROM unnest($1::text[]) AS s
             ON CONFLICT DO NOTHING",
            &[&e.scope_rows(), &at, &e.id],
        )?;
        Ok(())
    }

    fn erasures(
        &mut self,
        reach: &LogReach,
        after: &LogPlace,
        limit: usize,
    ) -> Result<Vec<ErasureEntry>, StoreError> {
        let rank = reach.max_sensitivity.rank() as i64;
        let rows = match &reach.scopes {
            None => self.query(
                &format!(
                    "SELECT {ERASURE_COLUMNS} FROM erasures e
                     WHERE (e.at, e.id) < ($1, $2) AND e.max_sensitivity <= $3
                     ORDER BY e.at DESC, e.id DESC LIMIT $4"
                ),
                &[&after.at, &after.id, &rank, &(limit as i64)],
            )?,
            // The reader's scopes' entries (through the index led by the
            // scope), less those made within a scope beyond them.
            Some(scopes) => self.query(
                &format!(
                    "SELECT {ERASURE_COLUMNS} FROM erasures e
                     WHERE e.id IN (SELECT erasure_id FROM erasure_scopes
                                    WHERE scope = ANY($1) AND (at, erasure_id) < ($2, $3))
                       AND e.max_sensitivity <= $4
                       AND NOT EXISTS (SELECT 1 FROM erasure_scopes o
                                       WHERE o.erasure_id = e.id
                                         AND NOT (o.scope = ANY($1)))
                     ORDER BY e.at DESC, e.id DESC LIMIT $5"
                ),
                &[scopes, &after.at, &after.id, &rank, &(limit as i64)],
            )?,
        };
        rows.iter().map(ErasureEntry::read).collect()
    }
}
