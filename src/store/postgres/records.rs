//! Records on PostgreSQL: insert, update, read one, read many. The same
//! statements as `store::sqlite::records`, in PostgreSQL's dialect; the
//! search text is stemmed into the record's `search` column by the
//! statement that writes the record.

use std::collections::HashMap;

use tokio_postgres::Row;

use super::Pg;
use crate::domain::decay::{salience_at, Anchor, DecayState};
use crate::domain::payload::Payload;
use crate::domain::record::{
    AuditAction, AuditEntry, DecayCurve, DecayProfile, DeletionPolicy, Lifecycle, MemoryRecord,
    MemoryType, Provenance, ProvenanceKind, ProvenanceSource, Relation, Sensitivity, Status,
};
use crate::domain::search::{search_text, text_hash};
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::store::{CurrentState, Loaded, SalienceChange, StoreError, Version};

/// The moment from which a record's stored salience, set at `at`, decays.
fn decays_from(record: &MemoryRecord, at: Timestamp) -> i64 {
    if record.lifecycle.pinned {
        i64::MAX
    } else {
        to_micros(&at)
    }
}

/// A search text PostgreSQL can take: its text values hold no NUL
/// character, which JSON strings may.
pub(super) fn searchable(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', " "))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

fn layer(record: &MemoryRecord) -> i64 {
    record.memory_type.layer() as i64
}

fn rank(sensitivity: Sensitivity) -> i64 {
    sensitivity.rank() as i64
}

/// Stores a new record with all its parts; answers its key.
/// `AlreadyExists` when the id is taken.
pub fn insert_record(pg: &Pg, record: &MemoryRecord) -> Result<i64, StoreError> {
    let text = search_text(record);
    // Another instance inserting the same id at once is waited for: then
    // nothing is inserted here, and no error aborts the transaction.
    let row = pg.query_opt(
        "INSERT INTO records (id, layer, sensitivity, confidence, salience, scope, status,
                              created_by, created_at, updated_at, decays_from, about, search)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, to_tsvector('english', $13))
         ON CONFLICT (id) DO NOTHING
         RETURNING key",
        &[
            &record.id,
            &layer(record),
            &rank(record.sensitivity),
            &record.confidence,
            &record.salience,
            &record.scope,
            &record.status.as_str(),
            &record.provenance.created_by,
            &to_micros(&record.created_at),
            &to_micros(&record.updated_at),
            &decays_from(record, record.lifecycle.last_reinforced_at),
            &record.payload.about(),
            &searchable(&text),
        ],
    )?;
    let Some(row) = row else {
        return Err(StoreError::AlreadyExists(record.id.clone()));
    };
    let key: i64 = row.try_get(0)?;
    let anchor = Anchor {
        salience: record.salience,
        at: record.lifecycle.last_reinforced_at,
    };
    write_lifecycle(pg, key, record, Write::New(anchor))?;
    pg.execute(
        "INSERT INTO payloads (record_key, payload_json) VALUES ($1, $2)",
        &[&key, &payload_json(&record.payload)?],
    )?;
    insert_children(pg, key, record)?;
    append_audit(pg, key, &record.audit_log)?;
    if let Some(embedding) = &record.embedding {
        super::vectors::put(pg, key, embedding, None)?;
    }
    Ok(key)
}

/// The working states of `thread_id` in `scope` that are not retracted,
/// oldest first.
pub fn current_states(
    pg: &Pg,
    thread_id: &str,
    scope: Option<&str>,
) -> Result<Vec<CurrentState>, StoreError> {
    pg.query(
        "SELECT key, id, version, sensitivity FROM records
         WHERE about = $1 AND layer = $2 AND scope IS NOT DISTINCT FROM $3
           AND status <> 'retracted'
         ORDER BY key",
        &[&thread_id, &(MemoryType::Working.layer() as i64), &scope],
    )?
    .iter()
    .map(|row| {
        Ok(CurrentState {
            key: row.try_get(0)?,
            id: row.try_get(1)?,
            version: row.try_get(2)?,
            sensitivity: sensitivity_of(row.try_get(3)?)?,
        })
    })
    .collect()
}

