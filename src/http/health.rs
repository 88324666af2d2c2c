//! Liveness and readiness.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::{public_resource, AppState};
use crate::error::ApiError;
use crate::service::ServiceError;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(public_resource(
        "/healthz",
        vec![(Method::GET, web::route().to(healthz))],
    ))
    .service(public_resource(
        "/readyz",
        vec![(Method::GET, web::route().to(readyz))],
    ));
}

/// The process is up and serving HTTP.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers a query.
async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    match state.reader.read(|tx| Ok(tx.ping()?)).await {
        Ok(()) => Ok(HttpResponse::Ok().json(json!({"status": "ready"}))),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ServiceError::Unavailable("database is not available".to_string()).into())
        }
    }
}
