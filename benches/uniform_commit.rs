//! What UniForm costs: the same work on a plain table and on a UniForm table (Iceberg metadata
//! written after every commit), measured in the same run.
//!
//! 1. **Ingest**: `BENCH_RECORDS` (default 1,000,000) JSON records of ~250 B produced to
//!    librdkafka's in-process mock cluster alongside a pipeline with a 1 s flush: records/s
//!    and the ratio between the two tables.
//! 2. **Produce → visible at a 1 s flush**: one record every 10 ms for 20 s; on the plain
//!    table visible at its Delta commit, on the UniForm table at the Iceberg metadata file
//!    that first holds it: p50 / p99 and the difference.
//! 3. **Commit latency as the table grows**: sequential one-file appends from 0 to
//!    `BENCH_COMMITS` (default 10,000) files; the mean commit latency (Delta commit, plus the
//!    Iceberg conversion on the UniForm table) around 100, 1,000 and 10,000 files: a flat
//!    difference means the conversion is incremental, not a rewrite per commit.
//!
//! Run: `cargo bench --bench uniform_commit` (`BENCH_ONLY_COMMITS=1` runs part 3 only).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::collections::HashMap;
use std::time::Instant;

use deltabus::common::units::HumanDuration;
use deltabus::config::PipelineConfig;

use deltabus::delta::actions::{Action, Add};
use deltabus::delta::create::{infer_schema, new_table};
use deltabus::delta::transaction::{CommitOutcome, Operation, Transaction};
use deltabus::storage::{RetryPolicy, StorageOptions, Table};

#[path = "support/mod.rs"]
mod support;

fn payload(i: usize) -> String {
    format!(
        r#"{{"id":{i},"user":"user-{}","country":"{}","amount":{}.25,"ok":{},"note":"{}"}}"#,
        i % 1000,
        ["fr", "日本", "us", "ch"][i % 4],
        i % 997,
        i.is_multiple_of(2),
        "x".repeat(150)
    )
}

