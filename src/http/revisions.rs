//! `POST /v1/revisions/*`: supersede, fork, retract, merge, contest.

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::requests::{
    ContestRequest, ForkRequest, MergeRequest, RetractRequest, RevisionRequest, SupersedeRequest,
};
use super::{record_response, resource, AppState, JsonBody};
use crate::actors::revision::Revise;
use crate::domain::access::{Access, Role};
use crate::error::ApiError;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        "/v1/revisions/supersede",
        Method::POST,
        Role::Revise,
        web::route().to(supersede),
    ))
    .service(resource(
        "/v1/revisions/fork",
        Method::POST,
        Role::Revise,
        web::route().to(fork),
    ))
    .service(resource(
        "/v1/revisions/retract",
        Method::POST,
        Role::Revise,
        web::route().to(retract),
    ))
    .service(resource(
        "/v1/revisions/merge",
        Method::POST,
        Role::Revise,
        web::route().to(merge),
    ))
    .service(resource(
        "/v1/revisions/contest",
        Method::POST,
        Role::Revise,
        web::route().to(contest),
    ));
}

/// Sends a revision and answers its record with `status`.
pub(super) async fn revise(
    state: &AppState,
    access: Access,
    request: RevisionRequest,
    status: StatusCode,
) -> Result<HttpResponse, ApiError> {
    let record = state
        .reviser
        .send(Revise {
            caller: access.writer(),
            check: Box::new(move |cx| request.into_command(cx)),
        })
        .await??;
    Ok(record_response(status, &record))
}

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
