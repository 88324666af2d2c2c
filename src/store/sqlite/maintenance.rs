//! SQL for scheduled maintenance: the decay sweep (scan in key order,
//! write back in chunks), pruning, and the job settings and run history
//! operators see.

use rusqlite::{params, Connection};

use crate::domain::record::{AuditAction, MemoryType, SCHEDULER_ACTOR};
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::store::consolidation::Step;
use crate::store::error::StoreError;
use crate::store::maintenance::{
    DecayChange, DecayRow, DecayStore, HeldJob, JobClaim, JobRunRecord, JobSetting, JobStore,
};

impl DecayStore for Connection {
    /// Up to `limit` records after `after_key`, in key order.
    fn scan_for_decay(
        &mut self,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<DecayRow>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT r.key, r.version, r.salience, r.status, r.created_at,
                    d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds, d.reinforcement_gain,
                    d.pinned, d.deletion_policy,
                    COALESCE(d.anchor_salience, r.salience), COALESCE(d.anchor_at, d.last_reinforced_at)
             FROM records r JOIN decay_profiles d ON d.record_key = r.key
             WHERE r.key > ?1 ORDER BY r.key LIMIT ?2",
        )?;
        let mut rows = stmt.query(params![after_key, limit as i64])?;
        let mut found = Vec::with_capacity(limit);
        while let Some(row) = rows.next()? {
            found.push(DecayRow::read(row)?);
        }
        Ok(found)
    }

    /// Writes decayed saliences of rows still at the version scanned, each
    /// with one `decay` audit entry. A record whose latest audit entry is
    /// already the scheduler's `decay` entry gets that entry updated instead of
    /// a new one, so however many sweeps run, a record carries one decay entry
    /// per stretch of undisturbed decay. The sweep does not move the version:
    /// the stored salience is a cache of what the anchor gives. Answers how
    /// many records changed.
    fn apply_decay(
        &mut self,
        changes: &[DecayChange],
        now: Timestamp,
    ) -> Result<usize, StoreError> {
        let mut update = self.prepare_cached(
            "UPDATE records SET salience = ?3, decays_from = ?4 WHERE key = ?1 AND version = ?2",
        )?;
        // One statement each, so the check of the last entry and the change
        // to it cannot be split by another writer's append.
        let mut fold = self.prepare_cached(
            "UPDATE audit_log SET timestamp = ?2, rationale = ?3
             WHERE id = (SELECT MAX(id) FROM audit_log WHERE record_key = ?1)
               AND action = ?4 AND actor = ?5",
        )?;
        let mut append = self.prepare_cached(
            "INSERT INTO audit_log (record_key, action, actor, timestamp, rationale) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut changed = 0;
        for change in changes {
            let at = to_micros(&now);
            if update.execute(params![change.key, change.version, change.salience, at])? == 0 {
                continue;
            }
            changed += 1;
            let rationale = format!("scheduled decay: salience now {:.4}", change.salience);
            let folded = fold.execute(params![
                change.key,
                to_micros(&now),
                rationale,
                AuditAction::Decay.as_str(),
                SCHEDULER_ACTOR
            ])?;
            if folded == 0 {
                append.execute(params![
                    change.key,
                    AuditAction::Decay.as_str(),
                    SCHEDULER_ACTOR,
                    to_micros(&now),
                    rationale
                ])?;
            }
        }
        Ok(changed)
    }

    /// Deletes, with all their parts, the candidates still at the version
    /// scanned (an explicit "changed since read" check, whoever changed them),
    /// unless they are retracted, part of a revision chain, or episodes
    /// consolidation has not compressed yet (its last step, so every other
    /// step has read them): decay never takes an episode before consolidation
    /// has learnt from it. Answers how many were deleted.
    fn prune(&mut self, candidates: &[DecayChange]) -> Result<usize, StoreError> {
        let mut delete = self.prepare_cached(
            "DELETE FROM records
             WHERE key = ?1 AND version = ?2 AND status <> 'retracted'
               AND (layer <> ?3
                    OR EXISTS (SELECT 1 FROM consolidation_marks WHERE record_key = ?1 AND step = ?4))
               AND NOT EXISTS (SELECT 1 FROM relations
                               WHERE source_key = ?1 AND predicate IN ('supersedes', 'derived_from', 'contested_by'))
               AND NOT EXISTS (SELECT 1 FROM relations
                               WHERE target_id = records.id AND predicate IN ('supersedes', 'derived_from', 'contested_by'))",
        )?;
        let mut deleted = 0;
        for candidate in candidates {
            let before = super::counted::Counted::stored(self, candidate.key)?;
            let stored = super::search::stored_record(self, candidate.key)?;
            let gone = delete.execute(params![
                candidate.key,
                candidate.version,
                MemoryType::Episodic.layer(),
                Step::Compressed.as_str()
            ])?;
            if gone > 0 {
                super::search::remove(candidate.key, stored);
                if let Some(before) = before {
                    super::search::count(&before, -1);
                }
                deleted += gone;
            }
        }
        Ok(deleted)
    }
}

