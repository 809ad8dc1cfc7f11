//! `deltabus run` (pipelines from the configuration), `deltabus ingest` (one pipeline from
//! flags, built on the same structures) and `deltabus demo` (an in-process Kafka cluster
//! ingested into a local table).
//!
//! `run` and `ingest` print one JSON object per pipeline when they stop:
//! `{"pipeline", "records", "rowsCommitted", "deadLetters", "commits"}`.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use tokio::sync::watch;

use super::key_value::{self, KeyValue};
use crate::app::service::{run, ServiceOptions};
use crate::common::units::HumanDuration;
use crate::config::pipeline::{PipelineConfig, RecordColumns};
use crate::config::{Config, ResolvedPipeline};
use crate::error::{Error, Result};
use crate::ingest::runner::RunReport;
use crate::metrics::Metrics;
use crate::storage::StorageOptions;

/// `deltabus ingest` arguments.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// The Kafka topic to consume.
    pub topic: String,
    /// The table: a local path or a URL (s3://, az://, abfss://, gs://, ...).
    pub table: String,
    /// Kafka bootstrap servers, host:port[,host:port...].
    #[arg(long)]
    pub brokers: String,
    /// Names the positions in the table (`txn` appId `<app-id>-<topic>-<partition>`).
    #[arg(long)]
    pub app_id: String,
    /// Consumer group (default: the app id).
    #[arg(long)]
    pub group_id: Option<String>,
    /// Maximum age of a batch (e.g. 500ms, 10s, 2m, 1h).
    #[arg(long, default_value = "10s")]
    pub flush_interval: HumanDuration,
    /// Rows per batch: a batch commits when it holds this many (or at --flush-interval).
    #[arg(long, default_value_t = 1_000_000)]
    pub max_rows: u64,
    /// Buffered bytes per batch (its rows decoded), also the memory bound (at most two batches
    /// are held: one written while the next fills, its rows packed as it fills), e.g. 64MiB.
    #[arg(long, value_name = "SIZE", default_value = "256MiB")]
    pub max_bytes: crate::common::units::ByteSize,
    /// Create the table on the first batch (schema inferred) when it is missing.
    #[arg(long)]
    pub create: bool,
    /// Partition columns of a new table, comma-separated; `date(ts)`, `hour(ts)`, ... derive
    /// generated columns from a timestamp column.
    #[arg(long, value_delimiter = ',')]
    pub partition_by: Vec<String>,
    /// Where a partition without a recorded position starts: earliest, latest,
    /// timestamp:<RFC 3339 or ms> or offsets:<p>=<o>,...
    #[arg(long, default_value = "earliest")]
    pub start: String,
    /// cooperative-sticky, range, roundrobin, or consumer (KIP-848's protocol, Kafka 4 brokers).
    #[arg(long, default_value = "cooperative-sticky", value_parser = |s: &str| s.parse::<crate::config::pipeline::Assignment>())]
    pub assignment: crate::config::pipeline::Assignment,
    /// Ingest up to the partitions' current ends, commit and exit 0 (backfills, batch jobs).
    #[arg(long)]
    pub until_end: bool,
    /// With --until-end: fail when no record arrives and no partition is assigned for this
    /// long (an unreachable broker, a missing topic).
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub until_end_timeout: crate::common::units::HumanDuration,
    /// Add new top-level fields of the records as nullable columns (as `write --evolve-schema`
    /// and a pipeline's `evolve_schema`) instead of sending those records to dead letters.
    #[arg(long)]
    pub evolve_schema: bool,
    /// JSON fields that land as `variant` columns whatever their shape (comma-separated; a
    /// pipeline's `variant_columns`).
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    pub variant_columns: Vec<String>,
    /// The `variant` column each whole JSON record lands in (a pipeline's `record_variant`).
    #[arg(long, value_name = "COLUMN", conflicts_with = "variant_columns")]
    pub record_variant: Option<String>,
    /// Payload format: json, or avro / protobuf / json-schema (Confluent wire format; needs
    /// --schema-registry).
    #[arg(long, default_value = "json", value_parser = ["json", "avro", "protobuf", "json-schema"])]
    pub format: String,
    /// Schema registry URL (Confluent REST API) for --format avro. Credentials come from the
    /// environment: DELTABUS_SCHEMA_REGISTRY_USERNAME/_PASSWORD or _TOKEN.
    #[arg(long, value_name = "URL")]
    pub schema_registry: Option<String>,
    /// Delta table for undecodable records.
    #[arg(long)]
    pub dead_letter_table: Option<String>,
    /// Serve Prometheus metrics, /health and /ready here (HOST:PORT) [default: none].
    #[arg(long)]
    pub metrics_addr: Option<String>,
    /// Compact partitions in the background once they hold 50 small files.
    #[arg(long)]
    pub auto_compact: bool,
    /// librdkafka property KEY=VALUE (security settings...); repeatable.
    #[arg(long = "kafka-property", value_name = "KEY=VALUE")]
    pub kafka_properties: Vec<KeyValue>,
    /// Keyed ingestion: records upsert or delete rows by these columns (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub upsert_keys: Vec<String>,
    /// Keyed payload format: plain or debezium.
    #[arg(long, default_value = "plain", requires = "upsert_keys")]
    pub upsert_format: String,
    /// Plain keyed payloads: the column whose value `d`/`delete` makes a record a delete.
    #[arg(long, requires = "upsert_keys")]
    pub upsert_op_field: Option<String>,
    /// Who commits: worker (each process its own flushes) or coordinated (one committer per
    /// table, chosen through Kafka, commits every worker's flushes; see docs/src/guides/scaling.md).
    #[arg(long, default_value = "worker", value_parser = |s: &str| s.parse::<crate::config::commit::CommitMode>())]
    pub commit_mode: crate::config::commit::CommitMode,
    /// Coordinated: the committer commits at most once per this interval.
    #[arg(long, default_value = "1s")]
    pub commit_interval: HumanDuration,
    /// Coordinated: a worker with no answer for this long checks the table and sends again.
    #[arg(long, default_value = "30s")]
    pub commit_request_timeout: HumanDuration,
}

