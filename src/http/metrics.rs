//! `GET /v1/metrics` (memory aggregates as JSON) and `GET /metrics`
//! (everything, in the Prometheus text format).

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::{AppState, Endpoint};
use crate::domain::access::Role;
use crate::error::ApiError;
use crate::service::stats::ReadStats;
use crate::store::MemoryStats;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::GET, "/v1/metrics", Role::Metrics, memory),
        Endpoint::new(Method::GET, "/metrics", Role::Metrics, prometheus),
    ]
}

async fn collect(state: &AppState) -> Result<MemoryStats, ApiError> {
    let job = ReadStats {
        now: state.clock.now(),
    };
    Ok(state.reader.read_ungated(job).await?)
}

#[utoipa::path(
    get,
    path = "/v1/metrics",
    operation_id = "getMemoryMetrics",
    tag = "metrics",
    summary = "Memory aggregates: counts by type, sensitivity and status, salience",
    responses((status = 200, description = "The aggregates", body = MemoryStats, example = json!({
        "total_records": 5,
        "records_by_type": {"competence": 1, "episodic": 2, "plan_graph": 1, "semantic": 1, "working": 0},
        "records_by_sensitivity": {"high": 0, "hyper": 0, "low": 4, "medium": 1, "public": 0},
        "records_by_status": {"active": 4, "contested": 0, "retracted": 1},
        "avg_salience": 0.82, "avg_confidence": 0.86,
        "salience_distribution": {"0.0-0.2": 1, "0.2-0.4": 0, "0.4-0.6": 0, "0.6-0.8": 0, "0.8-1.0": 4},
        "active_records": 4, "pinned_records": 1, "total_audit_entries": 6, "growth_rate": 1.0,
        "retrieval_usefulness": 0.17, "competence_success_rate": 0.75, "plan_reuse_frequency": 4.0,
        "revision_rate": 0.0,
        "recent_activity": [{"at": "2026-01-01T00:00:00Z", "action": "create", "actor": "agent-1", "type": "semantic", "sensitivity": "low"}]
    })))
)]
async fn memory(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(collect(&state).await?))
}

#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "getPrometheusMetrics",
    tag = "metrics",
    summary = "Everything, in the Prometheus text format",
    responses((status = 200, description = "Prometheus text exposition", body = String, content_type = "text/plain",
        example = "# TYPE engram_records gauge\nengram_records 5\n# TYPE engram_records_by_type gauge\nengram_records_by_type{type=\"semantic\"} 1\n"))
)]
async fn prometheus(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let memory = collect(&state).await?;
    let text = state
        .metrics
        .render(&memory, state.writer.stats(), state.read_gate.in_flight());
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text))
}
