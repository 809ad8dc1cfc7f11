//! Coordinated commits (`commit.mode = "coordinated"`): the committer's decisions against a
//! table behind the fault-injecting store, with a zombie committer deciding the same requests
//! at the same time; `deltabus ingest` workers on Apache Kafka (through store
//! faults) whose committer is paused past its takeover (SIGSTOP, then SIGCONT: the zombie) and
//! then killed with -9, whose committer or worker dies at each named crash point, and which
//! leave and join through a rebalance storm, with every produced id landing exactly once; and
//! the compactor running only in the committer.

use crate::support::*;
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use deltabus::delta::actions::{Action, Add};
use deltabus::delta::create::{infer_schema, new_table};
use deltabus::delta::transaction::{Operation, Transaction};
use deltabus::ingest::coordinated::committer::Decider;
use deltabus::ingest::coordinated::messages::{Batch, CommitRequest};
use deltabus::storage::faulty::{FaultConfig, FaultyStore};
use deltabus::storage::retrying::RetryingStore;
use deltabus::storage::{RetryPolicy, StorageOptions, Table};
use object_store::ObjectStore;

fn request(id: &str, partition: i32, base: Option<i64>, last: i64) -> CommitRequest {
    let Action::Add(add) = add(&format!("{id}.parquet")) else { unreachable!() };
    CommitRequest {
        id: id.into(),
        worker: "w".into(),
        table: "t".into(),
        app_id: "eo".into(),
        topic: "orders".into(),
        partitions: BTreeMap::from([(partition, Batch { base, last })]),
        adds: vec![Add { ..add }],
        rows: 1,
        bytes: 1,
        dead_letters: 0,
        schema: None,
    }
}

