//! Aggregates over the whole memory for `GET /v1/metrics`, computed in SQL
//! (counts, sums, averages) so nothing is loaded record by record.

use std::collections::BTreeMap;

use rusqlite::{params, Connection};

use crate::domain::record::{MemoryType, Sensitivity, Status};
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::stats::{count, Activity, MemoryStats, StatsStore, Tallies, RECENT_ACTIVITY};

impl StatsStore for Connection {
    fn memory_stats(&mut self, now: Timestamp) -> Result<MemoryStats, StoreError> {
        let (total, avg_salience, avg_confidence, active, recent, b0, b1, b2, b3, b4): (
            i64,
            f64,
            f64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
        ) = self
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(AVG(salience), 0), COALESCE(AVG(confidence), 0),
                    COALESCE(SUM(status = 'active'), 0),
                    COALESCE(SUM(created_at >= ?1), 0),
                    COALESCE(SUM(salience < 0.2), 0),
                    COALESCE(SUM(salience >= 0.2 AND salience < 0.4), 0),
                    COALESCE(SUM(salience >= 0.4 AND salience < 0.6), 0),
                    COALESCE(SUM(salience >= 0.6 AND salience < 0.8), 0),
                    COALESCE(SUM(salience >= 0.8), 0)
             FROM records",
            )?
            .query_row(
                params![to_micros(&(now - chrono::Duration::hours(24)))],
                |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                        row.get(6)?,
                        row.get(7)?,
                        row.get(8)?,
                        row.get(9)?,
                    ))
                },
            )?;
        let mut records_by_type: BTreeMap<&'static str, u64> =
            MemoryType::ALL.iter().map(|t| (t.as_str(), 0)).collect();
        let mut stmt = self.prepare_cached("SELECT layer, COUNT(*) FROM records GROUP BY layer")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            if let Some(memory_type) = MemoryType::from_layer(row.get(0)?) {
                records_by_type.insert(memory_type.as_str(), count(row.get(1)?));
            }
        }
        let pinned: i64 = self
            .prepare_cached("SELECT COUNT(*) FROM decay_profiles WHERE pinned = 1")?
            .query_row([], |row| row.get(0))?;
        let (audit_total, reinforcements, revisions): (i64, i64, i64) = self
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(action = 'reinforce'), 0),
                        COALESCE(SUM(action IN ('revise', 'fork', 'merge', 'delete')), 0)
                 FROM audit_log WHERE imported = 0",
            )?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        let (successes, failures): (f64, f64) = self
            .prepare_cached(
                "SELECT TOTAL(MAX(success_count, 0)), TOTAL(MAX(failure_count, 0)) FROM competence_stats",
            )?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        let plan_reuse: f64 = self
            .prepare_cached(
                "SELECT COALESCE(AVG(COALESCE(json_extract(p.payload_json, '$.metrics.execution_count'), 0)), 0)
                 FROM records r JOIN payloads p ON p.record_key = r.key WHERE r.layer = ?1",
            )?
            .query_row([MemoryType::PlanGraph.layer()], |row| row.get(0))?;
        let mut records_by_sensitivity: BTreeMap<&'static str, u64> =
            Sensitivity::ALL.iter().map(|s| (s.as_str(), 0)).collect();
        let mut stmt =
            self.prepare_cached("SELECT sensitivity, COUNT(*) FROM records GROUP BY sensitivity")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            if let Some(level) = Sensitivity::from_rank(row.get(0)?) {
                records_by_sensitivity.insert(level.as_str(), count(row.get(1)?));
            }
        }
        let mut records_by_status: BTreeMap<&'static str, u64> =
            Status::ALL.iter().map(|s| (s.as_str(), 0)).collect();
        let mut stmt =
            self.prepare_cached("SELECT status, COUNT(*) FROM records GROUP BY status")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            if let Some(status) = Status::parse(&row.get::<_, String>(0)?) {
                records_by_status.insert(status.as_str(), count(row.get(1)?));
            }
        }
        let recent_activity = self
            .prepare_cached(
                "SELECT a.timestamp, a.action, a.actor, r.layer, r.sensitivity
                 FROM audit_log a JOIN records r ON r.key = a.record_key
                 ORDER BY a.id DESC LIMIT ?1",
            )?
            .query_map([RECENT_ACTIVITY as i64], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, i64>(3)?,
                    row.get::<_, i64>(4)?,
                ))
            })?
            .map(|row| {
                let (at, action, actor, layer, rank) = row?;
                Ok(Activity {
                    at: from_micros(at),
                    action,
                    actor,
                    memory_type: MemoryType::from_layer(layer)
                        .ok_or_else(|| StoreError::Corrupt(format!("layer {layer}")))?,
                    sensitivity: Sensitivity::from_rank(rank)
                        .ok_or_else(|| StoreError::Corrupt(format!("sensitivity {rank}")))?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Tallies {
            total,
            avg_salience,
            avg_confidence,
            active,
            recent,
            buckets: [b0, b1, b2, b3, b4],
            records_by_type,
            pinned,
            audit_total,
            reinforcements,
            revisions,
            successes,
            failures,
            plan_reuse,
            records_by_sensitivity,
            records_by_status,
            recent_activity,
        }
        .into_stats())
    }
}
