//! Shared by the Kafka benchmarks (included with `#[path]`): the producer settings, producing
//! alongside a consuming pipeline without outrunning the mock cluster's 5 MB per partition,
//! timing until everything is committed, and produce → visible latency.

#![allow(dead_code)] // each benchmark uses its part

use std::sync::Arc;
use std::time::{Duration, Instant};

use deltabus::app::service::{run, ServiceOptions};
use deltabus::config::PipelineConfig;
use deltabus::metrics::{Metrics, PipelineMetrics};
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};

/// The Arrow schema of the benchmark records (`id`, `user`, `country`, `amount`, `ok`, `note`,
/// `ts`).
pub fn record_schema() -> Arc<arrow::datatypes::Schema> {
    use arrow::datatypes::{DataType, Field, Schema};
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("user", DataType::Utf8, true),
        Field::new("country", DataType::Utf8, true),
        Field::new("amount", DataType::Float64, true),
        Field::new("ok", DataType::Boolean, true),
        Field::new("note", DataType::Utf8, true),
        Field::new("ts", DataType::Int64, true),
    ]))
}

/// A producer with zstd level 1 batches of up to 10,000 records.
pub fn producer(brokers: &str) -> FutureProducer {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "5")
        .set("batch.num.messages", "10000")
        .set("compression.type", "zstd")
        .set("compression.level", "1")
        .create()
        .unwrap()
}

/// Produces records `0..n` to `topic` (`record(i)` gives key, payload and partition), at most
/// ~80,000 ahead of what the pipeline has consumed.
pub async fn produce_alongside(
    brokers: &str,
    topic: &str,
    n: u64,
    consumed: Arc<PipelineMetrics>,
    record: impl Fn(u64) -> (Option<String>, String, i32),
) {
    let producer = producer(brokers);
    for start in (0..n).step_by(10_000) {
        while start > consumed.records_in.get() + 70_000 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut pending = Vec::new();
        for i in start..(start + 10_000).min(n) {
            let (key, payload, partition) = record(i);
            let mut r = FutureRecord::<String, String>::to(topic).payload(&payload).partition(partition);
            if let Some(k) = &key {
                r = r.key(k);
            }
            pending.push(producer.send_result(r).unwrap());
        }
        for d in futures::future::join_all(pending).await {
            d.unwrap().unwrap();
        }
    }
}

/// Runs pipeline `p` (as `bench`) until its `n` records are committed: its report and the
/// seconds from the first record consumed to the last commit ([`time_to_commit`]).
pub async fn run_until_committed(p: PipelineConfig, n: u64) -> (deltabus::ingest::runner::RunReport, f64) {
    let metrics = Arc::new(Metrics::default());
    let (tx, rx) = tokio::sync::watch::channel(false);
    let watcher = tokio::spawn(time_to_commit(metrics.pipeline("bench"), n, tx));
    let opts = ServiceOptions {
        pipelines: vec![p.validate("bench").unwrap()],
        storage: Default::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(60),
    };
    let mut reports = run(opts, metrics, rx).await.unwrap();
    let seconds = watcher.await.unwrap().unwrap();
    let report = reports.remove("bench").unwrap();
    assert_eq!(report.rows_committed, n, "{report:?}");
    (report, seconds)
}

