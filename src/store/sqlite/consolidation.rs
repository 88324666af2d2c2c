//! SQL for consolidation: candidate episodes per step, the marks that make
//! each step run once per record, and look-ups of what was derived before.

use rusqlite::{params, Connection};

use crate::domain::time::{to_micros, Timestamp};
use crate::store::consolidation::{ConsolidationStore, Episode, Sighting, Step};
use crate::store::error::StoreError;

/// What an episode needs in its payload to matter to a step.
fn payload_filter(step: Step) -> &'static str {
    match step {
        Step::Compressed => "1",
        Step::Semantic => "json_array_length(p.payload_json, '$.timeline') > 0",
        Step::Competence => {
            "json_array_length(p.payload_json, '$.tool_graph') > 0
             AND json_extract(p.payload_json, '$.outcome') IN ('success', 'failure')"
        }
        Step::PlanGraph => "json_array_length(p.payload_json, '$.tool_graph') >= 3",
    }
}

impl ConsolidationStore for Connection {
    /// Episodes (not retracted, not pinned) that `step` has not used, created
    /// before `created_before`, in key order after `after_key`: `(key, id)`.
    fn unmarked_episodes(
        &mut self,
        step: Step,
        created_before: Timestamp,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<Episode>, StoreError> {
        let sql = format!(
            "SELECT r.key, r.id FROM records r
             JOIN payloads p ON p.record_key = r.key
             JOIN decay_profiles d ON d.record_key = r.key
             WHERE r.layer = 4 AND r.status <> 'retracted' AND d.pinned = 0
               AND r.created_at <= ?1 AND r.key > ?2 AND {}
               AND NOT EXISTS (SELECT 1 FROM consolidation_marks m WHERE m.record_key = r.key AND m.step = ?3)
             ORDER BY r.key LIMIT ?4",
            payload_filter(step)
        );
        let mut stmt = self.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![
                to_micros(&created_before),
                after_key,
                step.as_str(),
                limit as i64
            ],
            |row| {
                Ok(Episode {
                    key: row.get(0)?,
                    id: row.get(1)?,
                })
            },
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn mark(&mut self, key: i64, step: Step) -> Result<(), StoreError> {
        self.prepare_cached(
            "INSERT OR IGNORE INTO consolidation_marks (record_key, step) VALUES (?1, ?2)",
        )?
        .execute(params![key, step.as_str()])?;
        Ok(())
    }

    /// Records that episode `key` belongs to group `group_key` of `step`.
    fn add_sighting(
        &mut self,
        step: Step,
        group_key: &str,
        key: i64,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        self.prepare_cached(
            "INSERT OR IGNORE INTO consolidation_sightings (step, group_key, record_key, detail)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![step.as_str(), group_key, key, detail])?;
        Ok(())
    }

    /// Every episode seen in a group so far: `(key, detail)`, oldest first.
    fn sightings(&mut self, step: Step, group_key: &str) -> Result<Vec<Sighting>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT record_key, detail FROM consolidation_sightings
             WHERE step = ?1 AND group_key = ?2 ORDER BY record_key",
        )?;
        let rows = stmt.query_map(params![step.as_str(), group_key], |row| {
            Ok(Sighting {
                key: row.get(0)?,
                detail: row.get(1)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The active record consolidation made of a group, if any: its id.
    fn output(&mut self, step: Step, group_key: &str) -> Result<Option<String>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT r.id FROM consolidation_outputs o JOIN records r ON r.key = o.record_key
             WHERE o.step = ?1 AND o.group_key = ?2 AND r.status = 'active'",
        )?;
        let mut rows = stmt.query_map(params![step.as_str(), group_key], |row| row.get(0))?;
        Ok(rows.next().transpose()?)
    }

    /// Records that group `group_key` of `step` became record `id`.
    fn set_output(&mut self, step: Step, group_key: &str, id: &str) -> Result<(), StoreError> {
        self.prepare_cached(
            "INSERT OR REPLACE INTO consolidation_outputs (step, group_key, record_key)
             SELECT ?1, ?2, key FROM records WHERE id = ?3",
        )?
        .execute(params![step.as_str(), group_key, id])?;
        Ok(())
    }

    /// A record merged into another hands its groups over to it.
    fn move_outputs(&mut self, from_id: &str, to_id: &str) -> Result<(), StoreError> {
        self.prepare_cached(
            "UPDATE consolidation_outputs
             SET record_key = (SELECT key FROM records WHERE id = ?2)
             WHERE record_key = (SELECT key FROM records WHERE id = ?1)",
        )?
        .execute(params![from_id, to_id])?;
        Ok(())
    }

    /// Groups of active semantic records with the same subject, predicate,
    /// object and scope, oldest first within each group: their ids.
    fn duplicate_fact_groups(&mut self) -> Result<Vec<Vec<String>>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT json_group_array(id) FROM (
                 SELECT r.id AS id,
                        json_extract(p.payload_json, '$.subject') AS subject,
                        json_extract(p.payload_json, '$.predicate') AS predicate,
                        json_type(p.payload_json, '$.object') AS object_type,
                        json_extract(p.payload_json, '$.object') AS object,
                        r.scope AS scope
                 FROM records r JOIN payloads p ON p.record_key = r.key
                 WHERE r.layer = 1 AND r.status = 'active'
                 ORDER BY r.key)
             GROUP BY subject, predicate, object_type, object, scope
             HAVING COUNT(*) > 1",
        )?;
        let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
        let mut groups = Vec::new();
        for row in rows {
            let ids: Vec<String> = serde_json::from_str(&row?)
                .map_err(|e| StoreError::Corrupt(format!("duplicate group: {e}")))?;
            groups.push(ids);
        }
        Ok(groups)
    }
}