impl IngestArgs {
    /// The pipeline these flags describe.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad flag value.
    pub fn pipeline(&self) -> Result<ResolvedPipeline> {
        let properties = key_value::to_map(&self.kafka_properties);
        let mut config = PipelineConfig::new(&self.table, &self.brokers, &self.topic);
        config.app_id = Some(self.app_id.clone());
        config.create = self.create;
        config.partition_by = self.partition_by.clone();
        config.kafka.group_id = self.group_id.clone();
        config.kafka.start = self.start.clone();
        config.kafka.assignment = self.assignment;
        config.kafka.format = self.format.clone();
        config.kafka.stop_at_end = self.until_end;
        config.kafka.stall_timeout = self.until_end_timeout;
        config.evolve_schema = self.evolve_schema;
        config.variant_columns = self.variant_columns.clone();
        config.record_variant = self.record_variant.clone();
        if let Some(url) = &self.schema_registry {
            let var = |k: &str| std::env::var(format!("DELTABUS_SCHEMA_REGISTRY_{k}")).ok();
            config.schema_registry = Some(crate::decode::registry::RegistryConfig {
                url: url.clone(),
                username: var("USERNAME"),
                password: var("PASSWORD"),
                token: var("TOKEN"),
                ..Default::default()
            });
        }
        config.kafka.properties = properties;
        config.flush.max_latency = self.flush_interval;
        config.flush.max_rows = self.max_rows;
        config.flush.max_bytes = self.max_bytes;
        config.dead_letter.table = self.dead_letter_table.clone();
        config.compaction.enabled = self.auto_compact;
        config.commit.mode = self.commit_mode;
        config.commit.interval = self.commit_interval;
        config.commit.request_timeout = self.commit_request_timeout;
        if !self.upsert_keys.is_empty() {
            config.upsert = Some(crate::config::UpsertConfig {
                key_columns: self.upsert_keys.clone(),
                format: self
                    .upsert_format
                    .parse()
                    .map_err(|e| Error::InvalidArgument(format!("--upsert-format {e}")))?,
                op_field: self.upsert_op_field.clone(),
                index_memory: crate::config::DEFAULT_INDEX_MEMORY,
            });
        }
        // Metrics and logs name the pipeline by its app id; errors name the flags.
        config.validate(&self.app_id).map_err(|e| match e {
            Error::InvalidConfig { key, why } => in_flag_words(&key, why, &self.app_id),
            other => other,
        })
    }
}

