//! Erasure on SQLite (migration 0018): deleting records with every row
//! that holds their content (the child tables go by `ON DELETE CASCADE`,
//! incoming relations by trigger, index rows through `search`), topics
//! left with no field, tombstones and the erasure log. Every connection
//! overwrites what it deletes (`secure_delete`); once an erasure commits,
//! the writer merges the full-text indexes (whose segments keep a deleted
//! row's terms until then) and truncates the WAL (`WriteConnection::scrub`).

use std::rc::Rc;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension};

use super::counted::Counted;
use super::record_reads::{key_array, sensitivity_of, text_array};
use super::search::{self, Index};
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

/// The records `sql` (selecting [`ERASABLE`]) finds, those `trust` may see.
fn visible(
    conn: &Connection,
    sql: &str,
    value: &str,
    trust: &TrustContext,
) -> Result<Vec<Erasable>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([value], |row| Ok(Erasable::read(row)))?;
    let mut found = Vec::new();
    for row in rows {
        let record = row??;
        if trust.allows_parts(record.sensitivity, record.scope.as_deref()) {
            found.push(record);
        }
    }
    Ok(found)
}

/// The single count `sql` answers, `?1` bound to `list` (read in the
/// statement as `rarray(?1)`).
fn count_in(conn: &Connection, sql: &str, list: Rc<Vec<SqlValue>>) -> Result<u64, StoreError> {
    let n: i64 = conn
        .prepare_cached(sql)?
        .query_row([list], |row| row.get(0))?;
    Ok(n as u64)
}

/// The [`ERASABLE`] rows `sql` answers, `?1` bound to `list`.
fn erasable_in(
    conn: &Connection,
    sql: &str,
    list: Rc<Vec<SqlValue>>,
) -> Result<Vec<Erasable>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([list], |row| Ok(Erasable::read(row)))?;
    rows.map(|row| row?).collect()
}

const TOMBSTONE: &str = Tombstone::COLUMNS;

impl ErasureStore for Connection {
    fn erasable_in_scope(
        &mut self,
        scope: &str,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!("SELECT {ERASABLE} FROM records WHERE scope = ?1 ORDER BY key");
        visible(self, &sql, scope, trust)
    }

    fn erasable_by_source(
        &mut self,
        source: &str,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!("SELECT {ERASABLE} FROM records WHERE created_by = ?1 ORDER BY key");
        visible(self, &sql, source, trust)
    }

    fn erasable_about(
        &mut self,
        about: &str,
        memory_type: MemoryType,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!(
            "SELECT {ERASABLE} FROM records WHERE about = ?1 AND layer = {} ORDER BY key",
            memory_type.layer()
        );
        visible(self, &sql, about, trust)
    }

    fn erasable_ids(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!("SELECT {ERASABLE} FROM records WHERE id IN rarray(?1) ORDER BY key");
        erasable_in(self, &sql, text_array(ids))
    }

