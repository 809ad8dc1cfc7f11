//! Keyed ingestion (upserts) against a 10-million-row table, with plain appends of the same
//! records as the baseline in the same run.
//!
//! The base table (10,000,000 rows: `id` 0..10M, user, country, amount, note; ~100 B per row
//! as JSON; deletion vectors enabled; 10 commits) is generated once under
//! `target/bench-data/upsert/` and copied for each run. Then `BENCH_RECORDS` (default
//! 1,000,000) keyed records — 10% updates of random existing ids, 90% new ids — are produced to
//! librdkafka's in-process mock cluster (4 partitions, by key) while the pipeline consumes and
//! commits every 250,000 records:
//!
//! 1. **upsert**: `[upsert] key_columns = ["id"]`: each flush finds the rows of the batch's keys
//!    (files pruned by `id` min/max), marks them deleted with deletion vectors and appends the
//!    new rows, in one `MERGE` commit.
//! 2. **append** (baseline): the same records appended, no keys.
//!
//! Prints records/s, commits, and the ratio; then checks the upserted table's row count.
//!
//! Run: `cargo bench --bench upsert_throughput` (`BENCH_RECORDS=N` to change the count).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::path::{Path, PathBuf};
use std::time::Instant;

use deltabus::common::units::HumanDuration;
use deltabus::config::{PipelineConfig, UpsertConfig};
use deltabus::ops::write::{write_json_lines, WriteOptions};
use deltabus::storage::{StorageOptions, Table};

#[path = "support/mod.rs"]
mod support;

const BASE_ROWS: u64 = 10_000_000;

fn records() -> u64 {
    std::env::var("BENCH_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn row(id: u64, version: u64) -> String {
    format!(
        r#"{{"id":{id},"user":"user-{}","country":"{}","amount":{}.5,"note":"version {version} of row {id}"}}"#,
        id % 9973,
        ["DE", "FR", "US", "JP"][(id % 4) as usize],
        id % 1000
    )
}

async fn base_table(dir: &Path) -> PathBuf {
    let base = dir.join("base");
    let table = Table::open_for_write(base.to_str().unwrap(), StorageOptions::default()).unwrap();
    if table.latest_version().await.ok() == Some(9) {
        return base;
    }
    let _ = std::fs::remove_dir_all(&base);
    let table = Table::open_for_write(base.to_str().unwrap(), StorageOptions::default()).unwrap();
    let t0 = Instant::now();
    for chunk in 0..10 {
        let text: String = (chunk * BASE_ROWS / 10..(chunk + 1) * BASE_ROWS / 10).map(|i| row(i, 0) + "\n").collect();
        let mut opts = WriteOptions::default();
        opts.properties.insert("delta.enableDeletionVectors".into(), "true".into());
        write_json_lines(&table, text.as_bytes(), &opts).await.unwrap();
    }
    println!("generated the 10,000,000-row base table in {:.1} s", t0.elapsed().as_secs_f64());
    base
}

/// The id of record `i`: every tenth updates a random existing row, the rest are new.
fn id_of(i: u64) -> u64 {
    if i % 10 == 0 {
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
        x ^= x >> 29;
        x % BASE_ROWS
    } else {
        BASE_ROWS + i
    }
}

/// Seconds from the first record consumed to the last commit, and the commits.
async fn ingest(table: &str, keyed: bool, n: u64) -> (f64, u64) {
    let pipeline = |brokers: &str| {
        let mut p = PipelineConfig::new(table, brokers, "bench");
        p.app_id = Some("bench".into());
        p.kafka.properties.insert("fetch.wait.max.ms".into(), "20".into());
        p.flush.max_latency = HumanDuration::from_millis(2000);
        p.flush.max_rows = 250_000;
        if keyed {
            p.upsert = Some(UpsertConfig {
                key_columns: vec!["id".into()],
                format: deltabus::config::UpsertFormat::Plain,
                op_field: None,
            });
        }
        p
    };
    support::ingest_alongside(n, pipeline, |i| {
        let id = id_of(i);
        (Some(id.to_string()), row(id, 1), (id % 4) as i32)
    })
    .await
}

fn copy_table(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let ok = std::process::Command::new("cp").arg("-r").arg(from).arg(to).status().unwrap().success();
    assert!(ok, "copy the base table");
}

async fn live_rows(table: &str) -> u64 {
    let t = Table::open(table, StorageOptions::default()).unwrap();
    let s = t.snapshot(None).await.unwrap();
    s.files()
        .iter()
        .map(|f| {
            let n = f.stats.as_deref().and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok()).unwrap()
                ["numRecords"]
                .as_u64()
                .unwrap();
            n - f.deletion_vector.as_ref().map_or(0, |d| d.cardinality as u64)
        })
        .sum()
}

fn main() {
    let dir = std::env::var_os("DELTABUS_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/upsert"));
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let n = records();
    rt.block_on(async {
        let base = base_table(&dir).await;
        let updates = (0..n).filter(|i| i % 10 == 0).map(id_of).collect::<std::collections::HashSet<_>>().len();
        println!("{n} keyed records: {updates} distinct existing ids updated, {} new ids", n - n.div_ceil(10));
        let work = dir.join("work");
        copy_table(&base, &work);
        let (append_s, append_commits) = ingest(work.to_str().unwrap(), false, n).await;
        println!("append (baseline): {append_s:.2} s = {:.0} records/s, {append_commits} commits", n as f64 / append_s);
        copy_table(&base, &work);
        let (upsert_s, upsert_commits) = ingest(work.to_str().unwrap(), true, n).await;
        println!(
            "upsert (10% updates over {BASE_ROWS} rows): {upsert_s:.2} s = {:.0} records/s, {upsert_commits} commits",
            n as f64 / upsert_s
        );
        println!("upsert takes {:.2}x the time of appending the same records", upsert_s / append_s);
        let rows = live_rows(work.to_str().unwrap()).await;
        assert_eq!(rows, BASE_ROWS + n - n.div_ceil(10), "live rows after the upserts");
        println!("live rows after the upserts: {rows} (as expected)");
    });
}
