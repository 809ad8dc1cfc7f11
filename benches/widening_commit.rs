//! What a widening costs: the write whose values need a column widened against its
//! neighbours that do not.
//!
//! A table with an `integer`, a `decimal(9,2)` and a `float` column and
//! `delta.enableTypeWidening=true` takes 21 appends of `BENCH_ROWS` rows each (default
//! 200,000) through `deltabus write --evolve-schema`; the 11th carries values only `long`,
//! `decimal(12,3)` and `double` hold, so its commit widens the three columns (one schema
//! change, nothing rewritten). Printed: the median time of the ten appends before and the ten
//! after, the widening append's time and its ratio against the medians, and the rows each
//! file holds afterwards as read back by `deltabus cat` (old files upcast).
//!
//! Run: `cargo bench --bench widening_commit`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

const SCHEMA: &str = r#"{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":true,"metadata":{}},
 {"name":"n","type":"integer","nullable":true,"metadata":{}},
 {"name":"price","type":"decimal(9,2)","nullable":true,"metadata":{}},
 {"name":"ratio","type":"float","nullable":true,"metadata":{}},
 {"name":"name","type":"string","nullable":true,"metadata":{}}]}"#;

fn lines(round: usize, rows: usize, wide: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows * 80);
    for i in 0..rows {
        let id = round * rows + i;
        let (n, price, ratio) = if wide && i % 1000 == 7 {
            (3_000_000_000i64 + i as i64, format!("{}.125", 1_000_000 + i), "1e39".to_string())
        } else {
            ((i % 100_000) as i64, format!("{}.25", i % 10_000), format!("{}", (i % 97) as f64 / 8.0))
        };
        writeln!(out, r#"{{"id":{id},"n":{n},"price":{price},"ratio":{ratio},"name":"row-{id}-ü"}}"#).unwrap();
    }
    out
}

fn deltabus(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "deltabus {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rows: usize = std::env::var("BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    deltabus(
        &["write", t, "--schema", schema.to_str().unwrap(), "--property", "delta.enableTypeWidening=true"],
        &lines(0, 10, false),
    );
    let (mut before, mut after, mut widening) = (Vec::new(), Vec::new(), 0.0);
    for round in 1..=21 {
        let wide = round == 11;
        let input = lines(round, rows, wide);
        let started = Instant::now();
        deltabus(&["write", t, "--evolve-schema"], &input);
        let secs = started.elapsed().as_secs_f64();
        match round {
            r if r < 11 => before.push(secs),
            11 => widening = secs,
            _ => after.push(secs),
        }
    }
    let (before, after) = (median(before), median(after));
    let described = deltabus(&["describe", t], b"");
    let d: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
    let types: Vec<String> = d["schema"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["name"].as_str().unwrap(), f["type"].as_str().unwrap()))
        .collect();
    let started = Instant::now();
    let cat = deltabus(&["cat", t], b"");
    let read_secs = started.elapsed().as_secs_f64();
    let read_rows = cat.stdout.iter().filter(|b| **b == b'\n').count();
    println!("widening_commit: {rows} rows per append, 21 appends, the 11th widening");
    println!("  schema after: {}", types.join(", "));
    println!("  appends before: median {before:.3} s; after: median {after:.3} s");
    println!(
        "  widening append: {widening:.3} s = {:.2}x the median before, {:.2}x the median after",
        widening / before,
        widening / after
    );
    println!("  cat of all {read_rows} rows (10 files upcast): {read_secs:.2} s");
}
