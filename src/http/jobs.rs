//! `/v1/jobs`: the maintenance jobs, their schedules, and manual runs.

use crate::error::ErrorBody;
use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::{AppState, Endpoint, JsonBody};
use crate::actors::scheduler::{JobName, JobView, ListJobs, RunJob, RunView, UpdateJob};
use crate::domain::access::Role;
use crate::error::{ApiError, Code};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::GET, "/v1/jobs", Role::Admin, list),
        Endpoint::new(Method::PUT, "/v1/jobs/{name}", Role::Admin, update),
        Endpoint::new(Method::POST, "/v1/jobs/{name}/run", Role::Admin, run),
    ]
}

#[derive(Serialize, utoipa::ToSchema)]
struct JobsBody {
    jobs: Vec<JobView>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct JobBody {
    job: JobView,
}

#[derive(Serialize, utoipa::ToSchema)]
struct RunBody<'a> {
    job: &'a str,
    #[serde(flatten)]
    run: RunView,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"schedule": "0 */15 * * * *", "enabled": true}))]
struct UpdateJobBody {
    /// A cron expression of 6 fields, seconds first, in UTC, that runs
    /// within the next 366 days and never twice within
    /// `jobs.min_interval_seconds` (60 s by default); otherwise 400 with
    /// the reason.
    #[serde(default)]
    schedule: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
}

fn job_name(name: &str) -> Result<JobName, ApiError> {
    JobName::parse(name).ok_or_else(|| {
        let known: Vec<&str> = JobName::ALL.iter().map(|j| j.as_str()).collect();
        ApiError::new(
            Code::NotFound,
            format!("no job named {name:?}; jobs are {}", known.join(", ")),
        )
    })
}

#[utoipa::path(
    get,
    path = "/v1/jobs",
    operation_id = "listJobs",
    tag = "jobs",
    summary = "The maintenance jobs, their schedules and last runs",
    responses((status = 200, description = "Every job", body = JobsBody, example = json!({"jobs": [
        {"name": "decay", "schedule": "0 0 * * * *", "enabled": true, "running": false, "next_run": "2026-01-01T01:00:00Z",
         "last_run": {"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:02Z", "duration_ms": 1840, "result": {"scanned": 120000, "decayed": 118500, "pruned": 37, "chunks": 61, "topics_decayed": 900}}, "recent_runs": [{"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:02Z", "duration_ms": 1840, "result": {"scanned": 120000, "decayed": 118500, "pruned": 37, "chunks": 61, "topics_decayed": 900}}]},
        {"name": "consolidation", "schedule": "0 0 */6 * * *", "enabled": false, "running": false, "next_run": null,
         "last_run": null, "recent_runs": []}
    ]})))
)]
async fn list(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let jobs = state.scheduler.send(ListJobs).await?;
    Ok(HttpResponse::Ok().json(JobsBody { jobs }))
}

#[utoipa::path(
    put,
    path = "/v1/jobs/{name}",
    operation_id = "updateJob",
    tag = "jobs",
    summary = "Change a job's schedule or turn it on or off",
    params(("name" = String, Path, description = "`decay` or `consolidation`")),
    request_body = UpdateJobBody,
    responses((status = 200, description = "The job as it now stands", body = JobBody), (status = 404, description = "No such job", body = ErrorBody))
)]
async fn update(
    state: web::Data<AppState>,
    name: web::Path<String>,
    body: JsonBody<UpdateJobBody>,
) -> Result<HttpResponse, ApiError> {
    let name = job_name(&name)?;
    let job = state
        .scheduler
        .send(UpdateJob {
            name,
            schedule: body.0.schedule,
            enabled: body.0.enabled,
        })
        .await??;
    Ok(HttpResponse::Ok().json(JobBody { job }))
}

#[utoipa::path(
    post,
    path = "/v1/jobs/{name}/run",
    operation_id = "runJob",
    tag = "jobs",
    summary = "Run a job now and wait for its result",
    params(("name" = String, Path, description = "`decay` or `consolidation`")),
    responses((status = 200, description = "The run", body = RunBody, example = json!({"job": "consolidation", "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:00Z", "duration_ms": 12,
        "result": {"episodic_compressed": 3, "semantic_extracted": 1, "competence_extracted": 1, "plan_graphs_extracted": 2, "duplicates_resolved": 0}})), (status = 404, description = "No such job", body = ErrorBody), (status = 409, description = "The job is running already", body = ErrorBody))
)]
async fn run(
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = job_name(&name)?;
    let run = state
        .scheduler
        .send(RunJob {
            name,
            scheduled: false,
        })
        .await??;
    Ok(HttpResponse::Ok().json(RunBody {
        job: name.as_str(),
        run,
    }))
}
