//! Records in SQL: insert, update, read one, read many, and the visibility
//! query behind retrieval.

use std::collections::HashMap;
use std::rc::Rc;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Row};

use super::search::{Counted, Indexed};
use crate::domain::decay::Anchor;
use crate::domain::payload::Payload;
use crate::domain::record::{AuditEntry, MemoryRecord, MemoryType, Sensitivity};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::{to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::records::{
    read_audit, read_record, read_relation, read_source, Loaded, RecordPage, RecordStore,
    SalienceChange, Version, Visibility,
};

/// The moment from which a record's stored salience, set at `at`, decays.
pub(super) fn decays_from(record: &MemoryRecord, at: Timestamp) -> i64 {
    if record.lifecycle.pinned {
        i64::MAX
    } else {
        to_micros(&at)
    }
}

/// How a record's row-per-record parts are written: a new record's are
/// inserted, a rewritten record's updated in place. (An upsert or `INSERT
/// OR REPLACE` here would make SQLite open a statement journal for every
/// write, because with foreign keys on it may delete and cascade.)
enum Write {
    New(Anchor),
    /// `None` keeps the stored anchor.
    Update(Option<Anchor>),
}

/// The decay profile, and the bounds of its memory type (see migration
/// 0005).
fn write_lifecycle(
    conn: &Connection,
    key: i64,
    record: &MemoryRecord,
    write: Write,
) -> Result<(), StoreError> {
    let lifecycle = &record.lifecycle;
    let (sql, anchor) = match write {
        Write::New(anchor) => (
            "INSERT INTO decay_profiles (record_key, curve, half_life_seconds, min_salience,
                 max_age_seconds, reinforcement_gain, last_reinforced_at, pinned,
                 deletion_policy, anchor_salience, anchor_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            Some(anchor),
        ),
        Write::Update(anchor) => (
            "UPDATE decay_profiles SET curve = ?2, half_life_seconds = ?3, min_salience = ?4,
                 max_age_seconds = ?5, reinforcement_gain = ?6, last_reinforced_at = ?7,
                 pinned = ?8, deletion_policy = ?9,
                 anchor_salience = COALESCE(?10, anchor_salience),
                 anchor_at = COALESCE(?11, anchor_at)
             WHERE record_key = ?1",
            anchor,
        ),
    };
    conn.prepare_cached(sql)?.execute(params![
        key,
        lifecycle.decay.curve.as_str(),
        lifecycle.decay.half_life_seconds,
        lifecycle.decay.min_salience,
        lifecycle.decay.max_age_seconds,
        lifecycle.decay.reinforcement_gain,
        to_micros(&lifecycle.last_reinforced_at),
        lifecycle.pinned,
        lifecycle.deletion_policy.as_str(),
        anchor.map(|a| a.salience),
        anchor.map(|a| to_micros(&a.at)),
    ])?;
    conn.prepare_cached(
        "INSERT INTO decay_bounds (layer, max_half_life_seconds, max_min_salience)
         VALUES (?1, ?2, ?3)
         ON CONFLICT (layer) DO UPDATE SET
             max_half_life_seconds = MAX(max_half_life_seconds, excluded.max_half_life_seconds),
             max_min_salience = MAX(max_min_salience, excluded.max_min_salience)
         WHERE excluded.max_half_life_seconds > decay_bounds.max_half_life_seconds
            OR excluded.max_min_salience > decay_bounds.max_min_salience",
    )?
    .execute(params![
        record.memory_type.layer(),
        lifecycle.decay.half_life_seconds,
        lifecycle.decay.min_salience,
    ])?;
    Ok(())
}

/// Tags, provenance, citations, outgoing relations, competence counters
/// and a turn's place.
fn insert_children(conn: &Connection, key: i64, record: &MemoryRecord) -> Result<(), StoreError> {
    let mut tag =
        conn.prepare_cached("INSERT INTO tags (record_key, tag, position) VALUES (?1, ?2, ?3)")?;
    for (position, name) in record.tags.iter().enumerate() {
        tag.execute(params![key, name, position as i64])?;
    }
    let mut source = conn.prepare_cached(
        "INSERT INTO provenance_sources (record_key, kind, ref, hash, created_by, timestamp)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for s in &record.provenance.sources {
        source.execute(params![
            key,
            s.kind.as_str(),
            s.reference,
            s.hash,
            s.created_by,
            to_micros(&s.timestamp)
        ])?;
    }
    let citations = record.citations();
    if !citations.is_empty() {
        let mut cite = conn.prepare_cached(
            "INSERT INTO record_citations (cited_id, record_key) VALUES (?1, ?2)",
        )?;
        for id in citations {
            cite.execute(params![id, key])?;
        }
    }
    let mut relation = conn.prepare_cached(
        "INSERT INTO relations (source_key, predicate, target_id, weight, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for r in &record.relations {
        relation.execute(params![
            key,
            r.predicate,
            r.target_id,
            r.weight,
            to_micros(&r.created_at)
        ])?;
    }
    if let Payload::Competence(competence) = &record.payload {
        if let Some(performance) = &competence.performance {
            conn.prepare_cached(
                "INSERT INTO competence_stats (record_key, success_count, failure_count)
                 VALUES (?1, ?2, ?3)",
            )?
            .execute(params![
                key,
                performance.success_count as i64,
                performance.failure_count as i64
            ])?;
        }
    }
    if let Some(turn) = record.payload.turn() {
        conn.prepare_cached(
            "INSERT INTO conversation_turns (record_key, conversation_id, session_id, turn_index,
                                             speaker, at, timed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            key,
            turn.conversation_id,
            turn.session_id,
            turn.index as i64,
            turn.speaker,
            to_micros(&turn.at),
            turn.timed(),
        ])?;
    }
    Ok(())
}

