//! The scheduler actor: owns the cron schedule of the maintenance jobs,
//! their settings and which of them is running, and sends each run to the
//! decay or consolidation actor.
//!
//! Schedules come from the configuration unless an operator changed them
//! through the API; such changes are stored in the database and win from
//! then on, across restarts. A job never runs twice at once: a scheduled
//! tick that finds its job running is skipped, and a manual run is refused.
//! Schedule changes are handled one at a time (the actor waits for the cron
//! scheduler before its next message), runs are not: a long run leaves the
//! actor free to answer.
//!
//! Several engram processes may share one database (PostgreSQL). Each run
//! first takes its job's lease in the database, so a job runs in one
//! process at a time, and a scheduled time is run by the first process to
//! fire for it only. Every `jobs.sync_interval_ms` each process reads the
//! stored schedules, runs and leases back: a schedule changed through one
//! process is the one every process fires on from then on, and any of
//! them shows which job is running and the last runs of all.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, AtomicResponse, Context, Handler, Message,
    MessageResult, ResponseActFuture, WrapFuture,
};
use futures_util::FutureExt;
use serde::Serialize;
use serde_json::Value;
use tokio_cron_scheduler::{Job, JobScheduler};
use uuid::Uuid;

use super::consolidation::{Consolidate, Consolidator};
use super::decay::{ApplyDecay, Decayer};
use super::storage::{Reader, StorageWriter};
use crate::clock::Clock;
use crate::config::JobsSettings;
use crate::domain::schedule::Schedule;
use crate::domain::time::{format_rfc3339, Timestamp};
use crate::domain::validate::ValidationError;
use crate::metrics::Metrics;
use crate::service::schedule::{
    live_since, ClaimJob, FinishRun, Heartbeat, ReadJobs, ReleaseJob, SaveSetting, StoredJobs,
};
use crate::service::ServiceError;
use crate::store::{JobClaim, JobRunRecord, JobSetting};

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
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct JobView {
    pub name: &'static str,
    pub schedule: String,
    pub enabled: bool,
    pub running: bool,
    pub next_run: Option<String>,
    pub last_run: Option<RunView>,
    /// The newest runs, newest first (`last_run` is the first of them), at
    /// most `RUNS_KEPT`.
    pub recent_runs: Vec<RunView>,
}

/// How many runs of each job are kept and shown.
pub const RUNS_KEPT: usize = 10;

/// One finished run: its result, or the error that stopped it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
    /// The cron scheduler's id for the entry, while enabled.
    entry: Option<Uuid>,
    running: bool,
    /// Another process holds the job's lease (as of the last sync).
    running_elsewhere: bool,
    /// Newest first, at most `RUNS_KEPT`.
    runs: VecDeque<JobRunRecord>,
}

#[derive(Debug, thiserror::Error)]
pub enum JobsError {
    #[error("job scheduler: {0}")]
    Scheduler(String),
    #[error("the schedule of job {name} is refused: {reason}")]
    StoredSchedule { name: String, reason: String },
}

/// What the scheduler sends runs to, and records them with.
pub struct SchedulerDeps {
    pub decayer: Addr<Decayer>,
    pub consolidator: Addr<Consolidator>,
    pub writer: StorageWriter,
    pub reader: Reader,
    pub clock: Clock,
    pub metrics: Arc<Metrics>,
    /// This process, as job leases name it.
    pub instance: String,
    /// How many processes share the database, as the last heartbeat
    /// found.
    pub instances: Arc<std::sync::atomic::AtomicUsize>,
}

/// How long a run holds its job's lease unless it gives it back first: a
/// process that dies in a run leaves the job to the others after this.
const LEASE: chrono::Duration = chrono::Duration::hours(1);

/// The scheduled time a tick at `wall` is for: the schedule's occurrence
/// at most half the shortest interval before it, the same for every process
/// whose clock is that close.
fn scheduled_time(schedule: &Schedule, wall: Timestamp, min_interval_seconds: u64) -> Timestamp {
    let tolerance = chrono::Duration::seconds((min_interval_seconds / 2).max(1) as i64);
    schedule
        .next_after(wall - tolerance)
        .filter(|t| *t <= wall + tolerance)
        .unwrap_or(wall)
}

pub struct Scheduler {
    cron: JobScheduler,
    jobs: BTreeMap<JobName, JobState>,
    deps: Arc<SchedulerDeps>,
    /// The shortest time allowed between two runs of a job.
    min_interval_seconds: u64,
    settings: JobsSettings,
}

impl Actor for Scheduler {
    type Context = Context<Self>;
}

