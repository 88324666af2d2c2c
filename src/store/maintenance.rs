//! SQL for scheduled maintenance: the decay sweep (scan in key order,
//! write back in chunks), pruning, and the job settings and run history
//! operators see.

use rusqlite::{params, Connection, OptionalExtension};

use super::StoreError;
use crate::domain::decay::Anchor;
use crate::domain::record::{AuditAction, DecayCurve, DecayProfile, DeletionPolicy, Status};
use crate::domain::time::{from_micros, to_micros, Timestamp};

/// Actor named in audit entries the scheduler writes.
pub const SCHEDULER_ACTOR: &str = "engram:scheduler";

/// What the decay sweep needs of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayRow {
    pub key: i64,
    pub stored_salience: f64,
    pub status: Status,
    pub created_at: Timestamp,
    pub profile: DecayProfile,
    pub pinned: bool,
    pub deletion_policy: DeletionPolicy,
    pub anchor: Anchor,
}

/// Up to `limit` records after `after_key`, in key order.
pub fn scan_for_decay(
    conn: &Connection,
    after_key: i64,
    limit: usize,
) -> Result<Vec<DecayRow>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT r.key, r.salience, r.status, r.created_at,
                d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds, d.reinforcement_gain,
                d.pinned, d.deletion_policy,
                COALESCE(d.anchor_salience, r.salience), COALESCE(d.anchor_at, d.last_reinforced_at)
         FROM records r JOIN decay_profiles d ON d.record_key = r.key
         WHERE r.key > ?1 ORDER BY r.key LIMIT ?2",
    )?;
    let mut rows = stmt.query(params![after_key, limit as i64])?;
    let mut found = Vec::with_capacity(limit);
    while let Some(row) = rows.next()? {
        let text = |i: usize| -> Result<String, StoreError> { Ok(row.get::<_, String>(i)?) };
        let corrupt =
            |what: &str, value: String| StoreError::Corrupt(format!("unexpected {what} {value:?}"));
        found.push(DecayRow {
            key: row.get(0)?,
            stored_salience: row.get(1)?,
            status: Status::parse(&text(2)?)
                .ok_or_else(|| corrupt("status", text(2).unwrap_or_default()))?,
            created_at: from_micros(row.get(3)?),
            profile: DecayProfile {
                curve: DecayCurve::parse(&text(4)?)
                    .ok_or_else(|| corrupt("curve", text(4).unwrap_or_default()))?,
                half_life_seconds: row.get(5)?,
                min_salience: row.get(6)?,
                max_age_seconds: row.get(7)?,
                reinforcement_gain: row.get(8)?,
            },
            pinned: row.get(9)?,
            deletion_policy: DeletionPolicy::parse(&text(10)?)
                .ok_or_else(|| corrupt("deletion policy", text(10).unwrap_or_default()))?,
            anchor: Anchor {
                salience: row.get(11)?,
                at: from_micros(row.get(12)?),
            },
        });
    }
    Ok(found)
}

/// A stored salience to move to its decayed value. `anchor_at` guards
/// against a change made since the scan: if the record was reinforced or
/// penalised meanwhile, its anchor moved and the change is skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayChange {
    pub key: i64,
    pub anchor_at: Timestamp,
    pub salience: f64,
}

