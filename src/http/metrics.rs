//! `GET /v1/metrics` (memory aggregates as JSON) and `GET /metrics`
//! (everything, in the Prometheus text format).

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::{resource, AppState};
use crate::domain::access::Role;
use crate::error::ApiError;
use crate::store::MemoryStats;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        "/v1/metrics",
        Method::GET,
        Role::Metrics,
        web::route().to(memory),
    ))
    .service(resource(
        "/metrics",
        Method::GET,
        Role::Metrics,
        web::route().to(prometheus),
    ));
}

async fn collect(state: &AppState) -> Result<MemoryStats, ApiError> {
    let now = state.clock.now();
    Ok(state
        .reader
        .read(move |tx| Ok(tx.memory_stats(now)?))
        .await?)
}

async fn memory(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(collect(&state).await?))
}

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
