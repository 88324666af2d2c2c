//! The decay sweep, a chunk at a time: read a chunk of records and plan
//! what decayed (on a read connection), then write the plan (on the
//! writer). The writes are conditional on the row version the read saw, so
//! a record changed in between is left for the next sweep rather than
//! overwritten or pruned.

use serde::Serialize;

use super::job::Job;
use super::ServiceError;
use crate::domain::decay::{prunable, salience_at, DecayState, SWEEP_EPSILON};
use crate::domain::record::{DecayProfile, Status};
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::store::{DecayChange, DecayRow, Transaction};

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DecayReport {
    /// Records looked at.
    pub scanned: u64,
    /// Records whose stored salience was lowered.
    pub decayed: u64,
    /// Records deleted because their salience decayed below 0.001.
    pub pruned: u64,
    /// Writer transactions the sweep used.
    pub chunks: u64,
    /// Topics whose stored salience was lowered (topics are archived by
    /// topic maintenance, never pruned).
    pub topics_decayed: u64,
}

/// One chunk of a sweep, planned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecayChunk {
    /// The last key read; `None` when the sweep is done.
    pub last_key: Option<i64>,
    pub scanned: u64,
    pub changes: Vec<DecayChange>,
    pub prunes: Vec<DecayChange>,
}

/// Reads up to `limit` records after `after_key` and plans their decay at
/// `now`.
pub fn plan_chunk(
    tx: &mut dyn Transaction,
    now: Timestamp,
    after_key: i64,
    limit: usize,
) -> Result<DecayChunk, ServiceError> {
    let rows = tx.scan_for_decay(after_key, limit)?;
    let (changes, prunes) = plan(&rows, now);
    Ok(DecayChunk {
        last_key: rows.last().map(|row| row.key),
        scanned: rows.len() as u64,
        changes,
        prunes,
    })
}

/// Writes a planned chunk; answers (records decayed, records pruned).
/// Only the scheduler (an unrestricted caller) sweeps.
pub fn apply_chunk(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    chunk: &DecayChunk,
) -> Result<(u64, u64), ServiceError> {
    if !caller.is_unrestricted() {
        return Err(ServiceError::PermissionDenied(
            "decay sweeps every record: it needs unrestricted trust".to_string(),
        ));
    }
    let decayed = tx.apply_decay(&chunk.changes, now)?;
    let pruned = tx.prune(&chunk.prunes)?;
    Ok((decayed as u64, pruned as u64))
}

/// One chunk of the topics' sweep, planned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicDecayChunk {
    /// The last key read; `None` when the sweep is done.
    pub last_key: Option<i64>,
    /// (key, the anchor time read, the salience now).
    pub changes: Vec<(i64, Timestamp, f64)>,
}

/// Reads up to `limit` topics after `after_key` and plans their decay at
/// `now` with the profile of topics.
pub fn plan_topic_chunk(
    tx: &mut dyn Transaction,
    decay: &DecayProfile,
    now: Timestamp,
    after_key: i64,
    limit: usize,
) -> Result<TopicDecayChunk, ServiceError> {
    let rows = tx.topic_decay_chunk(after_key, limit)?;
    let changes = rows
        .iter()
        .filter_map(|row| {
            let salience = salience_at(
                &DecayState {
                    anchor: row.anchor,
                    profile: decay,
                    pinned: false,
                    created_at: row.created_at,
                },
                now,
            );
            ((row.stored - salience).abs() >= SWEEP_EPSILON).then_some((
                row.key,
                row.anchor.at,
                salience,
            ))
        })
        .collect();
    Ok(TopicDecayChunk {
        last_key: rows.last().map(|row| row.key),
        changes,
    })
}

/// Writes a planned topics chunk; a topic reinforced since it was read
/// keeps its value. Answers the changes written or skipped.
pub fn apply_topic_chunk(
    tx: &mut dyn Transaction,
    chunk: &TopicDecayChunk,
) -> Result<u64, ServiceError> {
    for (key, anchor_at, salience) in &chunk.changes {
        tx.set_topic_salience(*key, *anchor_at, *salience)?;
    }
    Ok(chunk.changes.len() as u64)
}

/// The salience changes and prune candidates of one chunk at `now`.
/// Retracted and pinned records are left alone; a change smaller than
/// `SWEEP_EPSILON` is not worth a write, since reads decay on their own.
pub fn plan(rows: &[DecayRow], now: Timestamp) -> (Vec<DecayChange>, Vec<DecayChange>) {
    let mut changes = Vec::new();
    let mut prunes = Vec::new();
    for row in rows {
        if row.status == Status::Retracted || row.pinned {
            continue;
        }
        let salience = salience_at(
            &DecayState {
                anchor: row.anchor,
                profile: &row.profile,
                pinned: row.pinned,
                created_at: row.created_at,
            },
            now,
        );
        let change = DecayChange {
            key: row.key,
            version: row.version,
            salience,
        };
        if prunable(salience, row.deletion_policy, row.pinned, row.status) {
            prunes.push(change);
        } else if (row.stored_salience - salience).abs() >= SWEEP_EPSILON {
            changes.push(change);
        }
    }
    (changes, prunes)
}

