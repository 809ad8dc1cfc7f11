//! Keyed ingestion (upserts) against tables of 1, 10 and 50 million rows, with plain appends of
//! the same records as the baseline in the same run.
//!
//! Each base table (`id` 0..N, user, country, amount, note; ~100 B per row as JSON; deletion
//! vectors enabled; 10 commits) is generated once under `target/bench-data/upsert/`, its key
//! index built (timed: the rebuild figure), and copied for each run. Then `BENCH_RECORDS`
//! (default 1,000,000) keyed records — 10% updates of random existing ids, 90% new ids — are
//! produced to librdkafka's in-process mock cluster (4 partitions, by key) while the pipeline
//! consumes and commits every 250,000 records:
//!
//! 1. **upsert**: `[upsert] key_columns = ["id"]`: each flush finds the rows of the batch's keys
//!    in the key index, marks them deleted with deletion vectors and appends the new rows, in
//!    one `MERGE` commit.
//! 2. **append** (baseline): the same records appended, no keys.
//!
//! Each run is timed from its first record consumed to its last commit, and from the
//! pipeline's start (opening the table and joining the group, while a keyed pipeline already
//! loads its index). Prints records/s, commits and both ratios per size, the index's size on disk per key, the
//! peak RSS of each run, the ratio at the largest size against the smallest; then checks the
//! upserted table's row count.
//!
//! Run: `cargo bench --bench upsert_throughput` (`BENCH_RECORDS=N` to change the count,
//! `BENCH_SIZES=1000000,10000000` for other table sizes, `BENCH_INDEX_MEMORY=2GiB` for the
//! index's budget, `BENCH_LOG=deltabus=debug` for each flush's phases).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::path::{Path, PathBuf};
use std::time::Instant;

use deltabus::common::units::HumanDuration;
use deltabus::config::{PipelineConfig, UpsertConfig};
use deltabus::ops::write::{write_json_lines, WriteOptions};
use deltabus::storage::{StorageOptions, Table};

#[path = "support/mod.rs"]
mod support;

fn sizes() -> Vec<u64> {
    std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "1000000,10000000,50000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("BENCH_SIZES: row counts"))
        .collect()
}

fn index_memory() -> deltabus::common::units::ByteSize {
    std::env::var("BENCH_INDEX_MEMORY").unwrap_or_else(|_| "2GiB".into()).parse().expect("BENCH_INDEX_MEMORY")
}

/// Peak RSS since the last reset, in MiB; resets it (Linux `clear_refs` 5).
fn peak_rss_mib_and_reset() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    kb / 1024.0
}

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

async fn base_table(dir: &Path, rows: u64) -> PathBuf {
    let base = dir.join(format!("base-{rows}"));
    let table = Table::open_for_write(base.to_str().unwrap(), StorageOptions::default()).unwrap();
    if table.latest_version().await.ok() == Some(9) && base.join("_deltabus/key_index").is_dir() {
        return base;
    }
    let _ = std::fs::remove_dir_all(&base);
    let table = Table::open_for_write(base.to_str().unwrap(), StorageOptions::default()).unwrap();
    let t0 = Instant::now();
    for chunk in 0..10 {
        let text: String = (chunk * rows / 10..(chunk + 1) * rows / 10).map(|i| row(i, 0) + "\n").collect();
        let mut opts = WriteOptions::default();
        opts.properties.insert("delta.enableDeletionVectors".into(), "true".into());
        write_json_lines(&table, text.as_bytes(), &opts).await.unwrap();
    }
    println!("generated the {rows}-row base table in {:.1} s", t0.elapsed().as_secs_f64());
    // The key index, built from the table as a keyed pipeline's first flush would.
    let t0 = Instant::now();
    let snapshot = table.snapshot(None).await.unwrap();
    let stats = table.keys().build(&snapshot, &["id".to_string()], index_memory().get()).await.unwrap();
    println!(
        "built the key index of {rows} rows from the table in {:.2} s ({} files read)",
        t0.elapsed().as_secs_f64(),
        stats.files_from_data
    );
    base
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |d| d.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
}