/// Retracts a working state a newer one replaces; `Changed` when it
/// changed since it was read.
pub fn retract_replaced(
    pg: &Pg,
    state: &CurrentState,
    entry: &AuditEntry,
    now: Timestamp,
) -> Result<(), StoreError> {
    let at = to_micros(&now);
    let updated = pg.execute(
        "UPDATE records SET salience = 0, status = 'retracted', updated_at = $3,
             decays_from = CASE WHEN (SELECT pinned FROM decay_profiles WHERE record_key = $1)
                                THEN 9223372036854775807 ELSE $3 END,
             version = version + 1
         WHERE key = $1 AND version = $2",
        &[&state.key, &state.version, &at],
    )?;
    if updated == 0 {
        return Err(StoreError::Changed(state.id.clone()));
    }
    pg.execute(
        "UPDATE decay_profiles SET anchor_salience = 0, anchor_at = $2 WHERE record_key = $1",
        &[&state.key, &at],
    )?;
    super::vectors::retracted(pg, state.key)?;
    append_audit(pg, state.key, std::slice::from_ref(entry))
}

/// Rewrites a record read at `version`; `Changed` when anyone changed it
/// since (the `UPDATE` is conditional on the version, and under read
/// committed a concurrent writer's update is waited for and then seen),
/// `NotFound` when it is gone.
pub fn update_record(
    pg: &Pg,
    version: &Version,
    record: &MemoryRecord,
    salience: SalienceChange,
) -> Result<(), StoreError> {
    let key = version.key;
    let set_at = match salience {
        SalienceChange::Unchanged => None,
        SalienceChange::SetAt(at) => Some(at),
    };
    let text = search_text(record);
    let updated = pg.execute(
        "UPDATE records SET layer = $3, sensitivity = $4, confidence = $5,
             salience = COALESCE($6, salience), decays_from = COALESCE($12, decays_from),
             scope = $7, status = $8, created_by = $9, created_at = $10, updated_at = $11,
             about = $13, search = to_tsvector('english', $14), version = version + 1
         WHERE key = $1 AND version = $2",
        &[
            &key,
            &version.number,
            &layer(record),
            &rank(record.sensitivity),
            &record.confidence,
            &set_at.map(|_| record.salience),
            &record.scope,
            &record.status.as_str(),
            &record.provenance.created_by,
            &to_micros(&record.created_at),
            &to_micros(&record.updated_at),
            &set_at.map(|at| decays_from(record, at)),
            &record.payload.about(),
            &searchable(&text),
        ],
    )?;
    if updated == 0 {
        return Err(if record_key(pg, &record.id)?.is_some() {
            StoreError::Changed(record.id.clone())
        } else {
            StoreError::NotFound(record.id.clone())
        });
    }
    let anchor = set_at.map(|at| Anchor {
        salience: record.salience,
        at,
    });
    write_lifecycle(pg, key, record, Write::Update(anchor))?;
    pg.execute(
        "UPDATE payloads SET payload_json = $2 WHERE record_key = $1",
        &[&key, &payload_json(&record.payload)?],
    )?;
    super::vectors::after_update(pg, key, record, text_hash(&text))?;
    for table in [
        "DELETE FROM tags WHERE record_key = $1",
        "DELETE FROM provenance_sources WHERE record_key = $1",
        "DELETE FROM relations WHERE source_key = $1",
        "DELETE FROM competence_stats WHERE record_key = $1",
    ] {
        pg.execute(table, &[&key])?;
    }
    insert_children(pg, key, record)?;
    append_audit(
        pg,
        key,
        record
            .audit_log
            .get(version.audit_len..)
            .unwrap_or_default(),
    )
}

enum Write {
    New(Anchor),
    /// `None` keeps the stored anchor.
    Update(Option<Anchor>),
}