/// [`plan_chunk`] as a read job.
pub struct PlanDecay {
    pub now: Timestamp,
    pub after_key: i64,
    pub limit: usize,
}

impl Job for PlanDecay {
    type Output = DecayChunk;
    const NAME: &'static str = "plan_decay";

    fn run(self, tx: &mut dyn Transaction) -> Result<DecayChunk, ServiceError> {
        plan_chunk(tx, self.now, self.after_key, self.limit)
    }
}

/// [`apply_chunk`] as a write job: answers the records decayed and pruned.
pub struct WriteDecay {
    pub caller: Caller,
    pub now: Timestamp,
    pub chunk: DecayChunk,
}

impl Job for WriteDecay {
    type Output = (u64, u64);
    const NAME: &'static str = "write_decay";

    fn run(self, tx: &mut dyn Transaction) -> Result<(u64, u64), ServiceError> {
        apply_chunk(tx, &self.caller, self.now, &self.chunk)
    }
}

/// [`plan_topic_chunk`] as a read job.
pub struct PlanTopicDecay {
    pub decay: DecayProfile,
    pub now: Timestamp,
    pub after_key: i64,
    pub limit: usize,
}

impl Job for PlanTopicDecay {
    type Output = TopicDecayChunk;
    const NAME: &'static str = "plan_topic_decay";

    fn run(self, tx: &mut dyn Transaction) -> Result<TopicDecayChunk, ServiceError> {
        plan_topic_chunk(tx, &self.decay, self.now, self.after_key, self.limit)
    }
}

/// [`apply_topic_chunk`] as a write job.
pub struct WriteTopicDecay {
    pub chunk: TopicDecayChunk,
}

impl Job for WriteTopicDecay {
    type Output = u64;
    const NAME: &'static str = "write_topic_decay";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        apply_topic_chunk(tx, &self.chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::decay::Anchor;
    use crate::domain::record::{DecayCurve, DecayProfile, DeletionPolicy};
    use crate::domain::time::parse_rfc3339;
    use chrono::Duration;

    fn row(key: i64, pinned: bool, status: Status, policy: DeletionPolicy) -> DecayRow {
        let t0 = parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        DecayRow {
            key,
            version: 0,
            stored_salience: 1.0,
            status,
            created_at: t0,
            profile: DecayProfile {
                curve: DecayCurve::Exponential,
                half_life_seconds: 3600,
                min_salience: 0.0,
                max_age_seconds: None,
                reinforcement_gain: 0.1,
            },
            pinned,
            deletion_policy: policy,
            anchor: Anchor {
                salience: 1.0,
                at: t0,
            },
        }
    }

    #[test]
    fn a_sweep_lowers_decayed_records_and_prunes_only_what_may_go() {
        let t0 = parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        let rows = vec![
            row(1, false, Status::Active, DeletionPolicy::AutoPrune),
            row(2, true, Status::Active, DeletionPolicy::AutoPrune),
            row(3, false, Status::Retracted, DeletionPolicy::AutoPrune),
            row(4, false, Status::Active, DeletionPolicy::ManualOnly),
            row(5, false, Status::Contested, DeletionPolicy::Never),
        ];
        let (changes, prunes) = plan(&rows, t0 + Duration::hours(1));
        assert_eq!(changes.iter().map(|c| c.key).collect::<Vec<_>>(), [1, 4, 5]);
        assert!((changes[0].salience - 0.5).abs() < 1e-12);
        assert!(prunes.is_empty());
        // Twenty half-lives later salience is below 0.001.
        let (changes, prunes) = plan(&rows, t0 + Duration::hours(20));
        assert_eq!(prunes.iter().map(|c| c.key).collect::<Vec<_>>(), [1]);
        assert_eq!(changes.iter().map(|c| c.key).collect::<Vec<_>>(), [4, 5]);
    }

    #[test]
    fn an_unchanged_record_costs_no_write() {
        let t0 = parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        let rows = vec![row(1, false, Status::Active, DeletionPolicy::AutoPrune)];
        let (changes, prunes) = plan(&rows, t0 + Duration::milliseconds(10));
        assert!(changes.is_empty() && prunes.is_empty());
    }
}
