//! Records read on PostgreSQL: one by id, many by key (with every part,
//! the loading all readers share), a supersession chain, what loading
//! some costs. The same statements as `store/sqlite/record_reads.rs`, in
//! PostgreSQL's dialect.

use std::collections::HashMap;

use tokio_postgres::Row;

use super::connection::{Params, Pg};
use crate::domain::record::{MemoryRecord, Sensitivity};
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;
use crate::store::records::{
    read_audit, read_record, read_relation, read_source, walk_chain, Loaded, RecordReads, Version,
    Visibility,
};

impl RecordReads for Pg {
    fn get_record(&mut self, id: &str, now: Timestamp) -> Result<Option<MemoryRecord>, StoreError> {
        match record_key(self, id)? {
            Some(key) => Ok(load_whole(self, &[key], now)?.pop()),
            None => Ok(None),
        }
    }

    fn get_for_update(&mut self, id: &str, now: Timestamp) -> Result<Option<Loaded>, StoreError> {
        let Some(row) = self.query_opt("SELECT key, version FROM records WHERE id = $1", &[&id])?
        else {
            return Ok(None);
        };
        let (key, number): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        Ok(load_whole(self, &[key], now)?.pop().map(|record| Loaded {
            version: Version {
                key,
                number,
                audit_len: record.audit_log.len(),
            },
            record,
        }))
    }

    fn payload_bytes(&mut self, ids: &[String]) -> Result<u64, StoreError> {
        let total: i64 = self
            .query_one(
                "SELECT COALESCE(SUM(octet_length(p.payload_json)), 0)::bigint
                 FROM records r JOIN payloads p ON p.record_key = r.key
                 WHERE r.id = ANY($1)",
                &[&ids],
            )?
            .try_get(0)?;
        Ok(total.max(0) as u64)
    }

    fn load_records(
        &mut self,
        keys: &[i64],
        now: Timestamp,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        load_whole(self, keys, now)
    }

    fn record_visibility(&mut self, id: &str) -> Result<Option<Visibility>, StoreError> {
        self.query_opt(
            "SELECT sensitivity, scope FROM records WHERE id = $1",
            &[&id],
        )?
        .map(|row| {
            Ok(Visibility {
                sensitivity: sensitivity_of(row.try_get(0)?)?,
                scope: row.try_get(1)?,
            })
        })
        .transpose()
    }

    /// The supersession chain through record `id`, oldest first.
    fn supersession_chain(
        &mut self,
        id: &str,
        now: Timestamp,
    ) -> Result<Option<Vec<MemoryRecord>>, StoreError> {
        let Some(key) = record_key(self, id)? else {
            return Ok(None);
        };
        let older = "SELECT r.key, r.id FROM relations rel JOIN records r ON r.id = rel.target_id
                     WHERE rel.source_key = $1 AND rel.predicate = 'supersedes' ORDER BY rel.id LIMIT 1";
        let newer = "SELECT r.key, r.id FROM relations rel JOIN records r ON r.key = rel.source_key
                     WHERE rel.target_id = $1 AND rel.predicate = 'supersedes' ORDER BY rel.id LIMIT 1";
        let pair = |row: Option<Row>| -> Result<Option<(i64, String)>, StoreError> {
            row.map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .transpose()
        };
        let keys = walk_chain(
            key,
            id,
            |key| pair(self.query_opt(older, &[&key])?),
            |id| pair(self.query_opt(newer, &[&id])?),
        )?;
        Ok(Some(load_whole(self, &keys, now)?))
    }

    fn ping(&mut self) -> Result<(), StoreError> {
        self.query_one("SELECT COUNT(*) FROM schema_migrations", &[])?;
        Ok(())
    }
}

pub fn record_key(pg: &Pg, id: &str) -> Result<Option<i64>, StoreError> {
    pg.query_opt("SELECT key FROM records WHERE id = $1", &[&id])?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(StoreError::from)
}

pub(crate) fn sensitivity_of(rank: i64) -> Result<Sensitivity, StoreError> {
    Sensitivity::from_rank(rank)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown sensitivity rank {rank}")))
}

/// The records with these keys, in the order given, with all their parts
/// and their salience decayed to `now`.
pub fn load_whole(pg: &Pg, keys: &[i64], now: Timestamp) -> Result<Vec<MemoryRecord>, StoreError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let params: Params = &[&keys];
    // The record rows and their parts, in one round trip.
    let answers = pg.query_all(&[
        (
            "SELECT r.key, r.id, r.layer, r.sensitivity, r.confidence, d.salience, r.scope,
                r.status, r.created_by, r.created_at, r.updated_at,
                d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds,
                d.reinforcement_gain, d.last_reinforced_at, d.pinned, d.deletion_policy,
                p.payload_json, d.anchor_salience, d.anchor_at
         FROM records r
         JOIN decay_profiles d ON d.record_key = r.key
         JOIN payloads p ON p.record_key = r.key
         WHERE r.key = ANY($1)",
            params,
        ),
        (
            "SELECT record_key, tag FROM tags WHERE record_key = ANY($1)
             ORDER BY record_key, position",
            params,
        ),
        (
            "SELECT record_key, kind, ref, hash, created_by, timestamp
             FROM provenance_sources WHERE record_key = ANY($1) ORDER BY id",
            params,
        ),
        (
            "SELECT source_key, predicate, target_id, weight, created_at
             FROM relations WHERE source_key = ANY($1) ORDER BY id",
            params,
        ),
        (
            "SELECT record_key, action, actor, timestamp, rationale, imported
             FROM audit_log WHERE record_key = ANY($1) ORDER BY id",
            params,
        ),
    ])?;
    let [rows, tags, sources, relations, audit] = &answers[..] else {
        unreachable!("five statements, five answers")
    };
    let mut records: HashMap<i64, MemoryRecord> = HashMap::with_capacity(keys.len());
    for row in rows {
        let (key, record) = read_record(row, now)?;
        records.insert(key, record);
    }
    for row in tags {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.tags.push(row.try_get(1)?);
        }
    }
    for row in sources {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.provenance.sources.push(read_source(row)?);
        }
    }
    for row in relations {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.relations.push(read_relation(row)?);
        }
    }
    for row in audit {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.audit_log.push(read_audit(row)?);
        }
    }
    Ok(keys.iter().filter_map(|key| records.remove(key)).collect())
}