/// A refused pipeline setting named by the `deltabus ingest` flag that sets it.
fn in_flag_words(key: &str, why: String, name: &str) -> Error {
    let prefix = format!("pipelines.{name}.");
    let Some(key) = key.strip_prefix(&prefix) else { return Error::InvalidConfig { key: key.into(), why } };
    let flag = match key {
        "kafka.start" => "--start",
        "kafka.assignment" => "--assignment",
        "kafka.format" => "--format",
        "schema_registry.url" => "--schema-registry",
        "kafka.properties" => "--kafka-property",
        "kafka" => "--brokers / <TOPIC>",
        "app_id" => "--app-id",
        "table" => "<TABLE>",
        "flush" => "--flush-interval / --max-rows / --max-bytes",
        "upsert.key_columns" => "--upsert-keys",
        "upsert.format" => "--upsert-format",
        "upsert.op_field" => "--upsert-op-field",
        "dead_letter" => "--dead-letter-table",
        "partition_by" => "--partition-by",
        "commit.mode" => "--commit-mode",
        "commit" => "--commit-interval / --commit-request-timeout",
        other => other,
    };
    Error::InvalidConfig { key: flag.into(), why }
}

/// Resolves on SIGTERM or SIGINT.
pub(super) fn stop_signal() -> impl std::future::Future<Output = ()> + Send {
    let mut rx = shutdown_on_signals();
    async move {
        let _ = rx.wait_for(|s| *s).await;
    }
}

/// Sends `true` on SIGTERM or SIGINT.
pub(super) fn shutdown_on_signals() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate()).ok();
            let sigterm = async {
                match term.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => futures::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = sigterm => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("signal received");
        let _ = tx.send(true);
    });
    rx
}

fn print_reports(reports: &BTreeMap<String, RunReport>, out: &mut (dyn Write + Send)) -> Result<()> {
    for (name, r) in reports {
        let v = json!({"pipeline": name, "records": r.records, "rowsCommitted": r.rows_committed,
            "deadLetters": r.dead_letters, "commits": r.commits});
        writeln!(out, "{v}")?;
    }
    Ok(())
}

/// `deltabus run` and `deltabus ingest`.
///
/// # Errors
/// Configuration, Kafka, storage and protocol errors.
pub(super) async fn run_pipelines(
    pipelines: Vec<ResolvedPipeline>,
    config: &Config,
    storage: StorageOptions,
    metrics_addr: Option<String>,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    check_pipelines(&pipelines, &storage)?;
    let stop = shutdown_on_signals();
    let metrics = Metrics::shared();
    let deadline = config.run.shutdown_timeout.get();
    if config.server.tables.is_empty() {
        let opts = ServiceOptions {
            pipelines,
            storage,
            metrics_addr: metrics_addr.or_else(|| Some(config.metrics.addr.clone()).filter(|a| !a.is_empty())),
            shutdown_timeout: deadline,
        };
        let reports = run(opts, metrics, stop).await?;
        return print_reports(&reports, out);
    }
    // Push ingest beside the pipelines: it stops on a signal, or when the pipelines end.
    let (server_stop, server_stopping) = watch::channel(false);
    let mut signals = stop.clone();
    let forward = server_stop.clone();
    tokio::spawn(async move {
        let _ = signals.wait_for(|s| *s).await;
        let _ = forward.send(true);
    });
    let resolved = config.server.resolve(&|name| std::env::var(name).ok())?;
    let server = super::serve::start(resolved, storage.clone(), metrics.clone(), server_stopping, config, out).await?;
    let reports = if pipelines.is_empty() {
        let mut stop = stop;
        let _ = stop.wait_for(|s| *s).await;
        Ok(BTreeMap::new())
    } else {
        let opts = ServiceOptions {
            pipelines,
            storage,
            metrics_addr: metrics_addr.or_else(|| Some(config.metrics.addr.clone()).filter(|a| !a.is_empty())),
            shutdown_timeout: deadline,
        };
        run(opts, metrics, stop).await
    };
    let _ = server_stop.send(true);
    tokio::time::timeout(deadline * 2, server.stopped()).await.map_err(|_| {
        Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the push server did not stop within run.shutdown_timeout",
        ))
    })?;
    print_reports(&reports?, out)
}

