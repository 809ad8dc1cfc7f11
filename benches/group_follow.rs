//! Consumer groups and mirrors on local files, in one process:
//!
//! 1. Throughput: a group of 1, 2 and 4 members (16 slices, keyed by `id`, then by file)
//!    settles on an idle table, then 199 commits × 2,000 rows (one file each) arrive at once;
//!    rows/s from their arrival until every row was delivered; baseline in the same run: one
//!    plain follower (`run_follower`) over the same commits.
//! 2. Latency: a writer commits 20 rows at random intervals (50–500 ms) for 15 s while a group
//!    of 2 members polls every 100 ms; commit → delivered p50/p99 per member.
//! 3. Mirror lag: a writer appends 200 rows every 200 ms for 10 s while `follow --mirror`
//!    (100 ms poll) keeps a copy, by key and by copying files; commit → mirrored p50/p99.
//!
//! Run: `cargo bench --bench group_follow`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver, not library code

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use deltabus::common::follow::GroupOptions;
use deltabus::common::follow::{FollowerOptions, StartAt};
use deltabus::delta::snapshot::Snapshot;
use deltabus::delta::transaction::CommitOutcome;
use deltabus::error::Result;
use deltabus::feed::follow::run_follower;
use deltabus::feed::group::Member;
use deltabus::feed::group_follow::run_member;
use deltabus::feed::sink::file_mirror::FileMirror;
use deltabus::feed::sink::mirror::MirrorSink;
use deltabus::feed::sink::ChangeSink;
use deltabus::ops::write::{write_json_lines, WriteOptions};
use deltabus::storage::change_cursor::CommitChanges;
use deltabus::storage::{StorageOptions, Table};

/// Counts rows and notes when each version arrived.
#[derive(Clone, Default)]
struct Counting {
    rows: Arc<AtomicU64>,
    arrived: Arc<Mutex<BTreeMap<u64, Instant>>>,
}

impl ChangeSink for Counting {
    async fn position(&mut self) -> Result<Option<u64>> {
        Ok(None)
    }
    async fn deliver(&mut self, _s: &Snapshot, c: &CommitChanges) -> Result<()> {
        self.rows.fetch_add(c.rows(), Relaxed);
        self.arrived.lock().unwrap().entry(c.version).or_insert_with(Instant::now);
        Ok(())
    }
    async fn mark(&mut self, s: &Snapshot, c: &CommitChanges) -> Result<()> {
        self.deliver(s, c).await
    }
    fn name(&self) -> &'static str {
        "counting"
    }

    async fn slice_position(&mut self, _slice: u32) -> Result<Option<u64>> {
        Ok(None)
    }

    async fn deliver_slices(
        &mut self,
        _s: &Snapshot,
        c: &CommitChanges,
        slices: &BTreeMap<u32, Vec<RecordBatch>>,
    ) -> Result<Vec<u32>> {
        let n: usize = slices.values().flatten().map(RecordBatch::num_rows).sum();
        self.rows.fetch_add(n as u64, Relaxed);
        self.arrived.lock().unwrap().entry(c.version).or_insert_with(Instant::now);
        Ok(Vec::new())
    }
}

/// A mirror that notes when each version landed.
struct TimedMirror<S> {
    inner: S,
    arrived: Arc<Mutex<BTreeMap<u64, Instant>>>,
}

impl<S: ChangeSink> ChangeSink for TimedMirror<S> {
    async fn position(&mut self) -> Result<Option<u64>> {
        self.inner.position().await
    }
    async fn deliver(&mut self, s: &Snapshot, c: &CommitChanges) -> Result<()> {
        self.inner.deliver(s, c).await?;
        self.arrived.lock().unwrap().insert(c.version, Instant::now());
        Ok(())
    }
    async fn mark(&mut self, s: &Snapshot, c: &CommitChanges) -> Result<()> {
        self.inner.mark(s, c).await
    }
    fn name(&self) -> &'static str {
        "mirror"
    }
}

fn rows(n: usize, tag: usize) -> String {
    (0..n)
        .map(|i| format!("{{\"id\":{},\"commit\":{tag},\"name\":\"row-{i}\",\"value\":{}.5}}\n", tag * n + i, i))
        .collect()
}

async fn append(table: &Table, n: usize, tag: usize) -> u64 {
    match write_json_lines(table, rows(n, tag).as_bytes(), &WriteOptions::default()).await.unwrap().outcome {
        Some(CommitOutcome::Committed { version }) => version,
        other => panic!("{other:?}"),
    }
}

