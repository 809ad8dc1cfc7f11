//! The change feed as a message bus, on local files:
//!
//! 1. Latency: a follower polling every 100 ms while a writer commits 10 rows at random
//!    intervals (50–1,000 ms); commit → delivered p50/p90/p99/max. Everything in one process:
//!    the writer notes when its commit returned, the sink when it received the version.
//! 2. Requests: the follower's table goes through a counting store decorator; requests per
//!    idle poll (10 s with no commits) and per delivered commit, by kind.
//! 3. Idle CPU: process CPU seconds (from /proc/self/stat) over those 10 idle seconds.
//! 4. Throughput: the changes of 1,000 commits × 1,000 rows (change data feed enabled) read
//!    from version 0, as Arrow batches and encoded as JSON lines (what `deltabus changes
//!    --from 0` does), rows/s and commits/s; baseline in the same run: the Python `deltalake`
//!    package's `load_cdf(starting_version=0)` read to an Arrow table. The table is generated
//!    once under `target/bench-data/`.
//!
//! Run: `cargo bench --bench follow_latency`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver, not library code

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use deltabus::common::follow::{FollowerOptions, StartAt};
use deltabus::delta::snapshot::Snapshot;
use deltabus::delta::transaction::CommitOutcome;
use deltabus::feed::follow::run_follower;
use deltabus::feed::sink::ChangeSink;
use deltabus::ops::write::{write_json_lines, WriteOptions};
use deltabus::storage::change_cursor::{ChangeCursor, CommitChanges};
use deltabus::storage::{StorageOptions, Table};
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult,
};

/// Counts requests by kind; `log_json_gets` counts GETs of `_delta_log/*.json` (one per poll).
#[derive(Debug)]
struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    get: AtomicU64,
    log_json_gets: AtomicU64,
    put: AtomicU64,
    list: AtomicU64,
    delete: AtomicU64,
    other: AtomicU64,
}

impl Counts {
    fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        BTreeMap::from([
            ("get", self.get.load(Relaxed)),
            ("get_log_json", self.log_json_gets.load(Relaxed)),
            ("put", self.put.load(Relaxed)),
            ("list", self.list.load(Relaxed)),
            ("delete", self.delete.load(Relaxed)),
            ("other", self.other.load(Relaxed)),
        ])
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.counts.put.fetch_add(1, Relaxed);
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.counts.put.fetch_add(1, Relaxed);
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.counts.get.fetch_add(1, Relaxed);
        if location.as_ref().contains("_delta_log/") && location.as_ref().ends_with(".json") {
            self.counts.log_json_gets.fetch_add(1, Relaxed);
        }
        self.inner.get_opts(location, options).await
    }
    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        self.counts.get.fetch_add(1, Relaxed);
        self.inner.get_ranges(location, ranges).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.counts.delete.fetch_add(1, Relaxed);
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.counts.list.fetch_add(1, Relaxed);
        self.inner.list(prefix)
    }
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.counts.list.fetch_add(1, Relaxed);
        self.inner.list_with_offset(prefix, offset)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.counts.list.fetch_add(1, Relaxed);
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.counts.other.fetch_add(1, Relaxed);
        self.inner.copy_opts(from, to, options).await
    }
}

/// Notes when each version arrives.
struct TimingSink {
    arrived: Arc<Mutex<BTreeMap<u64, Instant>>>,
}

impl ChangeSink for TimingSink {
    async fn position(&mut self) -> deltabus::error::Result<Option<u64>> {
        Ok(None)
    }
    async fn deliver(&mut self, _: &Snapshot, changes: &CommitChanges) -> deltabus::error::Result<()> {
        self.arrived.lock().unwrap().insert(changes.version, Instant::now());
        Ok(())
    }
    /// The benchmark times commits only: a start mark is not an arrival.
    async fn mark(&mut self, _: &Snapshot, _: &CommitChanges) -> deltabus::error::Result<()> {
        Ok(())
    }
    fn name(&self) -> &'static str {
        "timing"
    }
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) in clock ticks; after the command name they are 11 and 12.
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn rows(n: usize, tag: usize) -> String {
    (0..n)
        .map(|i| format!("{{\"id\":{},\"commit\":{tag},\"name\":\"row-{i}\",\"value\":{}.5}}\n", tag * n + i, i))
        .collect()
}

