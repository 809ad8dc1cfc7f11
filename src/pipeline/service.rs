//! `deltabus run`: every configured pipeline as its own task in one process, the metrics
//! endpoint, and graceful shutdown.
//!
//! Shutdown: when `shutdown` turns true (the CLI wires SIGTERM and SIGINT to it), every
//! pipeline stops consuming, flushes and commits its open batch, and leaves its group. If that
//! takes longer than the deadline, [`run`] returns an error (exit 3) without waiting further;
//! nothing is lost, since positions live in the table. When one pipeline fails, the others are
//! shut down the same way and the first error is returned.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::dead_letter::DeadLetterSink;
use super::runner::{RunReport, Runner};
use crate::config::{PipelineSource, ResolvedPipeline};
use crate::error::{Error, Result};
use crate::metrics::{serve, Metrics};
use crate::source::kafka::dead_letter_topic::DeadLetterTopic;
use crate::storage::{StorageOptions, Table};

/// What `run` needs.
pub struct ServiceOptions {
    pub pipelines: Vec<ResolvedPipeline>,
    pub storage: StorageOptions,
    /// `host:port` of the metrics endpoint.
    pub metrics_addr: Option<String>,
    pub shutdown_timeout: Duration,
}

fn dead_letter_sink(p: &ResolvedPipeline, storage: &StorageOptions) -> Result<DeadLetterSink> {
    let d = &p.dead_letter;
    if let Some(t) = &d.table {
        return Ok(DeadLetterSink::Table {
            table: Table::open_for_write(t, storage.clone())?,
            app_id: p.app_id.clone(),
            pipeline: p.name.clone(),
        });
    }
    if let Some(topic) = &d.topic {
        let k = p.kafka()?;
        return Ok(DeadLetterSink::Topic(DeadLetterTopic::create(&k.brokers, &k.properties, topic)?));
    }
    Ok(DeadLetterSink::Discard)
}

/// Runs the pipelines until `shutdown` or a failure.
///
/// # Errors
/// The first pipeline error; a shutdown past its deadline; a metrics address that cannot be
/// bound.
pub async fn run(
    opts: ServiceOptions,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<BTreeMap<String, RunReport>> {
    if opts.pipelines.is_empty() {
        return Err(Error::InvalidArgument(
            "no pipelines configured: add a [pipelines.<name>] section (see `deltabus config print-defaults`)".into(),
        ));
    }
    let server = match &opts.metrics_addr {
        Some(addr) => Some(serve(addr, metrics.clone()).await?),
        None => None,
    };
    // What runs, once, at start.
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        pipelines = opts.pipelines.len(),
        metrics = opts.metrics_addr.as_deref().unwrap_or("off"),
        "deltabus.started"
    );
    for p in &opts.pipelines {
        let source = match &p.source {
            PipelineSource::Kafka(k) => {
                format!("kafka topic {} on {}", k.topic, crate::config::redact::without_userinfo(&k.brokers))
            }
            PipelineSource::Delta(d) => format!("delta table {}", crate::config::redact::without_userinfo(&d.source)),
        };
        tracing::info!(
            pipeline = %p.name,
            source = %source,
            table = %crate::config::redact::without_userinfo(&p.table),
            app_id = %p.app_id,
            "pipeline.configured"
        );
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut compactors = JoinSet::new();
    for p in opts.pipelines {
        let table = Table::open_for_write(&p.table, opts.storage.clone())?;
        let name = p.name.clone();
        if p.compaction.is_some() {
            compactors.spawn(super::auto_compact::run(table.clone(), p.clone(), metrics.pipeline(&name)));
        }
        if matches!(p.source, PipelineSource::Delta(_)) {
            let (stop, storage, m) = (stop_rx.clone(), opts.storage.clone(), metrics.pipeline(&name));
            let span = tracing::info_span!("pipeline", pipeline = %name, table = %table.url());
            tasks.spawn(
                async move { (name, super::delta_source::run(p, table, storage, m, stop).await) }.instrument(span),
            );
            continue;
        }
        let dead = dead_letter_sink(&p, &opts.storage)?;
        let span = tracing::info_span!("pipeline", pipeline = %name, table = %table.url());
        let runner = Runner::new(p, table, dead, metrics.pipeline(&name)).instrument(span.clone()).await?;
        let stop = stop_rx.clone();
        tasks.spawn(async move { (name, runner.run(stop).await) }.instrument(span));
    }
    let mut reports = BTreeMap::new();
    let mut first_error = None;
    let mut stopping = false;
    let mut deadline = None;
    while !tasks.is_empty() {
        let next = async {
            match deadline {
                Some(d) => tokio::time::timeout_at(d, tasks.join_next()).await.ok(),
                None => Some(tasks.join_next().await),
            }
        };
        tokio::select! {
            _ = shutdown.changed(), if !stopping => {
                stopping = true;
                deadline = Some(tokio::time::Instant::now() + opts.shutdown_timeout);
                tracing::info!("shutting down: flushing and committing open batches");
                let _ = stop_tx.send(true);
            }
            joined = next => match joined {
                None => {
                    tasks.abort_all();
                    compactors.abort_all();
                    if let Some(s) = server { s.abort(); }
                    return Err(Error::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("shutdown did not finish within {:?}; uncommitted batches will be re-read", opts.shutdown_timeout),
                    )));
                }
                Some(None) => break,
                Some(Some(Ok((name, Ok(report))))) => { reports.insert(name, report); }
                Some(Some(Ok((name, Err(e))))) => {
                    tracing::error!(pipeline = %name, error = %e, "pipeline failed; stopping the others");
                    first_error.get_or_insert(e);
                    if !stopping {
                        stopping = true;
                        deadline = Some(tokio::time::Instant::now() + opts.shutdown_timeout);
                        let _ = stop_tx.send(true);
                    }
                }
                Some(Some(Err(join))) => {
                    first_error.get_or_insert(Error::Internal(format!("pipeline task: {join}")));
                    let _ = stop_tx.send(true);
                }
            }
        }
    }
    compactors.abort_all();
    if let Some(s) = server {
        s.abort();
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(reports),
    }
}