/// Every `add` and `txn` of every commit in a local table's log, in version order.
fn log_actions(dir: &std::path::Path) -> (Vec<String>, Vec<(String, i64)>) {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let (mut adds, mut txns) = (Vec::new(), Vec::new());
    for f in files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(p) = v["add"]["path"].as_str() {
                adds.push(p.to_string());
            }
            if let Some(app) = v["txn"]["appId"].as_str() {
                txns.push((app.to_string(), v["txn"]["version"].as_i64().unwrap()));
            }
        }
    }
    (adds, txns)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_and_a_zombie_committer_through_store_faults_commit_every_batch_once() {
    let dir = tempfile::tempdir().unwrap();
    let clean = Table::open(dir.path().to_str().unwrap(), StorageOptions::default()).unwrap();
    let (p, m) = new_table(infer_schema(&[r#"{"id":1}"#]).unwrap(), &[], &Default::default()).unwrap();
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    clean.commit(None, &create, &RetryPolicy::default()).await.unwrap();
    // Three partitions, 12 batches each: batch k of partition p covers offsets 10k..10k+9.
    let mut stream = Vec::new();
    for k in 0..12i64 {
        for p in 0..3 {
            let base = (k > 0).then(|| 10 * k - 1);
            stream.push(request(&format!("p{p}-b{k}"), p, base, 10 * k + 9));
            if k % 3 == 1 {
                // A worker from before a rebalance: the same range, other files.
                stream.push(request(&format!("stale-p{p}-b{k}"), p, base, 10 * k + 9));
            }
            if k % 4 == 2 {
                // Overlapping: continues an offset that never ends a batch.
                stream.push(request(&format!("gap-p{p}-b{k}"), p, Some(10 * k + 5), 10 * k + 19));
            }
        }
    }
    let real: BTreeSet<String> =
        stream.iter().filter(|r| r.id.starts_with('p')).map(|r| format!("{}.parquet", r.id)).collect();
    let mut tasks = Vec::new();
    for (member, seed, chunk) in [("live", 7u64, 5usize), ("zombie", 11, 3)] {
        let faulty = Arc::new(FaultyStore::new(
            clean.object_store(),
            FaultConfig { seed, rate: 0.15, only: None, lose: vec![], delay: None },
        ));
        let table = clean.clone().map_store(|_| Arc::new(RetryingStore::new(faulty)) as Arc<dyn ObjectStore>);
        let decider = Decider { table, app_id: "eo".into(), topic: "orders".into(), member: member.into() };
        let stream = stream.clone();
        tasks.push(tokio::spawn(async move {
            let mut snapshot = None;
            let mut committed = BTreeSet::new();
            // Each request offered twice (a worker sending again), in windows of `chunk`.
            let offered: Vec<CommitRequest> = stream.iter().flat_map(|r| [r.clone(), r.clone()]).collect();
            for window in offered.chunks(chunk) {
                let mut tries = 0;
                let answers = loop {
                    match decider.commit(window, &mut snapshot).await {
                        Ok(a) => break a,
                        Err(e) => {
                            tries += 1;
                            assert!(tries < 20, "{member}: {e}");
                        }
                    }
                };
                for a in answers.answers.iter().filter(|a| a.committed) {
                    committed.insert(format!("{}.parquet", a.id));
                }
            }
            committed
        }));
    }
    let mut said_committed = BTreeSet::new();
    for t in tasks {
        said_committed.extend(t.await.unwrap());
    }
    let (adds, txns) = log_actions(dir.path());
    let mut seen = BTreeSet::new();
    for a in &adds {
        assert!(seen.insert(a.clone()), "{a} committed twice");
    }
    assert_eq!(seen, real, "every real batch exactly once, nothing stale or out of order");
    assert!(said_committed.is_subset(&real), "no answer claims a refused batch");
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    for (app, v) in txns {
        let before = last.insert(app.clone(), v);
        assert!(before.is_none_or(|b| v > b), "txn {app} went from {before:?} to {v}");
    }
    assert_eq!(last.len(), 3);
    assert!(last.values().all(|v| *v == 119), "{last:?}");
}

fn spawn_worker(brokers: &str, topic: &str, table: &str, log: &std::path::Path, seed: u64) -> Child {
    spawn_worker_on(brokers, topic, table, log, seed, None)
}

/// Apache Kafka and a fresh topic of eight partitions on it (the commit-request topic is
/// created by deltabus).
fn fresh_topic(prefix: &str) -> Option<(String, String)> {
    crate::support::kafka::apache_topic(prefix, 8)
}

fn spawn_worker_on(
    brokers: &str,
    topic: &str,
    table: &str,
    log: &std::path::Path,
    seed: u64,
    crash_at: Option<&str>,
) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deltabus"));
    cmd.args(["ingest", topic, table, "--brokers", brokers, "--app-id", "eo", "--create"])
        .args(["--flush-interval", "300ms", "--max-rows", "500"])
        .args(["--commit-mode", "coordinated", "--commit-interval", "400ms", "--commit-request-timeout", "4s"])
        .args(["--kafka-property", "session.timeout.ms=6000", "--kafka-property", "heartbeat.interval.ms=500"])
        .env("DELTABUS_LOG", "info")
        .env("DELTABUS_FAULTS", format!("rate=0.02,seed={seed}"))
        .stdout(Stdio::piped())
        .stderr(log);
    if let Some(point) = crash_at {
        cmd.env("DELTABUS_CRASH_AT", point);
    }
    cmd.spawn().expect("spawn deltabus ingest")
}

/// The `committer` of every coordinated commit so far, in version order.
fn committers(table: &str) -> Vec<String> {
    let dir = std::path::Path::new(table).join("_delta_log");
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut files: Vec<_> =
        entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    files.sort();
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| text.lines().map(str::to_string).collect::<Vec<_>>())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter_map(|v| v["commitInfo"]["operationParameters"]["committer"].as_str().map(str::to_string))
        .collect()
}

/// Waits until `done` holds, `limit` at most; `why` says what was missing.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool, why: impl Fn() -> String) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{}", why());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The worker among `workers` that made the latest coordinated commit.
fn current_committer(table: &str, workers: &[Child], log: &std::path::Path) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(last) = committers(table).last() {
            let pid: u32 = last.split('-').next().unwrap().parse().unwrap();
            if let Some(i) = workers.iter().position(|w| w.id() == pid) {
                return i;
            }
        }
        if std::time::Instant::now() > deadline {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: String = text.chars().rev().take(6000).collect::<Vec<_>>().into_iter().rev().collect();
            panic!("no committer among the workers: {:?}\n{tail}", committers(table));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
#[test]
fn coordinated_workers_with_a_paused_then_killed_committer_are_exactly_once() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let log = dir.path().join("workers.log");
    let Some((brokers, topic)) = fresh_topic("orders") else { return };
    let producer = start_producer_to(brokers.clone(), topic.clone(), 30);
    let mut workers: Vec<Child> = (0..3).map(|i| spawn_worker(&brokers, &topic, &table, &log, 100 + i)).collect();
    // The zombie: the committer stops until another member has taken over and committed,
    // then it resumes with whatever it held.
    let paused = current_committer(&table, &workers, &log);
    signal(&workers[paused], "-STOP");
    let before = committers(&table).len();
    let taken_over = |table: &str| {
        let list = committers(table);
        list.len() > before && current_committer(table, &workers, &log) != paused
    };
    wait_until(Duration::from_secs(120), || taken_over(&table), || format!("no takeover: {:?}", committers(&table)));
    signal(&workers[paused], "-CONT");
    // The zombie is back: one more coordinated commit lands before the committer dies.
    let resumed = committers(&table).len();
    wait_until(Duration::from_secs(60), || committers(&table).len() > resumed, || "no commit after resuming".into());
    // Then the committer of the moment dies without a goodbye; a new worker joins.
    let killed = current_committer(&table, &workers, &log);
    let mut dead = workers.remove(killed);
    dead.kill().unwrap();
    dead.wait().unwrap();
    workers.push(spawn_worker(&brokers, &topic, &table, &log, 200));
    producer.join().unwrap();
    wait_for_rows(&table, TOTAL, &log);
    for w in workers {
        let (status, _) = terminate(w);
        assert!(status.success(), "worker exit: {status}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
    assert_exactly_once(&table);
    let distinct: BTreeSet<String> = committers(&table).into_iter().collect();
    assert!(distinct.len() >= 2, "the committer role moved: {distinct:?}");
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(logs.contains("committer role changed"), "{logs}");
}

/// The first worker (the committer: it is alone in the committer group until its first commit,
/// and the group's assignment is sticky) dies at a named crash point; a second worker takes the
/// committer role over, the first restarts, and every id lands once.
#[test]
fn a_committer_or_worker_dying_at_each_named_crash_point_loses_and_repeats_nothing() {
    let _guard = crate::support::native_clients_lock();
    let points =
        ["coordinated.request_sent:3", "coordinated.committed:3", "coordinated.answered:3", "commit.after_put:4"];
    for (i, point) in points.iter().enumerate() {
        let Some((brokers, topic)) = fresh_topic(&format!("cp{i}")) else { return };
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("t").to_string_lossy().into_owned();
        let log = dir.path().join("workers.log");
        let producer = start_producer_to(brokers.clone(), topic.clone(), 10);
        let mut first = spawn_worker_on(&brokers, &topic, &table, &log, 300 + i as u64, Some(point));
        // The second joins once the first has committed as the committer (or already died).
        let deadline = std::time::Instant::now() + Duration::from_secs(40);
        while committers(&table).is_empty() && first.try_wait().unwrap().is_none() {
            assert!(std::time::Instant::now() < deadline, "{point}: no commit from the first worker");
            std::thread::sleep(Duration::from_millis(100));
        }
        let second = spawn_worker_on(&brokers, &topic, &table, &log, 400 + i as u64, None);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = first.try_wait().unwrap() {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{point}: the first worker never reached its crash point\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(!status.success(), "{point}: died at the crash point, not by exiting: {status}");
        let again = spawn_worker_on(&brokers, &topic, &table, &log, 500 + i as u64, None);
        producer.join().unwrap();
        wait_for_rows(&table, TOTAL, &log);
        for w in [second, again] {
            let (status, _) = terminate(w);
            assert!(status.success(), "{point}: worker exit {status}");
        }
        assert_exactly_once(&table);
        let logs = std::fs::read_to_string(&log).unwrap();
        let name = point.split(':').next().unwrap();
        assert!(logs.contains(&format!("crash point {name} reached")), "{point}: {logs}");
    }
}

/// The background compactor of a coordinated pipeline runs only while its process is the
/// table's committer: with the flag down nothing is rewritten, once it is up the small files
/// are compacted.
#[tokio::test(flavor = "multi_thread")]
async fn the_compactor_runs_only_while_its_process_commits() {
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    let lines: Vec<String> = (0..4).map(|i| format!("{{\"id\":{i},\"name\":\"n{i}\"}}\n")).collect();
    let commits: Vec<&str> = lines.iter().map(String::as_str).collect();
    let table = table_of_commits(&url, &commits).await;
    let before = table.snapshot(None).await.unwrap();
    let mut cfg = deltabus::config::PipelineConfig::new(&url, "127.0.0.1:9", "orders");
    cfg.compaction.enabled = true;
    cfg.compaction.min_files = 2;
    cfg.compaction.interval = deltabus::common::units::HumanDuration::from_millis(50);
    let cfg = cfg.validate("p").unwrap();
    let metrics = deltabus::metrics::Metrics::default().pipeline("p");
    let leading = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let task = tokio::spawn(deltabus::compactor::background::run(table.clone(), cfg, metrics, Some(leading.clone())));
    // A pause about time: twelve compaction intervals in which a worker that does not commit must not compact.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(table.snapshot(None).await.unwrap().version, before.version, "not the committer: no compaction");
    leading.store(true, std::sync::atomic::Ordering::Release);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = table.snapshot(None).await.unwrap();
        if now.version > before.version {
            assert!(now.file_count() < before.file_count(), "{} -> {} files", before.file_count(), now.file_count());
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the committer's compactor did not run");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    task.abort();
}

/// Workers leaving (SIGTERM) and joining while records flow, every other time the current
/// committer: each time it leaves, the role moves to a remaining member, which commits, and
/// every id still lands once.
#[test]
fn coordinated_workers_through_a_rebalance_storm_are_exactly_once() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let log = dir.path().join("workers.log");
    let Some((brokers, topic)) = fresh_topic("storm") else { return };
    // Long enough to outlast the storm.
    let producer = start_producer_to(brokers.clone(), topic.clone(), 50);
    let mut workers: Vec<Child> = (0..3).map(|i| spawn_worker(&brokers, &topic, &table, &log, 600 + i)).collect();
    for round in 0..4u64 {
        // Waits for a commit by a present member: after the committer left, its successor's.
        let current = current_committer(&table, &workers, &log);
        let at = if round % 2 == 1 { current } else { (current + 1) % workers.len() };
        let (status, _) = terminate(workers.remove(at));
        assert!(status.success(), "a leaving worker exits cleanly: {status}");
        workers.push(spawn_worker(&brokers, &topic, &table, &log, 700 + round));
        // A pause about time: records flow between two membership changes.
        std::thread::sleep(Duration::from_secs(2));
    }
    current_committer(&table, &workers, &log);
    producer.join().unwrap();
    wait_for_rows(&table, TOTAL, &log);
    for w in workers {
        let (status, _) = terminate(w);
        assert!(status.success(), "worker exit: {status}");
    }
    assert_exactly_once(&table);
    let distinct: BTreeSet<String> = committers(&table).into_iter().collect();
    assert!(distinct.len() >= 3, "the committer role moved each time its member left: {distinct:?}");
}