/// Commit → arrival in ms for every committed version that arrived, sorted.
fn latencies(committed: &BTreeMap<u64, Instant>, arrived: &BTreeMap<u64, Instant>) -> Vec<f64> {
    let mut lat: Vec<f64> = committed
        .iter()
        .filter_map(|(v, at)| arrived.get(v).map(|d| d.saturating_duration_since(*at).as_secs_f64() * 1000.0))
        .collect();
    lat.sort_by(f64::total_cmp);
    lat
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn group(name: &str, member: &str, keys: &[&str]) -> GroupOptions {
    GroupOptions {
        group: name.into(),
        member: member.into(),
        slices: Some(16),
        key_columns: keys.iter().map(|k| (*k).to_string()).collect(),
        lease: Duration::from_secs(3),
    }
}

/// A table of version 0 only whose later commits (already written to `staging`) arrive at once
/// when the returned closure is called.
fn burst_table(staging: &std::path::Path, at: &std::path::Path) -> impl Fn() {
    let _ = std::fs::remove_dir_all(at);
    std::fs::create_dir_all(at.join("_delta_log")).unwrap();
    for e in std::fs::read_dir(staging).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), at.join(e.file_name())).unwrap();
        }
    }
    let first = format!("{:020}.json", 0);
    std::fs::copy(staging.join("_delta_log").join(&first), at.join("_delta_log").join(&first)).unwrap();
    let (staging, at) = (staging.to_path_buf(), at.to_path_buf());
    move || {
        let mut names: Vec<_> =
            std::fs::read_dir(staging.join("_delta_log")).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        // Each file whole or not at all, as a store's put makes it appear.
        for n in names.into_iter().filter(|n| n.to_string_lossy() != first) {
            let tmp = at.join(format!(".{}.tmp", n.to_string_lossy()));
            std::fs::copy(staging.join("_delta_log").join(&n), &tmp).unwrap();
            std::fs::rename(&tmp, at.join("_delta_log").join(&n)).unwrap();
        }
    }
}