impl Scheduler {
    /// Starts the scheduler with the configured schedules, overridden by
    /// those stored in the database, and the last runs stored there.
    pub async fn start(
        settings: &JobsSettings,
        stored: Vec<JobSetting>,
        recent_runs: Vec<JobRunRecord>,
        deps: SchedulerDeps,
    ) -> Result<Addr<Scheduler>, JobsError> {
        let mut jobs = BTreeMap::new();
        for name in JobName::ALL {
            let configured = match name {
                JobName::Decay => &settings.decay,
                JobName::Consolidation => &settings.consolidation,
            };
            let now = deps.clock.now();
            let min_interval = settings.min_interval_seconds;
            let configured_schedule = || {
                Schedule::parse_checked(&configured.schedule, now, min_interval).map_err(|reason| {
                    JobsError::StoredSchedule {
                        name: name.as_str().to_string(),
                        reason,
                    }
                })
            };
            let (schedule, enabled) = match stored.iter().find(|s| s.name == name.as_str()) {
                Some(setting) => {
                    match Schedule::parse_checked(&setting.schedule, now, min_interval) {
                        Ok(schedule) => (schedule, setting.enabled),
                        // Stored before the rules it breaks existed: the
                        // configured schedule serves instead, and says so.
                        Err(reason) => {
                            tracing::warn!(
                                job = name.as_str(),
                                stored = setting.schedule.as_str(),
                                %reason,
                                "stored schedule refused; using the configured one"
                            );
                            (configured_schedule()?, setting.enabled)
                        }
                    }
                }
                None => (configured_schedule()?, configured.enabled),
            };
            let runs = recent_runs
                .iter()
                .filter(|r| r.name == name.as_str())
                .take(RUNS_KEPT)
                .cloned()
                .collect();
            jobs.insert(
                name,
                JobState {
                    schedule,
                    enabled,
                    entry: None,
                    running: false,
                    running_elsewhere: false,
                    runs,
                },
            );
        }
        let cron = JobScheduler::new()
            .await
            .map_err(|e| JobsError::Scheduler(e.to_string()))?;
        let sync_interval = std::time::Duration::from_millis(settings.sync_interval_ms);
        let addr = Scheduler {
            cron: cron.clone(),
            jobs,
            deps: Arc::new(deps),
            min_interval_seconds: settings.min_interval_seconds,
            settings: settings.clone(),
        }
        .start();
        addr.do_send(StartSync(sync_interval));
        for name in JobName::ALL {
            addr.send(Arm { name })
                .await
                .map_err(|e| JobsError::Scheduler(e.to_string()))?
                .map_err(|e| JobsError::Scheduler(e.to_string()))?;
        }
        cron.start()
            .await
            .map_err(|e| JobsError::Scheduler(e.to_string()))?;
        Ok(addr)
    }

    fn view(&self, name: JobName) -> JobView {
        let job = &self.jobs[&name];
        let now = self.deps.clock.now();
        JobView {
            name: name.as_str(),
            schedule: job.schedule.expression().to_string(),
            enabled: job.enabled,
            running: job.running || job.running_elsewhere,
            next_run: job
                .enabled
                .then(|| job.schedule.next_after(now))
                .flatten()
                .map(|t| format_rfc3339(&t)),
            last_run: job.runs.front().map(RunView::from),
            recent_runs: job.runs.iter().map(RunView::from).collect(),
        }
    }
}

/// A cron entry that asks the scheduler for a run of `name`.
fn cron_entry(addr: Addr<Scheduler>, name: JobName, expression: &str) -> Result<Job, String> {
    Job::new_async(expression, move |_, _| {
        let addr = addr.clone();
        Box::pin(async move {
            let run = RunJob {
                name,
                scheduled: true,
            };
            match addr.send(run).await {
                Ok(Ok(_)) | Err(_) => {}
                Ok(Err(ServiceError::Conflict(why))) => tracing::info!(
                    job = name.as_str(),
                    reason = why.as_str(),
                    "scheduled run skipped"
                ),
                Ok(Err(e)) => {
                    tracing::error!(job = name.as_str(), error = %e, "scheduled run failed")
                }
            }
        })
    })
    .map_err(|e| e.to_string())
}

/// Puts the cron entry of a job in line with its settings.
#[derive(Message)]
#[rtype(result = "Result<(), ServiceError>")]
struct Arm {
    name: JobName,
}

impl Handler<Arm> for Scheduler {
    type Result = AtomicResponse<Self, Result<(), ServiceError>>;

