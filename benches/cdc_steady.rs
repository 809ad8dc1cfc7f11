//! Steady change data capture with the background compactor on: does a keyed table stay
//! bounded?
//!
//! A keyed pipeline (`key_columns = ["id"]`, deletion vectors, 1 s flushes) consumes a steady
//! stream of upserts over a fixed key space (`BENCH_KEYS`, default 200,000 keys, random keys at
//! `BENCH_RATE`, default 10,000 records/s) from librdkafka's in-process mock cluster for
//! `BENCH_SECONDS` (default 600). Beside it the pipeline's background compactor runs
//! (`min_files = 8`, `interval = "10s"`, `deleted_rows_ratio = 0.2`). Every 30 s the table is
//! sampled: live files, rows in them, rows their deletion vectors delete, and the compactor's
//! commits, abandoned and remapped bins. At the end the live rows must be the keys produced.
//!
//! Run: `cargo bench --bench cdc_steady` (`BENCH_SECONDS=60` for a short run).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use deltabus::app::service::{run, ServiceOptions};
use deltabus::config::{PipelineConfig, UpsertConfig};
use deltabus::metrics::Metrics;
use deltabus::storage::{StorageOptions, Table};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::FutureRecord;

#[path = "support/mod.rs"]
mod support;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The key of record `i` (a fixed pseudo-random walk over the key space).
fn key_of(i: u64, keys: u64) -> u64 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
    x ^= x >> 31;
    x % keys
}

/// (live files, rows in them, rows their DVs delete).
async fn sample(table: &str) -> (usize, u64, u64) {
    let Ok(t) = Table::open(table, StorageOptions::default()) else { return (0, 0, 0) };
    let Ok(s) = t.snapshot(None).await else { return (0, 0, 0) };
    let files = s.files();
    let rows = files
        .iter()
        .filter_map(|f| serde_json::from_str::<serde_json::Value>(f.stats.as_deref()?).ok()?["numRecords"].as_u64())
        .sum();
    let deleted = files.iter().filter_map(|f| f.deletion_vector.as_ref()).map(|d| d.cardinality as u64).sum();
    (files.len(), rows, deleted)
}

fn main() {
    let (seconds, keys, rate) = (env("BENCH_SECONDS", 600), env("BENCH_KEYS", 200_000), env("BENCH_RATE", 10_000));
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("cdc").to_string_lossy().into_owned();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("bench", 4, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = PipelineConfig::new(&table, &brokers, "bench");
        p.app_id = Some("cdc".into());
        p.create = true;
        p.upsert = Some(UpsertConfig {
            key_columns: vec!["id".into()],
            format: deltabus::config::UpsertFormat::Plain,
            op_field: None,
            index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
        });
        p.flush.max_latency = "1s".parse().unwrap();
        p.compaction.enabled = true;
        p.compaction.min_files = 8;
        p.compaction.interval = "10s".parse().unwrap();
        p.compaction.deleted_rows_ratio = 0.2;
        let metrics = Arc::new(Metrics::default());
        let m = metrics.pipeline("bench");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let opts = ServiceOptions {
            pipelines: vec![p.validate("bench").unwrap()],
            storage: Default::default(),
            metrics_addr: None,
            shutdown_timeout: Duration::from_secs(120),
        };
        let service = tokio::spawn(run(opts, metrics.clone(), stopped));
        let total = seconds * rate;
        let producing = tokio::spawn(async move {
            let producer = support::producer(&brokers);
            let start = Instant::now();
            let mut seen = HashSet::new();
            for chunk in (0..total).step_by(1_000) {
                let due = start + Duration::from_secs_f64(chunk as f64 / rate as f64);
                tokio::time::sleep_until(due.into()).await;
                let mut pending = Vec::new();
                for i in chunk..(chunk + 1_000).min(total) {
                    let id = key_of(i, keys);
                    seen.insert(id);
                    let payload = format!(r#"{{"id":{id},"version":{i},"note":"change {i} of key {id}"}}"#);
                    let key = id.to_string();
                    let r = FutureRecord::<String, String>::to("bench").key(&key).payload(&payload);
                    pending.push(producer.send_result(r).unwrap());
                }
                for d in futures::future::join_all(pending).await {
                    d.unwrap().unwrap();
                }
            }
            seen.len() as u64
        });
        println!("{keys} keys, {rate} records/s for {seconds} s; compactor: min_files 8, every 10 s, deleted_rows_ratio 0.2");
        println!("| t (s) | committed | live files | rows in files | DV-deleted rows | compactions | abandoned | remapped |");
        println!("|---|---|---|---|---|---|---|---|");
        let t0 = Instant::now();
        let (mut max_files, mut max_deleted) = (0usize, 0u64);
        while t0.elapsed() < Duration::from_secs(seconds) {
            tokio::time::sleep(Duration::from_secs(30).min(Duration::from_secs(seconds))).await;
            let (files, rows, deleted) = sample(&table).await;
            max_files = max_files.max(files);
            max_deleted = max_deleted.max(deleted);
            println!(
                "| {:.0} | {} | {files} | {rows} | {deleted} | {} | {} | {} |",
                t0.elapsed().as_secs_f64(),
                m.rows_committed.get(),
                m.compaction_commits.get(),
                m.compaction_abandoned.get(),
                m.compaction_remapped.get()
            );
        }
        let distinct = producing.await.unwrap();
        while m.rows_committed.get() < total {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = stop.send(true);
        service.await.unwrap().unwrap();
        let (files, rows, deleted) = sample(&table).await;
        println!(
            "end: {files} live files, {} live rows for {distinct} keys produced; at most {max_files} files and {max_deleted} DV-deleted rows at a sample; {} abandoned bins, {} remapped",
            rows - deleted,
            m.compaction_abandoned.get(),
            m.compaction_remapped.get()
        );
        assert_eq!(rows - deleted, distinct, "one live row per key");
    });
}
