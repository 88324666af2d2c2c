//! Records read on SQLite: one by id, many by key (with every part, the
//! loading all readers share: retrieval's source, the embedder's reads,
//! the index's rebuild), a supersession chain, what loading some costs.

use std::collections::HashMap;
use std::rc::Rc;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row};

use crate::domain::record::{MemoryRecord, Sensitivity};
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;
use crate::store::records::{
    read_audit, read_record, read_relation, read_source, walk_chain, Loaded, RecordReads, Version,
    Visibility,
};

impl RecordReads for Connection {
    /// The record with `id`, its salience as of `now`.
    fn get_record(&mut self, id: &str, now: Timestamp) -> Result<Option<MemoryRecord>, StoreError> {
        match record_key(self, id)? {
            Some(key) => Ok(load_whole(self, &[key], now)?.pop()),
            None => Ok(None),
        }
    }

    /// The record with `id` and the version a change is made against.
    fn get_for_update(&mut self, id: &str, now: Timestamp) -> Result<Option<Loaded>, StoreError> {
        let Some((key, number)) = self
            .prepare_cached("SELECT key, version FROM records WHERE id = ?1")?
            .query_row([id], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
            })
            .optional()?
        else {
            return Ok(None);
        };
        Ok(load_whole(self, &[key], now)?.pop().map(|record| Loaded {
            version: Version {
                key,
                number,
                audit_len: record.audit_log.len(),
            },
            record,
        }))
    }

    /// The serialised size of the payloads of the records with these ids,
    /// together.
    fn payload_bytes(&mut self, ids: &[String]) -> Result<u64, StoreError> {
        let id_list = Rc::new(
            ids.iter()
                .map(|id| SqlValue::Text(id.clone()))
                .collect::<Vec<_>>(),
        );
        let total: i64 = self
            .prepare_cached(
                "SELECT COALESCE(SUM(length(CAST(p.payload_json AS BLOB))), 0)
                 FROM records r JOIN payloads p ON p.record_key = r.key
                 WHERE r.id IN rarray(?1)",
            )?
            .query_row([id_list], |row| row.get(0))?;
        Ok(total.max(0) as u64)
    }

    fn load_records(
        &mut self,
        keys: &[i64],
        now: Timestamp,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        load_whole(self, keys, now)
    }

    /// The sensitivity and scope of record `id`, if there is one.
    fn record_visibility(&mut self, id: &str) -> Result<Option<Visibility>, StoreError> {
        self.prepare_cached("SELECT sensitivity, scope FROM records WHERE id = ?1")?
            .query_row([id], |row| Ok((row.get::<_, i64>(0)?, row.get(1)?)))
            .optional()?
            .map(|(rank, scope)| {
                Ok(Visibility {
                    sensitivity: sensitivity_of(rank)?,
                    scope,
                })
            })
            .transpose()
    }

    /// The supersession chain through record `id`, oldest first: follows
    /// `supersedes` relations back to the first version and forward to the
    /// newest. `None` when there is no such record.
    fn supersession_chain(
        &mut self,
        id: &str,
        now: Timestamp,
    ) -> Result<Option<Vec<MemoryRecord>>, StoreError> {
        let Some(key) = record_key(self, id)? else {
            return Ok(None);
        };
        let mut older = self.prepare_cached(
            "SELECT r.key, r.id FROM relations rel JOIN records r ON r.id = rel.target_id
             WHERE rel.source_key = ?1 AND rel.predicate = 'supersedes' ORDER BY rel.id LIMIT 1",
        )?;
        let mut newer = self.prepare_cached(
            "SELECT r.key, r.id FROM relations rel JOIN records r ON r.key = rel.source_key
             WHERE rel.target_id = ?1 AND rel.predicate = 'supersedes' ORDER BY rel.id LIMIT 1",
        )?;
        let keys = walk_chain(
            key,
            id,
            |key| {
                Ok(older
                    .query_row([key], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()?)
            },
            |id| {
                Ok(newer
                    .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()?)
            },
        )?;
        Ok(Some(load_whole(self, &keys, now)?))
    }

    /// Cheap liveness query for readiness checks.
    fn ping(&mut self) -> Result<(), StoreError> {
        self.prepare_cached("SELECT COUNT(*) FROM schema_migrations")?
            .query_row([], |row| row.get::<_, i64>(0))?;
        Ok(())
    }
}

