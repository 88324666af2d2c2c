//! What consolidation keeps on PostgreSQL: which steps used which
//! episodes, the groups it has seen, what it made of them.
//!
//! Payloads are tested here, in Rust, not with PostgreSQL's JSON
//! functions: a JSON string may hold `\u0000`, which PostgreSQL's `jsonb`
//! and text cannot, and one such record must not fail the job for every
//! other.

use std::collections::BTreeMap;

use serde_json::Value;

use super::connection::Pg;
use crate::domain::time::{to_micros, Timestamp};
use crate::store::consolidation::{ConsolidationStore, Episode, Sighting, Step};
use crate::store::error::StoreError;

/// Whether an episode's payload has what `step` needs.
fn usable(step: Step, payload: &Value) -> bool {
    let list = |name: &str| {
        payload
            .get(name)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    match step {
        Step::Compressed => true,
        Step::Semantic => list("timeline") > 0,
        Step::Competence => {
            list("tool_graph") > 0
                && matches!(
                    payload.get("outcome").and_then(Value::as_str),
                    Some("success" | "failure")
                )
        }
        Step::PlanGraph => list("tool_graph") >= 3,
    }
}

impl ConsolidationStore for Pg {
    fn unmarked_episodes(
        &mut self,
        step: Step,
        created_before: Timestamp,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<Episode>, StoreError> {
        let mut found = Vec::with_capacity(limit);
        let mut after = after_key;
        while found.len() < limit {
            let rows = self.query(
                "SELECT r.key, r.id, p.payload_json FROM records r
                 JOIN payloads p ON p.record_key = r.key
                 JOIN decay_profiles d ON d.record_key = r.key
                 WHERE r.layer = 4 AND r.status <> 'retracted' AND NOT d.pinned
                   AND r.created_at <= $1 AND r.key > $2
                   AND NOT EXISTS (SELECT 1 FROM consolidation_marks m
                                   WHERE m.record_key = r.key AND m.step = $3)
                 ORDER BY r.key LIMIT $4",
                &[
                    &to_micros(&created_before),
                    &after,
                    &step.as_str(),
                    &(limit as i64),
                ],
            )?;
            for row in &rows {
                after = row.try_get(0)?;
                let payload: Value = serde_json::from_str(row.try_get(2)?)
                    .map_err(|e| StoreError::Corrupt(format!("payload of record {after}: {e}")))?;
                if usable(step, &payload) && found.len() < limit {
                    found.push(Episode {
                        key: after,
                        id: row.try_get(1)?,
                    });
                }
            }
            if rows.len() < limit {
                break;
            }
        }
        Ok(found)
    }

    fn mark(&mut self, key: i64, step: Step) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO consolidation_marks (record_key, step) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&key, &step.as_str()],
        )?;
        Ok(())
    }

    fn add_sighting(
        &mut self,
        step: Step,
        group_key: &str,
        key: i64,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO consolidation_sightings (step, group_key, record_key, detail)
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            &[&step.as_str(), &group_key, &key, &detail],
        )?;
        Ok(())
    }

    fn sightings(&mut self, step: Step, group_key: &str) -> Result<Vec<Sighting>, StoreError> {
        self.query(
            "SELECT record_key, detail FROM consolidation_sightings
             WHERE step = $1 AND group_key = $2 ORDER BY record_key",
            &[&step.as_str(), &group_key],
        )?
        .iter()
        .map(|row| {
            Ok(Sighting {
                key: row.try_get(0)?,
                detail: row.try_get(1)?,
            })
        })
        .collect()
    }

    fn output(&mut self, step: Step, group_key: &str) -> Result<Option<String>, StoreError> {
        self.query_opt(
            "SELECT r.id FROM consolidation_outputs o JOIN records r ON r.key = o.record_key
             WHERE o.step = $1 AND o.group_key = $2 AND r.status = 'active'",
            &[&step.as_str(), &group_key],
        )?
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(StoreError::from)
    }

    fn set_output(&mut self, step: Step, group_key: &str, id: &str) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO consolidation_outputs (step, group_key, record_key)
             SELECT $1, $2, key FROM records WHERE id = $3
             ON CONFLICT (step, group_key) DO UPDATE SET record_key = excluded.record_key",
            &[&step.as_str(), &group_key, &id],
        )?;
        Ok(())
    }

    fn move_outputs(&mut self, from_id: &str, to_id: &str) -> Result<(), StoreError> {
        self.execute(
            "UPDATE consolidation_outputs
             SET record_key = (SELECT key FROM records WHERE id = $2)
             WHERE record_key = (SELECT key FROM records WHERE id = $1)",
            &[&from_id, &to_id],
        )?;
        Ok(())
    }

    /// Groups of active facts with the same subject, predicate, object and
    /// scope, oldest first within each (groups in the order of their oldest).
    fn duplicate_fact_groups(&mut self) -> Result<Vec<Vec<String>>, StoreError> {
        type Fact = (Value, Value, Value, Option<String>);
        let mut groups: BTreeMap<String, (i64, Vec<String>)> = BTreeMap::new();
        for row in self.query(
            "SELECT r.key, r.id, r.scope, p.payload_json FROM records r
             JOIN payloads p ON p.record_key = r.key
             WHERE r.layer = 1 AND r.status = 'active'
             ORDER BY r.key",
            &[],
        )? {
            let key: i64 = row.try_get(0)?;
            let payload: Value = serde_json::from_str(row.try_get(3)?)
                .map_err(|e| StoreError::Corrupt(format!("payload of record {key}: {e}")))?;
            let part = |name: &str| payload.get(name).cloned().unwrap_or(Value::Null);
            let fact: Fact = (
                part("subject"),
                part("predicate"),
                part("object"),
                row.try_get(2)?,
            );
            let group = serde_json::to_string(&fact)
                .map_err(|e| StoreError::Corrupt(format!("fact of record {key}: {e}")))?;
            groups
                .entry(group)
                .or_insert_with(|| (key, Vec::new()))
                .1
                .push(row.try_get(1)?);
        }
        let mut duplicates: Vec<(i64, Vec<String>)> = groups
            .into_values()
            .filter(|(_, ids)| ids.len() > 1)
            .collect();
        duplicates.sort_by_key(|(oldest, _)| *oldest);
        Ok(duplicates.into_iter().map(|(_, ids)| ids).collect())
    }
}
