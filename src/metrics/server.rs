//! The metrics and probe endpoint (axum): `GET /metrics` (OpenMetrics text), `GET /health`
//! (200 while the process runs), `GET /ready` (200 once every pipeline has opened its table
//! and received an assignment, else 503). Anything else is 404.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use super::Metrics;
use crate::error::{Error, Result};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

async fn metrics(State(m): State<Arc<Metrics>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, OPENMETRICS)], m.render())
}

async fn health() -> &'static str {
    "ok\n"
}

async fn ready(State(m): State<Arc<Metrics>>) -> (StatusCode, &'static str) {
    if m.ready() {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

/// Binds the endpoint (so a bad address fails at start-up) and serves it until dropped.
///
/// # Errors
/// [`Error::Io`] when the address cannot be bound.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn serve(addr: &str, metrics_state: Arc<Metrics>) -> Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Io(std::io::Error::new(e.kind(), format!("metrics endpoint {addr}: {e}"))))?;
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .with_state(metrics_state);
    tracing::info!(addr, "metrics endpoint listening");
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "metrics endpoint stopped");
        }
    }))
}