/// The id of record `i` over a `base`-row table: every tenth updates a random existing row,
/// the rest are new.
fn id_of(i: u64, base: u64) -> u64 {
    if i.is_multiple_of(10) {
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
        x ^= x >> 29;
        x % base
    } else {
        base + i
    }
}

/// Seconds from the first record consumed to the last commit, seconds from the pipeline's
/// start (its index loading while it joins the group included), and the commits.
async fn ingest(table: &str, keyed: bool, n: u64, base: u64) -> (f64, f64, u64) {
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
                index_memory: index_memory(),
            });
        }
        p
    };
    support::ingest_alongside_timed(n, pipeline, move |i| {
        let id = id_of(i, base);
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
    // `BENCH_LOG=deltabus=debug` shows each flush's phases (`upsert.planned`).
    if let Ok(filter) = std::env::var("BENCH_LOG") {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    }
    let dir = std::env::var_os("DELTABUS_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/upsert"));
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let n = records();
    println!("key index budget (upsert.index_memory): {}", index_memory());
    let mut ratios = Vec::new();
    rt.block_on(async {
        for base_rows in sizes() {
            let base = base_table(&dir, base_rows).await;
            let updates =
                (0..n).filter(|i| i % 10 == 0).map(|i| id_of(i, base_rows)).collect::<std::collections::HashSet<_>>();
            println!(
                "\n== {base_rows} rows; {n} keyed records: {} distinct existing ids updated, {} new ids",
                updates.len(),
                n - n.div_ceil(10)
            );
            let index = dir_bytes(&base.join("_deltabus/key_index"));
            println!("key index on disk: {:.1} MiB, {:.1} bytes a key", index as f64 / 1048576.0, index as f64 / base_rows as f64);
            let work = dir.join("work");
            copy_table(&base, &work);
            peak_rss_mib_and_reset();
            let (append_s, append_all, append_commits) = ingest(work.to_str().unwrap(), false, n, base_rows).await;
            let append_rss = peak_rss_mib_and_reset();
            println!(
                "append (baseline): {append_s:.2} s = {:.0} records/s ({append_all:.2} s from the start), {append_commits} commits, peak RSS {append_rss:.0} MiB",
                n as f64 / append_s
            );
            copy_table(&base, &work);
            // What a keyed pipeline's first flush pays on start: the index read from its sidecars.
            let t0 = Instant::now();
            let fresh = Table::open(work.to_str().unwrap(), StorageOptions::default()).unwrap();
            let snapshot = fresh.snapshot(None).await.unwrap();
            let stats = fresh.keys().build(&snapshot, &["id".to_string()], index_memory().get()).await.unwrap();
            println!(
                "key index loaded from its sidecars in {:.2} s ({} files, {:.0} MiB resident)",
                t0.elapsed().as_secs_f64(),
                stats.files_from_sidecars,
                stats.resident_bytes as f64 / 1048576.0
            );
            drop(fresh);
            peak_rss_mib_and_reset();
            let (upsert_s, upsert_all, upsert_commits) = ingest(work.to_str().unwrap(), true, n, base_rows).await;
            let upsert_rss = peak_rss_mib_and_reset();
            println!(
                "upsert (10% updates over {base_rows} rows): {upsert_s:.2} s = {:.0} records/s ({upsert_all:.2} s from the start), {upsert_commits} commits, peak RSS {upsert_rss:.0} MiB",
                n as f64 / upsert_s
            );
            println!(
                "upsert takes {:.2}x the time of appending the same records at {base_rows} rows ({:.2}x from the start)",
                upsert_s / append_s,
                upsert_all / append_all
            );
            ratios.push((base_rows, upsert_s / append_s, upsert_all / append_all));
            let rows = live_rows(work.to_str().unwrap()).await;
            assert_eq!(rows, base_rows + n - n.div_ceil(10), "live rows after the upserts");
            println!("live rows after the upserts: {rows} (as expected)");
        }
    });
    if let (Some((small, first, first_all)), Some((large, last, last_all))) = (ratios.first(), ratios.last()) {
        println!(
            "\nupsert/append ratio at {large} rows over the ratio at {small} rows: {:.2} ({:.2} from the start)",
            last / first,
            last_all / first_all
        );
    }
}
