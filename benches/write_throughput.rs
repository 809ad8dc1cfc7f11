//! Commit rate and `deltabus write` throughput, with baselines measured in the same run.
//!
//! 1. Commits per second: sequential blind appends (one tiny add + txn each) by one writer,
//!    and the same total split over 4 concurrent writers racing for versions; on local files
//!    and, when `DELTABUS_TEST_S3_ENDPOINT` is set (scripts/test.sh starts moto), on S3.
//! 2. `deltabus write` of 1,000,000 JSON records of ~250 bytes read from a file on stdin:
//!    rows/s, MB/s and peak RSS, against `deltalake.write_deltalake` of the same records
//!    (parsed with `pyarrow.json`) in the same run.
//!
//! Run: `cargo bench --bench write_throughput` (needs `scripts/setup.sh` for the baseline).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

#[path = "support/records.rs"]
mod records;
#[path = "support/s3.rs"]
mod s3;

use records::record;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use deltabus::delta::actions::{Action, Add, Txn};
use deltabus::delta::create::{infer_schema, new_table};
use deltabus::delta::transaction::{CommitOutcome, Operation, Transaction};
use deltabus::storage::{RetryPolicy, StorageOptions, Table};

const RECORDS: usize = 1_000_000;

fn tiny_add(i: usize) -> Action {
    Action::Add(Add {
        path: format!("f-{i}-{}.parquet", uuid::Uuid::new_v4()),
        partition_values: Default::default(),
        size: 1,
        modification_time: 1,
        data_change: true,
        stats: Some(r#"{"numRecords":1}"#.into()),
        tags: None,
        deletion_vector: None,
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
    })
}

async fn commit_rate(table: Table, writers: usize, total: usize) -> f64 {
    let (p, m) = new_table(infer_schema(&[r#"{"id":1}"#]).unwrap(), &[], &Default::default()).unwrap();
    // Checkpoints off the hot path: this measures commits.
    let mut m = m;
    m.configuration.insert("delta.checkpointInterval".into(), "1000000".into());
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    assert!(matches!(
        table.commit(None, &create, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::Committed { .. }
    ));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let table = table.clone();
        tasks.push(tokio::spawn(async move {
            let mut snap = table.snapshot(None).await.unwrap();
            for i in 0..total / writers {
                let txn = Transaction::new(
                    Operation::StreamingUpdate,
                    vec![
                        tiny_add(i),
                        Action::Txn(Txn { app_id: format!("w{w}"), version: i as i64, last_updated: None }),
                    ],
                );
                let policy = RetryPolicy { max_attempts: 1000, ..RetryPolicy::default() };
                match table.commit(Some(&snap), &txn, &policy).await.unwrap() {
                    CommitOutcome::Committed { .. } => {}
                    other => panic!("{other:?}"),
                }
                // A streaming writer advances its snapshot incrementally past its own commit
                // (and any concurrent ones) before the next batch.
                table.update_snapshot(&mut snap).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let snap = table.snapshot(None).await.unwrap();
    assert_eq!(snap.file_count(), total, "every commit landed");
    total as f64 / secs
}

fn generate_records(path: &Path) {
    if path.exists() {
        return;
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..RECORDS {
        writeln!(f, "{}", record(i)).unwrap();
    }
}

/// Runs a command with stdin from a file; returns (seconds, peak RSS in MiB).
fn measure(cmd: &[String], stdin: &Path) -> (f64, f64) {
    let script = r#"
import json, resource, subprocess, sys, time
args = json.loads(sys.argv[1])
with open(sys.argv[2], 'rb') as f:
    t = time.perf_counter()
    p = subprocess.run(args, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
if p.returncode != 0:
    sys.exit(p.stderr.decode())
print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(serde_json::to_string(cmd).unwrap())
        .arg(stdin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{} failed: {}", cmd.join(" "), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace().map(|x| x.parse::<f64>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap())
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/write");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();

    println!("== commits per second (blind appends with txn; checkpoints off) ==");
    let local = |name: &str| {
        let dir = root.join(format!("commits-{name}-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        (Table::open(dir.to_str().unwrap(), StorageOptions::default()).unwrap(), dir)
    };
    for (writers, total) in [(1, 500), (4, 500)] {
        let (table, dir) = local("local");
        let rate = rt.block_on(commit_rate(table, writers, total));
        println!("local files   {writers} writer(s): {total} commits, {rate:>8.0} commits/s");
        let _ = std::fs::remove_dir_all(dir);
    }
    if let Ok(endpoint) = std::env::var("DELTABUS_TEST_S3_ENDPOINT") {
        for (writers, total) in [(1, 200), (4, 200)] {
            let bucket = s3::new_bucket(&endpoint, "bench");
            let options = StorageOptions { options: s3::s3_options(&endpoint), ..StorageOptions::default() };
            let table = Table::open(&format!("s3://{bucket}/t"), options).unwrap();
            let rate = rt.block_on(commit_rate(table, writers, total));
            println!("S3 (moto)     {writers} writer(s): {total} commits, {rate:>8.0} commits/s");
        }
    } else {
        println!("S3: skipped (set DELTABUS_TEST_S3_ENDPOINT, e.g. by running moto as scripts/test.sh does)");
    }

    println!("== write throughput: {RECORDS} JSON records ==");
    let records = root.join("records.jsonl");
    generate_records(&records);
    let bytes = std::fs::metadata(&records).unwrap().len() as f64;
    println!("input: {:.1} MB, {:.0} bytes/record", bytes / 1e6, bytes / RECORDS as f64);
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/deltabus");
    assert!(bin.exists(), "build the binary first: cargo build --release");
    let ours_dir = root.join(format!("ours-{}", uuid::Uuid::new_v4().simple()));
    let (ours_s, ours_rss) =
        measure(&[bin.to_str().unwrap().to_string(), "write".into(), ours_dir.to_str().unwrap().to_string()], &records);
    println!(
        "deltabus write            {ours_s:>7.2} s  {:>9.0} rows/s  {:>6.1} MB/s  peak RSS {ours_rss:>6.0} MiB",
        RECORDS as f64 / ours_s,
        bytes / 1e6 / ours_s
    );
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if python.exists() {
        let theirs_dir = root.join(format!("theirs-{}", uuid::Uuid::new_v4().simple()));
        let script = format!(
            "import sys, pyarrow.json as pj\nfrom deltalake import write_deltalake\nt = pj.read_json(sys.stdin.buffer)\nwrite_deltalake({:?}, t)",
            theirs_dir.to_str().unwrap()
        );
        let (s, rss) = measure(&[python.to_str().unwrap().to_string(), "-c".into(), script], &records);
        println!(
            "deltalake write_deltalake {s:>7.2} s  {:>9.0} rows/s  {:>6.1} MB/s  peak RSS {rss:>6.0} MiB",
            RECORDS as f64 / s,
            bytes / 1e6 / s
        );
        println!("ratio (deltabus time / deltalake time): {:.2}x; RSS ratio {:.2}x", ours_s / s, ours_rss / rss);
        let _ = std::fs::remove_dir_all(theirs_dir);
    } else {
        println!("deltalake baseline skipped: run scripts/setup.sh");
    }
    let _ = std::fs::remove_dir_all(ours_dir);
}
