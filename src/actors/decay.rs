//! The decay actor: sweeps every record, lowers stored salience to its
//! decayed value and prunes what decayed away.
//!
//! A sweep reads a chunk of records on a pooled read connection, works out
//! the changes, and hands them to the writer as one job; then the next
//! chunk. The single writer is thus held for one chunk at a time, and
//! ingests queued meanwhile are committed between chunks.

use actix::{Actor, Addr, Context, Handler, Message, ResponseFuture};
use serde::Serialize;

use super::storage::{ScanForDecay, StorageWriter, StoreReader};
use super::ServiceError;
use crate::domain::decay::{prunable, salience_at, DecayState, SWEEP_EPSILON};
use crate::domain::record::Status;
use crate::domain::time::Timestamp;
use crate::store::maintenance::{self, DecayChange, DecayRow};

pub struct Decayer {
    reader: Addr<StoreReader>,
    writer: StorageWriter,
    chunk_size: usize,
}

impl Decayer {
    pub fn new(reader: Addr<StoreReader>, writer: StorageWriter, chunk_size: usize) -> Self {
        Decayer {
            reader,
            writer,
            chunk_size: chunk_size.max(1),
        }
    }
}

impl Actor for Decayer {
    type Context = Context<Self>;
}

/// One sweep as of `now`.
#[derive(Message)]
#[rtype(result = "Result<DecayReport, ServiceError>")]
pub struct ApplyDecay {
    pub now: Timestamp,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DecayReport {
    /// Records looked at.
    pub scanned: u64,
    /// Records whose stored salience was lowered.
    pub decayed: u64,
    /// Records deleted because their salience decayed below 0.001.
    pub pruned: u64,
    /// Writer transactions the sweep used.
    pub chunks: u64,
}

impl Handler<ApplyDecay> for Decayer {
    type Result = ResponseFuture<Result<DecayReport, ServiceError>>;

    fn handle(&mut self, msg: ApplyDecay, _: &mut Self::Context) -> Self::Result {
        let reader = self.reader.clone();
        let writer = self.writer.clone();
        let limit = self.chunk_size;
        let now = msg.now;
        Box::pin(async move {
            let mut report = DecayReport::default();
            let mut after_key = 0;
            loop {
                let rows = reader.send(ScanForDecay { after_key, limit }).await??;
                let Some(last) = rows.last() else { break };
                after_key = last.key;
                report.scanned += rows.len() as u64;
                let (changes, prunes) = plan(&rows, now);
                if changes.is_empty() && prunes.is_empty() {
                    continue;
                }
                let (decayed, pruned) = writer
                    .write(move |conn| {
                        let decayed = maintenance::apply_decay(conn, &changes, now)?;
                        let pruned = maintenance::prune(conn, &prunes)?;
                        Ok((decayed, pruned))
                    })
                    .await?;
                report.decayed += decayed as u64;
                report.pruned += pruned as u64;
                report.chunks += 1;
            }
            Ok(report)
        })
    }
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
            anchor_at: row.anchor.at,
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
