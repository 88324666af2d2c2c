//! `POST /v1/retrieve` and `POST /v1/retrieve/{id}`: trust-gated reads.

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::requests::{GraphRequest, RetrieveRequest, TrustOnlyRequest};
use super::{record_response, resource, AppState, JsonBody};
use crate::actors::retrieval::{ReadAs, Retrieve, RetrieveGraph};
use crate::domain::access::{Access, Role};
use crate::domain::revision::record_id;
use crate::error::ApiError;
use crate::service;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        "/v1/retrieve",
        Method::POST,
        Role::Read,
        web::route().to(retrieve),
    ))
    .service(resource(
        "/v1/retrieve/graph",
        Method::POST,
        Role::Read,
        web::route().to(graph),
    ))
    .service(resource(
        "/v1/retrieve/{id}",
        Method::POST,
        Role::Read,
        web::route().to(retrieve_by_id),
    ));
}

async fn retrieve(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<RetrieveRequest>,
) -> Result<HttpResponse, ApiError> {
    let result = state
        .retriever
        .send(Retrieve {
            check: Box::new(move |max_limit| body.0.into_retrieval(&access, max_limit)),
        })
        .await??;
    Ok(HttpResponse::Ok().json(result))
}

async fn retrieve_by_id(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<TrustOnlyRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = record_id("id", id.into_inner())?;
    let record = state
        .retriever
        .send(ReadAs {
            caller: access.reader(body.0.trust)?,
            work: Box::new(move |tx, caller, now| {
                service::retrieval::retrieve_by_id(tx, caller, now, &id)
            }),
        })
        .await??;
    Ok(record_response(StatusCode::OK, &record))
}

async fn graph(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<GraphRequest>,
) -> Result<HttpResponse, ApiError> {
    let graph = state
        .retriever
        .send(RetrieveGraph {
            check: Box::new(move |max_limit| body.0.into_graph(&access, max_limit)),
        })
        .await??;
    Ok(HttpResponse::Ok().json(graph))
}