/// Writes decayed saliences, each with one `decay` audit entry. A record
/// whose latest audit entry is already the scheduler's `decay` entry gets
/// that entry updated instead of a new one, so however many sweeps run, a
/// record carries one decay entry per stretch of undisturbed decay.
/// Answers how many records changed.
pub fn apply_decay(
    conn: &Connection,
    changes: &[DecayChange],
    now: Timestamp,
) -> Result<usize, StoreError> {
    let mut update = conn.prepare_cached(
        "UPDATE records SET salience = ?2
         WHERE key = ?1
           AND (SELECT COALESCE(anchor_at, last_reinforced_at) FROM decay_profiles WHERE record_key = ?1) = ?3",
    )?;
    let mut last_entry = conn.prepare_cached(
        "SELECT id, action, actor FROM audit_log WHERE record_key = ?1 ORDER BY id DESC LIMIT 1",
    )?;
    let mut fold =
        conn.prepare_cached("UPDATE audit_log SET timestamp = ?2, rationale = ?3 WHERE id = ?1")?;
    let mut append = conn.prepare_cached(
        "INSERT INTO audit_log (record_key, action, actor, timestamp, rationale) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut changed = 0;
    for change in changes {
        if update.execute(params![
            change.key,
            change.salience,
            to_micros(&change.anchor_at)
        ])? == 0
        {
            continue;
        }
        changed += 1;
        let rationale = format!("scheduled decay: salience now {:.4}", change.salience);
        let last: Option<(i64, String, String)> = last_entry
            .query_row([change.key], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .optional()?;
        match last {
            Some((id, action, actor))
                if action == AuditAction::Decay.as_str() && actor == SCHEDULER_ACTOR =>
            {
                fold.execute(params![id, to_micros(&now), rationale])?;
            }
            _ => {
                append.execute(params![
                    change.key,
                    AuditAction::Decay.as_str(),
                    SCHEDULER_ACTOR,
                    to_micros(&now),
                    rationale
                ])?;
            }
        }
    }
    Ok(changed)
}

/// Deletes, with all their parts, the records among `candidates` that are
/// still as scanned (same anchor) and are not part of a revision chain.
/// Answers how many were deleted.
pub fn prune(conn: &Connection, candidates: &[DecayChange]) -> Result<usize, StoreError> {
    let mut delete = conn.prepare_cached(
        "DELETE FROM records
         WHERE key = ?1
           AND (SELECT COALESCE(anchor_at, last_reinforced_at) FROM decay_profiles WHERE record_key = ?1) = ?2
           AND NOT EXISTS (SELECT 1 FROM relations
                           WHERE source_key = ?1 AND predicate IN ('supersedes', 'derived_from', 'contested_by'))
           AND NOT EXISTS (SELECT 1 FROM relations
                           WHERE target_id = records.id AND predicate IN ('supersedes', 'derived_from', 'contested_by'))",
    )?;
    let mut deleted = 0;
    for candidate in candidates {
        deleted += delete.execute(params![candidate.key, to_micros(&candidate.anchor_at)])?;
    }
    Ok(deleted)
}

/// A schedule an operator set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSetting {
    pub name: String,
    pub schedule: String,
    pub enabled: bool,
}

pub fn job_settings(conn: &Connection) -> Result<Vec<JobSetting>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT name, schedule, enabled FROM job_settings ORDER BY name")?;
    let rows = stmt.query_map([], |row| {
        Ok(JobSetting {
            name: row.get(0)?,
            schedule: row.get(1)?,
            enabled: row.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn save_job_setting(
    conn: &Connection,
    setting: &JobSetting,
    now: Timestamp,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO job_settings (name, schedule, enabled, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name) DO UPDATE SET schedule = excluded.schedule, enabled = excluded.enabled,
                                          updated_at = excluded.updated_at",
    )?
    .execute(params![
        setting.name,
        setting.schedule,
        setting.enabled,
        to_micros(&now)
    ])?;
    Ok(())
}

/// The outcome of one job run.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRunRecord {
    pub name: String,
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
    pub duration_ms: i64,
    /// The result JSON, or the error message.
    pub outcome: Result<serde_json::Value, String>,
}

pub fn last_job_runs(conn: &Connection) -> Result<Vec<JobRunRecord>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT name, started_at, finished_at, duration_ms, result_json, error FROM job_runs ORDER BY name",
    )?;
    let mut rows = stmt.query([])?;
    let mut runs = Vec::new();
    while let Some(row) = rows.next()? {
        let result: Option<String> = row.get(4)?;
        let error: Option<String> = row.get(5)?;
        let outcome = match (result, error) {
            (_, Some(error)) => Err(error),
            (Some(json), None) => Ok(serde_json::from_str::<serde_json::Value>(&json)
                .map_err(|e| StoreError::Corrupt(format!("job result: {e}")))?),
            (None, None) => Ok(serde_json::Value::Null),
        };
        runs.push(JobRunRecord {
            name: row.get(0)?,
            started_at: from_micros(row.get(1)?),
            finished_at: from_micros(row.get(2)?),
            duration_ms: row.get(3)?,
            outcome,
        });
    }
    Ok(runs)
}

pub fn save_job_run(conn: &Connection, run: &JobRunRecord) -> Result<(), StoreError> {
    let (result, error) = match &run.outcome {
        Ok(value) => (Some(value.to_string()), None),
        Err(error) => (None, Some(error.clone())),
    };
    conn.prepare_cached(
        "INSERT OR REPLACE INTO job_runs (name, started_at, finished_at, duration_ms, result_json, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        run.name,
        to_micros(&run.started_at),
        to_micros(&run.finished_at),
        run.duration_ms,
        result,
        error
    ])?;
    Ok(())
}
