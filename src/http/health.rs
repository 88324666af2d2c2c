//! Liveness and readiness.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::{AppState, Endpoint};
use crate::error::{ApiError, Code};
use crate::service::stats::Ping;

/// How long readiness waits for the database.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `ok` (live) or `ready` (the database answers).
#[derive(serde::Serialize, utoipa::ToSchema)]
struct HealthBody {
    #[schema(example = "ok")]
    status: &'static str,
}

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::public(Method::GET, "/healthz", healthz),
        Endpoint::public(Method::GET, "/readyz", readyz),
    ]
}

/// The process is up and serving HTTP: answered from memory, whatever the
/// database does.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "checkLiveness",
    tag = "health",
    summary = "Liveness: the process serves HTTP",
    responses((status = 200, description = "Up", body = HealthBody, example = json!({"status": "ok"})))
)]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(HealthBody { status: "ok" })
}

/// The database answers a query.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "checkReadiness",
    tag = "health",
    summary = "Readiness: the database answers",
    responses((status = 200, description = "Ready", body = HealthBody, example = json!({"status": "ready"})))
)]
async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    // Probes give up after a few seconds: a database that hangs is told
    // within them, not at the end of a read's whole deadline.
    match state.reader.read_within(READY_TIMEOUT, Ping).await {
        Ok(()) => Ok(HttpResponse::Ok().json(HealthBody { status: "ready" })),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ApiError::new(
                Code::Unavailable,
                "database is not available",
            ))
        }
    }
}
