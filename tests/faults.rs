//! Exactly-once against a faulty store and a dying process.
//!
//! - Lost answers: every CLI writer (create, blind append, txn append, delete, compaction)
//!   whose commit PUT lands but whose answer is lost — reported as `AlreadyExists` (what
//!   object_store's own retry of a landed conditional PUT reports) or as a timeout — recognises
//!   its commit: it reports `committed`, commits once, deletes none of its files, and the table
//!   stays readable.
//! - The commit contract under random faults (503s, lost answers, slow calls, cut listings) on
//!   every backend: concurrent writers with txns retrying on errors commit each txn exactly
//!   once; no commit is duplicated; every file the log references exists.
//! - Crash points: the process dies at every step of a commit, of a checkpoint, and between a
//!   follower's delivery and its registration; a rerun leaves every row exactly once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use deltabus::delta::actions::{Action, Txn};
use deltabus::delta::create::{infer_schema, new_table};
use deltabus::delta::transaction::{CommitOutcome, Operation, Transaction};
use deltabus::storage::faulty::{FaultConfig, FaultyStore};
use deltabus::storage::retrying::RetryingStore;
use deltabus::storage::{RetryPolicy, StorageOptions, Table};
use object_store::ObjectStore;

use crate::support::add;
use crate::support::{deltabus, run_json, write_jsonl};

fn cli_with_env(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> std::process::Output {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = stdin.unwrap_or("").to_string();
    let mut pipe = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    child.wait_with_output().unwrap()
}

fn commit_name(v: u64) -> String {
    format!("_delta_log/{v:020}.json")
}

fn versions(table: &Path) -> usize {
    std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".json"))
        .count()
}

fn ids(table: &Path) -> Vec<i64> {
    crate::support::ids(table.to_str().unwrap())
}

