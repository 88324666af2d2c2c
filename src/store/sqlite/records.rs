//! Records written in SQL: inserted, rewritten against the version they
//! were read at, retracted as a newer working state replaces them (their
//! reads are in `record_reads.rs`).

use rusqlite::{params, Connection, ErrorCode};

use super::counted::Counted;
use super::record_reads::record_key;
use super::search::Indexed;
use crate::domain::decay::Anchor;
use crate::domain::payload::Payload;
use crate::domain::record::{AuditEntry, MemoryRecord, MemoryType, Sensitivity};
use crate::domain::time::{to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::records::{RecordStore, SalienceChange, Version};

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

impl RecordStore for Connection {
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
}