/// The decay profile, and the bounds of its memory type.
fn write_lifecycle(
    pg: &Pg,
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
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            Some(anchor),
        ),
        Write::Update(anchor) => (
            "UPDATE decay_profiles SET curve = $2, half_life_seconds = $3, min_salience = $4,
                 max_age_seconds = $5, reinforcement_gain = $6, last_reinforced_at = $7,
                 pinned = $8, deletion_policy = $9,
                 anchor_salience = COALESCE($10, anchor_salience),
                 anchor_at = COALESCE($11, anchor_at)
             WHERE record_key = $1",
            anchor,
        ),
    };
    pg.execute(
        sql,
        &[
            &key,
            &lifecycle.decay.curve.as_str(),
            &lifecycle.decay.half_life_seconds,
            &lifecycle.decay.min_salience,
            &lifecycle.decay.max_age_seconds,
            &lifecycle.decay.reinforcement_gain,
            &to_micros(&lifecycle.last_reinforced_at),
            &lifecycle.pinned,
            &lifecycle.deletion_policy.as_str(),
            &anchor.map(|a| a.salience),
            &anchor.map(|a| to_micros(&a.at)),
        ],
    )?;
    // Read first: the upsert would lock the type's row for every writer,
    // and the bounds only ever grow, rarely.
    let current = pg.query_opt(
        "SELECT max_half_life_seconds, max_min_salience FROM decay_bounds WHERE layer = $1",
        &[&layer(record)],
    )?;
    let covered = match &current {
        Some(row) => {
            row.try_get::<_, i64>(0)? >= lifecycle.decay.half_life_seconds
                && row.try_get::<_, f64>(1)? >= lifecycle.decay.min_salience
        }
        None => false,
    };
    if !covered {
        pg.execute(
            "INSERT INTO decay_bounds (layer, max_half_life_seconds, max_min_salience)
             VALUES ($1, $2, $3)
             ON CONFLICT (layer) DO UPDATE SET
                 max_half_life_seconds = GREATEST(decay_bounds.max_half_life_seconds,
                                                  excluded.max_half_life_seconds),
                 max_min_salience = GREATEST(decay_bounds.max_min_salience,
                                             excluded.max_min_salience)",
            &[
                &layer(record),
                &lifecycle.decay.half_life_seconds,
                &lifecycle.decay.min_salience,
            ],
        )?;
    }
    Ok(())
}

/// Tags, provenance, outgoing relations and competence counters, one
/// statement per table (arrays unnested), not one per row.
fn insert_children(pg: &Pg, key: i64, record: &MemoryRecord) -> Result<(), StoreError> {
    if !record.tags.is_empty() {
        let positions: Vec<i64> = (0..record.tags.len() as i64).collect();
        pg.execute(
            "INSERT INTO tags (record_key, tag, position)
             SELECT $1, t, p FROM unnest($2::text[], $3::bigint[]) AS u(t, p)",
            &[&key, &record.tags, &positions],
        )?;
    }
    let sources = &record.provenance.sources;
    if !sources.is_empty() {
        let kinds: Vec<&str> = sources.iter().map(|s| s.kind.as_str()).collect();
        let refs: Vec<&str> = sources.iter().map(|s| s.reference.as_str()).collect();
        let hashes: Vec<Option<&str>> = sources.iter().map(|s| s.hash.as_deref()).collect();
        let by: Vec<Option<&str>> = sources.iter().map(|s| s.created_by.as_deref()).collect();
        let at: Vec<i64> = sources.iter().map(|s| to_micros(&s.timestamp)).collect();
        pg.execute(
            "INSERT INTO provenance_sources (record_key, kind, ref, hash, created_by, timestamp)
             SELECT $1, k, r, h, c, t
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])
                  WITH ORDINALITY AS u(k, r, h, c, t, n)
             ORDER BY n",
            &[&key, &kinds, &refs, &hashes, &by, &at],
        )?;
    }
    if !record.relations.is_empty() {
        let predicates: Vec<&str> = record
            .relations
            .iter()
            .map(|r| r.predicate.as_str())
            .collect();
        let targets: Vec<&str> = record
            .relations
            .iter()
            .map(|r| r.target_id.as_str())
            .collect();
        let weights: Vec<f64> = record.relations.iter().map(|r| r.weight).collect();
        let at: Vec<i64> = record
            .relations
            .iter()
            .map(|r| to_micros(&r.created_at))
            .collect();
        pg.execute(
            "INSERT INTO relations (source_key, predicate, target_id, weight, created_at)
             SELECT $1, p, t, w, c
             FROM unnest($2::text[], $3::text[], $4::float8[], $5::bigint[])
                  WITH ORDINALITY AS u(p, t, w, c, n)
             ORDER BY n",
            &[&key, &predicates, &targets, &weights, &at],
        )?;
    }
    if let Payload::Competence(competence) = &record.payload {
        if let Some(performance) = &competence.performance {
            pg.execute(
                "INSERT INTO competence_stats (record_key, success_count, failure_count)
                 VALUES ($1, $2, $3)",
                &[
                    &key,
                    &(performance.success_count as i64),
                    &(performance.failure_count as i64),
                ],
            )?;
        }
    }
    Ok(())
}

