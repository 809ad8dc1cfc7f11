//! Snapshot load time on local files, against the Python `deltalake` package in the same run.
//!
//! Tables (generated once under `target/bench-data/`, or `DELTABUS_BENCH_DIR`):
//! - `checkpoint_1000`: version 0 adds 50,000 files and is checkpointed (by deltabus's
//!   checkpoint writer); versions 1..=1000 add 50 files each: 100,000 live files, replayed
//!   from one checkpoint plus 1,000 commits.
//! - `commits_5000`: 5,000 commits of 20 files each, no checkpoint: 100,000 live files.
//!
//! Every add carries partition values and JSON stats, as streaming writers produce them.
//! Prints min and median of several loads for each reader and the ratio. Not a test: it
//! asserts only that both readers see the same number of files.
//!
//! Run: `cargo bench --bench snapshot_load` (needs `scripts/setup.sh` for the baseline).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver, not library code

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use deltabus::storage::{StorageOptions, Table};

const RUNS: usize = 5;

fn add_line(i: usize, version: usize) -> String {
    format!(
        r#"{{"add":{{"path":"day={day}/part-{i:08}-{version}.parquet","partitionValues":{{"day":"{day}"}},"size":{size},"modificationTime":{mt},"dataChange":true,"stats":"{{\"numRecords\":1000,\"minValues\":{{\"id\":{min},\"name\":\"aaa{i}\"}},\"maxValues\":{{\"id\":{max},\"name\":\"zzz{i}\"}},\"nullCount\":{{\"id\":0,\"name\":3}}}}"}}}}"#,
        day = i % 100,
        size = 100_000 + i,
        mt = 1_700_000_000_000u64 + i as u64,
        min = i * 1000,
        max = i * 1000 + 999,
    )
}

fn header() -> String {
    let schema = r#"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"name\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},{\"name\":\"day\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]}"#;
    format!(
        "{{\"commitInfo\":{{\"timestamp\":1700000000000,\"operation\":\"CREATE TABLE\"}}}}\n{{\"protocol\":{{\"minReaderVersion\":1,\"minWriterVersion\":2}}}}\n{{\"metaData\":{{\"id\":\"bench\",\"format\":{{\"provider\":\"parquet\",\"options\":{{}}}},\"schemaString\":\"{schema}\",\"partitionColumns\":[\"day\"],\"configuration\":{{}},\"createdTime\":1700000000000}}}}\n"
    )
}

fn write_commit(log: &Path, version: usize, body: &str) {
    let mut f = std::fs::File::create(log.join(format!("{version:020}.json"))).expect("create commit");
    f.write_all(body.as_bytes()).expect("write commit");
}

fn commit_body(version: usize, first: usize, count: usize) -> String {
    let mut s = format!(
        "{{\"commitInfo\":{{\"timestamp\":{},\"operation\":\"STREAMING UPDATE\"}}}}\n",
        1_700_000_000_000u64 + version as u64
    );
    for i in first..first + count {
        s.push_str(&add_line(i, version));
        s.push('\n');
    }
    s
}

fn generate(root: &Path, rt: &tokio::runtime::Runtime) {
    let cp = root.join("checkpoint_1000");
    if !cp.join("_delta_log/00000000000000001000.json").exists() {
        let _ = std::fs::remove_dir_all(&cp);
        let log = cp.join("_delta_log");
        std::fs::create_dir_all(&log).expect("mkdir");
        let mut v0 = header();
        v0.push_str(&commit_body(0, 0, 50_000).split_once('\n').map(|x| x.1.to_string()).unwrap_or_default());
        write_commit(&log, 0, &v0);
        let table = Table::open(cp.to_str().expect("utf8"), StorageOptions::default()).expect("open");
        rt.block_on(async {
            let snap = table.snapshot(None).await.expect("snapshot v0");
            table.write_checkpoint(&snap).await.expect("checkpoint");
        });
        for v in 1..=1000 {
            write_commit(&log, v, &commit_body(v, 50_000 + (v - 1) * 50, 50));
        }
    }
    let many = root.join("commits_5000");
    if !many.join("_delta_log/00000000000000004999.json").exists() {
        let _ = std::fs::remove_dir_all(&many);
        let log = many.join("_delta_log");
        std::fs::create_dir_all(&log).expect("mkdir");
        for v in 0..5000 {
            let mut body = commit_body(v, v * 20, 20);
            if v == 0 {
                body = header() + body.split_once('\n').map(|x| x.1).unwrap_or_default();
            }
            write_commit(&log, v, &body);
        }
    }
}

fn stats(mut xs: Vec<f64>) -> (f64, f64) {
    xs.sort_by(|a, b| a.total_cmp(b));
    (xs[0], xs[xs.len() / 2])
}

fn deltabus_load(path: &Path, rt: &tokio::runtime::Runtime) -> (Vec<f64>, usize) {
    let mut times = Vec::new();
    let mut files = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let table = Table::open(path.to_str().expect("utf8"), StorageOptions::default()).expect("open");
        let snap = rt.block_on(table.snapshot(None)).expect("snapshot");
        times.push(start.elapsed().as_secs_f64());
        files = snap.file_count();
    }
    (times, files)
}

fn deltalake_load(path: &Path) -> Option<(Vec<f64>, usize)> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    let script = format!(
        "import json,time\nfrom deltalake import DeltaTable\nts=[]\nfor _ in range({RUNS}):\n    t=time.perf_counter(); dt=DeltaTable({p:?}); ts.append(time.perf_counter()-t)\nprint(json.dumps({{'times':ts,'files':len(dt.file_uris())}}))",
        p = path.to_str()?
    );
    let out = Command::new(&python).arg("-c").arg(script).output().ok()?;
    if !out.status.success() {
        eprintln!("deltalake baseline failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let times = v["times"].as_array()?.iter().filter_map(|t| t.as_f64()).collect();
    Some((times, v["files"].as_u64()? as usize))
}

fn main() {
    let root = std::env::var("DELTABUS_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/snapshot"));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let t = Instant::now();
    generate(&root, &rt);
    println!("tables ready in {:.1}s under {}", t.elapsed().as_secs_f64(), root.display());
    println!(
        "{:<18} {:>8} {:>14} {:>14} {:>16} {:>16} {:>8}",
        "table", "files", "deltabus min", "deltabus med", "deltalake min", "deltalake med", "ratio"
    );
    for name in ["checkpoint_1000", "commits_5000"] {
        let path = root.join(name);
        let (ours, files) = deltabus_load(&path, &rt);
        let (omin, omed) = stats(ours);
        match deltalake_load(&path) {
            Some((theirs, their_files)) => {
                assert_eq!(files, their_files, "{name}: deltabus sees {files} files, deltalake {their_files}");
                let (tmin, tmed) = stats(theirs);
                println!(
                    "{name:<18} {files:>8} {:>12.3}s {:>12.3}s {:>14.3}s {:>14.3}s {:>7.2}x",
                    omin,
                    omed,
                    tmin,
                    tmed,
                    omed / tmed
                );
            }
            None => println!("{name:<18} {files:>8} {omin:>12.3}s {omed:>12.3}s {:>16} {:>16}", "n/a", "n/a"),
        }
    }
    println!("ratio = deltabus median / deltalake median (lower is better; target <= 0.50)");
}
