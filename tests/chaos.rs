//! The chaos soak: the whole system through a faulty store, with random kill -9.
//!
//! While a producer writes ids 0..N to a 4-partition topic (librdkafka's mock cluster, hosted by
//! this test process), two `deltabus ingest` workers with the background compactor, a loop of
//! `deltabus delete` on ranges of ids, `deltabus follow` into a replica table and `deltabus tail
//! --to-topic` into a Kafka topic all run with `DELTABUS_FAULTS` (503s, lost answers — also of
//! commit PUTs —, slow calls and cut listings at ~5% of store calls). Every few seconds one of
//! the processes is killed with -9 and restarted. At the end:
//!
//! - the ingest commits of the change feed insert every produced id exactly once; over the
//!   whole feed each id's inserts minus deletes is 1 or 0, and the table holds exactly the ids
//!   at 1;
//! - the replica holds the source's feed exactly (rows, change types, versions);
//! - a read_committed consumer of the feed topic sees exactly the feed, except rows seen again
//!   after a kill of `tail`: librdkafka's mock cluster writes no abort markers and keeps no last
//!   stable offset (its Fetch answers list no aborted transactions), so the records a killed
//!   transaction had sent, all of the version or part of it, stay visible to read_committed
//!   readers and the restarted follower delivers the whole version again. A real broker aborts
//!   them when the restart fences the producer. Any other difference (a row missing, a row not
//!   in the feed, repeats without a kill of `tail`) fails the test
//!   (`support::kafka::assert_once_but_repeats_after_kills`);
//! - every file the log references exists (`cat` reads them all), and VACUUM with zero
//!   retention afterwards deletes nothing live.
//!
//! Figures (faults injected, kills, rows checked) are printed. `DELTABUS_CHAOS_RECORDS` and
//! `DELTABUS_CHAOS_SECONDS` scale the run (BENCHMARKS.md has the long soak).

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};
use serde_json::Value;

use crate::support::{deltabus, Rng};

const FEED_PARTITIONS: i32 = 12;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One long-running process of the soak, restarted after each kill.
struct Role {
    name: &'static str,
    args: Vec<String>,
    child: Option<Child>,
    seed: u64,
    log: std::path::PathBuf,
    kills: u32,
}

impl Role {
    fn start(&mut self) {
        self.seed += 1;
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(&self.args)
            .env("DELTABUS_FAULTS", format!("rate=0.05,seed={}", self.seed))
            .env("DELTABUS_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            self.kills += 1;
        }
    }

    /// SIGTERM and wait; the exit must be clean.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            Command::new("kill").arg("-TERM").arg(c.id().to_string()).status().unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Some(status) = c.try_wait().unwrap() {
                    assert!(status.success(), "{} exited with {status}; log:\n{}", self.name, tail_of(&self.log));
                    return;
                }
                assert!(Instant::now() < deadline, "{} did not stop within 60 s", self.name);
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Fails the soak if the process died by itself (an error under faults).
    fn check_alive(&mut self) {
        if let Some(c) = self.child.as_mut() {
            if let Some(status) = c.try_wait().unwrap() {
                panic!("{} died by itself ({status}); log:\n{}", self.name, tail_of(&self.log));
            }
        }
    }
}