/// `members` members of a new group settle on the slices of an idle table, then 199 commits
/// arrive at once: (seconds from their arrival until every row was delivered, rows/s).
async fn group_throughput(
    staging: &std::path::Path,
    members: usize,
    keys: &'static [&'static str],
    expected: u64,
) -> (f64, f64) {
    let at = staging.with_file_name(format!("burst-{members}-{}", keys.len()));
    let arrive = burst_table(staging, &at);
    let table = Table::open_for_write(at.to_str().unwrap(), StorageOptions::default()).unwrap();
    let name = format!("bench-{members}");
    let sink = Counting::default();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for m in 0..members {
        let (table, name, mut sink, mut stop) = (table.clone(), name.clone(), sink.clone(), stop_rx.clone());
        tasks.push(tokio::spawn(async move {
            let mut member = Member::join(&table, group(&name, &format!("m{m}"), keys), 1).await.unwrap();
            let mut opts = FollowerOptions::new(StartAt::Version(1));
            opts.poll = Duration::from_millis(20);
            let stop = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            run_member(&table, &mut sink, &mut member, &opts, None, stop).await.unwrap();
        }));
    }
    // Three beats: every member holds the slices assigned to it.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    // The clock starts before the commits land: members may deliver while they are copied.
    let started = Instant::now();
    arrive();
    while sink.rows.load(Relaxed) < expected {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    stop_tx.send(true).unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(sink.rows.load(Relaxed), expected, "every row once");
    (secs, expected as f64 / secs)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/groups");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();

    // 1. Throughput.
    let staging_path = root.join("staging");
    let staging = Table::open_for_write(staging_path.to_str().unwrap(), StorageOptions::default()).unwrap();
    let (commits, per) = (200usize, 2000usize);
    for tag in 0..commits {
        append(&staging, per, tag).await;
    }
    let expected = ((commits - 1) * per) as u64;
    println!("== group throughput: {} commits x {per} rows arriving at once, 16 slices ==", commits - 1);
    let mut opts = FollowerOptions::new(StartAt::Version(1));
    opts.once = true;
    // Twice: the first run reads the files into the page cache, as the group runs find them.
    let mut base = 0.0;
    for _ in 0..2 {
        let mut plain = Counting::default();
        let t = Instant::now();
        run_follower(&staging, &mut plain, &opts, None, std::future::pending()).await.unwrap();
        base = t.elapsed().as_secs_f64();
        assert_eq!(plain.rows.load(Relaxed), expected);
    }
    println!("one plain follower (baseline)   {base:>6.2} s  {:>9.0} rows/s  1.00x", expected as f64 / base);
    for (keys, how) in [(&["id"][..], "keyed by id"), (&[][..], "by file")] {
        for members in [1usize, 2, 4] {
            let (secs, rate) = group_throughput(&staging_path, members, keys, expected).await;
            println!("group of {members}, slices {how:<11} {secs:>6.2} s  {rate:>9.0} rows/s  {:.2}x", base / secs);
        }
    }

    // 2. Latency with two members.
    println!("== group latency: 2 members, 100 ms poll, commits of 20 rows every 50-500 ms for 15 s ==");
    let live = Table::open_for_write(root.join("live").to_str().unwrap(), StorageOptions::default()).unwrap();
    append(&live, 20, 0).await;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut sinks = Vec::new();
    let mut tasks = Vec::new();
    for m in 0..2 {
        let sink = Counting::default();
        sinks.push(sink.clone());
        let (table, mut sink, mut stop) = (live.clone(), sink, stop_rx.clone());
        tasks.push(tokio::spawn(async move {
            let mut member = Member::join(&table, group("live", &format!("m{m}"), &["id"]), 1).await.unwrap();
            let mut opts = FollowerOptions::new(StartAt::Version(1));
            opts.poll = Duration::from_millis(100);
            let stop = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            run_member(&table, &mut sink, &mut member, &opts, None, stop).await.unwrap();
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await; // both members hold their slices
    let mut committed = BTreeMap::new();
    let until = Instant::now() + Duration::from_secs(15);
    let mut tag = 1;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    while Instant::now() < until {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(50 + seed % 450)).await;
        let v = append(&live, 20, tag).await;
        committed.insert(v, Instant::now());
        tag += 1;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop_tx.send(true).unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    for (m, sink) in sinks.iter().enumerate() {
        let lat = latencies(&committed, &sink.arrived.lock().unwrap());
        println!(
            "member m{m}: {} commits with rows for it, commit -> delivered p50 {:.0} ms, p99 {:.0} ms",
            lat.len(),
            pct(&lat, 0.5),
            pct(&lat, 0.99)
        );
    }

    // 3. Mirror lag, by key and by files.
    println!("== mirror lag: 200 rows every 200 ms for 10 s, 100 ms poll ==");
    let (src, dst) = tables(&root, "mirror-src", "mirror-dst");
    append(&src, 200, 0).await;
    let id = src.snapshot(None).await.unwrap().metadata.id;
    let keyed = MirrorSink::open(&src, &dst, "copy", &id, &["id".to_string()]).await.unwrap();
    mirror_lag(src, keyed, "--mirror --key-columns id").await;
    let (src, dst) = tables(&root, "files-src", "files-dst");
    append(&src, 200, 0).await;
    let id = src.snapshot(None).await.unwrap().metadata.id;
    let files = FileMirror::open(&src, &dst, "copy", &id).await.unwrap();
    mirror_lag(src, files, "--mirror (files copied)").await;
}

fn tables(root: &std::path::Path, a: &str, b: &str) -> (Table, Table) {
    let open = |n: &str| Table::open_for_write(root.join(n).to_str().unwrap(), StorageOptions::default()).unwrap();
    (open(a), open(b))
}

/// Commit -> mirrored latency while a writer appends 200 rows every 200 ms for 10 s.
async fn mirror_lag<S: ChangeSink + Send + 'static>(src: Table, inner: S, label: &str) {
    let arrived = Arc::new(Mutex::new(BTreeMap::new()));
    let mut sink = TimedMirror { inner, arrived: arrived.clone() };
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let follower = {
        let src = src.clone();
        tokio::spawn(async move {
            let mut opts = FollowerOptions::new(StartAt::Version(0));
            opts.poll = Duration::from_millis(100);
            let stop = async move {
                let _ = stop_rx.wait_for(|s| *s).await;
            };
            run_follower(&src, &mut sink, &opts, None, stop).await.unwrap();
        })
    };
    let mut committed = BTreeMap::new();
    for tag in 1..=50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let v = append(&src, 200, tag).await;
        committed.insert(v, Instant::now());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop_tx.send(true).unwrap();
    follower.await.unwrap();
    let lag = latencies(&committed, &arrived.lock().unwrap());
    println!(
        "{label}: {} of {} commits mirrored, commit -> mirrored p50 {:.0} ms, p99 {:.0} ms",
        lag.len(),
        committed.len(),
        pct(&lag, 0.5),
        pct(&lag, 0.99)
    );
}