fn stdout_json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn a_lost_commit_answer_is_recognised_by_every_cli_writer() {
    for lose in ["lose", "lose-timeout"] {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let ts = t.to_str().unwrap();
        let faults = |v: u64| format!("rate=0,{lose}={}", commit_name(v));
        let env = |v: u64| vec![("DELTABUS_FAULTS", faults(v))];
        let run = |args: &[&str], v: u64, input: Option<&str>| {
            let e = env(v);
            let e: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
            cli_with_env(args, &e, input)
        };
        // Creation (version 0): "created concurrently" before.
        let out = run(&["write", ts, "--property", "delta.enableDeletionVectors=true"], 0, Some("{\"id\":0}\n"));
        assert_eq!(stdout_json(&out)["outcome"], "committed", "{lose}: create");
        // A txn append (version 1): "already_applied" and a deleted data file before.
        let out = run(&["write", ts, "--app-id", "a", "--txn-version", "1"], 1, Some("{\"id\":1}\n{\"id\":2}\n"));
        assert_eq!(stdout_json(&out)["outcome"], "committed", "{lose}: txn append");
        // A blind append (version 2): committed twice before.
        let out = run(&["write", ts], 2, Some("{\"id\":3}\n"));
        assert_eq!(stdout_json(&out)["outcome"], "committed", "{lose}: blind append");
        assert_eq!(versions(&t), 3, "{lose}: one commit per write");
        assert_eq!(ids(&t), vec![0, 1, 2, 3], "{lose}: every row once, every file there");
        // The same txn again: already applied, nothing written.
        let again = write_jsonl(&t, &["--app-id", "a", "--txn-version", "1"], "{\"id\":1}\n");
        assert_eq!(stdout_json(&again)["outcome"], "already_applied");
        // A delete (version 3) whose deletion vector and commit must survive.
        let out = run(&["delete", ts, "--where", "id = 2"], 3, None);
        assert!(out.status.success(), "{lose}: delete: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(ids(&t), vec![0, 1, 3], "{lose}: delete");
        // Compaction (version 4): its inputs are removed by its own commit.
        let out = run(&["compact", ts], 4, None);
        assert!(out.status.success(), "{lose}: compact: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(versions(&t), 5, "{lose}: compaction committed once");
        let files = run_json(&["describe", ts]);
        assert_eq!(files["numFiles"], 1, "{lose}: compacted into one file: {files}");
        assert_eq!(ids(&t), vec![0, 1, 3], "{lose}: compaction keeps the rows");
        // Nothing the log references is missing, and VACUUM (retention 0) deletes nothing live.
        let out = deltabus(&["vacuum", ts, "--retention-hours", "0", "--force"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(ids(&t), vec![0, 1, 3], "{lose}: after vacuum");
    }
}

/// Commits with a txn until the table holds it, riding out store errors as the pipeline does.
async fn commit_exactly_once(table: &Table, txn: &Transaction) -> u32 {
    let mut errors = 0;
    loop {
        let snapshot = match table.snapshot(None).await {
            Ok(s) => s,
            Err(e) => {
                assert!(e.is_retryable(), "not retryable: {e}");
                errors += 1;
                continue;
            }
        };
        match table.commit(Some(&snapshot), txn, &RetryPolicy::default()).await {
            Ok(CommitOutcome::Committed { .. } | CommitOutcome::AlreadyApplied { .. }) => return errors,
            Ok(CommitOutcome::Conflict { reason, .. }) => panic!("blind appends never conflict: {reason}"),
            Err(e) => {
                assert!(e.is_retryable(), "not retryable: {e}");
                errors += 1;
            }
        }
        assert!(errors < 500, "no progress under faults");
    }
}

/// The commit contract through a faulty store: 6 writers × 6 txn appends, concurrently.
async fn contract_under_faults(clean: Table, seed: u64) {
    let (p, m) = new_table(infer_schema(&[r#"{"id":1}"#]).unwrap(), &[], &Default::default()).unwrap();
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    assert_eq!(
        clean.commit(None, &create, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::Committed { version: 0 }
    );
    let faulty = Arc::new(FaultyStore::new(
        clean.object_store(),
        FaultConfig { seed, rate: 0.25, only: None, lose: vec![], delay: None },
    ));
    let counts = faulty.counts();
    // Faults below the retry layer, as `DELTABUS_FAULTS` places them.
    let table = clean.clone().map_store(|_| Arc::new(RetryingStore::new(faulty.clone())) as Arc<dyn ObjectStore>);
    // Writers 0-2 carry txns and retry every error; writers 3-5 are blind appends that cannot
    // retry an unknown outcome: each must land at most once, and exactly once when reported so.
    let mut tasks = Vec::new();
    for w in 0..6 {
        let table = table.clone();
        tasks.push(tokio::spawn(async move {
            let (mut errors, mut reported) = (0, BTreeSet::new());
            for k in 1..=if w < 3 { 6 } else { 12 } {
                let path = format!("w{w}-{k}.parquet");
                let mut actions = vec![add(&path)];
                if w < 3 {
                    actions.push(Action::Txn(Txn { app_id: format!("writer-{w}"), version: k, last_updated: Some(1) }));
                    errors += commit_exactly_once(&table, &Transaction::new(Operation::Write, actions)).await;
                    reported.insert(path);
                    continue;
                }
                let snapshot = loop {
                    match table.snapshot(None).await {
                        Ok(s) => break s,
                        Err(e) => assert!(e.is_retryable(), "{e}"),
                    }
                };
                match table
                    .commit(Some(&snapshot), &Transaction::new(Operation::Write, actions), &RetryPolicy::default())
                    .await
                {
                    Ok(CommitOutcome::Committed { .. }) => {
                        reported.insert(path);
                    }
                    Ok(other) => panic!("a blind append cannot conflict: {other:?}"),
                    Err(e) => {
                        assert!(e.is_retryable(), "{e}");
                        errors += 1;
                    }
                }
            }
            (errors, reported)
        }));
    }
    let (mut errors, mut reported) = (0, BTreeSet::new());
    for t in tasks {
        let (e, r) = t.await.unwrap();
        errors += e;
        reported.extend(r);
    }
    // Read back through the clean store: every commit file, every add counted.
    let snap = clean.snapshot(None).await.unwrap();
    let mut adds: BTreeMap<String, u32> = BTreeMap::new();
    for v in 1..=snap.version {
        for a in clean.read_commit(v).await.unwrap() {
            if let Action::Add(a) = a {
                *adds.entry(a.path).or_default() += 1;
            }
        }
    }
    assert!(adds.values().all(|n| *n == 1), "an append committed twice: {adds:?}");
    let landed: BTreeSet<String> = adds.keys().cloned().collect();
    assert!(reported.is_subset(&landed), "reported committed but missing: {:?}", reported.difference(&landed));
    assert_eq!(landed.iter().filter(|p| p.starts_with("w0") || p.starts_with("w1") || p.starts_with("w2")).count(), 18);
    assert_eq!(snap.version as usize, landed.len(), "one version per landed append, none repeated");
    for w in 0..3 {
        assert_eq!(snap.txn_version(&format!("writer-{w}")), Some(6));
    }
    eprintln!("faults injected: {counts}; caller-visible errors: {errors}");
    assert!(counts.lost_answers.load(std::sync::atomic::Ordering::Relaxed) > 0, "lost answers were exercised");
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_under_faults_local_files() {
    for seed in [11, 111, 211, 311] {
        let dir = tempfile::tempdir().unwrap();
        contract_under_faults(Table::open(dir.path().to_str().unwrap(), StorageOptions::default()).unwrap(), seed)
            .await;
    }
}

/// In memory, under tokio's paused time: every backoff of the committer and of the retrying
/// store (up to seconds each) passes instantly, and the table's clock moves with it.
#[tokio::test(start_paused = true)]
async fn contract_under_faults_memory() {
    for seed in [12, 112, 212, 312] {
        let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
        let options = StorageOptions { clock: deltabus::common::clock::Clock::tokio(), ..StorageOptions::default() };
        let started = std::time::Instant::now();
        let virtual_start = tokio::time::Instant::now();
        contract_under_faults(Table::open(&url, options).unwrap(), seed).await;
        eprintln!(
            "seed {seed}: {:?} of backoffs and slow calls in {:?} of real time",
            virtual_start.elapsed(),
            started.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_under_faults_s3() {
    let Some(table) = crate::support::s3_table().await else { return };
    contract_under_faults(table, 13).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_under_faults_azure() {
    let Some(table) = crate::support::azure_table() else { return };
    contract_under_faults(table, 14).await;
}

/// Kills `deltabus write` at `point`, reruns it, and requires the row exactly once.
#[test]
fn a_write_killed_at_any_step_of_its_commit_is_exactly_once_after_a_rerun() {
    for point in
        ["commit.before_put", "commit.after_put", "commit.before_checkpoint", "checkpoint.before_last_checkpoint"]
    {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let ts = t.to_str().unwrap();
        let out = write_jsonl(
            &t,
            &["--property", "delta.checkpointInterval=2", "--app-id", "a", "--txn-version", "0"],
            "{\"id\":0}\n",
        );
        assert!(out.status.success());
        // Version 1 would be written; version 2 with a checkpoint (the checkpoint points).
        let out = write_jsonl(&t, &["--app-id", "a", "--txn-version", "1"], "{\"id\":1}\n");
        assert!(out.status.success());
        let args = ["write", ts, "--app-id", "a", "--txn-version", "2"];
        let crashed = cli_with_env(&args, &[("DELTABUS_CRASH_AT", point)], Some("{\"id\":2}\n"));
        assert!(!crashed.status.success(), "{point}: the process must die");
        assert!(String::from_utf8_lossy(&crashed.stderr).contains(point), "{point}: died elsewhere");
        let rerun = cli_with_env(&args, &[], Some("{\"id\":2}\n"));
        let outcome = stdout_json(&rerun)["outcome"].as_str().unwrap().to_string();
        let expected = if point == "commit.before_put" { "committed" } else { "already_applied" };
        assert_eq!(outcome, expected, "{point}");
        assert_eq!(ids(&t), vec![0, 1, 2], "{point}: every row once");
        // A checkpoint that died before `_last_checkpoint` is still usable or ignored.
        let out = deltabus(&["checkpoint", ts]);
        assert!(out.status.success(), "{point}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(ids(&t), vec![0, 1, 2], "{point}: after a checkpoint");
    }
}

/// A follower killed between delivering a commit and registering its position resumes from
/// the target's txn: the target holds the source's feed exactly once.
#[test]
fn a_follower_killed_between_delivery_and_registration_delivers_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let dst = dir.path().join("dst");
    for i in 0..4 {
        let out = write_jsonl(&src, &[], &format!("{{\"id\":{i}}}\n"));
        assert!(out.status.success());
    }
    let args = ["follow", src.to_str().unwrap(), "--into", dst.to_str().unwrap(), "--follower-id", "f", "--once"];
    for n in 1..=2 {
        let crashed = cli_with_env(&args, &[("DELTABUS_CRASH_AT", &format!("follow.before_registration:{n}"))], None);
        assert!(!crashed.status.success(), "the follower must die");
    }
    let out = cli_with_env(&args, &[], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids(&dst), vec![0, 1, 2, 3], "each source row once in the target");
}

/// The same writers against the S3 emulator, through random faults (5%: 503s, lost answers,
/// slow calls, cut listings) plus a lost answer on every commit: every row once, every table
/// readable, one version per write.
#[test]
fn writers_through_a_lossy_s3_endpoint_are_exactly_once() {
    let Some(endpoint) = crate::support::emulator("DELTABUS_TEST_S3_ENDPOINT") else { return };
    let bucket = crate::s3_emulator::new_bucket(&endpoint, "lossy");
    let url = format!("s3://{bucket}/t");
    let opts = crate::s3_emulator::s3_cli_options(&endpoint);
    let run = |cmd: &[&str], v: u64, seed: u64, input: Option<&str>| {
        let faults = format!("rate=0.05,seed={seed},lose={}", commit_name(v));
        let mut args: Vec<&str> = cmd.to_vec();
        args.extend(opts.iter().map(String::as_str));
        cli_with_env(&args, &[("DELTABUS_FAULTS", &faults)], input)
    };
    let clean = |cmd: &[&str]| {
        let mut args: Vec<&str> = cmd.to_vec();
        args.extend(opts.iter().map(String::as_str));
        deltabus(&args)
    };
    let ids = || {
        let mut args = vec!["cat", url.as_str()];
        args.extend(opts.iter().map(String::as_str));
        crate::support::ids_printed(&deltabus(&args))
    };
    let version = || {
        let out = clean(&["describe", &url]);
        assert!(out.status.success(), "describe: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["version"].as_u64().unwrap()
    };
    let props = ["--property", "delta.enableDeletionVectors=true"];
    let create: Vec<&str> = ["write", url.as_str()].into_iter().chain(props).collect();
    assert_eq!(stdout_json(&run(&create, 0, 1, Some("{\"id\":0}\n")))["outcome"], "committed");
    let txn = ["write", url.as_str(), "--app-id", "a", "--txn-version", "1"];
    assert_eq!(stdout_json(&run(&txn, 1, 2, Some("{\"id\":1}\n{\"id\":2}\n")))["outcome"], "committed");
    assert_eq!(stdout_json(&run(&["write", &url], 2, 3, Some("{\"id\":3}\n")))["outcome"], "committed");
    assert_eq!(stdout_json(&run(&txn, 3, 4, Some("{\"id\":1}\n")))["outcome"], "already_applied");
    assert_eq!(version(), 2);
    assert_eq!(ids(), vec![0, 1, 2, 3]);
    let out = run(&["delete", &url, "--where", "id = 2"], 3, 5, None);
    assert!(out.status.success(), "delete: {}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["compact", &url], 4, 6, None);
    assert!(out.status.success(), "compact: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(version(), 4, "one version per write, delete and compaction");
    assert_eq!(ids(), vec![0, 1, 3]);
    let out = clean(&["vacuum", &url, "--retention-hours", "0", "--force"]);
    assert!(out.status.success(), "vacuum: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids(), vec![0, 1, 3], "vacuum deleted nothing live");
}

/// Kafka ingest into a table on the S3 emulator through 5% store faults, one worker killed with
/// -9 mid-stream and restarted: every produced id exactly once.
#[test]
fn kafka_ingest_through_a_lossy_s3_endpoint_is_exactly_once() {
    use crate::support::{start_producer_to, terminate, TOTAL};
    let Some(endpoint) = crate::support::emulator("DELTABUS_TEST_S3_ENDPOINT") else { return };
    let _guard = crate::support::native_clients_lock();
    let bucket = crate::s3_emulator::new_bucket(&endpoint, "ingest");
    let table = format!("s3://{bucket}/orders");
    let env = [
        ("AWS_ENDPOINT", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
    ];
    let cluster = rdkafka::mocking::MockCluster::new(1).unwrap();
    cluster.create_topic("orders", 4, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("workers.log");
    let spawn = |seed: u32| {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["ingest", "orders", &table, "--brokers", &brokers, "--app-id", "eo", "--create"])
            .args(["--flush-interval", "300ms", "--max-rows", "500"])
            .args(["--kafka-property", "session.timeout.ms=6000", "--kafka-property", "heartbeat.interval.ms=500"])
            .envs(env)
            .env("DELTABUS_FAULTS", format!("rate=0.05,seed={seed}"))
            .stdout(std::process::Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let ids = || -> Vec<i64> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["cat", &table])
            .envs(env)
            .output()
            .unwrap();
        if !out.status.success() {
            return Vec::new();
        }
        let mut ids: Vec<i64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_i64().unwrap())
            .collect();
        ids.sort_unstable();
        ids
    };
    let producer = start_producer_to(brokers.clone(), "orders".into(), 10);
    let mut first = spawn(1);
    // Mid-stream: once the first rows landed (waiting for them, not for a fixed time).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while ids().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no rows within 120 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    first.kill().unwrap(); // SIGKILL mid-stream
    first.wait().unwrap();
    let last = spawn(2);
    producer.join().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while (ids().len() as i64) < TOTAL {
        assert!(
            std::time::Instant::now() < deadline,
            "not all ids within 120 s:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let (status, _) = terminate(last);
    assert!(status.success(), "worker: {status}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    assert_eq!(ids(), (0..TOTAL).collect::<Vec<_>>(), "every id exactly once");
    let faults = std::fs::read_to_string(&log).unwrap_or_default().matches("store.fault_injected").count();
    eprintln!("{faults} store faults injected");
    drop(cluster);
}
