//! `GET /v1/metrics` (memory aggregates as JSON) and `GET /metrics`
//! (everything, in the Prometheus text format).

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::{AppState, Endpoint};
use crate::domain::access::Role;
use crate::error::ApiError;
use crate::store::MemoryStats;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::GET, "/v1/metrics", Role::Metrics, memory),
        Endpoint::new(Method::GET, "/metrics", Role::Metrics, prometheus),
    ]
}

async fn collect(state: &AppState) -> Result<MemoryStats, ApiError> {
    let now = state.clock.now();
    Ok(state
        .reader
        .read(move |tx| Ok(tx.memory_stats(now)?))
        .await?)
}

#[utoipa::path(
    get,
    path = "/v1/metrics",
    tag = "metrics",
    summary = "Memory aggregates: counts by type, sensitivity and status, salience",
    responses((status = 200, description = "The aggregates", body = MemoryStats))
)]
async fn memory(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(collect(&state).await?))
}

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "metrics",
    summary = "Everything, in the Prometheus text format",
    responses((status = 200, description = "Prometheus text exposition", body = String, content_type = "text/plain"))
)]
async fn prometheus(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let memory = collect(&state).await?;
    let text = state.metrics.render(
        &memory,
        state.writer.queue_depth(),
        state.read_gate.in_flight(),
    );
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text))
}
