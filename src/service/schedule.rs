//! The scheduler's storage work: job settings saved, a run's lease taken
//! and given back, its record kept, this process's heartbeat, and the job
//! state every process reads back.

use super::job::Job;
use super::ServiceError;
use crate::config::JobsSettings;
use crate::domain::time::Timestamp;
use crate::store::{HeldJob, JobClaim, JobRunRecord, JobSetting, StoreError, Transaction};

/// Records this process as alive now (wall-clock time: liveness is about
/// real processes, not the service's clock); answers how many processes
/// were seen within three sync intervals.
pub fn heartbeat(
    tx: &mut dyn Transaction,
    instance: &str,
    settings: &JobsSettings,
) -> Result<usize, StoreError> {
    let now = chrono::Utc::now();
    tx.heartbeat(
        instance,
        now,
        live_since(settings, now),
        now - chrono::Duration::hours(1),
    )
}

/// The oldest heartbeat of a process still alive at `wall`: three sync
/// intervals, so one late or failed heartbeat does not make it dead.
pub fn live_since(settings: &JobsSettings, wall: Timestamp) -> Timestamp {
    wall - chrono::Duration::milliseconds(settings.sync_interval_ms as i64) * 3
}

/// Gives back the leases of jobs this process's database file alone can
/// hold: on SQLite no other process shares the database, so a lease found
/// at start is one an earlier process left when it died or failed to give
/// it back.
pub fn release_leases_left(tx: &mut dyn Transaction, now: Timestamp) -> Result<usize, StoreError> {
    let held = tx.held_jobs(now, chrono::Utc::now())?;
    for lease in &held {
        tx.release_job(&lease.name, &lease.holder)?;
    }
    Ok(held.len())
}

/// A job's schedule or switch, as an operator set it.
pub struct SaveSetting {
    pub setting: JobSetting,
    pub now: Timestamp,
}

impl Job for SaveSetting {
    type Output = ();
    const NAME: &'static str = "save_job_setting";

    fn run(self, tx: &mut dyn Transaction) -> Result<(), ServiceError> {
        Ok(tx.save_job_setting(&self.setting, self.now)?)
    }
}

/// Takes a job's lease for a run; answers whether it was free.
pub struct ClaimJob(pub JobClaim);

impl Job for ClaimJob {
    type Output = bool;
    const NAME: &'static str = "claim_job";

    fn run(self, tx: &mut dyn Transaction) -> Result<bool, ServiceError> {
        Ok(tx.claim_job(&self.0)?)
    }
}

/// Keeps a finished run (the last `kept` of each job stay) and gives its
/// lease back.
pub struct FinishRun {
    pub run: JobRunRecord,
    pub holder: String,
    pub kept: usize,
}

impl Job for FinishRun {
    type Output = ();
    const NAME: &'static str = "finish_job_run";

    fn run(self, tx: &mut dyn Transaction) -> Result<(), ServiceError> {
        tx.save_job_run(&self.run, self.kept)?;
        Ok(tx.release_job(&self.run.name, &self.holder)?)
    }
}

/// Gives back job `job`'s lease held by `holder`.
pub struct ReleaseJob {
    pub job: String,
    pub holder: String,
}

impl Job for ReleaseJob {
    type Output = ();
    const NAME: &'static str = "release_job";

    fn run(self, tx: &mut dyn Transaction) -> Result<(), ServiceError> {
        Ok(tx.release_job(&self.job, &self.holder)?)
    }
}

/// [`heartbeat`] as a write job.
pub struct Heartbeat {
    pub instance: String,
    pub settings: JobsSettings,
}

impl Job for Heartbeat {
    type Output = usize;
    const NAME: &'static str = "heartbeat";

    fn run(self, tx: &mut dyn Transaction) -> Result<usize, ServiceError> {
        Ok(heartbeat(tx, &self.instance, &self.settings)?)
    }
}

/// What the database says of the jobs: their stored settings, newest runs
/// and who holds them.
pub struct StoredJobs {
    pub settings: Vec<JobSetting>,
    pub runs: Vec<JobRunRecord>,
    pub held: Vec<HeldJob>,
}

/// Reads the [`StoredJobs`]: the last `runs_kept` runs, and the leases
/// held at `now` by processes alive since `live_since`.
pub struct ReadJobs {
    pub now: Timestamp,
    pub live_since: Timestamp,
    pub runs_kept: usize,
}

impl Job for ReadJobs {
    type Output = StoredJobs;
    const NAME: &'static str = "read_jobs";

    fn run(self, tx: &mut dyn Transaction) -> Result<StoredJobs, ServiceError> {
        Ok(StoredJobs {
            settings: tx.job_settings()?,
            runs: tx.recent_job_runs(self.runs_kept)?,
            held: tx.held_jobs(self.now, self.live_since)?,
        })
    }
}