    fn handle(&mut self, msg: Arm, ctx: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.rearm(msg.name, ctx))
    }
}

impl Scheduler {
    /// Replaces the cron entry of `name` by one for its current settings
    /// (none while disabled).
    fn rearm(
        &mut self,
        name: JobName,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, Result<(), ServiceError>> {
        let job = self.jobs.get_mut(&name).expect("every job has a state");
        let old = job.entry.take();
        let entry = job
            .enabled
            .then(|| cron_entry(ctx.address(), name, job.schedule.expression()));
        let cron = self.cron.clone();
        Box::pin(
            async move {
                let scheduler_error =
                    |e: String| ServiceError::Unavailable(format!("job scheduler: {e}"));
                if let Some(old) = old {
                    cron.remove(&old)
                        .await
                        .map_err(|e| scheduler_error(e.to_string()))?;
                }
                match entry {
                    None => Ok::<_, ServiceError>(None),
                    Some(entry) => {
                        let entry = entry.map_err(scheduler_error)?;
                        let id = cron
                            .add(entry)
                            .await
                            .map_err(|e| scheduler_error(e.to_string()))?;
                        Ok(Some(id))
                    }
                }
            }
            .into_actor(self)
            .map(move |armed, act, _| {
                act.jobs
                    .get_mut(&name)
                    .expect("every job has a state")
                    .entry = armed?;
                Ok(())
            }),
        )
    }
}

/// Every job as operators see it.
#[derive(Message)]
#[rtype(result = "Vec<JobView>")]
pub struct ListJobs;

impl Handler<ListJobs> for Scheduler {
    type Result = MessageResult<ListJobs>;

    fn handle(&mut self, _: ListJobs, _: &mut Self::Context) -> Self::Result {
        MessageResult(JobName::ALL.iter().map(|name| self.view(*name)).collect())
    }
}

/// Changes a job's schedule and/or enabled flag, stores the change, and
/// applies it to the cron schedule at once.
#[derive(Message)]
#[rtype(result = "Result<JobView, ServiceError>")]
pub struct UpdateJob {
    pub name: JobName,
    pub schedule: Option<String>,
    pub enabled: Option<bool>,
}

impl Handler<UpdateJob> for Scheduler {
    type Result = AtomicResponse<Self, Result<JobView, ServiceError>>;

    #[tracing::instrument(name = "update_job", level = "debug", skip_all)]
    fn handle(&mut self, msg: UpdateJob, _: &mut Self::Context) -> Self::Result {
        let name = msg.name;
        let job = &self.jobs[&name];
        let schedule = match msg.schedule {
            Some(expression) => match Schedule::parse_checked(
                &expression,
                self.deps.clock.now(),
                self.min_interval_seconds,
            ) {
                Ok(schedule) => schedule,
                Err(why) => {
                    let error = ValidationError::new("schedule", why).into();
                    return AtomicResponse::new(Box::pin(actix::fut::ready(Err(error))));
                }
            },
            None => job.schedule.clone(),
        };
        let enabled = msg.enabled.unwrap_or(job.enabled);
        let setting = JobSetting {
            name: name.as_str().to_string(),
            schedule: schedule.expression().to_string(),
            enabled,
        };
        let now = self.deps.clock.now();
        let writer = self.deps.writer.clone();
        AtomicResponse::new(Box::pin(
            async move { writer.write(SaveSetting { setting, now }).await }
                .into_actor(self)
                .map(move |saved, act, _| {
                    saved?;
                    let job = act.jobs.get_mut(&name).expect("every job has a state");
                    job.schedule = schedule;
                    job.enabled = enabled;
                    tracing::info!(
                        job = name.as_str(),
                        schedule = job.schedule.expression(),
                        enabled,
                        "job schedule changed"
                    );
                    Ok(())
                })
                .then(
                    move |saved: Result<(), ServiceError>, act, ctx| match saved {
                        Ok(()) => act.rearm(name, ctx),
                        Err(e) => Box::pin(actix::fut::ready(Err(e))),
                    },
                )
                .map(move |armed, act, _| armed.map(|()| act.view(name))),
        ))
    }
}

/// Runs a job now, whether or not it is enabled; refused while a run of
/// the same job is in progress.
#[derive(Message)]
#[rtype(result = "Result<RunView, ServiceError>")]
pub struct RunJob {
    pub name: JobName,
    /// Fired by the schedule (then run once per scheduled time across
    /// processes), not asked for.
    pub scheduled: bool,
}

impl Handler<RunJob> for Scheduler {
    type Result = ResponseActFuture<Self, Result<RunView, ServiceError>>;

