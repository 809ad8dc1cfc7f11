//! Where partitions resume, in-process on librdkafka's mock cluster:
//! - `start = "latest"` is resolved once and recorded in the table: records produced while no
//!   pipeline ran are read by the next owner, not skipped by a second "latest";
//! - a position past the partition's end (a recreated topic) is reported (ERROR, a metric);
//!
//! A position below the broker's earliest offset (records the broker deleted) needs a broker
//! that deletes records, which the mock cluster does not: that case runs against Apache Kafka
//! in `kafka_broker.rs`, and its verdicts are unit-tested in `ingest::positions`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use deltabus::app::service::{run, ServiceOptions};
use deltabus::config::pipeline::PipelineConfig;
use deltabus::metrics::Metrics;
use deltabus::storage::StorageOptions;
use rdkafka::mocking::MockCluster;

use crate::support::{committed, ids, pipeline, produce, run_until, runtime};

fn records(ids: std::ops::Range<i64>) -> Vec<(i32, Option<String>, Option<String>)> {
    ids.map(|i| (0, None, Some(format!(r#"{{"id":{i}}}"#)))).collect()
}

fn with_schema(mut p: PipelineConfig) -> PipelineConfig {
    p.schema = Some(r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#.into());
    p
}
/// Runs one pipeline until it is ready (partitions assigned) and `settle` has passed, or it
/// fails; returns its error.
async fn run_briefly(p: PipelineConfig, settle: Duration) -> (Result<(), String>, Arc<Metrics>) {
    let resolved = vec![p.validate("p0").unwrap()];
    let metrics = Arc::new(Metrics::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let opts = ServiceOptions {
        pipelines: resolved,
        storage: StorageOptions::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(30),
    };
    let m = metrics.clone();
    let watcher = tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !m.pipeline("p0").ready.load(Relaxed) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // A pause about time: the pipeline runs for `settle` once ready.
        tokio::time::sleep(settle).await;
        let _ = stop_tx.send(true);
    });
    let result = run(opts, metrics.clone(), stop_rx).await.map(|_| ()).map_err(|e| e.to_string());
    watcher.abort();
    (result, metrics)
}

#[test]
fn start_latest_is_recorded_once_so_the_next_owner_misses_nothing() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("s", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        produce(&brokers, "s", &records(0..5)).await;
        let mut p = with_schema(pipeline(&brokers, "s", &table));
        p.kafka.start = "latest".into();
        // The first owner starts at the end (offset 5) and stops before any new record.
        let (result, _) = run_briefly(p.clone(), Duration::from_millis(500)).await;
        result.unwrap();
        // Records arrive while no pipeline runs; the next owner starts where the first did.
        produce(&brokers, "s", &records(5..8)).await;
        let reports = run_until(vec![p], None, |m| committed(m, "p0") >= 3).await;
        assert_eq!(reports["p0"].rows_committed, 3);
    });
    assert_eq!(ids(&table), vec![5, 6, 7], "nothing before the first start, nothing skipped after it");
}

#[test]
fn a_position_past_the_end_of_the_partition_is_reported() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    // The table says offset 1000 of partition 0 is ingested; the topic has 3 records.
    let out = crate::support::write_jsonl(
        std::path::Path::new(&table),
        &["--app-id", "ingest-s-0", "--txn-version", "1000"],
        "{\"id\":-1}\n",
    );
    assert!(out.status.success());
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("s", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        produce(&brokers, "s", &records(0..3)).await;
        let p = pipeline(&brokers, "s", &table);
        let (result, metrics) = run_briefly(p, Duration::from_millis(300)).await;
        result.unwrap();
        assert_eq!(metrics.pipeline("p0").positions_past_end.get(), 1, "reported, not silent");
    });
    assert_eq!(ids(&table), vec![-1], "nothing ingested");
}

/// With `delta.setTransactionRetentionDuration` short, an idle partition's txn expires for
/// readers; the pipeline still resumes from it (and deltabus's checkpoints keep it) instead of
/// starting over from `kafka.start`.
#[test]
fn an_expired_position_is_still_the_position() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("s", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        produce(&brokers, "s", &records(0..5)).await;
        let mut p = with_schema(pipeline(&brokers, "s", &table));
        p.properties.insert("delta.setTransactionRetentionDuration".into(), "interval 1 second".into());
        let reports = run_until(vec![p.clone()], None, |m| committed(m, "p0") >= 5).await;
        assert_eq!(reports["p0"].rows_committed, 5);
        // Idle past the retention, and a checkpoint written meanwhile.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let out = crate::support::deltabus(&["checkpoint", &table]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        produce(&brokers, "s", &records(5..8)).await;
        let reports = run_until(vec![p], None, |m| committed(m, "p0") >= 3).await;
        assert_eq!(reports["p0"].rows_committed, 3, "resumed after offset 4, not from the start");
    });
    assert_eq!(ids(&table), (0..8).collect::<Vec<_>>());
}