    fn derived_from_any(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!(
            "SELECT {ERASABLE} FROM records WHERE key IN (
                 SELECT source_key FROM relations
                 WHERE predicate = 'derived_from' AND target_id IN rarray(?1)
                 UNION
                 SELECT record_key FROM record_citations WHERE cited_id IN rarray(?1))
             ORDER BY key"
        );
        erasable_in(self, &sql, text_array(ids))
    }

    fn linking_to_any(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!(
            "SELECT {ERASABLE} FROM records
             JOIN (SELECT source_key FROM relations WHERE target_id IN rarray(?1)) l
               ON l.source_key = records.key"
        );
        erasable_in(self, &sql, text_array(ids))
    }

    fn chain_neighbours(&mut self, keys: &[i64]) -> Result<Vec<ChainNeighbours>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT * FROM (
                 SELECT r.key AS key,
                     (SELECT target_id FROM relations
                      WHERE source_key = r.key AND predicate = 'supersedes'
                      ORDER BY id LIMIT 1) AS older_id,
                     (SELECT n.id FROM relations l JOIN records n ON n.key = l.source_key
                      WHERE l.target_id = r.id AND l.predicate = 'supersedes'
                      ORDER BY l.id LIMIT 1) AS newer_id
                 FROM records r WHERE r.key IN rarray(?1))
             WHERE older_id IS NOT NULL OR newer_id IS NOT NULL
             ORDER BY key",
        )?;
        let rows = stmt.query_map([key_array(keys)], |row| {
            Ok(ChainNeighbours {
                key: row.get(0)?,
                older_id: row.get(1)?,
                newer_id: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn topics_of_records(&mut self, keys: &[i64]) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT DISTINCT topic_key FROM topic_versions WHERE record_key IN rarray(?1)
             ORDER BY topic_key",
        )?;
        let rows = stmt.query_map([key_array(keys)], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn erasure_counts(&mut self, keys: &[i64]) -> Result<TableCounts, StoreError> {
        Ok(TableCounts {
            records: count_in(
                self,
                "SELECT COUNT(*) FROM records WHERE key IN rarray(?1)",
                key_array(keys),
            )?,
            search: count_in(
                self,
                "SELECT COUNT(*) FROM record_search WHERE rowid IN rarray(?1)",
                key_array(keys),
            )?,
            vectors: count_in(
                self,
                "SELECT COUNT(*) FROM record_vectors WHERE record_key IN rarray(?1)",
                key_array(keys),
            )?,
            topic_fields: count_in(
                self,
                "SELECT COUNT(*) FROM topic_versions WHERE record_key IN rarray(?1)",
                key_array(keys),
            )?,
            edges: count_in(
                self,
                "SELECT COUNT(*) FROM relations WHERE source_key IN rarray(?1)",
                key_array(keys),
            )?,
            audit: count_in(
                self,
                "SELECT COUNT(*) FROM audit_log WHERE record_key IN rarray(?1)",
                key_array(keys),
            )?,
        })
    }

    fn erase_records(&mut self, keys: &[i64], bulk: bool) -> Result<(), StoreError> {
        let mut delete = self.prepare_cached("DELETE FROM records WHERE key = ?1")?;
        for &key in keys {
            let before = Counted::stored(self, key)?;
            let stored = search::stored_record(self, key)?;
            if delete.execute([key])? > 0 {
                if bulk {
                    search::remove_in_bulk(key, stored);
                } else {
                    search::remove(key, stored);
                }
                if let Some(before) = before {
                    search::count(&before, -1);
                }
            }
        }
        Ok(())
    }

    /// [`ErasureStore::erase_empty_topics`]. The tables keyed by word or by
    /// edge are cleared for all the empty topics at once: one pass each, not
    /// one per topic.
    fn erase_empty_topics(&mut self, keys: &[i64]) -> Result<(), StoreError> {
        let mut empty = Vec::new();
        for &key in keys {
            let fields: i64 = self
                .prepare_cached("SELECT COUNT(*) FROM topic_versions WHERE topic_key = ?1")?
                .query_row([key], |row| row.get(0))?;
            if fields == 0 {
                empty.push(key);
            }
        }
        if empty.is_empty() {
            return Ok(());
        }
        let list = key_array(&empty);
        self.prepare_cached(
            "DELETE FROM topic_edges WHERE from_key IN rarray(?1) OR to_key IN rarray(?1)",
        )?
        .execute([list.clone()])?;
        for table in TOPIC_PARTS {
            self.prepare_cached(&format!(
                "DELETE FROM {table} WHERE topic_key IN rarray(?1)"
            ))?
            .execute([list.clone()])?;
        }
        for &key in &empty {
            search::remove_from(Index::Topics, key, search::stored_topic(self, key)?);
        }
        self.prepare_cached("DELETE FROM topics WHERE key IN rarray(?1)")?
            .execute([list])?;
        Ok(())
    }

    fn count_topic_vectors(&mut self, keys: &[i64]) -> Result<u64, StoreError> {
        count_in(
            self,
            "SELECT COUNT(*) FROM topic_vectors WHERE topic_key IN rarray(?1)",
            key_array(keys),
        )
    }

    fn drop_topic_vectors(&mut self, keys: &[i64]) -> Result<(), StoreError> {
        self.prepare_cached("DELETE FROM topic_vectors WHERE topic_key IN rarray(?1)")?
            .execute([key_array(keys)])?;
        Ok(())
    }

    fn topics_titled_any_scope(
        &mut self,
        title: &str,
        trust: &TrustContext,
    ) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self
            .prepare_cached("SELECT key, sensitivity, scope FROM topics WHERE norm_title = ?1")?;
        let rows = stmt.query_map([normalize_title(title)], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, Option<String>>(2)?,
            ))
        })?;
        let mut keys = Vec::new();
        for row in rows {
            let (key, sensitivity, scope) = row?;
            if trust.allows_parts(sensitivity_of(sensitivity)?, scope.as_deref()) {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    fn topic_field_records(&mut self, key: i64) -> Result<Vec<Erasable>, StoreError> {
        let sql = format!(
            "SELECT {ERASABLE} FROM records WHERE key IN (
                 SELECT record_key FROM topic_versions WHERE topic_key = ?1)
             ORDER BY key"
        );
        let mut stmt = self.prepare_cached(&sql)?;
        let rows = stmt.query_map([key], |row| Ok(Erasable::read(row)))?;
        rows.map(|row| row?).collect()
    }

    fn add_tombstone(&mut self, t: &Tombstone) -> Result<(), StoreError> {
        self.prepare_cached(&format!(
            "INSERT OR REPLACE INTO erased_records ({TOMBSTONE})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        ))?
        .execute(params![
            t.id,
            t.memory_type.layer(),
            t.sensitivity.rank(),
            t.scope,
            to_micros(&t.erased_at),
            t.actor,
            t.rationale,
            t.older_id,
            t.newer_id,
        ])?;
        Ok(())
    }

    fn tombstone(&mut self, id: &str) -> Result<Option<Tombstone>, StoreError> {
        self.prepare_cached(&format!(
            "SELECT {TOMBSTONE} FROM erased_records WHERE id = ?1"
        ))?
        .query_row([id], |row| Ok(Tombstone::read(row)))
        .optional()?
        .transpose()
    }

    fn tombstone_next_to(
        &mut self,
        older: Option<&str>,
        newer: Option<&str>,
    ) -> Result<Option<Tombstone>, StoreError> {
        self.prepare_cached(&format!(
            "SELECT {TOMBSTONE} FROM erased_records
             WHERE (?1 IS NOT NULL AND older_id = ?1) OR (?2 IS NOT NULL AND newer_id = ?2)
             LIMIT 1"
        ))?
        .query_row(params![older, newer], |row| Ok(Tombstone::read(row)))
        .optional()?
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
        self.prepare_cached(
            "INSERT INTO erasures (id, at, actor, rationale, selector, name, ids, erased,
                                   derived_erased, tombstones, tables_json, took_ms,
                                   grant_scopes, max_sensitivity)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            e.id,
            at,
            e.actor,
            e.rationale,
            e.selector,
            e.name,
            e.ids as i64,
            e.erased as i64,
            e.derived_erased as i64,
            e.tombstones as i64,
            tables,
            e.took_ms as i64,
            grant,
            e.max_sensitivity.rank(),
        ])?;
        let mut scope = self.prepare_cached(
            "INSERT OR IGNORE INTO erasure_scopes (scope, at, erasure_id) VALUES (?1, ?2, ?3)",
        )?;
        for name in e.scope_rows() {
            scope.execute(params![name, at, e.id])?;
        }
        Ok(())
    }

    fn erasures(
        &mut self,
        reach: &LogReach,
        after: &LogPlace,
        limit: usize,
    ) -> Result<Vec<ErasureEntry>, StoreError> {
        let rank = reach.max_sensitivity.rank();
        let read = |row: &rusqlite::Row<'_>| Ok(ErasureEntry::read(row));
        let rows: Vec<Result<ErasureEntry, StoreError>> = match &reach.scopes {
            None => {
                let sql = format!(
                    "SELECT {ERASURE_COLUMNS} FROM erasures e
                     WHERE (e.at, e.id) < (?1, ?2) AND e.max_sensitivity <= ?3
                     ORDER BY e.at DESC, e.id DESC LIMIT ?4"
                );
                self.prepare_cached(&sql)?
                    .query_map(params![after.at, after.id, rank, limit as i64], read)?
                    .collect::<Result<_, _>>()?
            }
            // The reader's scopes' entries (through the index led by the
            // scope), less those made within a scope beyond them.
            Some(scopes) => {
                let sql = format!(
                    "SELECT {ERASURE_COLUMNS} FROM erasures e
                     WHERE e.id IN (SELECT erasure_id FROM erasure_scopes
                                    WHERE scope IN rarray(?1) AND (at, erasure_id) < (?2, ?3))
                       AND e.max_sensitivity <= ?4
                       AND NOT EXISTS (SELECT 1 FROM erasure_scopes o
                                       WHERE o.erasure_id = e.id
                                         AND o.scope NOT IN rarray(?1))
                     ORDER BY e.at DESC, e.id DESC LIMIT ?5"
                );
                self.prepare_cached(&sql)?
                    .query_map(
                        params![text_array(scopes), after.at, after.id, rank, limit as i64],
                        read,
                    )?
                    .collect::<Result<_, _>>()?
            }
        };
        rows.into_iter().collect()
    }
}
