//! `POST /v1/ingest/*`: the five ingest calls and the batch.

use super::RecordBody;
use super::RecordsBody;
use crate::error::ErrorBody;
use crate::telemetry::MemoryOperation;
use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::{record_response, records_response, AppState, Endpoint, JsonBody};
use crate::domain::access::{Access, Role};
use crate::domain::record::MemoryRecord;
use crate::domain::requests::{
    BatchRequest, ConversationRequest, EventRequest, IngestItem, ObservationRequest,
    OutcomeRequest, ToolOutputRequest, WorkingStateRequest,
};
use crate::error::ApiError;
use crate::service::conversations::{ConversationIngested, StoreConversation};
use crate::service::ingest::{Ingest, StoreBatch};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::POST, "/v1/ingest/event", Role::Write, event)
            .does(MemoryOperation::Create),
        Endpoint::new(
            Method::POST,
            "/v1/ingest/tool-output",
            Role::Write,
            tool_output,
        )
        .does(MemoryOperation::Create),
        Endpoint::new(
            Method::POST,
            "/v1/ingest/observation",
            Role::Write,
            observation,
        )
        .does(MemoryOperation::Create),
        Endpoint::new(Method::POST, "/v1/ingest/outcome", Role::Write, outcome)
            .does(MemoryOperation::Create),
        Endpoint::new(
            Method::POST,
            "/v1/ingest/working-state",
            Role::Write,
            working_state,
        )
        .does(MemoryOperation::Upsert),
        Endpoint::new(Method::POST, "/v1/ingest/batch", Role::Write, batch)
            .does(MemoryOperation::Create),
        Endpoint::new(
            Method::POST,
            "/v1/ingest/conversation",
            Role::Write,
            conversation,
        )
        .does(MemoryOperation::Create),
    ]
}

/// Ingests one item as the caller `access` makes; answers the record.
pub(super) async fn ingest_item(
    state: &AppState,
    access: Access,
    item: IngestItem,
) -> Result<MemoryRecord, ApiError> {
    let (caller, now) = (access.writer(), state.clock.now());
    let candidate = item.into_candidate(&state.new_records(&caller, now))?;
    let record = state
        .writer
        .ingest(Ingest::new(caller, now, candidate))
        .await?;
    crate::telemetry::record_count(1);
    Ok(record)
}

async fn ingest(
    state: web::Data<AppState>,
    access: Access,
    item: IngestItem,
    status: StatusCode,
) -> Result<HttpResponse, ApiError> {
    let record = ingest_item(&state, access, item).await?;
    Ok(record_response(status, &record))
}

#[utoipa::path(
    post,
    path = "/v1/ingest/event",
    operation_id = "ingestEvent",
    tag = "ingest",
    summary = "Ingest an event (episodic)",
    request_body = EventRequest,
    responses((status = 201, description = "The record stored", body = RecordBody))
)]
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

#[utoipa::path(
    post,
    path = "/v1/ingest/tool-output",
    operation_id = "ingestToolOutput",
    tag = "ingest",
    summary = "Ingest a tool output (episodic)",
    request_body = ToolOutputRequest,
    responses((status = 201, description = "The record stored", body = RecordBody))
)]
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

#[utoipa::path(
    post,
    path = "/v1/ingest/observation",
    operation_id = "ingestObservation",
    tag = "ingest",
    summary = "Ingest an observation (a semantic fact)",
    request_body = ObservationRequest,
    responses((status = 201, description = "The record stored", body = RecordBody))
)]
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
#[utoipa::path(
    post,
    path = "/v1/ingest/outcome",
    operation_id = "ingestOutcome",
    tag = "ingest",
    summary = "Record the outcome of an episode",
    description = "Sets `payload.outcome` on an existing episodic record, adds an `outcome` provenance source and a `revise` audit entry; confidence is left as it is.",
    request_body = OutcomeRequest,
    responses(
        (status = 200, description = "The episode with its outcome", body = RecordBody),
        (status = 404, description = "No such record the caller may see", body = ErrorBody),
        (status = 409, description = "The record is not episodic (`failed_precondition`)", body = ErrorBody),
    )
)]
async fn outcome(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<OutcomeRequest>,
) -> Result<HttpResponse, ApiError> {
    ingest(state, access, IngestItem::Outcome(body.0), StatusCode::OK).await
}

#[utoipa::path(
    post,
    path = "/v1/ingest/working-state",
    operation_id = "ingestWorkingState",
    tag = "ingest",
    summary = "Set a thread's working state",
    request_body = WorkingStateRequest,
    responses((status = 201, description = "The record stored", body = RecordBody))
)]
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

#[utoipa::path(
    post,
    path = "/v1/ingest/batch",
    operation_id = "ingestBatch",
    tag = "ingest",
    summary = "Ingest several items in one transaction",
    description = "All or nothing: when an item is invalid or fails in storage, nothing is stored and the error names the item (`items[3].source: …`).",
    request_body = BatchRequest,
    responses(
        (status = 201, description = "The records stored, in the order of the items", body = RecordsBody),
        (status = 404, description = "An outcome item's record does not exist or the caller may not see it", body = ErrorBody),
        (status = 409, description = "An outcome item's record is not episodic (`failed_precondition`)", body = ErrorBody),
    )
)]
async fn batch(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<BatchRequest>,
) -> Result<HttpResponse, ApiError> {
    let (caller, now) = (access.writer(), state.clock.now());
    let candidates = body.0.into_candidates(&state.new_records(&caller, now))?;
    let records = state
        .writer
        .write(StoreBatch::new(caller, now, candidates))
        .await?;
    crate::telemetry::record_count(records.len());
    Ok(records_response(StatusCode::CREATED, &records))
}

#[utoipa::path(
    post,
    path = "/v1/ingest/conversation",
    operation_id = "ingestConversation",
    tag = "ingest",
    summary = "Append turns to a conversation (one episodic record per turn, all or none)",
    request_body = ConversationRequest,
    responses((status = 201, description = "The turns stored, and the session they went to", body = ConversationIngested), (status = 409, description = "`failed_precondition`: the first turn is earlier than the last turn of its session", body = ErrorBody))
)]
async fn conversation(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<ConversationRequest>,
) -> Result<HttpResponse, ApiError> {
    let ingested = ingest_conversation(&state, access, body.0).await?;
    Ok(HttpResponse::Created().json(ingested))
}

/// Appends a conversation's turns as the caller `access` makes.
pub(super) async fn ingest_conversation(
    state: &AppState,
    access: Access,
    conversation: ConversationRequest,
) -> Result<ConversationIngested, ApiError> {
    let (caller, now) = (access.writer(), state.clock.now());
    let conversation = conversation.into_conversation(&state.new_records(&caller, now))?;
    let job = StoreConversation::new(caller, now, conversation, state.session_gap);
    let ingested = state.writer.write(job).await?;
    crate::telemetry::record_count(ingested.records.len());
    Ok(ingested)
}
