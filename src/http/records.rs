//! `POST /v1/records`: a whole record, validated and completed by policy;
//! and the per-record calls: reinforce, penalize, history.

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::requests::{PenalizeRequest, ReinforceRequest, RevisionRequest, TrustOnlyRequest};
use super::revisions::revise;
use super::{record_response, resource, writer_caller, AppState, JsonBody};
use crate::actors::ingestion::CreateRecord;
use crate::actors::retrieval::RetrieveHistory;
use crate::domain::policy::NewRecord;
use crate::domain::record::{Attribution, MemoryRecord};
use crate::domain::revision::record_id;
use crate::error::ApiError;

/// Actor named in the `create` audit entry when the record names no
/// creator.
const DEFAULT_ACTOR: &str = "api";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        "/v1/records",
        Method::POST,
        web::route().to(create),
    ))
    .service(resource(
        "/v1/records/{id}/reinforce",
        Method::POST,
        web::route().to(reinforce),
    ))
    .service(resource(
        "/v1/records/{id}/penalize",
        Method::POST,
        web::route().to(penalize),
    ))
    .service(resource(
        "/v1/records/{id}/history",
        Method::POST,
        web::route().to(history),
    ));
}

async fn create(
    state: web::Data<AppState>,
    body: JsonBody<NewRecord>,
) -> Result<HttpResponse, ApiError> {
    let record = body.0;
    let actor = record
        .provenance
        .as_ref()
        .and_then(|p| p.created_by.clone())
        .filter(|actor| !actor.is_empty())
        .unwrap_or_else(|| DEFAULT_ACTOR.to_string());
    let record = state
        .ingestor
        .send(CreateRecord {
            caller: writer_caller(),
            record,
            by: Attribution::new(actor, "record created"),
        })
        .await??;
    Ok(record_response(StatusCode::CREATED, &record))
}

async fn reinforce(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: JsonBody<ReinforceRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = RevisionRequest::Reinforce {
        id: id.into_inner(),
        request: body.0,
    };
    revise(&state, request, StatusCode::OK).await
}

async fn penalize(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: JsonBody<PenalizeRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = RevisionRequest::Penalize {
        id: id.into_inner(),
        request: body.0,
    };
    revise(&state, request, StatusCode::OK).await
}

#[derive(serde::Serialize)]
struct ChainBody {
    chain: Vec<MemoryRecord>,
}

async fn history(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: JsonBody<TrustOnlyRequest>,
) -> Result<HttpResponse, ApiError> {
    let chain = state
        .retriever
        .send(RetrieveHistory {
            id: record_id("id", id.into_inner())?,
            trust: body.0.trust,
        })
        .await??;
    Ok(HttpResponse::Ok().json(ChainBody { chain }))
}