async fn append(table: &Table, n: usize, tag: usize) -> u64 {
    let text = rows(n, tag);
    let mut opts = WriteOptions::default();
    opts.properties.insert("delta.enableChangeDataFeed".into(), "true".into());
    match write_json_lines(table, text.as_bytes(), &opts).await.unwrap().outcome {
        Some(CommitOutcome::Committed { version }) => version,
        other => panic!("{other:?}"),
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn latency_requests_idle(dir: &std::path::Path) {
    let path = dir.join("live");
    let _ = std::fs::remove_dir_all(&path);
    let writer = Table::open_for_write(path.to_str().unwrap(), StorageOptions::default()).unwrap();
    append(&writer, 10, 0).await;
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    let followed = Table::open(path.to_str().unwrap(), StorageOptions::default())
        .unwrap()
        .map_store(move |inner| Arc::new(CountingStore { inner, counts: c }));
    let arrived = Arc::new(Mutex::new(BTreeMap::new()));
    let mut sink = TimingSink { arrived: arrived.clone() };
    let mut opts = FollowerOptions::new(StartAt::Version(1));
    opts.poll = Duration::from_millis(100);
    opts.follower_id = Some("bench".into());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let follower = tokio::spawn(async move {
        run_follower(&followed, &mut sink, &opts, None, async move {
            let _ = stop_rx.await;
        })
        .await
        .unwrap()
    });

    // 1. Latency under a writer committing at random intervals.
    let mut committed = BTreeMap::new();
    let mut seed = 0x2545_f491_u64;
    let commits = 150;
    for tag in 1..=commits {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(50 + seed % 950)).await;
        let v = append(&writer, 10, tag).await;
        committed.insert(v, Instant::now());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after_writes = counts.snapshot();
    let got = arrived.lock().unwrap().clone();
    let mut lat: Vec<f64> = committed
        .iter()
        .map(|(v, at)| got.get(v).expect("every commit delivered").saturating_duration_since(*at).as_secs_f64() * 1e3)
        .collect();
    lat.sort_by(f64::total_cmp);
    println!("latency commit -> delivered, 100 ms poll, {commits} commits at 50-1000 ms intervals:");
    println!(
        "  p50 {:.0} ms  p90 {:.0} ms  p99 {:.0} ms  max {:.0} ms",
        pct(&lat, 0.5),
        pct(&lat, 0.9),
        pct(&lat, 0.99),
        lat[lat.len() - 1]
    );
    let polls = after_writes["get_log_json"];
    println!("requests while following ({commits} commits, {polls} GETs of _delta_log/*.json): {after_writes:?}");
    let total: u64 = after_writes.values().sum::<u64>() - after_writes["get_log_json"];
    let per = |n: u64| n as f64 / commits as f64;
    println!(
        "  per delivered commit: {:.2} requests = {:.2} GETs of <v>.json (one finds the commit, the rest are polls in between) + {:.2} data-file GETs + {:.2} LIST + {:.2} PUT (registration)",
        per(total),
        per(after_writes["get_log_json"]),
        per(after_writes["get"] - after_writes["get_log_json"]),
        per(after_writes["list"]),
        per(after_writes["put"])
    );

    // 2 and 3. Ten idle seconds: requests per poll and CPU.
    let before = counts.snapshot();
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (cpu, secs) = (cpu_seconds() - cpu0, t0.elapsed().as_secs_f64());
    let after = counts.snapshot();
    let delta: BTreeMap<&str, u64> = after.iter().map(|(k, v)| (*k, v - before[k])).collect();
    let idle_polls = delta["get_log_json"];
    let idle_total: u64 = delta.values().sum::<u64>() - delta["get_log_json"];
    // (get_log_json is a subset of get: the sum counts each request once.)
    println!("idle {secs:.1} s: {idle_polls} polls ({:.2}/s), requests {delta:?}", idle_polls as f64 / secs);
    println!("  {:.3} requests per idle poll", idle_total as f64 / idle_polls.max(1) as f64);
    println!("  idle CPU: {cpu:.3} CPU-s over {secs:.1} s = {:.2}% of one core", 100.0 * cpu / secs);
    let _ = stop_tx.send(());
    follower.await.unwrap();
}

async fn throughput(dir: &std::path::Path) {
    let path = dir.join("cdf_commits_1000x1000");
    let table = Table::open_for_write(path.to_str().unwrap(), StorageOptions::default()).unwrap();
    let have = table.latest_version().await.ok();
    if have != Some(999) {
        let _ = std::fs::remove_dir_all(&path);
        let t0 = Instant::now();
        for tag in 0..1000 {
            append(&table, 1000, tag).await;
        }
        println!("generated 1,000 commits x 1,000 rows in {:.1} s", t0.elapsed().as_secs_f64());
    }
    let mut arrow_secs = Vec::new();
    for run in 0..3 {
        for json in [false, true] {
            let t0 = Instant::now();
            let cpu0 = cpu_seconds();
            let mut cursor = ChangeCursor::open(&table, 0).await.unwrap();
            let (mut rows, mut commits) = (0u64, 0u64);
            let mut out = std::io::BufWriter::new(std::io::sink());
            while let Some(c) = cursor.poll().await.unwrap() {
                rows += if json { deltabus::feed::sink::lines::write_lines(&mut out, &c).unwrap() } else { c.rows() };
                commits += 1;
            }
            let secs = t0.elapsed().as_secs_f64();
            assert_eq!((rows, commits), (1_000_000, 1000));
            if !json {
                arrow_secs.push(secs);
            }
            println!(
                "deltabus changes from 0 (run {run}, {}): {secs:.2} s = {:.0} rows/s, {:.0} commits/s, {:.2} CPU-s",
                if json { "JSON lines" } else { "Arrow batches" },
                rows as f64 / secs,
                commits as f64 / secs,
                cpu_seconds() - cpu0
            );
        }
    }
    let python = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if !python.exists() {
        println!("baseline skipped: no .venv (run scripts/setup.sh)");
        return;
    }
    let script = r#"
import sys, time
from deltalake import DeltaTable
best = None
for run in range(3):
    t0 = time.perf_counter()
    t = DeltaTable(sys.argv[1]).load_cdf(starting_version=0, ending_version=999).read_all()
    s = time.perf_counter() - t0
    assert t.num_rows == 1_000_000, t.num_rows
    print(f"deltalake load_cdf from 0 (run {run}, Arrow table): {s:.2f} s = {t.num_rows / s:.0f} rows/s")
    best = s if best is None else min(best, s)
print(f"BEST {best}")
"#;
    let out = std::process::Command::new(&python).arg("-c").arg(script).arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    if !out.status.success() {
        println!("baseline failed: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    let theirs: f64 = text.lines().find_map(|l| l.strip_prefix("BEST ")).unwrap().trim().parse().unwrap();
    let ours = arrow_secs.iter().copied().fold(f64::INFINITY, f64::min);
    println!("best Arrow read: deltabus {ours:.2} s vs deltalake {theirs:.2} s -> {:.2}x the time", ours / theirs);
}

fn main() {
    let dir = std::env::var_os("DELTABUS_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/follow"));
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        throughput(&dir).await;
        latency_requests_idle(&dir).await;
    });
}
