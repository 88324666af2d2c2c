//! Maintenance in storage: the decay sweep ([`DecayStore`]) and the jobs
//! every instance shares ([`JobStore`]).

use super::rows::Columns;
use crate::domain::decay::Anchor;
use crate::domain::record::DecayProfile;
use crate::domain::record::DeletionPolicy;
use crate::domain::record::Status;
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;

/// What the decay sweep needs of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayRow {
    pub key: i64,
    /// The row version the scan saw; writes for this row are conditional
    /// on it.
    pub version: i64,
    pub stored_salience: f64,
    pub status: Status,
    pub created_at: Timestamp,
    pub profile: DecayProfile,
    pub pinned: bool,
    pub deletion_policy: DeletionPolicy,
    pub anchor: Anchor,
}

impl DecayRow {
    /// Columns in this order: key, row version, stored salience, status,
    /// created at, the decay profile (five columns), pinned, deletion
    /// policy, and the salience and time decay is measured from.
    pub(crate) fn read(row: &impl Columns) -> Result<DecayRow, StoreError> {
        Ok(DecayRow {
            key: row.at(0)?,
            version: row.at(1)?,
            stored_salience: row.at(2)?,
            status: row.parsed(3, Status::parse)?,
            created_at: row.time(4)?,
            profile: row.decay_profile(5)?,
            pinned: row.at(10)?,
            deletion_policy: row.parsed(11, DeletionPolicy::parse)?,
            anchor: Anchor {
                salience: row.at(12)?,
                at: row.time(13)?,
            },
        })
    }
}

/// A stored salience to move to its decayed value, or a record to prune,
/// as of the row version the scan saw: if the record changed since, the
/// write is skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayChange {
    pub key: i64,
    pub version: i64,
    pub salience: f64,
}

/// A schedule an operator set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSetting {
    pub name: String,
    pub schedule: String,
    pub enabled: bool,
}

/// A run's claim on a job (see [`JobStore::claim_job`]).
#[derive(Debug, Clone, PartialEq)]
pub struct JobClaim {
    pub name: String,
    /// Who runs it: the process's instance id.
    pub holder: String,
    pub now: Timestamp,
    /// The lease ends then, if the run has not given it back.
    pub until: Timestamp,
    /// Processes whose heartbeat is older than this (wall-clock time) are
    /// dead: a lease they hold is taken over, and a scheduled run they
    /// did not finish may be made again.
    pub live_since: Timestamp,
    /// A scheduled run: the scheduled time it is for. `None`: run on
    /// demand.
    pub tick: Option<Timestamp>,
}

/// A job lease not given back nor expired (see [`JobStore::held_jobs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HeldJob {
    pub name: String,
    pub holder: String,
    /// The holder's heartbeat is recent: it is still running the job.
    /// Otherwise it died in the run, and the job waits for another.
    pub live: bool,
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

impl JobRunRecord {
    /// The outcome as stored: the result JSON, or the error message.
    pub(crate) fn outcome_columns(&self) -> (Option<String>, Option<String>) {
        match &self.outcome {
            Ok(value) => (Some(value.to_string()), None),
            Err(error) => (None, Some(error.clone())),
        }
    }

    /// The outcome from its stored columns.
    pub(crate) fn outcome_of(
        result: Option<String>,
        error: Option<String>,
    ) -> Result<Result<serde_json::Value, String>, StoreError> {
        Ok(match (result, error) {
            (_, Some(error)) => Err(error),
            (Some(json), None) => Ok(serde_json::from_str::<serde_json::Value>(&json)
                .map_err(|e| StoreError::Corrupt(format!("job result: {e}")))?),
            (None, None) => Ok(serde_json::Value::Null),
        })
    }
}

/// The decay sweep: salience read in chunks, lowered conditionally on the version read, pruned.
pub trait DecayStore {
    /// Up to `limit` records after `after_key`, in key order.
    fn scan_for_decay(&mut self, after_key: i64, limit: usize)
        -> Result<Vec<DecayRow>, StoreError>;
    /// Writes decayed saliences of rows still at the scanned version, with
    /// one scheduler `decay` audit entry per stretch of decay (the last
    /// entry is updated when it is already one). Answers how many changed.
    fn apply_decay(&mut self, changes: &[DecayChange], now: Timestamp)
        -> Result<usize, StoreError>;
    /// Deletes the candidates still at the scanned version that are no part
    /// of a revision chain. Answers how many were deleted.
    fn prune(&mut self, candidates: &[DecayChange]) -> Result<usize, StoreError>;
}

/// The maintenance jobs' settings, runs and leases, shared by every instance.
pub trait JobStore {
    fn job_settings(&mut self) -> Result<Vec<JobSetting>, StoreError>;
    fn save_job_setting(&mut self, setting: &JobSetting, now: Timestamp) -> Result<(), StoreError>;
    /// The newest `per_job` runs of each job: by name, newest first.
    fn recent_job_runs(&mut self, per_job: usize) -> Result<Vec<JobRunRecord>, StoreError>;
    /// Stores a run and forgets that job's runs older than its newest `keep`.
    fn save_job_run(&mut self, run: &JobRunRecord, keep: usize) -> Result<(), StoreError>;
    /// Takes job `claim.name` for `claim.holder` until `claim.until`,
    /// unless another live process holds it (its lease not expired at
    /// `claim.now`, its heartbeat since `claim.live_since`) or, for a
    /// scheduled run, its scheduled time was taken already by a run that
    /// finished or is still going. A lease of the claimant's own (a run
    /// whose lease could not be given back) or of a dead process is taken
    /// over. Answers whether it was taken.
    fn claim_job(&mut self, claim: &JobClaim) -> Result<bool, StoreError>;
    /// Gives job `name` back, if `holder` holds it.
    fn release_job(&mut self, name: &str, holder: &str) -> Result<(), StoreError>;
    /// The leases neither given back nor expired at `now`, with who holds
    /// them and whether it has been seen alive since `live_since`.
    fn held_jobs(
        &mut self,
        now: Timestamp,
        live_since: Timestamp,
    ) -> Result<Vec<HeldJob>, StoreError>;
    /// Records that process `instance` is alive at `at`, and forgets
    /// processes not seen since `forget_before`; answers how many were seen
    /// since `live_since` (itself included).
    fn heartbeat(
        &mut self,
        instance: &str,
        at: Timestamp,
        live_since: Timestamp,
        forget_before: Timestamp,
    ) -> Result<usize, StoreError>;
}