fn pipeline(brokers: &str, topic: &str, table: &str, uniform: bool) -> PipelineConfig {
    let mut p = PipelineConfig::new(table, brokers, topic);
    p.app_id = Some("bench".into());
    p.create = true;
    p.kafka.properties.insert("fetch.wait.max.ms".into(), "20".into());
    p.flush.max_latency = HumanDuration::from_millis(1000);
    p.flush.max_rows = 250_000;
    if uniform {
        p.properties.insert("delta.universalFormat.enabledFormats".into(), "iceberg".into());
    }
    p
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Parts 1 and 2, for one table kind: (records/s, commits, latencies in ms, sorted).
async fn ingest(n: u64, uniform: bool) -> (f64, u64, Vec<f64>) {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let (seconds, commits) = support::ingest_alongside(
        n,
        |brokers| pipeline(brokers, "bench", &table, uniform),
        |i| (None, payload(i as usize), (i % 4) as i32),
    )
    .await;
    let mut lat = support::send_to_visible(|b, topic, t| pipeline(b, topic, t, uniform), payload, uniform).await;
    lat.sort_by(f64::total_cmp);
    (n as f64 / seconds, commits, lat)
}

fn add(i: usize) -> Action {
    Action::Add(Add {
        path: format!("f-{i}-{}.parquet", uuid::Uuid::new_v4()),
        partition_values: Default::default(),
        size: 1000,
        modification_time: 1,
        data_change: true,
        stats: Some(format!(r#"{{"numRecords":10,"minValues":{{}},"maxValues":{{}},"nullCount":{{}},"i":{i}}}"#)),
        tags: None,
        deletion_vector: None,
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
    })
}

/// Per-commit latencies (seconds) of `commits` appends to a new table with `properties`.
async fn commit_latencies(properties: &HashMap<String, String>, commits: usize) -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    let table = Table::open(dir.path().to_str().unwrap(), StorageOptions::default()).unwrap();
    let (p, mut m) = new_table(infer_schema(&[r#"{"id":1,"s":"x"}"#]).unwrap(), &[], properties).unwrap();
    // Checkpoints off the path: this measures commits and conversions.
    m.configuration.insert("delta.checkpointInterval".into(), "1000000".into());
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    assert!(matches!(
        table.commit(None, &create, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::Committed { .. }
    ));
    let mut snap = table.snapshot(None).await.unwrap();
    let mut out = Vec::with_capacity(commits);
    for i in 0..commits {
        let txn = Transaction::new(Operation::Write, vec![add(i)]);
        let t = Instant::now();
        match table.commit(Some(&snap), &txn, &RetryPolicy::default()).await.unwrap() {
            CommitOutcome::Committed { .. } => {}
            other => panic!("{other:?}"),
        }
        out.push(t.elapsed().as_secs_f64());
        table.update_snapshot(&mut snap).await.unwrap();
    }
    if !properties.is_empty() {
        let hint = std::fs::read_to_string(dir.path().join("metadata/version-hint.text")).unwrap();
        assert_eq!(hint.trim(), (commits + 1).to_string(), "one Iceberg snapshot per commit");
    }
    out
}

fn mean_around(lat: &[f64], files: usize) -> f64 {
    let from = files.saturating_sub(50).min(lat.len().saturating_sub(100));
    let window = &lat[from..(from + 100).min(lat.len())];
    window.iter().sum::<f64>() / window.len() as f64
}

#[tokio::main]
async fn main() {
    if std::env::var("BENCH_ONLY_COMMITS").is_err() {
        let n: u64 = std::env::var("BENCH_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
        // Two rounds, alternating, so that neither kind always runs on a warm or a cold machine.
        for round in 1..=2 {
            let (plain_rate, plain_commits, plain_lat) = ingest(n, false).await;
            let (uni_rate, uni_commits, uni_lat) = ingest(n, true).await;
            println!(
                "round {round}: ingest {n} records of ~250 B at a 1 s flush: plain {plain_rate:.0} records/s ({plain_commits} commits), UniForm {uni_rate:.0} records/s ({uni_commits} commits): UniForm at {:.2}x the plain throughput",
                uni_rate / plain_rate
            );
            let (p50, p99) = (percentile(&plain_lat, 0.5), percentile(&plain_lat, 0.99));
            let (u50, u99) = (percentile(&uni_lat, 0.5), percentile(&uni_lat, 0.99));
            println!(
                "round {round}: produce -> visible at a 1 s flush: plain (Delta commit) p50 {p50:.0} ms, p99 {p99:.0} ms; UniForm (Iceberg metadata) p50 {u50:.0} ms, p99 {u99:.0} ms: {:+.0} ms at p99",
                u99 - p99
            );
        }
    }
    let commits: usize = std::env::var("BENCH_COMMITS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let uniform: HashMap<String, String> =
        [("delta.universalFormat.enabledFormats".to_string(), "iceberg".to_string())].into_iter().collect();
    let started = Instant::now();
    let plain = commit_latencies(&HashMap::new(), commits).await;
    let plain_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let with = commit_latencies(&uniform, commits).await;
    let with_s = started.elapsed().as_secs_f64();
    println!(
        "{commits} one-file commits: plain {plain_s:.1} s ({:.0} commits/s), UniForm {with_s:.1} s ({:.0} commits/s)",
        commits as f64 / plain_s,
        commits as f64 / with_s
    );
    for files in [100, 1_000, 10_000] {
        if files > commits {
            continue;
        }
        let (a, b) = (mean_around(&plain, files), mean_around(&with, files));
        println!(
            "around {files:>6} files: commit {:.2} ms plain, {:.2} ms UniForm (conversion {:.2} ms, {:.2}x)",
            a * 1e3,
            b * 1e3,
            (b - a) * 1e3,
            b / a
        );
    }
}
