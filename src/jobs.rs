//! Scheduled maintenance: cron schedules turned into messages to the decay
//! and consolidation actors, and the operator controls over them.
//!
//! Schedules come from the configuration unless an operator changed them
//! through the API; such changes are stored in the database and win from
//! then on, across restarts. A job never runs twice at once: a scheduled
//! tick that finds its job running is skipped, and a manual run is refused.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use actix::Addr;
use serde::Serialize;
use serde_json::Value;
use tokio_cron_scheduler::{Job, JobScheduler};
use uuid::Uuid;

use crate::actors::consolidation::{Consolidate, Consolidator};
use crate::actors::decay::{ApplyDecay, Decayer};
use crate::actors::storage::StorageWriter;
use crate::actors::ServiceError;
use crate::clock::Clock;
use crate::config::JobsSettings;
use crate::domain::schedule::Schedule;
use crate::domain::time::{format_rfc3339, Timestamp};
use crate::domain::validate::ValidationError;
use crate::metrics::Metrics;
use crate::store::maintenance::{self, JobRunRecord, JobSetting};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobName {
    Decay,
    Consolidation,
}

impl JobName {
    pub const ALL: [JobName; 2] = [JobName::Decay, JobName::Consolidation];

    pub fn as_str(self) -> &'static str {
        match self {
            JobName::Decay => "decay",
            JobName::Consolidation => "consolidation",
        }
    }

    pub fn parse(name: &str) -> Option<JobName> {
        JobName::ALL.into_iter().find(|job| job.as_str() == name)
    }
}

/// A job as `GET /v1/jobs` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobView {
    pub name: &'static str,
    pub schedule: String,
    pub enabled: bool,
    pub running: bool,
    pub next_run: Option<String>,
    pub last_run: Option<RunView>,
}

/// One finished run: its result, or the error that stopped it.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<&JobRunRecord> for RunView {
    fn from(run: &JobRunRecord) -> Self {
        RunView {
            started_at: format_rfc3339(&run.started_at),
            finished_at: format_rfc3339(&run.finished_at),
            duration_ms: run.duration_ms,
            result: run.outcome.as_ref().ok().cloned(),
            error: run.outcome.as_ref().err().cloned(),
        }
    }
}

struct JobState {
    schedule: Schedule,
    enabled: bool,
    /// The scheduler's id for the cron entry, while enabled.
    entry: Option<Uuid>,
    running: bool,
    last_run: Option<JobRunRecord>,
}

struct Inner {
    /// Serialises schedule changes, so the scheduler and the state agree.
    scheduler: tokio::sync::Mutex<JobScheduler>,
    state: Mutex<BTreeMap<JobName, JobState>>,
    decayer: Addr<Decayer>,
    consolidator: Addr<Consolidator>,
    writer: StorageWriter,
    clock: Clock,
    metrics: Arc<Metrics>,
}

/// Handle to the maintenance jobs; cheap to clone.
#[derive(Clone)]
pub struct Jobs(Arc<Inner>);

