//! OpenTelemetry export over OTLP (HTTP/protobuf or gRPC): the process's `tracing` spans
//! (flush, commit, Iceberg conversion, follower delivery, push group commits, ...) as traces,
//! and every metric of `/metrics` as OTel metrics. Off unless `telemetry.endpoint` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector; when off nothing is built, no layer is
//! added and no span is exported.
//!
//! Settings: each `[telemetry]` key when set, else the standard variable
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`), else the
//! default (`http/protobuf`, `deltabus`).

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

use crate::config::TelemetryConfig;
use crate::error::{Error, Result};

/// Where and how telemetry is exported.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The collector's base address (`http://host:4318` or `http://host:4317`).
    pub endpoint: String,
    pub grpc: bool,
    pub service_name: String,
    pub metrics_interval: Duration,
}

/// The settings from the configuration and the environment (`env`), or `None` when off.
///
/// # Errors
/// [`Error::InvalidConfig`] for a protocol other than `http/protobuf` or `grpc`.
pub fn settings(config: &TelemetryConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Settings>> {
    let given = |value: &Option<String>, var: &str| value.clone().filter(|v| !v.is_empty()).or_else(|| env(var));
    let Some(endpoint) = given(&Some(config.endpoint.clone()), "OTEL_EXPORTER_OTLP_ENDPOINT") else {
        return Ok(None);
    };
    let (protocol, key) = match config.protocol.clone().filter(|p| !p.is_empty()) {
        Some(p) => (p, "telemetry.protocol"),
        None => (
            env("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_else(|| "http/protobuf".into()),
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
    };
    let grpc = match protocol.as_str() {
        "grpc" => true,
        "http/protobuf" => false,
        other => {
            return Err(Error::InvalidConfig {
                key: key.into(),
                why: format!("{other:?} is not http/protobuf or grpc"),
            })
        }
    };
    Ok(Some(Settings {
        endpoint: endpoint.trim_end_matches('/').to_string(),
        grpc,
        service_name: given(&config.service_name, "OTEL_SERVICE_NAME").unwrap_or_else(|| "deltabus".into()),
        metrics_interval: config.metrics_interval.0,
    }))
}

/// The running exporters; [`Telemetry::shutdown`] exports what is pending.
#[derive(Debug)]
pub struct Telemetry {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

impl Telemetry {
    /// Starts the exporters (inside a Tokio runtime: the gRPC client needs one) and returns
    /// them with the tracer the `tracing` layer hands spans to.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an endpoint the exporter cannot use.
    pub fn start(s: &Settings) -> Result<(Telemetry, opentelemetry_sdk::trace::Tracer)> {
        let bad = |e: opentelemetry_otlp::ExporterBuildError| Error::InvalidConfig {
            key: "telemetry.endpoint".into(),
            why: format!("{}: {e}", s.endpoint),
        };
        let resource = Resource::builder().with_service_name(s.service_name.clone()).build();
        let spans = if s.grpc {
            opentelemetry_otlp::SpanExporter::builder().with_tonic().with_endpoint(&s.endpoint).build()
        } else {
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(format!("{}/v1/traces", s.endpoint))
                .build()
        }
        .map_err(bad)?;
        let samples = if s.grpc {
            opentelemetry_otlp::MetricExporter::builder().with_tonic().with_endpoint(&s.endpoint).build()
        } else {
            opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(format!("{}/v1/metrics", s.endpoint))
                .build()
        }
        .map_err(bad)?;
        let traces = SdkTracerProvider::builder().with_batch_exporter(spans).with_resource(resource.clone()).build();
        let reader = PeriodicReader::builder(samples).with_interval(s.metrics_interval).build();
        let metrics = SdkMeterProvider::builder().with_reader(reader).with_resource(resource).build();
        super::telemetry_metrics::observe(&metrics);
        let tracer = traces.tracer("deltabus");
        Ok((Telemetry { traces, metrics }, tracer))
    }

    /// Exports the spans and metrics not yet sent, then stops the exporters.
    pub fn shutdown(self) {
        if let Err(e) = self.traces.shutdown() {
            tracing::warn!(error = %e, "telemetry: spans not exported");
        }
        if let Err(e) = self.metrics.shutdown() {
            tracing::warn!(error = %e, "telemetry: metrics not exported");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(endpoint: &str, protocol: Option<&str>) -> TelemetryConfig {
        TelemetryConfig {
            endpoint: endpoint.into(),
            protocol: protocol.map(str::to_string),
            service_name: None,
            metrics_interval: crate::common::units::HumanDuration::from_secs(10),
        }
    }

    #[test]
    fn the_file_wins_then_the_standard_variables_then_the_defaults() {
        let none = |_: &str| None;
        assert_eq!(settings(&config("", None), &none).unwrap(), None, "off by default");
        let env = |v: &str| match v {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://collector:4317/".to_string()),
            "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("grpc".to_string()),
            "OTEL_SERVICE_NAME" => Some("ingest-eu".to_string()),
            _ => None,
        };
        let s = settings(&config("", None), &env).unwrap().unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.grpc, s.service_name.as_str()),
            ("http://collector:4317", true, "ingest-eu")
        );
        let s = settings(&config("http://x:4318", Some("http/protobuf")), &env).unwrap().unwrap();
        assert_eq!((s.endpoint.as_str(), s.grpc), ("http://x:4318", false));
        let e = settings(&config("http://x:4318", Some("http/json")), &none).unwrap_err();
        assert!(e.to_string().contains("telemetry.protocol"), "{e}");
    }
}
