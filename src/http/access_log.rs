//! The access log: every request counted and timed for the metrics, logged
//! (health checks are counted, not logged), and run in its span with its
//! [`Trace`]; a slow one logged with where its time went.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};

use super::AppState;
use crate::domain::access::Access;
use crate::telemetry::{otlp, Trace};

pub async fn access_log(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.path().to_owned();
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let route = req.match_pattern();
    let span = tracing::info_span!(
        "request",
        %method,
        route = %route.as_deref().unwrap_or("unmatched"),
        key = tracing::field::Empty,
        status = tracing::field::Empty,
        records = tracing::field::Empty,
        mcp_method = tracing::field::Empty,
        tool = tracing::field::Empty,
        operation = tracing::field::Empty,
        path = tracing::field::Empty,
        scheme = tracing::field::Empty,
        protocol = tracing::field::Empty,
        peer = tracing::field::Empty,
        user_agent = tracing::field::Empty,
        traceparent = tracing::field::Empty,
    );
    if otlp::enabled() {
        describe_for_collector(&span, &req);
    }
    let trace = Trace::new(span.clone());
    let response = trace.clone().scope(next.call(req)).await?;
    let elapsed = started.elapsed();
    let route = route.unwrap_or_else(|| "unmatched".to_string());
    let status = response.status().as_u16();
    span.record("status", status);
    if let Some(state) = &state {
        state
            .metrics
            .request_finished(method.as_str(), &route, status, elapsed.as_secs_f64());
    }
    let elapsed_ms = elapsed.as_secs_f64() * 1000.0;
    if path != "/healthz" && path != "/readyz" {
        tracing::info!(%method, %path, status, elapsed_ms, "request");
    }
    if state.is_some_and(|state| elapsed >= state.slow_request) {
        let (queued_ms, working_ms) = trace.split_ms();
        let access = response.request().extensions().get::<Access>().cloned();
        let key = match &access {
            Some(Access::Key(key)) => key.name.as_str(),
            _ => "-",
        };
        tracing::warn!(
            %method,
            %route,
            key = %key,
            status,
            elapsed_ms,
            queued_ms,
            working_ms,
            "slow request"
        );
    }
    Ok(response)
}

/// What a collector wants to know of a request and the log does not show:
/// where it came from and how, and the caller's trace it continues. The
/// query string is left out, as it may hold a query's text.
fn describe_for_collector(span: &tracing::Span, req: &ServiceRequest) {
    span.record("path", req.path());
    span.record("scheme", req.connection_info().scheme());
    let protocol = match req.version() {
        actix_web::http::Version::HTTP_09 => "0.9",
        actix_web::http::Version::HTTP_10 => "1.0",
        actix_web::http::Version::HTTP_2 => "2",
        actix_web::http::Version::HTTP_3 => "3",
        _ => "1.1",
    };
    span.record("protocol", protocol);
    if let Some(peer) = req.peer_addr() {
        span.record("peer", peer.ip().to_string());
    }
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(agent) = header("user-agent") {
        span.record("user_agent", agent);
    }
    if let Some(parent) = header("traceparent") {
        span.record("traceparent", parent);
    }
}
