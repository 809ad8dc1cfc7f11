//! `deltabus run`: every configured pipeline as its own task in one process, the metrics
//! endpoint, and graceful shutdown.
//!
//! A pipeline of several topics (`kafka.topics`) runs as one pipeline per topic
//! ([`ResolvedPipeline::for_topic`]); one of a `kafka.topic_pattern` has a watcher task that
//! lists the cluster's topics at start and every `topic_refresh`, and launches a pipeline for
//! each new match. Every Kafka pipeline runs the one consume loop ([`Runner`]), into one table
//! ([`OneTable`]) or, routed (`route_by`), into the tables its records name ([`Router`]).
//!
//! With `commit.mode = "coordinated"` each one-table pipeline also runs its committer
//! candidate beside it (see [`crate::ingest::coordinated`]); it stops after the pipelines, so the
//! last flushes of a stopping process are still committed.
//!
//! Shutdown: when `shutdown` turns true (the CLI wires SIGTERM and SIGINT to it), every
//! pipeline stops consuming, flushes and commits its open batch, and leaves its group. If that
//! takes longer than the deadline, [`run`] returns an error (exit 3) without waiting further;
//! nothing is lost, since positions live in the table. When one pipeline fails, the others are
//! shut down the same way and the first error is returned.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::config::{KafkaPipeline, Pipeline, PipelineSource, ResolvedKafka, ResolvedPipeline, Topics};
use crate::decode::registry::Registries;
use crate::error::{Error, Result};
use crate::ingest::coordinated::client::CommitClient;
use crate::ingest::coordinated::committer::{Committer, Decider};
use crate::ingest::dead_letter::DeadLetterSink;
use crate::ingest::one_table::OneTable;
use crate::ingest::routed::Router;
use crate::ingest::runner::{RunReport, Runner};
use crate::metrics::{serve, Metrics};
use crate::source::kafka::control::{ControlGroup, ControlProducer};
use crate::source::kafka::dead_letter_topic::DeadLetterTopic;
use crate::storage::{StorageOptions, Table};

/// What `run` needs.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ServiceOptions {
    pub pipelines: Vec<ResolvedPipeline>,
    pub storage: StorageOptions,
    /// `host:port` of the metrics endpoint.
    pub metrics_addr: Option<String>,
    pub shutdown_timeout: Duration,
}

fn dead_letter_sink(p: &KafkaPipeline, storage: &StorageOptions) -> Result<DeadLetterSink> {
    let d = &p.dead_letter;
    if let Some(t) = &d.table {
        return Ok(DeadLetterSink::Table {
            table: Table::open_for_write(t, storage.clone())?,
            app_id: p.app_id.clone(),
            pipeline: p.name.clone(),
        });
    }
    if let Some(topic) = &d.topic {
        let k = &p.kafka;
        return Ok(DeadLetterSink::Topic(DeadLetterTopic::create(&k.brokers, &k.properties, topic)?));
    }
    Ok(DeadLetterSink::Discard)
}