/// Resets a job's `running` flag however its run ends.
struct RunningGuard<'a> {
    jobs: &'a Jobs,
    name: JobName,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        if let Some(job) = self
            .jobs
            .0
            .state
            .lock()
            .expect("jobs lock")
            .get_mut(&self.name)
        {
            job.running = false;
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JobsError {
    #[error("job scheduler: {0}")]
    Scheduler(String),
    #[error("stored schedule for job {name} is invalid: {reason}")]
    StoredSchedule { name: String, reason: String },
}

impl Jobs {
    /// Starts the scheduler with the configured schedules, overridden by
    /// those stored in the database, and the last runs stored there.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        settings: &JobsSettings,
        stored: Vec<JobSetting>,
        last_runs: Vec<JobRunRecord>,
        decayer: Addr<Decayer>,
        consolidator: Addr<Consolidator>,
        writer: StorageWriter,
        clock: Clock,
        metrics: Arc<Metrics>,
    ) -> Result<Jobs, JobsError> {
        let mut state = BTreeMap::new();
        for name in JobName::ALL {
            let configured = match name {
                JobName::Decay => &settings.decay,
                JobName::Consolidation => &settings.consolidation,
            };
            let (expression, enabled) = match stored.iter().find(|s| s.name == name.as_str()) {
                Some(setting) => (setting.schedule.clone(), setting.enabled),
                None => (configured.schedule.clone(), configured.enabled),
            };
            let schedule =
                Schedule::parse(&expression).map_err(|reason| JobsError::StoredSchedule {
                    name: name.as_str().to_string(),
                    reason,
                })?;
            let last_run = last_runs.iter().find(|r| r.name == name.as_str()).cloned();
            state.insert(
                name,
                JobState {
                    schedule,
                    enabled,
                    entry: None,
                    running: false,
                    last_run,
                },
            );
        }
        let scheduler = JobScheduler::new()
            .await
            .map_err(|e| JobsError::Scheduler(e.to_string()))?;
        let jobs = Jobs(Arc::new(Inner {
            scheduler: tokio::sync::Mutex::new(scheduler),
            state: Mutex::new(state),
            decayer,
            consolidator,
            writer,
            clock,
            metrics,
        }));
        {
            let scheduler = jobs.0.scheduler.lock().await;
            for name in JobName::ALL {
                let (expression, enabled) = {
                    let state = jobs.0.state.lock().expect("jobs lock");
                    let job = &state[&name];
                    (job.schedule.expression().to_string(), job.enabled)
                };
                if enabled {
                    let entry = jobs.schedule_entry(&scheduler, name, &expression).await?;
                    jobs.0
                        .state
                        .lock()
                        .expect("jobs lock")
                        .get_mut(&name)
                        .expect("job")
                        .entry = Some(entry);
                }
            }
            scheduler
                .start()
                .await
                .map_err(|e| JobsError::Scheduler(e.to_string()))?;
        }
        Ok(jobs)
    }

    /// Adds a cron entry that runs `name`; the entry holds a weak handle so
    /// it does not keep the jobs alive.
    async fn schedule_entry(
        &self,
        scheduler: &JobScheduler,
        name: JobName,
        expression: &str,
    ) -> Result<Uuid, JobsError> {
        let weak: Weak<Inner> = Arc::downgrade(&self.0);
        let job = Job::new_async(expression, move |_, _| {
            let weak = weak.clone();
            Box::pin(async move {
                if let Some(inner) = weak.upgrade() {
                    let jobs = Jobs(inner);
                    match jobs.run(name).await {
                        Ok(_) => {}
                        Err(ServiceError::Conflict(_)) => {
                            tracing::info!(
                                job = name.as_str(),
                                "scheduled run skipped: the job is still running"
                            )
                        }
                        Err(e) => {
                            tracing::error!(job = name.as_str(), error = %e, "scheduled run failed")
                        }
                    }
                }
            })
        })
        .map_err(|e| JobsError::Scheduler(e.to_string()))?;
        scheduler
            .add(job)
            .await
            .map_err(|e| JobsError::Scheduler(e.to_string()))
    }

    pub fn list(&self) -> Vec<JobView> {
        let now = self.0.clock.now();
        let state = self.0.state.lock().expect("jobs lock");
        state
            .iter()
            .map(|(name, job)| view(*name, job, now))
            .collect()
    }

    pub fn get(&self, name: JobName) -> JobView {
        let now = self.0.clock.now();
        let state = self.0.state.lock().expect("jobs lock");
        view(name, &state[&name], now)
    }

    /// Changes a job's schedule and/or enabled flag, stores the change, and
    /// applies it to the running scheduler at once.
    pub async fn update(
        &self,
        name: JobName,
        schedule: Option<String>,
        enabled: Option<bool>,
    ) -> Result<JobView, ServiceError> {
        let scheduler = self.0.scheduler.lock().await;
        let (current_schedule, current_enabled, old_entry) = {
            let state = self.0.state.lock().expect("jobs lock");
            let job = &state[&name];
            (job.schedule.clone(), job.enabled, job.entry)
        };
        let schedule = match schedule {
            Some(expression) => {
                Schedule::parse(&expression).map_err(|why| ValidationError::new("schedule", why))?
            }
            None => current_schedule,
        };
        let enabled = enabled.unwrap_or(current_enabled);
        let setting = JobSetting {
            name: name.as_str().to_string(),
            schedule: schedule.expression().to_string(),
            enabled,
        };
        let now = self.0.clock.now();
        self.0
            .writer
            .write(move |conn| Ok(maintenance::save_job_setting(conn, &setting, now)?))
            .await?;
        if let Some(entry) = old_entry {
            scheduler
                .remove(&entry)
                .await
                .map_err(|e| ServiceError::Unavailable(format!("job scheduler: {e}")))?;
        }
        let entry = if enabled {
            Some(
                self.schedule_entry(&scheduler, name, schedule.expression())
                    .await
                    .map_err(|e| ServiceError::Unavailable(e.to_string()))?,
            )
        } else {
            None
        };
        let mut state = self.0.state.lock().expect("jobs lock");
        let job = state.get_mut(&name).expect("job");
        job.schedule = schedule;
        job.enabled = enabled;
        job.entry = entry;
        tracing::info!(
            job = name.as_str(),
            schedule = job.schedule.expression(),
            enabled,
            "job schedule changed"
        );
        Ok(view(name, job, now))
    }

    /// Runs a job now, whether or not it is enabled; refused while a run of
    /// the same job is in progress.
    pub async fn run(&self, name: JobName) -> Result<RunView, ServiceError> {
        {
            let mut state = self.0.state.lock().expect("jobs lock");
            let job = state.get_mut(&name).expect("job");
            if job.running {
                return Err(ServiceError::Conflict(format!(
                    "job {} is already running",
                    name.as_str()
                )));
            }
            job.running = true;
        }
        let _running = RunningGuard { jobs: self, name };
        let started_at = self.0.clock.now();
        let timer = Instant::now();
        let outcome = self.execute(name, started_at).await;
        let elapsed = timer.elapsed();
        let record = JobRunRecord {
            name: name.as_str().to_string(),
            started_at,
            finished_at: self.0.clock.now().max(started_at),
            duration_ms: elapsed.as_millis() as i64,
            outcome: outcome
                .as_ref()
                .map(Clone::clone)
                .map_err(ToString::to_string),
        };
        self.0
            .metrics
            .job_finished(name.as_str(), outcome.is_ok(), elapsed.as_secs_f64());
        let stored = record.clone();
        if let Err(e) = self
            .0
            .writer
            .write(move |conn| Ok(maintenance::save_job_run(conn, &stored)?))
            .await
        {
            tracing::warn!(job = name.as_str(), error = %e, "could not store the job run");
        }
        match &outcome {
            Ok(result) => {
                tracing::info!(job = name.as_str(), duration_ms = record.duration_ms, %result, "job finished")
            }
            Err(e) => tracing::error!(job = name.as_str(), error = %e, "job failed"),
        }
        let view = RunView::from(&record);
        self.0
            .state
            .lock()
            .expect("jobs lock")
            .get_mut(&name)
            .expect("job")
            .last_run = Some(record);
        outcome.map(|_| view)
    }

    async fn execute(&self, name: JobName, now: Timestamp) -> Result<Value, ServiceError> {
        let result = match name {
            JobName::Decay => serde_json::to_value(self.0.decayer.send(ApplyDecay { now }).await??),
            JobName::Consolidation => {
                serde_json::to_value(self.0.consolidator.send(Consolidate { now }).await??)
            }
        };
        Ok(result.expect("reports serialise"))
    }

    /// Stops scheduling; runs in progress finish on their own.
    pub async fn shutdown(&self) {
        let mut scheduler = self.0.scheduler.lock().await;
        if let Err(e) = scheduler.shutdown().await {
            tracing::warn!(error = %e, "job scheduler did not shut down cleanly");
        }
    }
}

fn view(name: JobName, job: &JobState, now: Timestamp) -> JobView {
    JobView {
        name: name.as_str(),
        schedule: job.schedule.expression().to_string(),
        enabled: job.enabled,
        running: job.running,
        next_run: job
            .enabled
            .then(|| job.schedule.next_after(now))
            .flatten()
            .map(|t| format_rfc3339(&t)),
        last_run: job.last_run.as_ref().map(RunView::from),
    }
}