    #[tracing::instrument(name = "run_job", level = "debug", skip_all)]
    fn handle(&mut self, msg: RunJob, _: &mut Self::Context) -> Self::Result {
        let name = msg.name;
        let job = self.jobs.get_mut(&name).expect("every job has a state");
        if job.running {
            let refused =
                ServiceError::Conflict(format!("job {} is already running", name.as_str()));
            return Box::pin(actix::fut::ready(Err(refused)));
        }
        job.running = true;
        let deps = self.deps.clone();
        let wall = chrono::Utc::now();
        let tick = msg
            .scheduled
            .then(|| scheduled_time(&job.schedule, wall, self.min_interval_seconds));
        let live_since = live_since(&self.settings, wall);
        Box::pin(
            async move {
                let now = deps.clock.now();
                let claim = JobClaim {
                    name: name.as_str().to_string(),
                    holder: deps.instance.clone(),
                    now,
                    until: now + LEASE,
                    live_since,
                    tick,
                };
                if !deps.writer.write(ClaimJob(claim)).await? {
                    return Err(ServiceError::Conflict(match tick {
                        Some(_) => format!(
                            "job {} for this scheduled time was taken by another live process \
                             (it runs there, or ran)",
                            name.as_str()
                        ),
                        None => format!("job {} is running in another process", name.as_str()),
                    }));
                }
                let started_at = deps.clock.now();
                let timer = Instant::now();
                // A run that panics gives its lease back like one that fails.
                let outcome = std::panic::AssertUnwindSafe(execute(&deps, name, started_at))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        Err(ServiceError::Internal(format!("job {} panicked", name.as_str())))
                    });
                let elapsed = timer.elapsed();
                let record = JobRunRecord {
                    name: name.as_str().to_string(),
                    started_at,
                    finished_at: deps.clock.now().max(started_at),
                    duration_ms: elapsed.as_millis() as i64,
                    outcome: outcome.as_ref().map(Clone::clone).map_err(ToString::to_string),
                };
                deps.metrics
                    .job_finished(name.as_str(), outcome.is_ok(), elapsed.as_secs_f64());
                let finished = FinishRun {
                    run: record.clone(),
                    holder: deps.instance.clone(),
                    kept: RUNS_KEPT,
                };
                if let Err(e) = deps.writer.write(finished).await
                {
                    tracing::warn!(job = name.as_str(), error = %e, "could not store the job run");
                    // The lease at least is given back (a failing disk may
                    // refuse the run's record and take this small change).
                    // Should this fail too, this process may claim its own
                    // lease again, and a restart on SQLite clears it.
                    let release = ReleaseJob {
                        job: name.as_str().to_string(),
                        holder: deps.instance.clone(),
                    };
                    if let Err(e) = deps.writer.write(release).await
                    {
                        tracing::warn!(job = name.as_str(), error = %e, "could not give the job's lease back");
                    }
                }
                match &outcome {
                    Ok(result) => {
                        tracing::info!(job = name.as_str(), duration_ms = record.duration_ms, %result, "job finished")
                    }
                    Err(e) => tracing::error!(job = name.as_str(), error = %e, "job failed"),
                }
                Ok((outcome, record))
            }
            .into_actor(self)
            .map(move |ran, act, _| {
                let job = act.jobs.get_mut(&name).expect("every job has a state");
                job.running = false;
                let (outcome, record) = ran?;
                let view = RunView::from(&record);
                job.runs.push_front(record);
                job.runs.truncate(RUNS_KEPT);
                outcome.map(|_| view)
            }),
        )
    }
}

async fn execute(
    deps: &SchedulerDeps,
    name: JobName,
    now: Timestamp,
) -> Result<Value, ServiceError> {
    let unreachable = |_| ServiceError::Unavailable("the service is shutting down".to_string());
    let result = match name {
        JobName::Decay => serde_json::to_value(
            deps.decayer
                .send(ApplyDecay { now })
                .await
                .map_err(unreachable)??,
        ),
        JobName::Consolidation => serde_json::to_value(
            deps.consolidator
                .send(Consolidate { now })
                .await
                .map_err(unreachable)??,
        ),
    };
    Ok(result.expect("reports serialise"))
}

/// Stops scheduling; runs in progress finish on their own.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopSchedule;

impl Handler<StopSchedule> for Scheduler {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: StopSchedule, _: &mut Self::Context) -> Self::Result {
        let mut cron = self.cron.clone();
        AtomicResponse::new(Box::pin(
            async move {
                if let Err(e) = cron.shutdown().await {
                    tracing::warn!(error = %e, "job scheduler did not shut down cleanly");
                }
            }
            .into_actor(self),
        ))
    }
}