/// Appends audit entries in the order given.
pub(super) fn append_audit(pg: &Pg, key: i64, entries: &[AuditEntry]) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    let actors: Vec<&str> = entries.iter().map(|e| e.actor.as_str()).collect();
    let at: Vec<i64> = entries.iter().map(|e| to_micros(&e.timestamp)).collect();
    let rationales: Vec<&str> = entries.iter().map(|e| e.rationale.as_str()).collect();
    let imported: Vec<bool> = entries.iter().map(|e| e.imported).collect();
    pg.execute(
        "INSERT INTO audit_log (record_key, action, actor, timestamp, rationale, imported)
         SELECT $1, a, b, t, r, i
         FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::bool[])
              WITH ORDINALITY AS u(a, b, t, r, i, n)
         ORDER BY n",
        &[&key, &actions, &actors, &at, &rationales, &imported],
    )?;
    Ok(())
}

fn payload_json(payload: &Payload) -> Result<String, StoreError> {
    serde_json::to_string(payload)
        .map_err(|e| StoreError::Corrupt(format!("payload does not serialise: {e}")))
}

pub fn record_key(pg: &Pg, id: &str) -> Result<Option<i64>, StoreError> {
    pg.query_opt("SELECT key FROM records WHERE id = $1", &[&id])?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(StoreError::from)
}

pub fn record_visibility(
    pg: &Pg,
    id: &str,
) -> Result<Option<(Sensitivity, Option<String>)>, StoreError> {
    pg.query_opt(
        "SELECT sensitivity, scope FROM records WHERE id = $1",
        &[&id],
    )?
    .map(|row| Ok((sensitivity_of(row.try_get(0)?)?, row.try_get(1)?)))
    .transpose()
}

pub(crate) fn sensitivity_of(rank: i64) -> Result<Sensitivity, StoreError> {
    Sensitivity::from_rank(rank)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown sensitivity rank {rank}")))
}

pub fn get_for_update(pg: &Pg, id: &str, now: Timestamp) -> Result<Option<Loaded>, StoreError> {
    let Some(row) = pg.query_opt("SELECT key, version FROM records WHERE id = $1", &[&id])? else {
        return Ok(None);
    };
    let (key, number): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    Ok(load_records(pg, &[key], now)?.pop().map(|record| Loaded {
        version: Version {
            key,
            number,
            audit_len: record.audit_log.len(),
        },
        record,
    }))
}

pub fn get_record(pg: &Pg, id: &str, now: Timestamp) -> Result<Option<MemoryRecord>, StoreError> {
    match record_key(pg, id)? {
        Some(key) => Ok(load_records(pg, &[key], now)?.pop()),
        None => Ok(None),
    }
}

