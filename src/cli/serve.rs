//! `deltabus serve`: push ingest over HTTP until SIGTERM/SIGINT, and the server beside the
//! pipelines of `deltabus run` when `[server.tables]` names any table.

use std::io::Write;
use std::sync::Arc;

use clap::Args;
use tokio::sync::watch;

use super::key_value::KeyValue;
use crate::common::units::HumanDuration;
use crate::config::kafka::{KafkaListenerConfig, KafkaTopic};
use crate::config::server::{ResolvedServer, ServerTable};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::storage::StorageOptions;

/// `deltabus serve` arguments (each overrides or adds to `[server]`).
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// host:port to listen on (server.listen; 127.0.0.1:8080 by default).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// A table to serve as NAME=URL, created from the first request when missing; repeatable.
    #[arg(long = "table", value_name = "NAME=URL")]
    pub tables: Vec<KeyValue>,
    /// Requests within this window of the first land in one commit (server.commit_window).
    #[arg(long, value_name = "DURATION")]
    pub commit_window: Option<HumanDuration>,
    /// Also speak the Kafka protocol on host:port (server.kafka.listen); every --table is
    /// then a JSON topic of the same name unless [server.kafka.topics] names it.
    #[arg(long, value_name = "HOST:PORT")]
    pub kafka_listen: Option<String>,
}

/// `[server]` with the flags applied, checked.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the setting.
pub(super) fn resolve(config: &Config, args: &ServeArgs) -> Result<ResolvedServer> {
    let mut server = config.server.clone();
    if let Some(listen) = &args.listen {
        server.listen.clone_from(listen);
    }
    if let Some(window) = args.commit_window {
        server.commit_window = window;
    }
    for kv in &args.tables {
        server
            .tables
            .insert(kv.key.clone(), ServerTable { table: kv.value.clone(), create: true, ..ServerTable::default() });
    }
    if let Some(listen) = &args.kafka_listen {
        let kafka = server.kafka.get_or_insert_with(KafkaListenerConfig::default);
        kafka.listen.clone_from(listen);
        for kv in &args.tables {
            let topic = KafkaTopic { table: kv.key.clone(), ..KafkaTopic::default() };
            kafka.topics.entry(kv.key.clone()).or_insert(topic);
        }
    }
    server.resolve(&|name| std::env::var(name).ok())
}

/// Starts the server; the line `{"listening": "host:port", "tables": [...]}` (with `"kafka":
/// "host:port"` when the Kafka-protocol listener is on) goes to `out` once it listens.
///
/// # Errors
/// As [`crate::serve::start`].
pub(super) async fn start(
    server: ResolvedServer,
    storage: StorageOptions,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
    config: &Config,
    out: &mut (dyn Write + Send),
) -> Result<crate::serve::Server> {
    let tables: Vec<String> = server.tables.keys().cloned().collect();
    let grace = config.run.shutdown_timeout.get();
    let running = crate::serve::start(server, storage, metrics, stop, grace).await?;
    let mut line = serde_json::json!({"listening": running.local_addr.to_string(), "tables": tables});
    if let Some(kafka) = running.kafka_addr {
        line["kafka"] = serde_json::json!(kafka.to_string());
    }
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(running)
}

/// `deltabus serve`.
///
/// # Errors
/// Configuration, binding and storage errors; a stop past `run.shutdown_timeout`.
pub(super) async fn serve(
    args: ServeArgs,
    config: &Config,
    storage: StorageOptions,
    stop: watch::Receiver<bool>,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    let server = resolve(config, &args)?;
    let running = start(server, storage, Metrics::shared(), stop.clone(), config, out).await?;
    let mut stop = stop;
    let _ = stop.wait_for(|s| *s).await;
    let deadline = config.run.shutdown_timeout.get();
    // The listener drains within the deadline; committing what is queued gets as long again.
    tokio::time::timeout(deadline * 2, running.stopped()).await.map_err(|_| {
        Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the server did not stop within run.shutdown_timeout: requests not yet answered were not committed, or were and their producers retry",
        ))
    })
}
