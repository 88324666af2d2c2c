//! Decay and job state on PostgreSQL: the sweep's scan and conditional
//! writes, job schedules and run history.

use super::connection::Pg;
use crate::domain::record::{AuditAction, MemoryType, SCHEDULER_ACTOR};
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::store::consolidation::Step;
use crate::store::error::StoreError;
use crate::store::maintenance::{
    DecayChange, DecayRow, DecayStore, HeldJob, JobClaim, JobRunRecord, JobSetting, JobStore,
};

impl DecayStore for Pg {
    fn scan_for_decay(
        &mut self,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<DecayRow>, StoreError> {
        self.query(
            "SELECT r.key, r.version, d.salience, r.status, r.created_at,
                    d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds,
                    d.reinforcement_gain, d.pinned, d.deletion_policy,
                    d.anchor_salience, d.anchor_at
             FROM records r JOIN decay_profiles d ON d.record_key = r.key
             WHERE r.key > $1 ORDER BY r.key LIMIT $2",
            &[&after_key, &(limit as i64)],
        )?
        .iter()
        .map(DecayRow::read)
        .collect()
    }

    /// Writes decayed saliences of records still at the scanned version (to
    /// their profiles: the record's row is not rewritten); a stretch of decay
    /// is one audit entry (the last one, updated).
    fn apply_decay(
        &mut self,
        changes: &[DecayChange],
        now: Timestamp,
    ) -> Result<usize, StoreError> {
        let at = to_micros(&now);
        let mut changed = 0;
        for change in changes {
            let updated = self.execute(
                // The record's row is share-locked: a revision under way is
                // waited for, its new version then seen and the record left
                // alone; a later revision waits for the sweep to commit.
                "WITH live AS (SELECT key FROM records WHERE key = $1 AND version = $2 FOR SHARE)
                 UPDATE decay_profiles SET salience = $3, decays_from = $4
                 WHERE record_key = (SELECT key FROM live)",
                &[&change.key, &change.version, &change.salience, &at],
            )?;
            if updated == 0 {
                continue;
            }
            changed += 1;
            let rationale = format!("scheduled decay: salience now {:.4}", change.salience);
            let folded = self.execute(
                "UPDATE audit_log SET timestamp = $2, rationale = $3
                 WHERE id = (SELECT MAX(id) FROM audit_log WHERE record_key = $1)
                   AND action = $4 AND actor = $5",
                &[
                    &change.key,
                    &at,
                    &rationale,
                    &AuditAction::Decay.as_str(),
                    &SCHEDULER_ACTOR,
                ],
            )?;
            if folded == 0 {
                self.execute(
                    "INSERT INTO audit_log (record_key, action, actor, timestamp, rationale)
                     VALUES ($1, $2, $3, $4, $5)",
                    &[
                        &change.key,
                        &AuditAction::Decay.as_str(),
                        &SCHEDULER_ACTOR,
                        &at,
                        &rationale,
                    ],
                )?;
            }
        }
        Ok(changed)
    }

    /// Deletes the candidates still at the scanned version that are no part
    /// of a revision chain (and, for episodes, were compressed first).
    fn prune(&mut self, candidates: &[DecayChange]) -> Result<usize, StoreError> {
        let mut deleted = 0;
        for candidate in candidates {
            deleted += self.execute(
                "DELETE FROM records
                 WHERE key = $1 AND version = $2 AND status <> 'retracted'
                   AND (layer <> $3
                        OR EXISTS (SELECT 1 FROM consolidation_marks WHERE record_key = $1 AND step = $4))
                   AND NOT EXISTS (SELECT 1 FROM relations
                                   WHERE source_key = $1
                                     AND predicate IN ('supersedes', 'derived_from', 'contested_by'))
                   AND NOT EXISTS (SELECT 1 FROM relations
                                   WHERE target_id = records.id
                                     AND predicate IN ('supersedes', 'derived_from', 'contested_by'))",
                &[
                    &candidate.key,
                    &candidate.version,
                    &(MemoryType::Episodic.layer() as i64),
                    &Step::Compressed.as_str(),
                ],
            )? as usize;
        }
        Ok(deleted)
    }
}

impl JobStore for Pg {
    fn job_settings(&mut self) -> Result<Vec<JobSetting>, StoreError> {
        self.query(
            "SELECT name, schedule, enabled FROM job_settings ORDER BY name",
            &[],
        )?
        .iter()
        .map(|row| {
            Ok(JobSetting {
                name: row.try_get(0)?,
                schedule: row.try_get(1)?,
                enabled: row.try_get(2)?,
            })
        })
        .collect()
    }