fn tail_of(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn start_producer(brokers: String, total: i64, seconds: u64) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let producer: FutureProducer =
                ClientConfig::new().set("bootstrap.servers", &brokers).set("linger.ms", "5").create().unwrap();
            let bursts = (seconds * 10) as i64;
            for b in 0..bursts {
                let (from, to) = (b * total / bursts, (b + 1) * total / bursts);
                let pending: Vec<_> = (from..to)
                    .map(|id| {
                        let payload = format!(r#"{{"id":{id},"v":"{}"}}"#, "x".repeat((id % 40) as usize));
                        let key = (id % 97).to_string();
                        producer.send_result(FutureRecord::to("orders").key(&key).payload(&payload)).unwrap()
                    })
                    .collect();
                for d in futures::future::join_all(pending).await {
                    d.unwrap().unwrap();
                }
                // A pause about time: the records are spread over the soak.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    })
}

/// The source's change feed (read without faults).
fn feed(table: &str) -> Vec<Value> {
    let out = deltabus(&["changes", table, "--from", "0"]);
    assert!(out.status.success(), "changes: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn canonical(rows: &[Value], version: &str) -> BTreeMap<String, u32> {
    let mut m = BTreeMap::new();
    for r in rows {
        let k = format!("{}|{}|{}|{}", r["id"], r["v"], r["_change_type"], r[version]);
        *m.entry(k).or_default() += 1;
    }
    m
}

#[test]
fn chaos_soak_keeps_every_row_exactly_once() {
    let _guard = crate::support::native_clients_lock();
    let total = env_or("DELTABUS_CHAOS_RECORDS", 8_000) as i64;
    let seconds = env_or("DELTABUS_CHAOS_SECONDS", 20);
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    eprintln!("chaos seed {seed}: {total} records over {seconds} s");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let replica = dir.path().join("replica").to_string_lossy().into_owned();
    let log = dir.path().join("processes.log");
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("orders", 4, 1).unwrap();
    // The mock cluster keeps about 5 MiB per partition: enough partitions for the long soak.
    cluster.create_topic("feed", FEED_PARTITIONS, 1).unwrap();
    cluster.create_topic("deltabus-progress", 1, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let worker = |name| Role {
        name,
        args: s(&["ingest", "orders", &table, "--brokers", &brokers, "--app-id", "chaos", "--create"])
            .into_iter()
            .chain(s(&["--flush-interval", "400ms", "--max-rows", "600", "--auto-compact"]))
            .chain(s(&["--kafka-property", "session.timeout.ms=6000", "--kafka-property", "heartbeat.interval.ms=500"]))
            .collect(),
        child: None,
        seed: seed % 1000 * 100 + if name == "worker-a" { 0 } else { 50 },
        log: log.clone(),
        kills: 0,
    };
    let mut roles = vec![worker("worker-a"), worker("worker-b")];
    let producer = start_producer(brokers.clone(), total, seconds);
    for r in &mut roles {
        r.start();
    }
    // The followers start once the table exists.
    let started = Instant::now();
    while ids_count(&table) == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "no first commit: {}", tail_of(&log));
        std::thread::sleep(Duration::from_millis(200));
    }
    let follow_args =
        s(&["follow", &table, "--into", &replica, "--follower-id", "replica", "--poll-interval", "100ms"]);
    let tail_args = s(&[
        "tail",
        &table,
        "--from",
        "0",
        "--poll-interval",
        "100ms",
        "--to-topic",
        "feed",
        "--brokers",
        &brokers,
        "--follower-id",
        "feed",
    ]);
    roles.push(Role {
        name: "follow",
        args: follow_args.clone(),
        child: None,
        seed: seed % 1000 * 100 + 70,
        log: log.clone(),
        kills: 0,
    });
    roles.push(Role {
        name: "tail",
        args: tail_args.clone(),
        child: None,
        seed: seed % 1000 * 100 + 80,
        log: log.clone(),
        kills: 0,
    });
    roles[2].start();
    roles[3].start();
    let (mut kills, mut deletes, mut delete_failures) = (0u32, 0u32, 0u32);
    let soak_end = Instant::now() + Duration::from_secs(seconds + 4);
    while Instant::now() < soak_end {
        // A pause about time: faults come at random moments of the soak.
        std::thread::sleep(Duration::from_millis(1000 + rng.next() % 1500));
        for r in &mut roles {
            r.check_alive();
        }
        match rng.next() % 3 {
            // Kill -9 one of the processes and restart it.
            0 | 1 => {
                let i = (rng.next() % roles.len() as u64) as usize;
                roles[i].kill();
                kills += 1;
                roles[i].start();
            }
            // Delete a range of ids produced a while ago, through the faulty store.
            _ => {
                let produced = (started.elapsed().as_secs() as i64 * total / seconds as i64).min(total);
                if produced > 500 {
                    let from = (rng.next() % (produced as u64 - 400)) as i64;
                    let predicate = format!("id >= {from} AND id < {}", from + 25);
                    let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
                        .args(["delete", &table, "--where", &predicate])
                        .env("DELTABUS_FAULTS", format!("rate=0.05,seed={}", rng.next() % 10_000))
                        .output()
                        .unwrap();
                    if out.status.success() {
                        deletes += 1;
                    } else {
                        // A conflict with compaction or an unknown outcome: allowed, reported.
                        delete_failures += 1;
                        let err = String::from_utf8_lossy(&out.stderr);
                        assert!(err.contains("error: ") && !err.contains("panicked"), "delete: {err}");
                    }
                }
            }
        }
    }
    producer.join().unwrap();
    // Let the workers ingest everything (the feed's inserts reach every id), then stop them.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        for r in &mut roles[..2] {
            r.check_alive();
        }
        let ops = operations(&table);
        let inserted: BTreeSet<i64> = feed(&table)
            .iter()
            .filter(|r| {
                r["_change_type"] == "insert"
                    && ops.get(&r["_commit_version"].as_u64().unwrap()).is_some_and(|o| o == "STREAMING UPDATE")
            })
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        if inserted.len() as i64 >= total {
            break;
        }
        assert!(Instant::now() < deadline, "only {} of {total} ids ingested; log:\n{}", inserted.len(), tail_of(&log));
        std::thread::sleep(Duration::from_millis(1000));
    }
    for r in &mut roles[..2] {
        r.stop();
    }
    for r in &mut roles[2..] {
        r.kill();
    }
    // The followers catch up (one more pass, still through faults) and stop.
    for args in [&follow_args, &tail_args] {
        let mut a = args.clone();
        a.push("--once".into());
        let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(&a)
            .env("DELTABUS_FAULTS", format!("rate=0.05,seed={}", seed % 777))
            .output()
            .unwrap();
        assert!(out.status.success(), "{a:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    // 1. Every id inserted exactly once by the ingest commits; over the whole feed (deletes
    //    on this table rewrite files, so a delete re-inserts a file's other rows) each id's
    //    inserts minus deletes is 1 (live) or 0 (deleted).
    let source_feed = feed(&table);
    let ops = operations(&table);
    let mut ingested: BTreeMap<i64, u32> = BTreeMap::new();
    let mut net: BTreeMap<i64, i64> = BTreeMap::new();
    for r in &source_feed {
        let id = r["id"].as_i64().unwrap();
        let version = r["_commit_version"].as_u64().unwrap();
        match r["_change_type"].as_str().unwrap() {
            "insert" => {
                *net.entry(id).or_default() += 1;
                if ops[&version] == "STREAMING UPDATE" {
                    *ingested.entry(id).or_default() += 1;
                }
            }
            "delete" => *net.entry(id).or_default() -= 1,
            other => panic!("unexpected change type {other}"),
        }
    }
    let twice: Vec<(&i64, &u32)> = ingested.iter().filter(|(_, n)| **n != 1).take(10).collect();
    assert!(twice.is_empty(), "ids ingested more than once: {twice:?}");
    assert!(ingested.keys().copied().eq(0..total), "every produced id ingested, nothing else");
    let odd: Vec<(&i64, &i64)> = net.iter().filter(|(_, n)| !(0..=1).contains(*n)).take(10).collect();
    assert!(odd.is_empty(), "inserts minus deletes outside 0..=1: {odd:?}");
    let deleted = net.values().filter(|n| **n == 0).count();
    // 2. The table is what the feed adds up to.
    let expected: Vec<i64> = net.iter().filter(|(_, n)| **n == 1).map(|(id, _)| *id).collect();
    assert_eq!(crate::support::ids(&table), expected, "table = the feed's net rows");
    // 3. The replica holds the feed exactly.
    let out = deltabus(&["cat", &replica]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let replica_rows: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_same("replica", &canonical(&replica_rows, "_commit_version"), &canonical(&source_feed, "_commit_version"));
    // 4. The feed topic holds the feed exactly.
    let topic_rows: Vec<Value> = crate::support::kafka::read_committed(&brokers, "feed", FEED_PARTITIONS as usize)
        .into_iter()
        .map(|(_, payload)| serde_json::from_str(&payload).unwrap())
        .collect();
    let tail_kills = roles.iter().find(|r| r.name == "tail").map_or(0, |r| r.kills);
    let rows = |rows: &[Value]| -> Vec<(u64, String)> {
        rows.iter()
            .map(|r| (r["_commit_version"].as_u64().unwrap(), format!("{}|{}|{}", r["id"], r["v"], r["_change_type"])))
            .collect()
    };
    let redelivered = crate::support::kafka::assert_once_but_repeats_after_kills(
        &rows(&topic_rows),
        &rows(&source_feed),
        |(version, _)| *version,
        tail_kills > 0,
    );
    // 5. VACUUM with zero retention deletes nothing live.
    let out = deltabus(&["vacuum", &table, "--retention-hours", "0", "--force"]);
    assert!(out.status.success(), "vacuum: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(crate::support::ids(&table), expected, "after vacuum");
    let faults = injected_faults(&log);
    println!(
        "chaos soak: {total} ids, {kills} kills, {deletes} deletes ({delete_failures} refused under faults), {} rows deleted, {} feed rows checked in the table, replica and topic ({redelivered} versions seen again on the topic after {tail_kills} kills of tail); {faults}",
        deleted,
        source_feed.len()
    );
    drop(cluster);
}

/// Fails with the first differences (by version) when `got` is not exactly `feed`.
fn assert_same(what: &str, got: &BTreeMap<String, u32>, feed: &BTreeMap<String, u32>) {
    if got == feed {
        return;
    }
    let extra: Vec<_> = got.iter().filter(|(k, n)| feed.get(*k) != Some(n)).take(8).collect();
    let missing: Vec<_> = feed.iter().filter(|(k, n)| got.get(*k) != Some(n)).take(8).collect();
    let count = |m: &BTreeMap<String, u32>| m.values().map(|n| *n as u64).sum::<u64>();
    let versions = |m: &BTreeMap<String, u32>| -> BTreeMap<u64, u64> {
        let mut v = BTreeMap::new();
        for (k, n) in m {
            *v.entry(k.rsplit('|').next().and_then(|x| x.parse().ok()).unwrap_or(u64::MAX)).or_default() += *n as u64;
        }
        v
    };
    let (gv, fv) = (versions(got), versions(feed));
    let differing: Vec<(u64, u64, u64)> = fv
        .iter()
        .map(|(v, n)| (*v, gv.get(v).copied().unwrap_or(0), *n))
        .chain(gv.iter().filter(|(v, _)| !fv.contains_key(v)).map(|(v, n)| (*v, *n, 0)))
        .filter(|(_, g, f)| g != f)
        .collect();
    panic!(
        "{what} differs from the feed ({} rows vs {}): versions (version, rows in {what}, rows in feed): {differing:?}; more or different in {what}: {extra:?}; missing or different: {missing:?}",
        count(got),
        count(feed)
    );
}

/// The operation of every commit, from `commitInfo`.
fn operations(table: &str) -> BTreeMap<u64, String> {
    let mut ops = BTreeMap::new();
    for e in std::fs::read_dir(std::path::Path::new(table).join("_delta_log")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let Some(v) = name.strip_suffix(".json").and_then(|v| v.parse::<u64>().ok()) else { continue };
        let text = std::fs::read_to_string(std::path::Path::new(table).join("_delta_log").join(&name)).unwrap();
        let op = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|a| a["commitInfo"]["operation"].as_str().map(str::to_string))
            .unwrap_or_default();
        ops.insert(v, op);
    }
    ops
}

fn ids_count(table: &str) -> usize {
    let out = deltabus(&["describe", table]);
    if !out.status.success() {
        return 0;
    }
    serde_json::from_slice::<Value>(&out.stdout).map(|v| v["numFiles"].as_u64().unwrap_or(0) as usize).unwrap_or(0)
}

/// Counts the faults the processes logged (one WARN line each, kept even under kill -9).
fn injected_faults(log: &std::path::Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("store.fault_injected")).collect();
    let count = |what: &str| lines.iter().filter(|l| l.contains(what)).count();
    let commit_answers = lines
        .iter()
        .filter(|l| {
            l.contains("_delta_log/")
                && l.contains(".json")
                && (l.contains("timed out") || l.contains("retry found it"))
        })
        .count();
    format!(
        "{} faults: {} unavailable, {} lost answers ({} of them on commit or log PUT/GETs), {} cut listings",
        lines.len(),
        count("503"),
        count("timed out") + count("retry found it"),
        commit_answers,
        count("cut short")
    )
}