pub fn record_key(conn: &Connection, id: &str) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT key FROM records WHERE id = ?1")?
        .query_row([id], |row| row.get(0))
        .optional()?)
}

/// A stored sensitivity rank.
pub(crate) fn sensitivity_of(rank: i64) -> Result<Sensitivity, StoreError> {
    Sensitivity::from_rank(rank)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown sensitivity rank {rank}")))
}

/// Record keys as the value of an `IN rarray(?)` parameter.
pub(super) fn key_array(keys: &[i64]) -> Rc<Vec<SqlValue>> {
    Rc::new(keys.iter().map(|k| SqlValue::Integer(*k)).collect())
}

/// `texts` as one array parameter, for `rarray(?n)`.
pub(super) fn text_array(texts: &[String]) -> Rc<Vec<SqlValue>> {
    Rc::new(texts.iter().map(|t| SqlValue::Text(t.clone())).collect())
}

/// The records with these keys, in the order given, each with all its
/// parts and its salience decayed to `now`. Child rows are read with one
/// query per table for the whole set.
pub fn load_whole(
    conn: &Connection,
    keys: &[i64],
    now: Timestamp,
) -> Result<Vec<MemoryRecord>, StoreError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let key_list = key_array(keys);
    let mut records: HashMap<i64, MemoryRecord> = HashMap::with_capacity(keys.len());
    {
        let mut stmt = conn.prepare_cached(
            "SELECT r.key, r.id, r.layer, r.sensitivity, r.confidence, r.salience, r.scope,
                    r.status, r.created_by, r.created_at, r.updated_at,
                    d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds,
                    d.reinforcement_gain, d.last_reinforced_at, d.pinned, d.deletion_policy,
                    p.payload_json, COALESCE(d.anchor_salience, r.salience),
                    COALESCE(d.anchor_at, d.last_reinforced_at)
             FROM records r
             JOIN decay_profiles d ON d.record_key = r.key
             JOIN payloads p ON p.record_key = r.key
             WHERE r.key IN rarray(?1)",
        )?;
        let mut rows = stmt.query([key_list.clone()])?;
        while let Some(row) = rows.next()? {
            let (key, record) = read_record(row, now)?;
            records.insert(key, record);
        }
    }
    let key_list = &key_list;
    for_each_child(
        conn,
        "SELECT record_key, tag FROM tags WHERE record_key IN rarray(?1) ORDER BY record_key, position",
        key_list,
        &mut records,
        |record, row| {
            record.tags.push(row.get(1)?);
            Ok(())
        },
    )?;
    for_each_child(
        conn,
        "SELECT record_key, kind, ref, hash, created_by, timestamp
         FROM provenance_sources WHERE record_key IN rarray(?1) ORDER BY id",
        key_list,
        &mut records,
        |record, row| {
            record.provenance.sources.push(read_source(row)?);
            Ok(())
        },
    )?;
    for_each_child(
        conn,
        "SELECT source_key, predicate, target_id, weight, created_at
         FROM relations WHERE source_key IN rarray(?1) ORDER BY id",
        key_list,
        &mut records,
        |record, row| {
            record.relations.push(read_relation(row)?);
            Ok(())
        },
    )?;
    for_each_child(
        conn,
        "SELECT record_key, action, actor, timestamp, rationale, imported
         FROM audit_log WHERE record_key IN rarray(?1) ORDER BY id",
        key_list,
        &mut records,
        |record, row| {
            record.audit_log.push(read_audit(row)?);
            Ok(())
        },
    )?;
    Ok(keys.iter().filter_map(|key| records.remove(key)).collect())
}

/// Runs a child-table query (first column: the record key, `?1`: the key
/// list) and hands each row to `apply` with the record it belongs to.
fn for_each_child(
    conn: &Connection,
    sql: &str,
    keys: &Rc<Vec<SqlValue>>,
    records: &mut HashMap<i64, MemoryRecord>,
    mut apply: impl FnMut(&mut MemoryRecord, &Row<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query([keys.clone()])?;
    while let Some(row) = rows.next()? {
        if let Some(record) = records.get_mut(&row.get::<_, i64>(0)?) {
            apply(record, row)?;
        }
    }
    Ok(())
}