    fn save_job_setting(&mut self, setting: &JobSetting, now: Timestamp) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO job_settings (name, schedule, enabled, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO UPDATE SET schedule = excluded.schedule,
                                              enabled = excluded.enabled,
                                              updated_at = excluded.updated_at",
            &[
                &setting.name,
                &setting.schedule,
                &setting.enabled,
                &to_micros(&now),
            ],
        )?;
        Ok(())
    }

    fn recent_job_runs(&mut self, per_job: usize) -> Result<Vec<JobRunRecord>, StoreError> {
        self.query(
            "SELECT name, started_at, finished_at, duration_ms, result_json, error FROM (
                 SELECT *, row_number() OVER (PARTITION BY name ORDER BY id DESC) AS newer
                 FROM job_run_log) runs
             WHERE newer <= $1 ORDER BY name, id DESC",
            &[&(per_job as i64)],
        )?
        .iter()
        .map(|row| {
            Ok(JobRunRecord {
                name: row.try_get(0)?,
                started_at: from_micros(row.try_get(1)?),
                finished_at: from_micros(row.try_get(2)?),
                duration_ms: row.try_get(3)?,
                outcome: JobRunRecord::outcome_of(row.try_get(4)?, row.try_get(5)?)?,
            })
        })
        .collect()
    }

    fn save_job_run(&mut self, run: &JobRunRecord, keep: usize) -> Result<(), StoreError> {
        let (result, error) = run.outcome_columns();
        self.execute(
            "INSERT INTO job_run_log (name, started_at, finished_at, duration_ms, result_json, error)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &run.name,
                &to_micros(&run.started_at),
                &to_micros(&run.finished_at),
                &run.duration_ms,
                &result,
                &error,
            ],
        )?;
        self.execute(
            "DELETE FROM job_run_log WHERE name = $1 AND id <= (
                 SELECT id FROM job_run_log WHERE name = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)",
            &[&run.name, &(keep as i64)],
        )?;
        Ok(())
    }

    /// Two instances claiming at once: the second waits for the first to
    /// commit, then finds the lease taken (or the tick run) and takes nothing.
    fn claim_job(&mut self, claim: &JobClaim) -> Result<bool, StoreError> {
        let tick = claim.tick.as_ref().map(to_micros);
        Ok(self.execute(
            "INSERT INTO job_leases (name, holder, expires_at, tick)
             VALUES ($1, $2, $3, COALESCE($5::bigint, 0))
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,
                 expires_at = excluded.expires_at, tick = GREATEST(job_leases.tick, excluded.tick)
             WHERE (job_leases.expires_at <= $4 OR job_leases.holder = $2 OR NOT EXISTS
                        (SELECT 1 FROM instances WHERE id = job_leases.holder AND seen_at >= $6))
               AND ($5::bigint IS NULL OR job_leases.tick < $5
                    OR (job_leases.expires_at > $4 AND NOT EXISTS
                        (SELECT 1 FROM instances WHERE id = job_leases.holder AND seen_at >= $6)))",
            &[
                &claim.name,
                &claim.holder,
                &to_micros(&claim.until),
                &to_micros(&claim.now),
                &tick,
                &to_micros(&claim.live_since),
            ],
        )? > 0)
    }

    fn release_job(&mut self, name: &str, holder: &str) -> Result<(), StoreError> {
        self.execute(
            "UPDATE job_leases SET expires_at = 0 WHERE name = $1 AND holder = $2",
            &[&name, &holder],
        )?;
        Ok(())
    }

    fn held_jobs(
        &mut self,
        now: Timestamp,
        live_since: Timestamp,
    ) -> Result<Vec<crate::store::maintenance::HeldJob>, StoreError> {
        self.query(
            "SELECT name, holder, EXISTS (SELECT 1 FROM instances
                                          WHERE id = job_leases.holder AND seen_at >= $2)
             FROM job_leases WHERE expires_at > $1 ORDER BY name",
            &[&to_micros(&now), &to_micros(&live_since)],
        )?
        .iter()
        .map(|row| {
            Ok(HeldJob {
                name: row.try_get(0)?,
                holder: row.try_get(1)?,
                live: row.try_get(2)?,
            })
        })
        .collect()
    }

    fn heartbeat(
        &mut self,
        instance: &str,
        at: Timestamp,
        live_since: Timestamp,
        forget_before: Timestamp,
    ) -> Result<usize, StoreError> {
        self.execute(
            "INSERT INTO instances (id, seen_at) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
            &[&instance, &to_micros(&at)],
        )?;
        self.execute(
            "DELETE FROM instances WHERE seen_at < $1",
            &[&to_micros(&forget_before)],
        )?;
        let live: i64 = self
            .query_one(
                "SELECT COUNT(*) FROM instances WHERE seen_at >= $1",
                &[&to_micros(&live_since)],
            )?
            .try_get(0)?;
        Ok(live.max(1) as usize)
    }
}
