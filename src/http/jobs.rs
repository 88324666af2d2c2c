//! `/v1/jobs`: the maintenance jobs, their schedules, and manual runs.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::{resource, AppState, JsonBody};
use crate::actors::scheduler::{JobName, JobView, ListJobs, RunJob, RunView, UpdateJob};
use crate::domain::access::Role;
use crate::error::{ApiError, Code};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        "/v1/jobs",
        Method::GET,
        Role::Admin,
        web::route().to(list),
    ))
    .service(resource(
        "/v1/jobs/{name}",
        Method::PUT,
        Role::Admin,
        web::route().to(update),
    ))
    .service(resource(
        "/v1/jobs/{name}/run",
        Method::POST,
        Role::Admin,
        web::route().to(run),
    ));
}

#[derive(Serialize)]
struct JobsBody {
    jobs: Vec<JobView>,
}

#[derive(Serialize)]
struct JobBody {
    job: JobView,
}

#[derive(Serialize)]
struct RunBody<'a> {
    job: &'a str,
    #[serde(flatten)]
    run: RunView,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateJobBody {
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

async fn list(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let jobs = state.scheduler.send(ListJobs).await?;
    Ok(HttpResponse::Ok().json(JobsBody { jobs }))
}

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

async fn run(
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = job_name(&name)?;
    let run = state.scheduler.send(RunJob { name }).await??;
    Ok(HttpResponse::Ok().json(RunBody {
        job: name.as_str(),
        run,
    }))
}