fn append_audit(conn: &Connection, key: i64, entries: &[AuditEntry]) -> Result<(), StoreError> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO audit_log (record_key, action, actor, timestamp, rationale, imported)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for e in entries {
        insert.execute(params![
            key,
            e.action.as_str(),
            e.actor,
            to_micros(&e.timestamp),
            e.rationale,
            e.imported
        ])?;
    }
    Ok(())
}

fn payload_json(payload: &Payload) -> Result<String, StoreError> {
    serde_json::to_string(payload)
        .map_err(|e| StoreError::Corrupt(format!("payload does not serialise: {e}")))
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
pub fn load_records(
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

impl RecordStore for Connection {
    /// The record with `id`, its salience as of `now`.
    fn get_record(&mut self, id: &str, now: Timestamp) -> Result<Option<MemoryRecord>, StoreError> {
        match record_key(self, id)? {
            Some(key) => Ok(load_records(self, &[key], now)?.pop()),
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
        Ok(load_records(self, &[key], now)?.pop().map(|record| Loaded {
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
        load_records(self, keys, now)
    }

    /// Retracts the working states of `thread_id` in `scope` that are not
    /// retracted and at most `up_to` sensitive, as a newer state replaces
    /// them: salience 0 from `now` on, status retracted, `entry` appended;
    /// nothing else about them changes. Answers their ids, oldest first.
    fn retract_current_states(
        &mut self,
        thread_id: &str,
        scope: Option<&str>,
        up_to: Sensitivity,
        entry: &AuditEntry,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let states = self
            .prepare_cached(
                "SELECT key, id FROM records INDEXED BY idx_records_current
                 WHERE about = ?1 AND layer = ?2 AND scope IS ?3 AND status <> 'retracted'
                   AND sensitivity <= ?4
                 ORDER BY key",
            )?
            .query_map(
                params![thread_id, MemoryType::Working.layer(), scope, up_to.rank()],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
            )?
            .collect::<Result<Vec<_>, _>>()?;
        let at = to_micros(&now);
        for (key, _) in &states {
            if let Some(before) = Counted::stored(self, *key)? {
                let after = Counted {
                    live: false,
                    ..before.clone()
                };
                super::search::recount(&before, &after);
            }
            self.prepare_cached(
                "UPDATE records SET salience = 0, status = 'retracted', updated_at = ?2,
                     decays_from = CASE WHEN (SELECT pinned FROM decay_profiles WHERE record_key = ?1)
                                        THEN 9223372036854775807 ELSE ?2 END,
                     version = version + 1
                 WHERE key = ?1",
            )?
            .execute(params![key, at])?;
            self.prepare_cached(
                "UPDATE decay_profiles SET anchor_salience = 0, anchor_at = ?2 WHERE record_key = ?1",
            )?
            .execute(params![key, at])?;
            super::vectors::retracted(self, *key)?;
            append_audit(self, *key, std::slice::from_ref(entry))?;
        }
        Ok(states.into_iter().map(|(_, id)| id).collect())
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

    /// Stores a new record with all its parts. `AlreadyExists` when the id is
    /// taken.
    fn insert_record(&mut self, record: &MemoryRecord) -> Result<(), StoreError> {
        let indexed = Indexed::of(record);
        let inserted = self
            .prepare_cached(
                "INSERT INTO records (id, layer, sensitivity, confidence, salience, scope, status,
                                      created_by, created_at, updated_at, decays_from, about,
                                      search_length, search_repeats, search_terms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?
            .execute(params![
                record.id,
                record.memory_type.layer(),
                record.sensitivity.rank(),
                record.confidence,
                record.salience,
                record.scope,
                record.status.as_str(),
                record.provenance.created_by,
                to_micros(&record.created_at),
                to_micros(&record.updated_at),
                decays_from(record, record.lifecycle.last_reinforced_at),
                record.payload.about(),
                indexed.analysed.length,
                indexed.analysed.repeats,
                indexed.analysed.distinct,
            ]);
        match inserted {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == ErrorCode::ConstraintViolation
                    && e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
            {
                return Err(StoreError::AlreadyExists(record.id.clone()));
            }
            Err(e) => return Err(e.into()),
        }
        let key = self.last_insert_rowid();
        // A new record decays from its last reinforcement (by default, now).
        let anchor = Anchor {
            salience: record.salience,
            at: record.lifecycle.last_reinforced_at,
        };
        write_lifecycle(self, key, record, Write::New(anchor))?;
        self.prepare_cached("INSERT INTO payloads (record_key, payload_json) VALUES (?1, ?2)")?
            .execute(params![key, payload_json(&record.payload)?])?;
        insert_children(self, key, record)?;
        append_audit(self, key, &record.audit_log)?;
        super::search::index(key, &indexed);
        super::search::count(&Counted::of(record, &indexed.analysed), 1);
        if let Some(embedding) = &record.embedding {
            super::vectors::put(self, key, embedding, None)?;
        }
        Ok(())
    }

    /// Stores new records in order, one at a time (statements cost no round
    /// trip here).
    fn insert_records(&mut self, records: &[&MemoryRecord]) -> Result<(), StoreError> {
        records.iter().try_for_each(|r| self.insert_record(r))
    }

    /// Rewrites a record read at `version` to match `record`, moving the
    /// version on. The `UPDATE` is conditional on the version read, so a change
    /// made since (by anyone) makes this one fail with `Changed` instead of
    /// being overwritten. Audit entries are append-only: those the change
    /// added (beyond the count read) are appended.
    ///
    /// The decay anchor moves only when the change set salience; otherwise
    /// the record keeps decaying from where it did.
    fn update_record(
        &mut self,
        version: &Version,
        record: &MemoryRecord,
        salience: SalienceChange,
    ) -> Result<(), StoreError> {
        let key = version.key;
        let set_at = match salience {
            SalienceChange::Unchanged => None,
            SalienceChange::SetAt(at) => Some(at),
        };
        let indexed = Indexed::of(record);
        let before = Counted::stored(self, key)?;
        let stored = super::search::stored_record(self, key)?;
        let updated = self
            .prepare_cached(
                "UPDATE records SET layer = ?3, sensitivity = ?4, confidence = ?5,
                     salience = COALESCE(?6, salience), decays_from = COALESCE(?12, decays_from),
                     scope = ?7, status = ?8, created_by = ?9, created_at = ?10, updated_at = ?11,
                     about = ?13, search_length = ?14, search_repeats = ?15, search_terms = ?16,
                     version = version + 1
                 WHERE key = ?1 AND version = ?2",
            )?
            .execute(params![
                key,
                version.number,
                record.memory_type.layer(),
                record.sensitivity.rank(),
                record.confidence,
                // The stored salience and its time change together, or not
                // at all: an untouched salience keeps decaying as it did.
                set_at.map(|_| record.salience),
                record.scope,
                record.status.as_str(),
                record.provenance.created_by,
                to_micros(&record.created_at),
                to_micros(&record.updated_at),
                set_at.map(|at| decays_from(record, at)),
                record.payload.about(),
                indexed.analysed.length,
                indexed.analysed.repeats,
                indexed.analysed.distinct,
            ])?;
        if updated == 0 {
            return Err(if record_key(self, &record.id)?.is_some() {
                StoreError::Changed(record.id.clone())
            } else {
                StoreError::NotFound(record.id.clone())
            });
        }
        let anchor = set_at.map(|at| Anchor {
            salience: record.salience,
            at,
        });
        write_lifecycle(self, key, record, Write::Update(anchor))?;
        self.prepare_cached("UPDATE payloads SET payload_json = ?2 WHERE record_key = ?1")?
            .execute(params![key, payload_json(&record.payload)?])?;
        super::search::reindex(key, &indexed, stored);
        if let Some(before) = before {
            super::search::recount(&before, &Counted::of(record, &indexed.analysed));
        }
        super::vectors::after_update(self, key, record, indexed.hash)?;
        for table in [
            "DELETE FROM tags WHERE record_key = ?1",
            "DELETE FROM provenance_sources WHERE record_key = ?1",
            "DELETE FROM relations WHERE source_key = ?1",
            "DELETE FROM record_citations WHERE record_key = ?1",
            "DELETE FROM competence_stats WHERE record_key = ?1",
            "DELETE FROM conversation_turns WHERE record_key = ?1",
        ] {
            self.prepare_cached(table)?.execute([key])?;
        }
        insert_children(self, key, record)?;
        append_audit(
            self,
            key,
            record
                .audit_log
                .get(version.audit_len..)
                .unwrap_or_default(),
        )?;
        Ok(())
    }

    fn query_records(
        &mut self,
        query: &RecordQuery,
        now: Timestamp,
    ) -> Result<RecordPage, StoreError> {
        super::ranking::query_records(self, query, now)
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
        let keys = crate::store::records::walk_chain(
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
        Ok(Some(load_records(self, &keys, now)?))
    }

    /// Cheap liveness query for readiness checks.
    fn ping(&mut self) -> Result<(), StoreError> {
        self.prepare_cached("SELECT COUNT(*) FROM schema_migrations")?
            .query_row([], |row| row.get::<_, i64>(0))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{conn, now, record};
    use super::*;
    use crate::domain::record::AuditAction;
    use serde_json::json;

    #[test]
    fn a_record_round_trips_with_all_its_parts() {
        let mut conn = conn();
        let original = record(
            "r1",
            json!({
                "type": "competence", "sensitivity": "high", "scope": "p", "tags": ["z", "a"],
                "provenance": {"sources": [{"kind": "artifact", "ref": "doc", "hash": "h", "timestamp": "2025-01-01T00:00:00Z"}], "created_by": "me"},
                "relations": [{"predicate": "supports", "target_id": "other", "weight": 0.5}],
                "lifecycle": {"decay": {"curve": "linear", "max_age_seconds": 60}, "pinned": true, "deletion_policy": "never"},
                "payload": {"kind": "competence", "skill_name": "s", "performance": {"success_count": 3, "failure_count": 1}}
            }),
        );
        conn.insert_record(&original).unwrap();
        let loaded = conn.get_record("r1", now()).unwrap().unwrap();
        assert_eq!(loaded, original);
        assert!(matches!(
            conn.insert_record(&original),
            Err(StoreError::AlreadyExists(_))
        ));
        assert!(conn.get_record("missing", now()).unwrap().is_none());
    }

    #[test]
    fn an_update_appends_only_new_audit_entries() {
        let mut conn = conn();
        let r = record(
            "r1",
            json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}}),
        );
        conn.insert_record(&r).unwrap();
        let Loaded {
            record: mut r,
            version,
        } = conn.get_for_update("r1", now()).unwrap().unwrap();
        assert_eq!((version.number, version.audit_len), (0, 1));
        r.salience = 0.5;
        r.tags = vec!["new".into()];
        r.audit_log.push(AuditEntry {
            action: AuditAction::Revise,
            actor: "x".into(),
            timestamp: r.updated_at,
            rationale: "why".into(),
            imported: false,
        });
        conn.update_record(&version, &r, SalienceChange::SetAt(now()))
            .unwrap();
        assert_eq!(conn.get_record("r1", now()).unwrap().unwrap(), r);
        assert_eq!(
            conn.get_for_update("r1", now())
                .unwrap()
                .unwrap()
                .version
                .number,
            1
        );
    }

    #[test]
    fn an_update_against_a_version_that_moved_on_is_refused() {
        let mut conn = conn();
        let r = record(
            "r1",
            json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}}),
        );
        conn.insert_record(&r).unwrap();
        let first = conn.get_for_update("r1", now()).unwrap().unwrap();
        let second = conn.get_for_update("r1", now()).unwrap().unwrap();
        conn.update_record(&first.version, &first.record, SalienceChange::Unchanged)
            .unwrap();
        let err = conn
            .update_record(&second.version, &second.record, SalienceChange::Unchanged)
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Changed(ref id) if id == "r1"),
            "{err}"
        );
        conn.execute("DELETE FROM records", []).unwrap();
        let err = conn
            .update_record(&first.version, &first.record, SalienceChange::Unchanged)
            .unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    }

    #[test]
    fn a_supersession_cycle_is_walked_once() {
        let mut conn = conn();
        // c supersedes b supersedes a supersedes c: only storage written by
        // hand can hold this, but the walk must end on it.
        for (id, older) in [("a", "c"), ("b", "a"), ("c", "b")] {
            let r = record(
                id,
                json!({"type": "semantic", "sensitivity": "low",
                "payload": {"kind": "semantic", "subject": id, "predicate": "is"}}),
            );
            conn.insert_record(&r).unwrap();
            conn.execute(
                "INSERT INTO relations (source_key, predicate, target_id, weight, created_at)
                 SELECT key, 'supersedes', ?2, 1.0, 0 FROM records WHERE id = ?1",
                params![id, older],
            )
            .unwrap();
        }
        for start in ["a", "b", "c"] {
            let chain = conn.supersession_chain(start, now()).unwrap().unwrap();
            let mut ids: Vec<String> = chain.into_iter().map(|r| r.id).collect();
            assert_eq!(ids.len(), 3, "from {start}: {ids:?}");
            ids.sort();
            assert_eq!(ids, ["a", "b", "c"]);
        }
    }
}
