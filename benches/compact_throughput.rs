//! Compaction throughput: 1,000 small files (~1 GB of Parquet) rewritten into 128 MiB files,
//! by deltabus and, on an identical copy in the same run, by the Python `deltalake` package's
//! `optimize.compact()`. Prints MB/s, files/s, CPU seconds and MB per CPU-second.
//!
//! Run: `cargo bench --bench compact_throughput` (needs `scripts/setup.sh` for the baseline).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use deltabus::compactor::rewriter::{compact, CompactOptions};
use deltabus::delta::actions::Action;
use deltabus::delta::create::new_table;
use deltabus::delta::schema::StructType;
use deltabus::delta::transaction::{Operation, Transaction};
use deltabus::storage::{DataWriter, RetryPolicy, StorageOptions, Table, WriterConfig};

const FILES: usize = 1000;
/// Rows per input file: ~1 MB of Parquet each, ~1 GB in all.
const ROWS_PER_FILE: usize = 22_000;

/// CPU seconds (user + system) of this process, from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
    let ticks: f64 = fields.get(11..13).map(|f| f.iter().filter_map(|x| x.parse::<f64>().ok()).sum()).unwrap_or(0.0);
    ticks / 100.0
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("_delta_log") {
                n += dir_bytes(&p);
            }
        } else {
            n += e.metadata().unwrap().len();
        }
    }
    n
}

async fn generate(path: &Path) {
    let schema = StructType::parse(
        r#"{"type":"struct","fields":[
        {"name":"id","type":"long","nullable":true,"metadata":{}},
        {"name":"key","type":"string","nullable":true,"metadata":{}},
        {"name":"payload","type":"string","nullable":true,"metadata":{}},
        {"name":"value","type":"double","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    let table = Table::open_for_write(path.to_str().unwrap(), StorageOptions::default()).unwrap();
    let (p, m) = new_table(schema, &[], &Default::default()).unwrap();
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    table.commit(None, &create, &RetryPolicy::default()).await.unwrap();
    let snap = table.snapshot(None).await.unwrap();
    // One file per batch of rows: ~1 MB each after zstd (the uuid-like strings resist it).
    let mut adds = Vec::new();
    for f in 0..FILES {
        let mut writer = DataWriter::new(
            &table,
            &snap,
            WriterConfig { target_file_size: u64::MAX, compression: deltabus::delta::properties::Codec::Zstd },
        )
        .unwrap();
        let n = ROWS_PER_FILE as i64;
        let base = f as i64 * n;
        let ids = Int64Array::from_iter_values(base..base + n);
        let keys = StringArray::from_iter_values(
            (base..base + n)
                .map(|i| format!("{:032x}", (i as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835))),
        );
        let payload = StringArray::from_iter_values((base..base + n).map(|i| {
            format!(
                "{:016x}-{:016x}",
                (i as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93),
                (i as u64).rotate_left(17).wrapping_mul(0xA076_1D64_78BD_642F)
            )
        }));
        let values = Float64Array::from_iter_values((base..base + n).map(|i| (i as f64).sqrt()));
        let batch = RecordBatch::try_from_iter(vec![
            ("id", Arc::new(ids) as ArrayRef),
            ("key", Arc::new(keys) as ArrayRef),
            ("payload", Arc::new(payload) as ArrayRef),
            ("value", Arc::new(values) as ArrayRef),
        ])
        .unwrap();
        writer.write(&batch).await.unwrap();
        adds.extend(writer.finish().await.unwrap());
        if adds.len() == 100 {
            let t =
                Transaction::new(Operation::Write, std::mem::take(&mut adds).into_iter().map(Action::Add).collect());
            table.commit(Some(&table.snapshot(None).await.unwrap()), &t, &RetryPolicy::default()).await.unwrap();
        }
    }
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/compact-1g");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let source = root.join("source");
    if !source.join("_delta_log/00000000000000000010.json").exists() {
        let _ = std::fs::remove_dir_all(&source);
        let t = Instant::now();
        rt.block_on(generate(&source));
        println!("generated {FILES} files in {:.1}s", t.elapsed().as_secs_f64());
    }
    let bytes = dir_bytes(&source) as f64;
    println!("input: {FILES} files, {:.1} MB of Parquet", bytes / 1e6);
    let copy = |name: &str| {
        let dest = root.join(name);
        let _ = std::fs::remove_dir_all(&dest);
        assert!(Command::new("cp").arg("-r").arg(&source).arg(&dest).status().unwrap().success());
        dest
    };

    let ours = copy("deltabus");
    let table = Table::open(ours.to_str().unwrap(), StorageOptions::default()).unwrap();
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let report = rt.block_on(compact(&table, &CompactOptions::default())).unwrap();
    let (secs, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    assert_eq!(report.files_in, FILES);
    println!(
        "deltabus compact           {secs:>6.2} s  {:>7.1} MB/s  {:>6.0} files/s  CPU {cpu:>6.2} s  {:>6.1} MB per CPU-s  -> {} files, {} commits",
        bytes / 1e6 / secs,
        FILES as f64 / secs,
        bytes / 1e6 / cpu.max(1e-9),
        report.files_out,
        report.versions.len()
    );

    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if !python.exists() {
        println!("deltalake baseline skipped: run scripts/setup.sh");
        return;
    }
    let theirs = copy("deltalake");
    let script = "import resource, sys, time\nfrom deltalake import DeltaTable\ndt = DeltaTable(sys.argv[1])\nr0 = resource.getrusage(resource.RUSAGE_SELF)\nt = time.perf_counter()\nm = dt.optimize.compact()\ndt_s = time.perf_counter() - t\nr1 = resource.getrusage(resource.RUSAGE_SELF)\nprint(dt_s, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), m['numFilesAdded'])";
    let out = Command::new(&python).arg("-c").arg(script).arg(&theirs).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let (their_secs, their_cpu, their_files) = (v[0], v[1], v[2]);
    println!(
        "deltalake optimize.compact {their_secs:>6.2} s  {:>7.1} MB/s  {:>6.0} files/s  CPU {their_cpu:>6.2} s  {:>6.1} MB per CPU-s  -> {their_files} files",
        bytes / 1e6 / their_secs,
        FILES as f64 / their_secs,
        bytes / 1e6 / their_cpu.max(1e-9)
    );
    println!("ratio (deltabus time / deltalake time): {:.2}x", secs / their_secs);
    // Both compacted tables hold the same rows (counted by deltalake on each).
    let count =
        "import sys\nfrom deltalake import DeltaTable\nprint(DeltaTable(sys.argv[1]).to_pyarrow_table().num_rows)";
    for t in [&ours, &theirs] {
        let out = Command::new(&python).arg("-c").arg(count).arg(t).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), (FILES * ROWS_PER_FILE).to_string());
    }
    let _ = std::fs::remove_dir_all(ours);
    let _ = std::fs::remove_dir_all(theirs);
}
