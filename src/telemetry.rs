//! Logging: `tracing` to stderr, text or JSON, filtered by `RUST_LOG`
//! (default `info`), plus an access-log middleware that leaves health
//! checks out.

use std::io::IsTerminal;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber; a second call is a no-op, so tests may
/// call it freely.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
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
    let response = next.call(req).await?;
    if path != "/healthz" && path != "/readyz" {
        tracing::info!(
            %method,
            %path,
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request"
        );
    }
    Ok(response)
}
