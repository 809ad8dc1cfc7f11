//! What UniForm costs a commit: sequential one-file appends to a plain table and to a UniForm
//! table (Iceberg metadata written after every commit), as each grows from 0 to 10,000 files,
//! measured in the same run. Prints the mean commit latency (Delta commit, plus the Iceberg
//! conversion on the UniForm table) around 100, 1,000 and 10,000 files and the ratio between
//! the two tables: a flat ratio means the conversion is incremental, not a rewrite per commit.
//!
//! Run: `cargo bench --bench uniform_commit` (`BENCH_COMMITS`, default 10000).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::collections::HashMap;
use std::time::Instant;

use deltabus::delta::actions::{Action, Add};
use deltabus::delta::create::{infer_schema, new_table};
use deltabus::delta::transaction::{CommitOutcome, Operation, Transaction};
use deltabus::storage::{RetryPolicy, StorageOptions, Table};

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