/// Stops the service once `total` records are consumed (its shutdown commits the last batch at
/// once) and waits until `total` rows are committed; the seconds from the first record
/// consumed to then.
pub async fn time_to_commit(
    m: Arc<PipelineMetrics>,
    total: u64,
    stop: tokio::sync::watch::Sender<bool>,
) -> Option<f64> {
    let mut first: Option<Instant> = None;
    while m.rows_committed.get() < total {
        if first.is_none() && m.records_in.get() > 0 {
            first = Some(Instant::now());
        }
        // Everything consumed: shut down, which flushes and commits the last batch at once
        // (instead of waiting for its latency limit, which would time the limit).
        if m.records_in.get() >= total {
            let _ = stop.send(true);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let _ = stop.send(true);
    first.map(|f| f.elapsed().as_secs_f64())
}

/// Runs one pipeline (`pipeline(brokers)`, reading topic `bench`) on a fresh in-process mock
/// cluster (4 partitions) while `record(i)` for `i` in `0..n` is produced alongside, until all
/// `n` are committed. (seconds from the first record consumed to the last commit, commits).
pub async fn ingest_alongside(
    n: u64,
    pipeline: impl FnOnce(&str) -> PipelineConfig,
    record: impl Fn(u64) -> (Option<String>, String, i32) + Send + 'static,
) -> (f64, u64) {
    let (seconds, _, commits) = ingest_alongside_timed(n, pipeline, record).await;
    (seconds, commits)
}

/// [`ingest_alongside`], also timed from the pipeline's start (opening its table and joining
/// the group included): (seconds from the first record, seconds from the start, commits).
pub async fn ingest_alongside_timed(
    n: u64,
    pipeline: impl FnOnce(&str) -> PipelineConfig,
    record: impl Fn(u64) -> (Option<String>, String, i32) + Send + 'static,
) -> (f64, f64, u64) {
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("bench", 4, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let metrics = Arc::new(Metrics::default());
    let m = metrics.pipeline("bench");
    let (tx, rx) = tokio::sync::watch::channel(false);
    let producing = {
        let (m, brokers) = (m.clone(), brokers.clone());
        tokio::spawn(async move { produce_alongside(&brokers, "bench", n, m, record).await })
    };
    let watcher = tokio::spawn(time_to_commit(m, n, tx));
    let opts = ServiceOptions {
        pipelines: vec![pipeline(&brokers).validate("bench").unwrap()],
        storage: Default::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(120),
    };
    let started = Instant::now();
    let reports = run(opts, metrics, rx).await.unwrap();
    let seconds = watcher.await.unwrap().unwrap();
    let from_start = started.elapsed().as_secs_f64();
    producing.await.unwrap();
    assert_eq!(reports["bench"].rows_committed, n);
    (seconds, from_start, reports["bench"].commits)
}

/// Produce → visible latency: one record (`payload(i)`) every 10 ms for 20 s into a fresh
/// table through `pipeline(brokers, topic, table)` (pipeline `lat`, reading topic `lat` on the
/// in-process mock, or a new topic on `DELTABUS_BENCH_BROKERS` when set); for each
/// record, the milliseconds from its send to the commit whose txn covers its offset (the
/// `lastUpdated` of that txn), or with `iceberg` to the Iceberg metadata file that first
/// holds that commit (its modification time: when an Iceberg reader could see the row).
pub async fn send_to_visible(
    pipeline: impl FnOnce(&str, &str, &str) -> PipelineConfig,
    payload: impl Fn(usize) -> String,
    iceberg: bool,
) -> Vec<f64> {
    use deltabus::delta::actions::Action;
    use std::sync::atomic::Ordering::Relaxed;
    // A separate broker (DELTABUS_BENCH_BROKERS) gets a new one-partition topic; else the mock.
    let (brokers, topic, _cluster) = match std::env::var("DELTABUS_BENCH_BROKERS") {
        Ok(brokers) => {
            let topic = format!("lat-{}", uuid::Uuid::new_v4().simple());
            use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
            let admin: AdminClient<_> = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
            let new = NewTopic::new(&topic, 1, TopicReplication::Fixed(1));
            assert!(admin.create_topics([&new], &AdminOptions::new()).await.unwrap().iter().all(Result::is_ok));
            (brokers, topic, None)
        }
        Err(_) => {
            let cluster = MockCluster::new(1).unwrap();
            cluster.create_topic("lat", 1, 1).unwrap();
            (cluster.bootstrap_servers(), "lat".to_string(), Some(cluster))
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let metrics = Arc::new(Metrics::default());
    let m = metrics.pipeline("lat");
    let (tx, rx) = tokio::sync::watch::channel(false);
    let opts = ServiceOptions {
        pipelines: vec![pipeline(&brokers, &topic, &table).validate("lat").unwrap()],
        storage: Default::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(60),
    };
    let service = tokio::spawn(run(opts, metrics, rx));
    while !m.ready.load(Relaxed) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let producer = producer(&brokers);
    let mut sent = Vec::new();
    for i in 0..2000 {
        let t = chrono::Utc::now().timestamp_millis();
        let offset = producer
            .send(FutureRecord::<(), String>::to(&topic).payload(&payload(i)), Duration::from_secs(5))
            .await
            .unwrap()
            .offset;
        sent.push((offset, t));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    while m.rows_committed.get() < 2000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = tx.send(true);
    service.await.unwrap().unwrap();
    let t = deltabus::storage::Table::open(&table, Default::default()).unwrap();
    let latest = t.snapshot(None).await.unwrap().version;
    // When each Delta version became visible to Iceberg readers: the first metadata file
    // mirroring it or a later one.
    let mut mirrored: Vec<(u64, i64)> = Vec::new();
    if iceberg {
        for e in std::fs::read_dir(dir.path().join("t/metadata")).unwrap() {
            let path = e.unwrap().path();
            if !path.to_string_lossy().ends_with(".metadata.json") {
                continue;
            }
            let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let current = meta["current-snapshot-id"].clone();
            let Some(snap) = meta["snapshots"].as_array().and_then(|s| s.iter().find(|s| s["snapshot-id"] == current))
            else {
                continue;
            };
            let version: u64 = snap["summary"]["delta-version"].as_str().unwrap().parse().unwrap();
            let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
            let ms = mtime.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
            mirrored.push((version, ms));
        }
    }
    let mut visible = Vec::new();
    for v in 1..=latest {
        for a in t.read_commit(v).await.unwrap() {
            if let Action::Txn(txn) = a {
                let at = if iceberg {
                    mirrored.iter().filter(|(m, _)| *m >= v).map(|(_, ms)| *ms).min().expect("every version mirrored")
                } else {
                    txn.last_updated.unwrap_or(0)
                };
                visible.push((txn.version, at));
            }
        }
    }
    sent.iter()
        .map(|(offset, at)| {
            let (_, seen) = visible.iter().find(|(v, _)| v >= offset).expect("every offset committed");
            (seen - at) as f64
        })
        .collect()
}
