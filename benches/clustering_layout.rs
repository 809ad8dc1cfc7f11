//! How well each clustering order lets min/max statistics skip files, and what it costs.
//!
//! One million rows (`BENCH_ROWS`) with three clustering columns of very different shapes: a
//! skewed string (`device`: 1,000 names, the first few holding most rows), a wide integer
//! (`ts`: uniform over 10^12) and a narrow float (`amount`: about 0..100, bell-shaped). The rows
//! arrive in ingest order (random), and are laid out four ways: as they came (the baseline),
//! sorted by `device` alone (what one sort key gives), and by the Z-order and the Hilbert curve
//! of the rank-normalised columns (`compact`'s key). Each layout is cut into files of 10,000
//! rows (`BENCH_FILE_ROWS`) with each column's min and max, and 200 queries per column ask for
//! one device, 1% of the `ts` range, and 1% of the `amount` range: the figure is the share of
//! files a query must read (lower is better), per column and on average, with the ratio
//! against the baseline, and the time each order takes.
//!
//! Run: `cargo bench --bench clustering_layout`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{Float64Type, Int64Type};
use deltabus::compactor::cluster::{ordered_by, Curve};

/// A small deterministic generator (xorshift), so every run measures the same rows.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rows(n: usize, rng: &mut Rng) -> RecordBatch {
    // Skewed: device k with weight 1/(k+1).
    let devices: Vec<String> = (0..n).map(|_| format!("device-{:04}", (1000f64.powf(rng.unit()) as u64) - 1)).collect();
    let ts: Vec<i64> = (0..n).map(|_| (rng.next() % 1_000_000_000_000) as i64).collect();
    let amount: Vec<f64> = (0..n).map(|_| (0..4).map(|_| rng.unit()).sum::<f64>() * 25.0).collect();
    RecordBatch::try_from_iter([
        ("device", Arc::new(StringArray::from(devices)) as ArrayRef),
        ("ts", Arc::new(Int64Array::from(ts)) as ArrayRef),
        ("amount", Arc::new(Float64Array::from(amount)) as ArrayRef),
    ])
    .unwrap()
}

/// Per file: (device min, max), (ts min, max), (amount min, max).
type FileStats = ((String, String), (i64, i64), (f64, f64));

/// A query per column: a device, a `ts` range, an `amount` range.
type Query = (String, (i64, i64), (f64, f64));

/// A layout: its name, and the columns and curve it orders by (`None`: ingest order).
type Layout = (&'static str, Option<(Vec<Vec<String>>, Curve)>);

fn files(batch: &RecordBatch, per_file: usize) -> Vec<FileStats> {
    let device = batch.column(0).as_string::<i32>();
    let ts = batch.column(1).as_primitive::<Int64Type>();
    let amount = batch.column(2).as_primitive::<Float64Type>();
    (0..batch.num_rows())
        .step_by(per_file)
        .map(|start| {
            let end = (start + per_file).min(batch.num_rows());
            let d: Vec<&str> = (start..end).map(|i| device.value(i)).collect();
            let t: Vec<i64> = (start..end).map(|i| ts.value(i)).collect();
            let a: Vec<f64> = (start..end).map(|i| amount.value(i)).collect();
            (
                (d.iter().min().unwrap().to_string(), d.iter().max().unwrap().to_string()),
                (*t.iter().min().unwrap(), *t.iter().max().unwrap()),
                (a.iter().copied().fold(f64::MAX, f64::min), a.iter().copied().fold(f64::MIN, f64::max)),
            )
        })
        .collect()
}

/// The share of files each query kind reads: (device, ts, amount).
fn read_share(stats: &[FileStats], queries: &[Query]) -> (f64, f64, f64) {
    let total = (stats.len() * queries.len()) as f64;
    let mut read = (0usize, 0usize, 0usize);
    for (device, (t0, t1), (a0, a1)) in queries {
        for ((dmin, dmax), (tmin, tmax), (amin, amax)) in stats {
            read.0 += usize::from(dmin <= device && device <= dmax);
            read.1 += usize::from(tmin <= t1 && t0 <= tmax);
            read.2 += usize::from(amin <= a1 && a0 <= amax);
        }
    }
    (read.0 as f64 / total, read.1 as f64 / total, read.2 as f64 / total)
}

fn main() {
    let n = env("BENCH_ROWS", 1_000_000);
    let per_file = env("BENCH_FILE_ROWS", 10_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let batch = rows(n, &mut rng);
    let device = batch.column(0).as_string::<i32>();
    let queries: Vec<Query> = (0..200)
        .map(|_| {
            let row = (rng.next() % n as u64) as usize;
            let t0 = (rng.next() % 990_000_000_000) as i64;
            let a0 = rng.unit() * 99.0;
            (device.value(row).to_string(), (t0, t0 + 10_000_000_000), (a0, a0 + 1.0))
        })
        .collect();
    let columns: Vec<Vec<String>> = ["device", "ts", "amount"].iter().map(|c| vec![c.to_string()]).collect();
    println!("{n} rows, files of {per_file} rows, 200 queries per column; share of files read (lower is better)");
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "layout", "device", "ts 1%", "amount 1%", "mean", "vs ingest", "order ms"
    );
    let mut baseline = None;
    let layouts: [Layout; 4] = [
        ("ingest order", None),
        ("sorted by device", Some((columns[..1].to_vec(), Curve::ZOrder))),
        ("Z-order (3 columns)", Some((columns.clone(), Curve::ZOrder))),
        ("Hilbert (3 columns)", Some((columns.clone(), Curve::Hilbert))),
    ];
    for (name, order) in layouts {
        let started = Instant::now();
        let laid = match &order {
            None => batch.clone(),
            Some((cols, curve)) => ordered_by(&batch, cols, *curve).unwrap(),
        };
        let ms = started.elapsed().as_millis();
        assert_eq!(laid.num_rows(), n);
        let (d, t, a) = read_share(&files(&laid, per_file), &queries);
        let mean = (d + t + a) / 3.0;
        let base = *baseline.get_or_insert(mean);
        println!(
            "{name:<22} {:>8.1}% {:>8.1}% {:>8.1}% {:>8.1}% {:>9.2}x {ms:>9}",
            d * 100.0,
            t * 100.0,
            a * 100.0,
            mean * 100.0,
            mean / base
        );
    }
}
