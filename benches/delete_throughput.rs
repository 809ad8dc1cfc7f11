//! Deleting 0.1% of a 10-million-row table: deletion vectors against rewriting the files
//! (copy-on-write, the baseline), measured in the same run on identical tables. The deleted
//! rows are spread over every file (`bucket = 7`, one row in a thousand), the worst case for
//! copy-on-write. Prints time and bytes written by each.
//!
//! Run: `cargo bench --bench delete_throughput`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use deltabus::delta::actions::Action;
use deltabus::delta::create::new_table;
use deltabus::delta::schema::StructType;
use deltabus::delta::transaction::{Operation, Transaction};
use deltabus::ops::delete::{delete, DeleteOptions};
use deltabus::storage::{DataWriter, RetryPolicy, StorageOptions, Table, WriterConfig};

const FILES: i64 = 100;
const ROWS_PER_FILE: i64 = 100_000;

async fn generate(path: &Path, dvs: bool) {
    let schema = StructType::parse(
        r#"{"type":"struct","fields":[
        {"name":"id","type":"long","nullable":true,"metadata":{}},
        {"name":"bucket","type":"long","nullable":true,"metadata":{}},
        {"name":"name","type":"string","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    let table = Table::open_for_write(path.to_str().unwrap(), StorageOptions::default()).unwrap();
    let props = if dvs {
        [("delta.enableDeletionVectors".to_string(), "true".to_string())].into_iter().collect()
    } else {
        Default::default()
    };
    let (p, m) = new_table(schema, &[], &props).unwrap();
    table
        .commit(
            None,
            &Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]),
            &RetryPolicy::default(),
        )
        .await
        .unwrap();
    let snap = table.snapshot(None).await.unwrap();
    let mut actions = Vec::new();
    for f in 0..FILES {
        let mut writer = DataWriter::new(
            &table,
            &snap,
            WriterConfig { target_file_size: u64::MAX, compression: deltabus::delta::properties::Codec::Zstd },
        )
        .unwrap();
        let ids: Vec<i64> = (f * ROWS_PER_FILE..(f + 1) * ROWS_PER_FILE).collect();
        let batch = RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int64Array::from(ids.clone())) as ArrayRef),
            ("bucket", Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i % 1000))) as ArrayRef),
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    ids.iter().map(|i| format!("customer-{:012}", i * 7919 % 10_000_019)),
                )) as ArrayRef,
            ),
        ])
        .unwrap();
        writer.write(&batch).await.unwrap();
        actions.extend(writer.finish().await.unwrap().into_iter().map(Action::Add));
    }
    table.commit(Some(&snap), &Transaction::new(Operation::Write, actions), &RetryPolicy::default()).await.unwrap();
}

fn bytes_under(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("_delta_log") {
                n += bytes_under(&p);
            }
        } else {
            n += e.metadata().unwrap().len();
        }
    }
    n
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/delete");
    let _ = std::fs::remove_dir_all(&root);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    println!("{} rows in {FILES} files; deleting `bucket = 7` (0.1%, spread over every file)", FILES * ROWS_PER_FILE);
    let mut results = Vec::new();
    for (name, dvs) in [("deletion vectors", true), ("copy-on-write", false)] {
        let path = root.join(name.replace(' ', "-"));
        rt.block_on(generate(&path, dvs));
        let before = bytes_under(&path);
        let table = Table::open(path.to_str().unwrap(), StorageOptions::default()).unwrap();
        let t = Instant::now();
        let report = rt.block_on(delete(&table, "bucket = 7", &DeleteOptions::default())).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let written = bytes_under(&path) - before;
        assert_eq!(report.rows_deleted, (FILES * ROWS_PER_FILE / 1000) as u64);
        println!(
            "{name:<17} {secs:>6.2} s  {:>10} bytes written  {} files changed, {} rows deleted",
            written, report.files_changed, report.rows_deleted
        );
        results.push((secs, written));
    }
    println!(
        "deletion vectors vs copy-on-write: {:.2}x the time, {:.4}x the bytes written",
        results[0].0 / results[1].0,
        results[0].1 as f64 / results[1].1 as f64
    );
}