pub fn payload_bytes(pg: &Pg, ids: &[String]) -> Result<u64, StoreError> {
    let total: i64 = pg
        .query_one(
            "SELECT COALESCE(SUM(octet_length(p.payload_json)), 0)::bigint
             FROM records r JOIN payloads p ON p.record_key = r.key
             WHERE r.id = ANY($1)",
            &[&ids],
        )?
        .try_get(0)?;
    Ok(total.max(0) as u64)
}

/// The serialised size of the payloads of these records.
pub(super) fn payload_sizes(pg: &Pg, keys: &[i64]) -> Result<HashMap<i64, usize>, StoreError> {
    let mut sizes = HashMap::with_capacity(keys.len());
    for row in pg.query(
        "SELECT record_key, octet_length(payload_json)::bigint FROM payloads
         WHERE record_key = ANY($1)",
        &[&keys],
    )? {
        sizes.insert(row.try_get(0)?, row.try_get::<_, i64>(1)?.max(0) as usize);
    }
    Ok(sizes)
}

/// The records with these keys, in the order given, with all their parts
/// and their salience decayed to `now`.
pub fn load_records(
    pg: &Pg,
    keys: &[i64],
    now: Timestamp,
) -> Result<Vec<MemoryRecord>, StoreError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut records: HashMap<i64, MemoryRecord> = HashMap::with_capacity(keys.len());
    for row in pg.query(
        "SELECT r.key, r.id, r.layer, r.sensitivity, r.confidence, r.salience, r.scope,
                r.status, r.created_by, r.created_at, r.updated_at,
                d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds,
                d.reinforcement_gain, d.last_reinforced_at, d.pinned, d.deletion_policy,
                p.payload_json, d.anchor_salience, d.anchor_at
         FROM records r
         JOIN decay_profiles d ON d.record_key = r.key
         JOIN payloads p ON p.record_key = r.key
         WHERE r.key = ANY($1)",
        &[&keys],
    )? {
        let key: i64 = row.try_get(0)?;
        let mut record = record_from_row(&row)?;
        let anchor = Anchor {
            salience: row.try_get(20)?,
            at: from_micros(row.try_get(21)?),
        };
        record.salience = salience_at(
            &DecayState {
                anchor,
                profile: &record.lifecycle.decay,
                pinned: record.lifecycle.pinned,
                created_at: record.created_at,
            },
            now,
        );
        records.insert(key, record);
    }
    for row in pg.query(
        "SELECT record_key, tag FROM tags WHERE record_key = ANY($1) ORDER BY record_key, position",
        &[&keys],
    )? {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.tags.push(row.try_get(1)?);
        }
    }
    for row in pg.query(
        "SELECT record_key, kind, ref, hash, created_by, timestamp
         FROM provenance_sources WHERE record_key = ANY($1) ORDER BY id",
        &[&keys],
    )? {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.provenance.sources.push(ProvenanceSource {
                kind: parse_enum(&row, 1, ProvenanceKind::parse)?,
                reference: row.try_get(2)?,
                hash: row.try_get(3)?,
                created_by: row.try_get(4)?,
                timestamp: from_micros(row.try_get(5)?),
            });
        }
    }
    for row in pg.query(
        "SELECT source_key, predicate, target_id, weight, created_at
         FROM relations WHERE source_key = ANY($1) ORDER BY id",
        &[&keys],
    )? {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.relations.push(Relation {
                predicate: row.try_get(1)?,
                target_id: row.try_get(2)?,
                weight: row.try_get(3)?,
                created_at: from_micros(row.try_get(4)?),
            });
        }
    }
    for row in pg.query(
        "SELECT record_key, action, actor, timestamp, rationale, imported
         FROM audit_log WHERE record_key = ANY($1) ORDER BY id",
        &[&keys],
    )? {
        if let Some(record) = records.get_mut(&row.try_get(0)?) {
            record.audit_log.push(AuditEntry {
                action: parse_enum(&row, 1, AuditAction::parse)?,
                actor: row.try_get(2)?,
                timestamp: from_micros(row.try_get(3)?),
                rationale: row.try_get(4)?,
                imported: row.try_get(5)?,
            });
        }
    }
    Ok(keys.iter().filter_map(|key| records.remove(key)).collect())
}

