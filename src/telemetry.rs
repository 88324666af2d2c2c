//! Logging: `tracing` to stderr, text or JSON, filtered by `RUST_LOG`
//! (default `info`), plus a middleware that counts and times every request
//! for the metrics and logs it (health checks are counted, not logged).

use std::io::IsTerminal;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;
use crate::http::AppState;

/// Installs the global subscriber; a second call is a no-op, so tests may
/// call it freely.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,tokio_cron_scheduler=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

pub async fn access_log(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.path().to_owned();
    let metrics = req
        .app_data::<web::Data<AppState>>()
        .map(|state| state.metrics.clone());
    let response = next.call(req).await?;
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(metrics) = metrics {
        let route = response
            .request()
            .match_pattern()
            .unwrap_or_else(|| "unmatched".to_string());
        metrics.request_finished(method.as_str(), &route, response.status().as_u16(), elapsed);
    }
    if path != "/healthz" && path != "/readyz" {
        tracing::info!(
            %method,
            %path,
            status = response.status().as_u16(),
            elapsed_ms = elapsed * 1000.0,
            "request"
        );
    }
    Ok(response)
}