/// Runs the pipelines until `shutdown` or a failure.
///
/// # Errors
/// The first pipeline error; a shutdown past its deadline; a metrics address that cannot be
/// bound.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn run(
    opts: ServiceOptions,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<BTreeMap<String, RunReport>> {
    if opts.pipelines.is_empty() {
        return Err(Error::InvalidArgument(
            "no pipelines configured: add a [pipelines.<name>] section, or [server.tables.<name>] for push ingest (see `deltabus config print-defaults`)".into(),
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
                let topics = match &k.topics {
                    Topics::One => format!("topic {}", k.topic),
                    Topics::List(list) => format!("topics {}", list.join(", ")),
                    Topics::Pattern { regex, .. } => format!("topics matching {}", regex.as_str()),
                };
                format!("kafka {topics} on {}", crate::config::redact::without_userinfo(&k.brokers))
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
    let (found_tx, mut found) = unbounded_channel();
    let mut tasks = JoinSet::new();
    let mut compactors = JoinSet::new();
    let mut launcher = Launcher {
        storage: opts.storage.clone(),
        registries: Registries::default(),
        metrics: metrics.clone(),
        stop: stop_rx.clone(),
    };
    for p in opts.pipelines {
        if let PipelineSource::Kafka(ResolvedKafka { topics: Topics::Pattern { .. }, .. }) = &p.source {
            let (name, stop, found) = (p.name.clone(), stop_rx.clone(), found_tx.clone());
            let span = tracing::info_span!("pipeline", pipeline = %name);
            tasks.spawn(async move { (name, watch_pattern(p, found, stop).await) }.instrument(span));
            continue;
        }
        for one in p.expand() {
            launcher.launch(one, &mut tasks, &mut compactors).await?;
        }
    }
    let mut reports = BTreeMap::new();
    let mut stopping = Stopping { timeout: opts.shutdown_timeout, stop: stop_tx, deadline: None, first_error: None };
    loop {
        // Topics a pattern found (sent before its watcher returns, so before it is joined).
        while let Ok(p) = found.try_recv() {
            if !stopping.began() {
                if let Err(e) = launcher.launch(p, &mut tasks, &mut compactors).await {
                    stopping.fail(e);
                }
            }
        }
        if tasks.is_empty() {
            break;
        }
        let deadline = stopping.deadline;
        let next = async {
            match deadline {
                Some(d) => tokio::time::timeout_at(d, tasks.join_next()).await.ok(),
                None => Some(tasks.join_next().await),
            }
        };
        tokio::select! {
            Some(p) = found.recv(), if !stopping.began() => {
                if let Err(e) = launcher.launch(p, &mut tasks, &mut compactors).await {
                    stopping.fail(e);
                }
            }
            _ = shutdown.changed(), if !stopping.began() => {
                tracing::info!("shutting down: flushing and committing open batches");
                stopping.begin();
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
                Some(Some(joined)) => stopping.joined(joined, &mut reports),
            }
        }
    }
    compactors.abort_all();
    if let Some(s) = server {
        s.abort();
    }
    match stopping.first_error {
        Some(e) => Err(e),
        None => Ok(reports),
    }
}

/// The service's way down: once a shutdown signal, a failed or panicked pipeline, or a failed
/// launch begins it, every pipeline is told to stop and all share one deadline; the first
/// error is what `run` returns.
struct Stopping {
    timeout: Duration,
    stop: watch::Sender<bool>,
    deadline: Option<tokio::time::Instant>,
    first_error: Option<Error>,
}

impl Stopping {
    fn began(&self) -> bool {
        self.deadline.is_some()
    }

    /// Tells every pipeline to stop (once), starting the deadline.
    fn begin(&mut self) {
        if self.deadline.is_none() {
            self.deadline = Some(tokio::time::Instant::now() + self.timeout);
            let _ = self.stop.send(true);
        }
    }

    fn fail(&mut self, e: Error) {
        self.first_error.get_or_insert(e);
        self.begin();
    }

    /// A pipeline task ended: its report, or the failure (a panic included) that stops the
    /// others.
    fn joined(
        &mut self,
        joined: std::result::Result<(String, Result<RunReport>), tokio::task::JoinError>,
        reports: &mut BTreeMap<String, RunReport>,
    ) {
        match joined {
            Ok((name, Ok(report))) => {
                reports.insert(name, report);
            }
            Ok((name, Err(e))) => {
                tracing::error!(pipeline = %name, error = %e, "pipeline failed; stopping the others");
                self.fail(e);
            }
            Err(join) => {
                tracing::error!(error = %join, "pipeline task panicked; stopping the others");
                self.fail(Error::Internal(format!("pipeline task: {join}")));
            }
        }
    }
}

/// Starts pipelines (and their compactors) in the service's task sets.
struct Launcher {
    storage: StorageOptions,
    /// One client per schema registry for every pipeline of the process.
    registries: Registries,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
}

type Tasks = JoinSet<(String, Result<RunReport>)>;

impl Launcher {
    async fn launch(&mut self, p: ResolvedPipeline, tasks: &mut Tasks, compactors: &mut JoinSet<()>) -> Result<()> {
        let name = p.name.clone();
        let metrics = self.metrics.pipeline(&name);
        let stop = self.stop.clone();
        let p = match p.kind() {
            Pipeline::Kafka(k) => k,
            Pipeline::Delta(d) => {
                let table = Table::open_for_write(&d.pipeline.table, self.storage.clone())?;
                if d.pipeline.compaction.is_some() {
                    compactors.spawn(crate::compactor::background::run(
                        table.clone(),
                        d.pipeline.clone(),
                        metrics.clone(),
                        None,
                    ));
                }
                let span = tracing::info_span!("pipeline", pipeline = %name, table = %table.url());
                let storage = self.storage.clone();
                tasks.spawn(
                    async move { (name, super::delta_source::run(d.pipeline, table, storage, metrics, stop).await) }
                        .instrument(span),
                );
                return Ok(());
            }
        };
        if p.route.is_some() {
            // The table is a template here, never a table: the router opens (and compacts)
            // the tables it names.
            let span = tracing::info_span!("pipeline", pipeline = %name);
            let dead = dead_letter_sink(&p, &self.storage)?;
            // Each routed table gets the pipeline's background compactor, when it has one.
            let background = p.compaction.is_some().then(|| {
                let (cfg, m) = (p.pipeline.clone(), metrics.clone());
                Arc::new(move |table: Table| {
                    Box::pin(crate::compactor::background::run(table, cfg.clone(), m.clone(), None))
                        as futures::future::BoxFuture<'static, ()>
                }) as crate::ingest::routed::Background
            });
            let rows = Router::open(
                p.clone(),
                self.storage.clone(),
                dead,
                metrics.clone(),
                self.registries.clone(),
                background,
            )
            .instrument(span.clone())
            .await?;
            let clock = rows.clock();
            let runner = Runner::new(p, rows, clock, metrics);
            tasks.spawn(async move { (name, runner.run(stop).await) }.instrument(span));
            return Ok(());
        }
        let table = Table::open_for_write(&p.table, self.storage.clone())?;
        let span = tracing::info_span!("pipeline", pipeline = %name, table = %table.url());
        let (coordinator, leading) = match &p.coordination {
            Some(c) => {
                let (client, leading) = coordinate(&p, c, &table, compactors).instrument(span.clone()).await?;
                (Some(client), Some(leading))
            }
            None => (None, None),
        };
        if p.compaction.is_some() {
            compactors.spawn(crate::compactor::background::run(
                table.clone(),
                p.pipeline.clone(),
                metrics.clone(),
                leading,
            ));
        }
        let dead = dead_letter_sink(&p, &self.storage)?;
        let clock = table.clock().clone();
        let rows = OneTable::open(p.clone(), table, dead, metrics.clone(), &self.registries, coordinator)
            .instrument(span.clone())
            .await?;
        let runner = Runner::new(p, rows, clock, metrics);
        tasks.spawn(async move { (name, runner.run(stop).await) }.instrument(span));
        Ok(())
    }
}

/// Coordinated commits: creates the control topic when missing, starts this process's
/// committer candidate (in `helpers`, ended with them after the pipelines) and opens the
/// worker's client. Returns the client and the flag that is set while this process commits.
async fn coordinate(
    p: &KafkaPipeline,
    c: &crate::config::commit::Coordination,
    table: &Table,
    helpers: &mut JoinSet<()>,
) -> Result<(Arc<CommitClient>, Arc<AtomicBool>)> {
    let k = &p.kafka;
    let topic = c.control_topic(&p.app_id, &k.topic);
    crate::source::kafka::control::ensure_topic(&k.brokers, &k.properties, &topic).await?;
    let member = format!("{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let group = crate::config::commit::Coordination::committer_group(&k.group_id, &k.topic);
    let leading = Arc::new(AtomicBool::new(false));
    let committer = Committer {
        decider: Decider {
            table: table.clone(),
            app_id: p.app_id.clone(),
            topic: k.topic.clone(),
            member: member.clone(),
        },
        group: ControlGroup::join(&k.brokers, &k.properties, &topic, &group)?,
        producer: ControlProducer::create(&k.brokers, &k.properties, &topic)?,
        interval: c.interval,
        leading: leading.clone(),
    };
    helpers.spawn(committer.run().instrument(tracing::Span::current()));
    let client = CommitClient::open(&k.brokers, &k.properties, &topic, member, c.request_timeout).await?;
    tracing::info!(control_topic = %topic, committer_group = %group, "coordinated commits");
    Ok((Arc::new(client), leading))
}

/// Looks for topics matching a pipeline's pattern at start and then every `refresh`, and
/// sends a pipeline for each new one (`stop_at_end`: looks once). Returns when stopped.
async fn watch_pattern(
    p: ResolvedPipeline,
    found: UnboundedSender<ResolvedPipeline>,
    mut stop: watch::Receiver<bool>,
) -> Result<RunReport> {
    let PipelineSource::Kafka(k) = p.source.clone() else { return Ok(RunReport::default()) };
    let Topics::Pattern { regex, refresh } = &k.topics else { return Ok(RunReport::default()) };
    let mut seen = std::collections::BTreeSet::new();
    let mut failures = 0u32;
    loop {
        match crate::source::kafka::topics::matching(&k.brokers, &k.properties, regex).await {
            Ok(names) => {
                failures = 0;
                let new: Vec<String> = names.into_iter().filter(|n| !seen.contains(n)).collect();
                if !new.is_empty() {
                    tracing::info!(topics = %new.join(","), pattern = regex.as_str(), "topics matched");
                }
                for t in new {
                    seen.insert(t.clone());
                    let _ = found.send(p.for_topic(&t));
                }
                if seen.is_empty() {
                    tracing::info!(pattern = regex.as_str(), "no topic matches the pattern yet");
                }
            }
            // A broker that cannot answer now is asked again; the running topics go on.
            Err(e) => {
                failures += 1;
                if failures == 1 || failures.is_multiple_of(10) {
                    tracing::warn!(error = %e, failures, "cannot list topics for the pattern");
                }
            }
        }
        if k.stop_at_end && failures == 0 {
            return Ok(RunReport::default());
        }
        tokio::select! {
            _ = stop.changed() => return Ok(RunReport::default()),
            _ = tokio::time::sleep(*refresh) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicked_pipeline_stops_the_others_under_the_deadline() {
        let (stop, told) = watch::channel(false);
        let mut stopping = Stopping { timeout: Duration::from_secs(5), stop, deadline: None, first_error: None };
        let mut tasks: Tasks = JoinSet::new();
        tasks.spawn(async { panic!("a pipeline bug") });
        let mut reports = BTreeMap::new();
        stopping.joined(tasks.join_next().await.unwrap(), &mut reports);
        assert!(*told.borrow(), "the other pipelines are told to stop");
        let deadline = stopping.deadline.expect("a deadline");
        assert!(deadline <= tokio::time::Instant::now() + Duration::from_secs(5));
        let e = stopping.first_error.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(e.contains("panicked"), "{e}");
        // A later failure keeps the first error and the first deadline.
        stopping.fail(Error::Internal("later".into()));
        assert_eq!(stopping.deadline, Some(deadline));
        assert!(!stopping.first_error.as_ref().map(ToString::to_string).unwrap_or_default().contains("later"));
        // A pipeline that ended well reports.
        stopping.joined(Ok(("p".into(), Ok(RunReport::default()))), &mut reports);
        assert!(reports.contains_key("p"));
    }
}
