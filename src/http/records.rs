//! `POST /v1/records`: a whole record, validated and completed by policy.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};

use super::{record_response, resource, AppState, JsonBody};
use crate::actors::ingestion::CreateRecord;
use crate::actors::ServiceError;
use crate::domain::policy::NewRecord;
use crate::error::ApiError;

/// Actor named in the `create` audit entry when the record names no
/// creator.
const DEFAULT_ACTOR: &str = "api";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/v1/records", web::post().to(create)));
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
        .send(CreateRecord { record, actor })
        .await
        .map_err(ServiceError::from)??;
    Ok(record_response(StatusCode::CREATED, &record))
}