fn record_from_row(row: &Row) -> Result<MemoryRecord, StoreError> {
    let id: String = row.try_get(1)?;
    let layer: i64 = row.try_get(2)?;
    let payload_json: String = row.try_get(19)?;
    let payload: Payload = serde_json::from_str(&payload_json)
        .map_err(|e| StoreError::Corrupt(format!("payload of record {id}: {e}")))?;
    Ok(MemoryRecord {
        memory_type: MemoryType::from_layer(layer)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown memory type layer {layer}")))?,
        sensitivity: sensitivity_of(row.try_get(3)?)?,
        confidence: row.try_get(4)?,
        salience: row.try_get(5)?,
        scope: row.try_get(6)?,
        tags: Vec::new(),
        status: parse_enum(row, 7, Status::parse)?,
        created_at: from_micros(row.try_get(9)?),
        updated_at: from_micros(row.try_get(10)?),
        lifecycle: Lifecycle {
            decay: DecayProfile {
                curve: parse_enum(row, 11, DecayCurve::parse)?,
                half_life_seconds: row.try_get(12)?,
                min_salience: row.try_get(13)?,
                max_age_seconds: row.try_get(14)?,
                reinforcement_gain: row.try_get(15)?,
            },
            last_reinforced_at: from_micros(row.try_get(16)?),
            pinned: row.try_get(17)?,
            deletion_policy: parse_enum(row, 18, DeletionPolicy::parse)?,
        },
        provenance: Provenance {
            sources: Vec::new(),
            created_by: row.try_get(8)?,
        },
        relations: Vec::new(),
        payload,
        audit_log: Vec::new(),
        embedding: None,
        id,
    })
}

pub(super) fn parse_enum<T>(
    row: &Row,
    column: usize,
    parse: fn(&str) -> Option<T>,
) -> Result<T, StoreError> {
    let text: String = row.try_get(column)?;
    parse(&text)
        .ok_or_else(|| StoreError::Corrupt(format!("unexpected value {text:?} in column {column}")))
}

/// Longest supersession chain walked (a guard against hand-made cycles).
const MAX_CHAIN: usize = 10_000;

/// The supersession chain through record `id`, oldest first.
pub fn supersession_chain(
    pg: &Pg,
    id: &str,
    now: Timestamp,
) -> Result<Option<Vec<MemoryRecord>>, StoreError> {
    let Some(key) = record_key(pg, id)? else {
        return Ok(None);
    };
    let older = "SELECT r.key, r.id FROM relations rel JOIN records r ON r.id = rel.target_id
                 WHERE rel.source_key = $1 AND rel.predicate = 'supersedes' ORDER BY rel.id LIMIT 1";
    let newer = "SELECT r.key, r.id FROM relations rel JOIN records r ON r.key = rel.source_key
                 WHERE rel.target_id = $1 AND rel.predicate = 'supersedes' ORDER BY rel.id LIMIT 1";
    let mut seen = std::collections::HashSet::from([key]);
    let mut back = Vec::new();
    let mut current = key;
    while let Some(row) = pg.query_opt(older, &[&current])? {
        let previous: i64 = row.try_get(0)?;
        if !seen.insert(previous) || seen.len() > MAX_CHAIN {
            break;
        }
        back.push(previous);
        current = previous;
    }
    let mut forward = Vec::new();
    let mut current_id = id.to_string();
    while let Some(row) = pg.query_opt(newer, &[&current_id])? {
        let next: i64 = row.try_get(0)?;
        if !seen.insert(next) || seen.len() > MAX_CHAIN {
            break;
        }
        forward.push(next);
        current_id = row.try_get(1)?;
    }
    back.reverse();
    back.push(key);
    back.extend(forward);
    Ok(Some(load_records(pg, &back, now)?))
}

pub fn ping(pg: &Pg) -> Result<(), StoreError> {
    pg.query_one("SELECT COUNT(*) FROM schema_migrations", &[])?;
    Ok(())
}
