//! Aggregates over the whole memory for `GET /v1/metrics`, counted in SQL.

use std::collections::BTreeMap;

use super::connection::Pg;
use crate::domain::record::{MemoryType, Sensitivity, Status};
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::stats::{count, Activity, MemoryStats, StatsStore, Tallies, RECENT_ACTIVITY};

impl StatsStore for Pg {
    fn memory_stats(&mut self, now: Timestamp) -> Result<MemoryStats, StoreError> {
        let row = self.query_one(
            "SELECT r.n, s.salience, r.confidence, r.active, r.recent, s.b0, s.b1, s.b2, s.b3, s.b4
             FROM (SELECT COUNT(*) AS n, COALESCE(AVG(confidence), 0) AS confidence,
                          COUNT(*) FILTER (WHERE status = 'active') AS active,
                          COUNT(*) FILTER (WHERE created_at >= $1) AS recent
                   FROM records) r,
                  -- Every record has one profile, which holds its stored salience.
                  (SELECT COALESCE(AVG(salience), 0) AS salience,
                          COUNT(*) FILTER (WHERE salience < 0.2) AS b0,
                          COUNT(*) FILTER (WHERE salience >= 0.2 AND salience < 0.4) AS b1,
                          COUNT(*) FILTER (WHERE salience >= 0.4 AND salience < 0.6) AS b2,
                          COUNT(*) FILTER (WHERE salience >= 0.6 AND salience < 0.8) AS b3,
                          COUNT(*) FILTER (WHERE salience >= 0.8) AS b4
                   FROM decay_profiles) s",
            &[&to_micros(&(now - chrono::Duration::hours(24)))],
        )?;
        let mut records_by_type: BTreeMap<&'static str, u64> =
            MemoryType::ALL.iter().map(|t| (t.as_str(), 0)).collect();
        let mut records_by_sensitivity: BTreeMap<&'static str, u64> =
            Sensitivity::ALL.iter().map(|s| (s.as_str(), 0)).collect();
        for group in self.query(
            "SELECT layer, sensitivity, COUNT(*) FROM records GROUP BY layer, sensitivity",
            &[],
        )? {
            let n = count(group.try_get(2)?);
            if let Some(memory_type) = MemoryType::from_layer(group.try_get(0)?) {
                *records_by_type.entry(memory_type.as_str()).or_default() += n;
            }
            if let Some(level) = Sensitivity::from_rank(group.try_get(1)?) {
                *records_by_sensitivity.entry(level.as_str()).or_default() += n;
            }
        }
        let mut records_by_status: BTreeMap<&'static str, u64> =
            Status::ALL.iter().map(|s| (s.as_str(), 0)).collect();
        for group in self.query("SELECT status, COUNT(*) FROM records GROUP BY status", &[])? {
            if let Some(status) = Status::parse(&group.try_get::<_, String>(0)?) {
                records_by_status.insert(status.as_str(), count(group.try_get(1)?));
            }
        }
        let pinned: i64 = self
            .query_one("SELECT COUNT(*) FROM decay_profiles WHERE pinned", &[])?
            .try_get(0)?;
        let audit = self.query_one(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE action = 'reinforce'),
                    COUNT(*) FILTER (WHERE action IN ('revise', 'fork', 'merge', 'delete'))
             FROM audit_log WHERE NOT imported",
            &[],
        )?;
        let competence = self.query_one(
            "SELECT COALESCE(SUM(GREATEST(success_count, 0))::float8, 0),
                    COALESCE(SUM(GREATEST(failure_count, 0))::float8, 0)
             FROM competence_stats",
            &[],
        )?;
        let plan_reuse: f64 = self
            .query_one(
                // A payload holding `\u0000` (which PostgreSQL's JSON functions
                // refuse) counts 0 rather than failing the metrics.
                "SELECT COALESCE(AVG(CASE WHEN strpos(p.payload_json, '\\u0000') > 0 THEN 0
                     ELSE COALESCE((p.payload_json::jsonb #>> '{metrics,execution_count}')::float8, 0)
                     END), 0)
                 FROM records r JOIN payloads p ON p.record_key = r.key WHERE r.layer = $1",
                &[&(MemoryType::PlanGraph.layer() as i64)],
            )?
            .try_get(0)?;
        let recent_activity = self
            .query(
                "SELECT a.timestamp, a.action, a.actor, r.layer, r.sensitivity
                 FROM audit_log a JOIN records r ON r.key = a.record_key
                 ORDER BY a.id DESC LIMIT $1",
                &[&(RECENT_ACTIVITY as i64)],
            )?
            .iter()
            .map(|row| {
                let layer: i64 = row.try_get(3)?;
                let rank: i64 = row.try_get(4)?;
                Ok(Activity {
                    at: from_micros(row.try_get(0)?),
                    action: row.try_get(1)?,
                    actor: row.try_get(2)?,
                    memory_type: MemoryType::from_layer(layer)
                        .ok_or_else(|| StoreError::Corrupt(format!("layer {layer}")))?,
                    sensitivity: Sensitivity::from_rank(rank)
                        .ok_or_else(|| StoreError::Corrupt(format!("sensitivity {rank}")))?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Tallies {
            total: row.try_get(0)?,
            avg_salience: row.try_get(1)?,
            avg_confidence: row.try_get(2)?,
            active: row.try_get(3)?,
            recent: row.try_get(4)?,
            buckets: [
                row.try_get(5)?,
                row.try_get(6)?,
                row.try_get(7)?,
                row.try_get(8)?,
                row.try_get(9)?,
            ],
            records_by_type,
            pinned,
            audit_total: audit.try_get(0)?,
            reinforcements: audit.try_get(1)?,
            revisions: audit.try_get(2)?,
            successes: competence.try_get(0)?,
            failures: competence.try_get(1)?,
            plan_reuse,
            records_by_sensitivity,
            records_by_status,
            recent_activity,
        }
        .into_stats())
    }
}
