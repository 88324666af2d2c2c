//! `POST /v1/records`: a whole record, validated and completed by policy;
//! and the per-record calls: reinforce, penalize, history.

use super::RecordBody;
use crate::error::ErrorBody;
use crate::telemetry::MemoryOperation;
use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::revisions::revise;
use super::{record_response, AppState, Endpoint, JsonBody};
use crate::domain::access::{Access, Role};
use crate::domain::new_record::NewRecord;
use crate::domain::record::{new_record_id, Attribution};
use crate::domain::requests::{
    PenalizeRequest, ReinforceRequest, RevisionRequest, TrustOnlyRequest,
};
use crate::domain::revision::record_id;
use crate::error::{ApiError, Code};
use crate::service::ingest::StoreRecord;
use crate::service::retrieval::{History, ReadHistory};

/// Actor named in the `create` audit entry when the record names no
/// creator.
const DEFAULT_ACTOR: &str = "api";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::POST, "/v1/records", Role::Write, create)
            .does(MemoryOperation::Create),
        Endpoint::new(
            Method::POST,
            "/v1/records/{id}/reinforce",
            Role::Write,
            reinforce,
        )
        .does(MemoryOperation::Update),
        Endpoint::new(
            Method::POST,
            "/v1/records/{id}/penalize",
            Role::Write,
            penalize,
        )
        .does(MemoryOperation::Update),
        Endpoint::new(
            Method::POST,
            "/v1/records/{id}/history",
            Role::Read,
            history,
        )
        .does(MemoryOperation::Search),
    ]
}

/// Refuses a new record (inside request field `within`, if any) that sets
/// what only an import may, unless the caller is an admin: a chosen id,
/// status, audit log, creation time or lifecycle. The same rule for every
/// route that makes a record from a client's, so a revision cannot bring in
/// what `POST /v1/records` refuses, nor probe hidden records' ids.
pub(super) fn refuse_import(
    access: &Access,
    within: Option<&str>,
    record: &NewRecord,
) -> Result<(), ApiError> {
    if access.may(Role::Admin) {
        return Ok(());
    }
    match record.import_field() {
        None => Ok(()),
        Some(field) => {
            let field = match within {
                Some(outer) => format!("{outer}.{field}"),
                None => field.to_string(),
            };
            Err(ApiError::new(
                Code::PermissionDenied,
                format!("{field}: setting it imports a record, which needs the admin role"),
            ))
        }
    }
}

#[utoipa::path(
    post,
    path = "/v1/records",
    operation_id = "createRecord",
    tag = "records",
    summary = "Store a whole record, completed by policy",
    request_body = NewRecord,
    responses((status = 201, description = "The record stored", body = RecordBody), (status = 404, description = "A relation's target is no record the caller may see", body = ErrorBody), (status = 409, description = "A record with that id exists (`conflict`)", body = ErrorBody))
)]
async fn create(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<NewRecord>,
) -> Result<HttpResponse, ApiError> {
    let record = body.0;
    refuse_import(&access, None, &record)?;
    let caller = access.writer();
    let claimed = record
        .provenance
        .as_ref()
        .and_then(|p| p.created_by.as_deref())
        .filter(|actor| !actor.is_empty())
        .unwrap_or(DEFAULT_ACTOR);
    let by = Attribution::new(caller.actor(claimed), "record created");
    let now = state.clock.now();
    let record = record.into_record(&state.policy, &by, now, new_record_id)?;
    let record = state
        .writer
        .write(StoreRecord::new(caller, now, record))
        .await?;
    Ok(record_response(StatusCode::CREATED, &record))
}

#[utoipa::path(
    post,
    path = "/v1/records/{id}/reinforce",
    operation_id = "reinforceRecord",
    tag = "records",
    summary = "Raise a record's salience (feedback)",
    params(("id" = String, Path, description = "The record's id")),
    request_body = ReinforceRequest,
    responses((status = 200, description = "The record", body = RecordBody), (status = 404, description = "No such record the caller may see", body = ErrorBody), (status = 409, description = "The record's state forbids the change (`conflict`, `failed_precondition`)", body = ErrorBody))
)]
async fn reinforce(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<ReinforceRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = RevisionRequest::Reinforce {
        id: id.into_inner(),
        request: body.0,
    };
    revise(&state, access, request, StatusCode::OK).await
}

#[utoipa::path(
    post,
    path = "/v1/records/{id}/penalize",
    operation_id = "penalizeRecord",
    tag = "records",
    summary = "Lower a record's salience (feedback)",
    params(("id" = String, Path, description = "The record's id")),
    request_body = PenalizeRequest,
    responses((status = 200, description = "The record", body = RecordBody), (status = 404, description = "No such record the caller may see", body = ErrorBody), (status = 409, description = "The record's state forbids the change (`conflict`, `failed_precondition`)", body = ErrorBody))
)]
async fn penalize(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<PenalizeRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = RevisionRequest::Penalize {
        id: id.into_inner(),
        request: body.0,
    };
    revise(&state, access, request, StatusCode::OK).await
}

#[utoipa::path(
    post,
    path = "/v1/records/{id}/history",
    operation_id = "getRecordHistory",
    tag = "records",
    summary = "A record's revision chain, oldest first",
    params(("id" = String, Path, description = "The record's id")),
    request_body = TrustOnlyRequest,
    responses((status = 200, description = "The chain: `chain` the stored versions, `erased` what stays of erased ones", body = History), (status = 404, description = "No such record the caller may see", body = ErrorBody))
)]
async fn history(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<TrustOnlyRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = record_id("id", id.into_inner())?;
    let history = state
        .reader
        .read(ReadHistory {
            caller: access.reader(body.0.trust)?,
            now: state.clock.now(),
            id,
        })
        .await?;
    Ok(HttpResponse::Ok().json(history))
}
