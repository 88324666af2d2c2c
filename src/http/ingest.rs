//! `POST /v1/ingest/*`: the five ingest calls and the batch.

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::requests::{
    BatchRequest, EventRequest, IngestItem, ObservationRequest, OutcomeRequest, ToolOutputRequest,
    WorkingStateRequest,
};
use super::{record_response, records_response, resource, AppState, JsonBody};
use crate::actors::ingestion::{Ingest, IngestBatch};
use crate::domain::access::{Access, Role};
use crate::error::ApiError;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        "/v1/ingest/event",
        Method::POST,
        Role::Write,
        web::route().to(event),
    ))
    .service(resource(
        "/v1/ingest/tool-output",
        Method::POST,
        Role::Write,
        web::route().to(tool_output),
    ))
    .service(resource(
        "/v1/ingest/observation",
        Method::POST,
        Role::Write,
        web::route().to(observation),
    ))
    .service(resource(
        "/v1/ingest/outcome",
        Method::POST,
        Role::Write,
        web::route().to(outcome),
    ))
    .service(resource(
        "/v1/ingest/working-state",
        Method::POST,
        Role::Write,
        web::route().to(working_state),
    ))
    .service(resource(
        "/v1/ingest/batch",
        Method::POST,
        Role::Write,
        web::route().to(batch),
    ));
}

async fn ingest(
    state: web::Data<AppState>,
    access: Access,
    item: IngestItem,
    status: StatusCode,
) -> Result<HttpResponse, ApiError> {
    let record = state
        .ingestor
        .send(Ingest {
            caller: access.writer(),
            check: Box::new(move |cx| item.into_candidate(cx)),
        })
        .await??;
    Ok(record_response(status, &record))
}

async fn event(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<EventRequest>,
) -> Result<HttpResponse, ApiError> {
    ingest(
        state,
        access,
        IngestItem::Event(body.0),
        StatusCode::CREATED,
    )
    .await
}

async fn tool_output(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<ToolOutputRequest>,
) -> Result<HttpResponse, ApiError> {
    ingest(
        state,
        access,
        IngestItem::ToolOutput(body.0),
        StatusCode::CREATED,
    )
    .await
}

async fn observation(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<ObservationRequest>,
) -> Result<HttpResponse, ApiError> {
    ingest(
        state,
        access,
        IngestItem::Observation(body.0),
        StatusCode::CREATED,
    )
    .await
}

/// Changes an existing record, so 200 rather than 201.
async fn outcome(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<OutcomeRequest>,
) -> Result<HttpResponse, ApiError> {
    ingest(state, access, IngestItem::Outcome(body.0), StatusCode::OK).await
}

async fn working_state(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<WorkingStateRequest>,
) -> Result<HttpResponse, ApiError> {
    ingest(
        state,
        access,
        IngestItem::WorkingState(body.0),
        StatusCode::CREATED,
    )
    .await
}

async fn batch(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<BatchRequest>,
) -> Result<HttpResponse, ApiError> {
    let records = state
        .ingestor
        .send(IngestBatch {
            caller: access.writer(),
            check: Box::new(move |cx| body.0.into_candidates(cx)),
        })
        .await??;
    Ok(records_response(StatusCode::CREATED, &records))
}
