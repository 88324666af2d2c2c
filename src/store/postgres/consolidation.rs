//! What consolidation keeps on PostgreSQL: which steps used which
//! episodes, the groups it has seen, what it made of them. The payload
//! tests read the stored JSON as `jsonb`.

use super::Pg;
use crate::domain::time::{to_micros, Timestamp};
use crate::store::{Step, StoreError};

/// Which episodes a step can use at all (`p`: the payload as jsonb).
fn payload_filter(step: Step) -> &'static str {
    match step {
        Step::Compressed => "TRUE",
        Step::Semantic => "jsonb_typeof(p.j -> 'timeline') = 'array' AND jsonb_array_length(p.j -> 'timeline') > 0",
        Step::Competence => {
            "jsonb_typeof(p.j -> 'tool_graph') = 'array' AND jsonb_array_length(p.j -> 'tool_graph') > 0
             AND p.j ->> 'outcome' IN ('success', 'failure')"
        }
        Step::PlanGraph => {
            "jsonb_typeof(p.j -> 'tool_graph') = 'array' AND jsonb_array_length(p.j -> 'tool_graph') >= 3"
        }
    }
}

pub fn unmarked_episodes(
    pg: &Pg,
    step: Step,
    created_before: Timestamp,
    after_key: i64,
    limit: usize,
) -> Result<Vec<(i64, String)>, StoreError> {
    let sql = format!(
        "SELECT r.key, r.id FROM records r
         JOIN LATERAL (SELECT payload_json::jsonb AS j FROM payloads WHERE record_key = r.key) p ON TRUE
         JOIN decay_profiles d ON d.record_key = r.key
         WHERE r.layer = 4 AND r.status <> 'retracted' AND NOT d.pinned
           AND r.created_at <= $1 AND r.key > $2 AND {}
           AND NOT EXISTS (SELECT 1 FROM consolidation_marks m
                           WHERE m.record_key = r.key AND m.step = $3)
         ORDER BY r.key LIMIT $4",
        payload_filter(step)
    );
    pg.query(
        &sql,
        &[
            &to_micros(&created_before),
            &after_key,
            &step.as_str(),
            &(limit as i64),
        ],
    )?
    .iter()
    .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
    .collect()
}

pub fn add_sighting(
    pg: &Pg,
    step: Step,
    group_key: &str,
    key: i64,
    detail: Option<&str>,
) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO consolidation_sightings (step, group_key, record_key, detail)
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        &[&step.as_str(), &group_key, &key, &detail],
    )?;
    Ok(())
}

pub fn sightings(
    pg: &Pg,
    step: Step,
    group_key: &str,
) -> Result<Vec<(i64, Option<String>)>, StoreError> {
    pg.query(
        "SELECT record_key, detail FROM consolidation_sightings
         WHERE step = $1 AND group_key = $2 ORDER BY record_key",
        &[&step.as_str(), &group_key],
    )?
    .iter()
    .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
    .collect()
}

pub fn mark(pg: &Pg, key: i64, step: Step) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO consolidation_marks (record_key, step) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[&key, &step.as_str()],
    )?;
    Ok(())
}

pub fn output(pg: &Pg, step: Step, group_key: &str) -> Result<Option<String>, StoreError> {
    pg.query_opt(
        "SELECT r.id FROM consolidation_outputs o JOIN records r ON r.key = o.record_key
         WHERE o.step = $1 AND o.group_key = $2 AND r.status = 'active'",
        &[&step.as_str(), &group_key],
    )?
    .map(|row| row.try_get(0))
    .transpose()
    .map_err(StoreError::from)
}

pub fn set_output(pg: &Pg, step: Step, group_key: &str, id: &str) -> Result<(), StoreError> {
    pg.execute(
        "INSERT INTO consolidation_outputs (step, group_key, record_key)
         SELECT $1, $2, key FROM records WHERE id = $3
         ON CONFLICT (step, group_key) DO UPDATE SET record_key = excluded.record_key",
        &[&step.as_str(), &group_key, &id],
    )?;
    Ok(())
}

pub fn move_outputs(pg: &Pg, from_id: &str, to_id: &str) -> Result<(), StoreError> {
    pg.execute(
        "UPDATE consolidation_outputs
         SET record_key = (SELECT key FROM records WHERE id = $2)
         WHERE record_key = (SELECT key FROM records WHERE id = $1)",
        &[&from_id, &to_id],
    )?;
    Ok(())
}

/// Groups of active facts with the same subject, predicate, object (by
/// JSON type and value) and scope, oldest first within each.
pub fn duplicate_fact_groups(pg: &Pg) -> Result<Vec<Vec<String>>, StoreError> {
    pg.query(
        "SELECT array_agg(id ORDER BY key) FROM (
             SELECT r.key, r.id, p.j ->> 'subject' AS subject, p.j ->> 'predicate' AS predicate,
                    jsonb_typeof(p.j -> 'object') AS object_type, p.j -> 'object' AS object,
                    r.scope
             FROM records r
             JOIN LATERAL (SELECT payload_json::jsonb AS j FROM payloads
                           WHERE record_key = r.key) p ON TRUE
             WHERE r.layer = 1 AND r.status = 'active') facts
         GROUP BY subject, predicate, object_type, object, scope
         HAVING COUNT(*) > 1
         ORDER BY MIN(key)",
        &[],
    )?
    .iter()
    .map(|row| Ok(row.try_get(0)?))
    .collect()
}