impl JobStore for Connection {
    fn job_settings(&mut self) -> Result<Vec<JobSetting>, StoreError> {
        let mut stmt =
            self.prepare_cached("SELECT name, schedule, enabled FROM job_settings ORDER BY name")?;
        let rows = stmt.query_map([], |row| {
            Ok(JobSetting {
                name: row.get(0)?,
                schedule: row.get(1)?,
                enabled: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn save_job_setting(&mut self, setting: &JobSetting, now: Timestamp) -> Result<(), StoreError> {
        self.prepare_cached(
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

    fn recent_job_runs(&mut self, per_job: usize) -> Result<Vec<JobRunRecord>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT name, started_at, finished_at, duration_ms, result_json, error FROM (
                 SELECT *, row_number() OVER (PARTITION BY name ORDER BY id DESC) AS newer
                 FROM job_run_log)
             WHERE newer <= ?1 ORDER BY name, id DESC",
        )?;
        let mut rows = stmt.query([per_job as i64])?;
        let mut runs = Vec::new();
        while let Some(row) = rows.next()? {
            let outcome = JobRunRecord::outcome_of(row.get(4)?, row.get(5)?)?;
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

    fn save_job_run(&mut self, run: &JobRunRecord, keep: usize) -> Result<(), StoreError> {
        let (result, error) = run.outcome_columns();
        self.prepare_cached(
            "INSERT INTO job_run_log (name, started_at, finished_at, duration_ms, result_json, error)
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
        self.prepare_cached(
            "DELETE FROM job_run_log WHERE name = ?1 AND id <= (
                 SELECT id FROM job_run_log WHERE name = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
        )?
        .execute(params![run.name, keep as i64])?;
        Ok(())
    }

    fn claim_job(&mut self, claim: &JobClaim) -> Result<bool, StoreError> {
        let tick = claim.tick.as_ref().map(to_micros);
        let taken = self
            .prepare_cached(
                "INSERT INTO job_leases (name, holder, expires_at, tick)
                 VALUES (?1, ?2, ?3, COALESCE(?5, 0))
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,
                     expires_at = excluded.expires_at, tick = MAX(job_leases.tick, excluded.tick)
                 WHERE (job_leases.expires_at <= ?4 OR job_leases.holder = ?2 OR NOT EXISTS
                            (SELECT 1 FROM instances WHERE id = job_leases.holder AND seen_at >= ?6))
                   AND (?5 IS NULL OR job_leases.tick < ?5
                        OR (job_leases.expires_at > ?4 AND NOT EXISTS
                            (SELECT 1 FROM instances WHERE id = job_leases.holder AND seen_at >= ?6)))",
            )?
            .execute(params![
                claim.name,
                claim.holder,
                to_micros(&claim.until),
                to_micros(&claim.now),
                tick,
                to_micros(&claim.live_since)
            ])?;
        Ok(taken > 0)
    }

    fn release_job(&mut self, name: &str, holder: &str) -> Result<(), StoreError> {
        self.prepare_cached(
            "UPDATE job_leases SET expires_at = 0 WHERE name = ?1 AND holder = ?2",
        )?
        .execute(params![name, holder])?;
        Ok(())
    }

    fn held_jobs(
        &mut self,
        now: Timestamp,
        live_since: Timestamp,
    ) -> Result<Vec<crate::store::maintenance::HeldJob>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT name, holder, EXISTS (SELECT 1 FROM instances
                                          WHERE id = job_leases.holder AND seen_at >= ?2)
             FROM job_leases WHERE expires_at > ?1 ORDER BY name",
        )?;
        let rows = stmt.query_map(params![to_micros(&now), to_micros(&live_since)], |row| {
            Ok(HeldJob {
                name: row.get(0)?,
                holder: row.get(1)?,
                live: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn heartbeat(
        &mut self,
        instance: &str,
        at: Timestamp,
        live_since: Timestamp,
        forget_before: Timestamp,
    ) -> Result<usize, StoreError> {
        self.prepare_cached(
            "INSERT INTO instances (id, seen_at) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
        )?
        .execute(params![instance, to_micros(&at)])?;
        self.prepare_cached("DELETE FROM instances WHERE seen_at < ?1")?
            .execute([to_micros(&forget_before)])?;
        let live: i64 = self
            .prepare_cached("SELECT COUNT(*) FROM instances WHERE seen_at >= ?1")?
            .query_row([to_micros(&live_since)], |row| row.get(0))?;
        Ok(live.max(1) as usize)
    }
}