/// Starts reading the stored job state back every interval.
#[derive(Message)]
#[rtype(result = "()")]
struct StartSync(std::time::Duration);

impl Handler<StartSync> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: StartSync, ctx: &mut Self::Context) {
        ctx.run_interval(msg.0, |_, ctx| ctx.notify(SyncJobs));
    }
}

/// Reads the stored job state and takes it on.
#[derive(Message)]
#[rtype(result = "()")]
struct SyncJobs;

impl Handler<SyncJobs> for Scheduler {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: SyncJobs, _: &mut Self::Context) -> Self::Result {
        let reader = self.deps.reader.clone();
        let writer = self.deps.writer.clone();
        let now = self.deps.clock.now();
        let live_since = live_since(&self.settings, chrono::Utc::now());
        let heartbeat = Heartbeat {
            instance: self.deps.instance.clone(),
            settings: self.settings.clone(),
        };
        let instances = self.deps.instances.clone();
        AtomicResponse::new(Box::pin(
            async move {
                match writer.write(heartbeat).await {
                    Ok(live) => instances.store(live, std::sync::atomic::Ordering::Relaxed),
                    Err(e) => tracing::warn!(error = %e, "could not record this process as alive"),
                }
                reader
                    .read(ReadJobs {
                        now,
                        live_since,
                        runs_kept: RUNS_KEPT,
                    })
                    .await
            }
            .into_actor(self)
            .map(|stored, act, ctx| match stored {
                Ok(stored) => {
                    let (changed, orphaned) = act.take_stored(stored);
                    for name in changed {
                        ctx.notify(Arm { name });
                    }
                    for name in orphaned {
                        act.take_over(name, ctx);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not read the stored job state"),
            }),
        ))
    }
}

impl Scheduler {
    /// Runs job `name`, whose lease a dead process holds: the run it did
    /// not finish is made here (once across the live processes: the first
    /// to claim the dead lease takes it).
    fn take_over(&mut self, name: JobName, ctx: &mut Context<Self>) {
        let job = self.jobs.get(&name).expect("every job has a state");
        if job.running || !job.enabled {
            return;
        }
        tracing::warn!(
            job = name.as_str(),
            "the process running this job stopped without finishing it; running it here"
        );
        let run = RunJob {
            name,
            scheduled: true,
        };
        ctx.spawn(
            ctx.address()
                .send(run)
                .into_actor(self)
                .map(move |ran, _, _| match ran {
                    Ok(Ok(_)) | Err(_) => {}
                    Ok(Err(e)) => {
                        tracing::info!(job = name.as_str(), reason = %e, "taking over skipped")
                    }
                }),
        );
    }

    /// Takes on the stored job state; answers the jobs whose schedule
    /// changed (their cron entries are to be made again) and those whose
    /// lease a dead process holds.
    fn take_stored(&mut self, stored: StoredJobs) -> (Vec<JobName>, Vec<JobName>) {
        let now = self.deps.clock.now();
        let mut changed = Vec::new();
        let mut orphaned = Vec::new();
        for (name, job) in self.jobs.iter_mut() {
            let setting = stored.settings.iter().find(|s| s.name == name.as_str());
            if let Some(setting) = setting
                .filter(|s| s.schedule != job.schedule.expression() || s.enabled != job.enabled)
            {
                // A stored schedule the rules refuse was set aside at
                // start-up; it stays aside.
                if let Ok(schedule) =
                    Schedule::parse_checked(&setting.schedule, now, self.min_interval_seconds)
                {
                    job.schedule = schedule;
                    job.enabled = setting.enabled;
                    tracing::info!(
                        job = name.as_str(),
                        schedule = job.schedule.expression(),
                        enabled = job.enabled,
                        "job schedule changed in another process"
                    );
                    changed.push(*name);
                }
            }
            let runs: VecDeque<JobRunRecord> = stored
                .runs
                .iter()
                .filter(|r| r.name == name.as_str())
                .take(RUNS_KEPT)
                .cloned()
                .collect();
            if !runs.is_empty() {
                job.runs = runs;
            }
            let elsewhere = stored
                .held
                .iter()
                .filter(|lease| lease.name == name.as_str() && lease.holder != self.deps.instance);
            job.running_elsewhere = false;
            for lease in elsewhere {
                if lease.live {
                    job.running_elsewhere = true;
                } else {
                    orphaned.push(*name);
                }
            }
        }
        (changed, orphaned)
    }
}
