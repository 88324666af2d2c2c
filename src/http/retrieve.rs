//! `POST /v1/retrieve` and `POST /v1/retrieve/{id}`: trust-gated reads.

use super::RecordBody;
use crate::error::ErrorBody;
use crate::telemetry::MemoryOperation;
use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::{record_response, AppState, Endpoint, JsonBody};
use crate::domain::access::{Access, Role};
use crate::domain::record::MemoryRecord;
use crate::domain::requests::{GraphRequest, RetrieveRequest, TrustOnlyRequest};
use crate::domain::retrieval::Cursor;
use crate::domain::revision::record_id;
use crate::domain::trust::TrustContext;
use crate::error::ApiError;
use crate::service::graph::{Graph, RankGraph};
use crate::service::retrieval::{Rank, ReadRecord, RetrieveResult};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::POST, "/v1/retrieve", Role::Read, retrieve)
            .does(MemoryOperation::Search),
        Endpoint::new(Method::POST, "/v1/retrieve/graph", Role::Read, graph)
            .does(MemoryOperation::Search),
        Endpoint::new(
            Method::POST,
            "/v1/retrieve/{id}",
            Role::Read,
            retrieve_by_id,
        )
        .does(MemoryOperation::Search),
    ]
}

#[utoipa::path(
    post,
    path = "/v1/retrieve",
    operation_id = "retrieve",
    tag = "retrieve",
    summary = "Layered, trust-gated retrieval",
    request_body = RetrieveRequest,
    responses((status = 200, description = "The records, best first, and the selection among procedures", body = RetrieveResult))
)]
async fn retrieve(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<RetrieveRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(retrieved(&state, access, body.0).await?))
}

/// A retrieval as the caller `access` and the request's trust make.
pub(super) async fn retrieved(
    state: &AppState,
    access: Access,
    mut request: RetrieveRequest,
) -> Result<RetrieveResult, ApiError> {
    let settings = state.read_settings;
    let token = request.cursor.take();
    let (caller, mut retrieval) = request.into_retrieval(&access, settings.max_limit)?;
    if let Some(token) = token {
        let bound = retrieval.binding(&caller);
        retrieval.cursor = Some(super::cursors::open(
            &state.sealer,
            &token,
            &bound,
            Cursor::from_bytes,
            "this caller and this query; send next_cursor as it came, with the request it came with",
        )?);
    }
    // What a next cursor is bound to, made only if there is one: writing
    // out the whole request costs more than a small caller's read.
    let asked = (caller.clone(), retrieval.clone());
    tracing::debug!(
        actor_id = caller.trust.actor_id.as_deref().unwrap_or(""),
        authenticated = caller.trust.authenticated,
        task_descriptor = retrieval.task_descriptor.as_deref().unwrap_or(""),
        "retrieve"
    );
    let job = Rank {
        caller,
        now: state.clock.now(),
        retrieval,
        selection_threshold: settings.selection_threshold,
        ranking: settings.ranking,
    };
    let mut result = state.reader.read(job).await?;
    result.next_cursor = result.next.map(|next| {
        let bound = asked.1.binding(&asked.0);
        state.sealer.seal(&next.to_bytes(), &bound)
    });
    crate::telemetry::record_count(result.records.len());
    Ok(result)
}

#[utoipa::path(
    post,
    path = "/v1/retrieve/{id}",
    operation_id = "retrieveById",
    tag = "retrieve",
    summary = "One record by id",
    params(("id" = String, Path, description = "The record's id")),
    request_body = TrustOnlyRequest,
    responses((status = 200, description = "The record", body = RecordBody), (status = 404, description = "No such record the caller may see", body = ErrorBody))
)]
async fn retrieve_by_id(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<TrustOnlyRequest>,
) -> Result<HttpResponse, ApiError> {
    let record = record_by_id(&state, access, id.into_inner(), body.0.trust).await?;
    Ok(record_response(StatusCode::OK, &record))
}

/// Record `id`, if the caller `access` and `trust` make may see it.
pub(super) async fn record_by_id(
    state: &AppState,
    access: Access,
    id: String,
    trust: Option<TrustContext>,
) -> Result<MemoryRecord, ApiError> {
    let id = record_id("id", id)?;
    let job = ReadRecord {
        caller: access.reader(trust)?,
        now: state.clock.now(),
        id,
    };
    Ok(state.reader.read(job).await?)
}

#[utoipa::path(
    post,
    path = "/v1/retrieve/graph",
    operation_id = "retrieveGraph",
    tag = "retrieve",
    summary = "Ranked records and their neighbours through relations and topic links",
    request_body = GraphRequest,
    responses((status = 200, description = "Nodes and edges", body = Graph))
)]
async fn graph(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<GraphRequest>,
) -> Result<HttpResponse, ApiError> {
    let settings = state.read_settings;
    let (caller, retrieval, limits) = body.0.into_graph(&access, settings.max_limit)?;
    let job = RankGraph {
        caller,
        now: state.clock.now(),
        retrieval,
        limits,
        ranking: settings.ranking,
    };
    let graph = state.reader.read(job).await?;
    Ok(HttpResponse::Ok().json(graph))
}