/// What can be checked before anything connects, for `run`, `ingest` and `config check`:
/// librdkafka's verdict on every client property (named, its value never shown) and the
/// object store's on every storage option of each remote table.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the pipeline and the property or option.
pub(super) fn check_pipelines(pipelines: &[ResolvedPipeline], storage: &StorageOptions) -> Result<()> {
    for p in pipelines {
        if let crate::config::PipelineSource::Kafka(k) = &p.source {
            crate::source::kafka::consumer::check_properties(&k.properties)
                .map_err(|e| Error::InvalidArgument(format!("pipelines.{}.kafka.properties: {e}", p.name)))?;
        }
        let remote = p.table.contains("://") && !p.table.starts_with("file://") && !p.table.starts_with("memory://");
        if remote && !p.table.contains('{') {
            crate::storage::Table::open(&p.table, storage.clone())
                .map_err(|e| Error::InvalidArgument(format!("pipelines.{}: {e}", p.name)))?;
        }
    }
    Ok(())
}

/// `deltabus demo`: librdkafka's in-process mock cluster, sample events (a few malformed),
/// ingested into a new local table; prints what landed.
///
/// # Errors
/// Kafka mock, storage and pipeline errors.
pub(super) async fn demo(table: Option<String>, records: u32, out: &mut (dyn Write + Send)) -> Result<()> {
    use rdkafka::mocking::MockCluster;
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let dir = match table {
        Some(t) => t,
        None => std::env::temp_dir()
            .join(format!("deltabus-demo-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]))
            .join("events")
            .to_string_lossy()
            .into_owned(),
    };
    // The demo's Kafka is new every run: a table holding an earlier run's positions would
    // wait for offsets this cluster never reaches.
    if std::path::Path::new(&dir).join("_delta_log").is_dir() {
        return Err(Error::InvalidArgument(format!(
            "--table {dir} already holds a table: the demo writes a new one (remove it or name another directory)"
        )));
    }
    let cluster = MockCluster::new(1).map_err(|e| Error::Kafka(format!("mock cluster: {e}")))?;
    const PARTITIONS: i32 = 4;
    cluster.create_topic("events", PARTITIONS, 1).map_err(|e| Error::Kafka(format!("mock topic: {e}")))?;
    let brokers = cluster.bootstrap_servers();
    let producer: FutureProducer<crate::common::kafka_log::LoggedContext> =
        crate::source::kafka::client::client_config(
            &brokers,
            &Default::default(),
            crate::source::kafka::client::Role::Producer,
        )
        .create_with_context(crate::common::kafka_log::LoggedContext::default())
        .map_err(|e| Error::Kafka(format!("producer: {e}")))?;
    writeln!(
        out,
        "producing {records} events to topic `events` ({PARTITIONS} partitions) on an in-process Kafka at {brokers}"
    )?;
    out.flush()?;
    let schema = r#"{"type":"struct","fields":[
        {"name":"id","type":"long","nullable":false,"metadata":{}},
        {"name":"country","type":"string","nullable":true,"metadata":{}},
        {"name":"amount","type":"double","nullable":true,"metadata":{}},
        {"name":"tags","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}}]}"#;
    let mut pipeline = PipelineConfig::new(&dir, &brokers, "events");
    pipeline.app_id = Some("demo".into());
    pipeline.create = true;
    pipeline.schema = Some(schema.into());
    pipeline.partition_by = vec!["country".into()];
    pipeline.flush.max_latency = HumanDuration::from_millis(500);
    pipeline.columns = RecordColumns {
        key: Some("_kafka_key".into()),
        offset: Some("_kafka_offset".into()),
        partition: Some("_kafka_partition".into()),
        ..RecordColumns::default()
    };
    pipeline.dead_letter.table = Some(format!("{dir}_dead_letters"));
    let pipeline = pipeline.validate("demo")?;
    let metrics = Metrics::shared();
    let (stop_tx, stop_rx) = watch::channel(false);
    let opts = ServiceOptions {
        pipelines: vec![pipeline],
        storage: StorageOptions::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(30),
    };
    let m = metrics.pipeline("demo");
    // librdkafka's mock cluster keeps only the newest 5 MiB per partition: events are produced
    // alongside the pipeline, never more than that many bytes ahead of what it committed, so
    // none is dropped before ingestion.
    let ahead = u64::from(PARTITIONS as u32) * (4 << 20) / 128;
    let feeder = tokio::spawn(async move {
        let progress = crate::common::progress::Progress::new("demo", "events committed", Some(u64::from(records)));
        let committed = || m.rows_committed.get() + m.dead_letters.get();
        let countries = ["DE", "FR", "NL", "US"];
        let mut pending = Vec::new();
        for i in 0..records {
            while u64::from(i) > committed() + ahead {
                progress.inc(committed().saturating_sub(progress.done()));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let payload = if i % 250 == 249 {
                format!("{{\"id\": {i}, \"amount\": \"not a number\"}}")
            } else {
                format!(
                    "{{\"id\":{i},\"country\":\"{}\",\"amount\":{}.{:02},\"tags\":[\"demo\"]}}",
                    countries[(i % 4) as usize],
                    i % 1000,
                    i % 100
                )
            };
            let key = format!("user-{}", i % 97);
            match producer.send_result(FutureRecord::to("events").key(&key).payload(&payload)) {
                Ok(delivery) => pending.push(delivery),
                Err((e, _)) => return Err(Error::Kafka(format!("produce: {e}"))),
            }
            if pending.len() >= 10_000 {
                for d in futures::future::join_all(pending.drain(..)).await {
                    d.map_err(|_| Error::Kafka("produce: cancelled".into()))?
                        .map_err(|(e, _)| Error::Kafka(format!("produce: {e}")))?;
                }
            }
        }
        for d in futures::future::join_all(pending).await {
            d.map_err(|_| Error::Kafka("produce: cancelled".into()))?
                .map_err(|(e, _)| Error::Kafka(format!("produce: {e}")))?;
        }
        // Everything produced: wait until everything is committed (or stalls for a minute).
        let mut last = (committed(), tokio::time::Instant::now());
        while committed() < u64::from(records) && last.1.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            progress.inc(committed().saturating_sub(progress.done()));
            if committed() != last.0 {
                last = (committed(), tokio::time::Instant::now());
            }
        }
        progress.finish();
        let _ = stop_tx.send(true);
        Ok::<(), Error>(())
    });
    let reports = run(opts, metrics, stop_rx).await?;
    feeder.await.map_err(|e| Error::Internal(format!("demo producer: {e}")))??;
    print_reports(&reports, out)?;
    let table = crate::storage::Table::open(&dir, StorageOptions::default())?;
    let snapshot = table.snapshot(None).await?;
    let files = snapshot.files();
    let rows: i64 = files
        .iter()
        .filter_map(|f| f.stats.as_deref())
        .filter_map(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .filter_map(|v| v["numRecords"].as_i64())
        .sum();
    writeln!(out, "table {dir}: version {}, {} files, {rows} rows", snapshot.version, files.len())?;
    let mut positions: Vec<_> = snapshot.state().txns.iter().map(|(k, t)| (k.clone(), t.version)).collect();
    positions.sort();
    for (app, v) in positions {
        writeln!(out, "  position {app} = offset {v}")?;
    }
    let dead = crate::storage::Table::open(&format!("{dir}_dead_letters"), StorageOptions::default())?;
    let dead_rows: i64 = match dead.snapshot(None).await {
        Ok(s) => s
            .files()
            .iter()
            .filter_map(|f| f.stats.as_deref())
            .filter_map(|s| serde_json::from_str::<serde_json::Value>(s).ok())
            .filter_map(|v| v["numRecords"].as_i64())
            .sum(),
        Err(_) => 0,
    };
    writeln!(out, "dead letters (malformed events, with reason and raw bytes): {dead_rows} in {dir}_dead_letters")?;
    // Never silent about loss: every event produced is a row or a dead letter.
    let landed = u64::try_from(rows + dead_rows).unwrap_or(0);
    if landed != u64::from(records) {
        return Err(Error::Internal(format!(
            "the demo produced {records} events but {landed} landed ({rows} rows + {dead_rows} dead letters)"
        )));
    }
    writeln!(out, "all {records} events landed exactly once: {rows} rows + {dead_rows} dead letters")?;
    writeln!(out, "look inside:  deltabus cat {dir} --limit 3   |   deltabus history {dir}")?;
    Ok(())
}
