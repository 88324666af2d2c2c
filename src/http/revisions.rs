//! `POST /v1/revisions/*`: supersede, fork, retract, merge, contest.

use super::RecordBody;
use crate::error::ErrorBody;
use crate::telemetry::MemoryOperation;
use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::{record_response, AppState, Endpoint, JsonBody};
use crate::domain::access::{Access, Role};
use crate::domain::record::MemoryRecord;
use crate::domain::requests::{
    ContestRequest, ForkRequest, MergeRequest, RetractRequest, RevisionRequest, SupersedeRequest,
};
use crate::error::ApiError;
use crate::service::revise::ApplyRevision;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(
            Method::POST,
            "/v1/revisions/supersede",
            Role::Revise,
            supersede,
        )
        .does(MemoryOperation::Update),
        Endpoint::new(Method::POST, "/v1/revisions/fork", Role::Revise, fork)
            .does(MemoryOperation::Update),
        Endpoint::new(Method::POST, "/v1/revisions/retract", Role::Revise, retract)
            .does(MemoryOperation::Update),
        Endpoint::new(Method::POST, "/v1/revisions/merge", Role::Revise, merge)
            .does(MemoryOperation::Update),
        Endpoint::new(Method::POST, "/v1/revisions/contest", Role::Revise, contest)
            .does(MemoryOperation::Update),
    ]
}

/// Makes a revision as the caller `access` makes; answers its record.
pub(super) async fn revised(
    state: &AppState,
    access: Access,
    request: RevisionRequest,
) -> Result<MemoryRecord, ApiError> {
    if let Some((field, record)) = request.new_record() {
        super::records::refuse_import(&access, Some(field), record)?;
    }
    let (caller, now) = (access.writer(), state.clock.now());
    let command = request.into_command(&state.new_records(&caller, now))?;
    let job = ApplyRevision {
        caller,
        now,
        policy: state.policy.clone(),
        command,
    };
    Ok(state.writer.write(job).await?)
}

/// Makes a revision and answers its record with `status`.
pub(super) async fn revise(
    state: &AppState,
    access: Access,
    request: RevisionRequest,
    status: StatusCode,
) -> Result<HttpResponse, ApiError> {
    let record = revised(state, access, request).await?;
    Ok(record_response(status, &record))
}

#[utoipa::path(
    post,
    path = "/v1/revisions/supersede",
    operation_id = "supersedeRecord",
    tag = "revisions",
    summary = "Replace a record with a new version",
    request_body = SupersedeRequest,
    responses((status = 201, description = "The record the revision made or changed", body = RecordBody), (status = 403, description = "The new record sets an import field (`id`, `status`, `audit_log`, `created_at`, `lifecycle`) without the admin role", body = ErrorBody), (status = 404, description = "No such record the caller may see", body = ErrorBody), (status = 409, description = "The record's state forbids the change (`conflict`, `failed_precondition`)", body = ErrorBody))
)]
async fn supersede(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<SupersedeRequest>,
) -> Result<HttpResponse, ApiError> {
    revise(
        &state,
        access,
        RevisionRequest::Supersede(body.0),
        StatusCode::CREATED,
    )
    .await
}

#[utoipa::path(
    post,
    path = "/v1/revisions/fork",
    operation_id = "forkRecord",
    tag = "revisions",
    summary = "Make a variant of a record beside it",
    request_body = ForkRequest,
    responses((status = 201, description = "The record the revision made or changed", body = RecordBody), (status = 403, description = "The new record sets an import field (`id`, `status`, `audit_log`, `created_at`, `lifecycle`) without the admin role", body = ErrorBody), (status = 404, description = "No such record the caller may see", body = ErrorBody), (status = 409, description = "The record's state forbids the change (`conflict`, `failed_precondition`)", body = ErrorBody))
)]
async fn fork(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<ForkRequest>,
) -> Result<HttpResponse, ApiError> {
    revise(
        &state,
        access,
        RevisionRequest::Fork(body.0),
        StatusCode::CREATED,
    )
    .await
}

#[utoipa::path(
    post,
    path = "/v1/revisions/retract",
    operation_id = "retractRecord",
    tag = "revisions",
    summary = "Withdraw a record",
    request_body = RetractRequest,
    responses((status = 200, description = "The retracted record", body = RecordBody), (status = 404, description = "No such record the caller may see", body = ErrorBody), (status = 409, description = "The record's state forbids the change (`conflict`, `failed_precondition`)", body = ErrorBody))
)]
async fn retract(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<RetractRequest>,
) -> Result<HttpResponse, ApiError> {
    revise(
        &state,
        access,
        RevisionRequest::Retract(body.0),
        StatusCode::OK,
    )
    .await
}

#[utoipa::path(
    post,
    path = "/v1/revisions/merge",
    operation_id = "mergeRecords",
    tag = "revisions",
    summary = "Merge records into one",
    request_body = MergeRequest,
    responses((status = 201, description = "The record the revision made or changed", body = RecordBody), (status = 403, description = "The new record sets an import field (`id`, `status`, `audit_log`, `created_at`, `lifecycle`) without the admin role", body = ErrorBody), (status = 404, description = "No such record the caller may see", body = ErrorBody), (status = 409, description = "The record's state forbids the change (`conflict`, `failed_precondition`)", body = ErrorBody))
)]
async fn merge(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<MergeRequest>,
) -> Result<HttpResponse, ApiError> {
    revise(
        &state,
        access,
        RevisionRequest::Merge(body.0),
        StatusCode::CREATED,
    )
    .await
}

#[utoipa::path(
    post,
    path = "/v1/revisions/contest",
    operation_id = "contestRecord",
    tag = "revisions",
    summary = "Record a contradiction of a record",
    request_body = ContestRequest,
    responses((status = 200, description = "The record, contested (or active again when resolved)", body = RecordBody), (status = 404, description = "No such record the caller may see", body = ErrorBody), (status = 409, description = "The record's state forbids the change (`conflict`, `failed_precondition`)", body = ErrorBody))
)]
async fn contest(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<ContestRequest>,
) -> Result<HttpResponse, ApiError> {
    revise(
        &state,
        access,
        RevisionRequest::Contest(body.0),
        StatusCode::OK,
    )
    .await
}
