//! The change feed: every CDF table of the corpus matches the reference's change feed; for the
//! other tables, each commit's inserts minus deletes equal the difference of the two
//! snapshots' rows; `tail` follows live commits, skips compaction-like commits, and resumes
//! from its state file.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::write_ok;
use crate::support::{conformance_dir, deltabus};

fn lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A row without change columns, in a canonical text form.
fn key(v: &Value) -> String {
    let mut v = v.clone();
    if let Value::Object(m) = &mut v {
        m.remove("_change_type");
        m.remove("_commit_version");
        m.remove("_commit_timestamp");
    }
    v.to_string()
}

fn multiset(rows: &[Value]) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(key(r)).or_insert(0) += 1;
    }
    m
}

#[test]
fn cdf_tables_match_the_reference_feed() {
    let dir = conformance_dir();
    let mut checked = 0;
    for entry in std::fs::read_dir(dir.join("expected")).unwrap().flatten() {
        let expected = entry.path().join("changes.jsonl");
        if !expected.exists() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let out = deltabus(&["changes", dir.join("tables").join(&name).to_str().unwrap(), "--from", "0"]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let want = std::fs::read(&expected).unwrap();
        let cmp = crate::compare::rows(&want, &out.stdout, &["_commit_timestamp"]);
        println!("changes {name}: {}", cmp.as_ref().unwrap_or_else(|e| e));
        assert!(cmp.is_ok(), "{name}: {}", cmp.unwrap_err());
        checked += 1;
    }
    assert!(checked >= 3, "expected the corpus's CDF tables, found {checked}");
}

#[test]
fn feed_equals_snapshot_differences_on_the_corpus() {
    let dir = conformance_dir();
    let (mut tables, mut pairs) = (0, 0);
    for entry in std::fs::read_dir(dir.join("expected")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta: Value = serde_json::from_slice(&std::fs::read(entry.path().join("meta.json")).unwrap()).unwrap();
        let Some(versions) = meta["versions"].as_object() else { continue };
        let ok = |v: u64| versions.get(&v.to_string()).and_then(Value::as_str) == Some("ok");
        let table = dir.join("tables").join(&name);
        let t = table.to_str().unwrap();
        let mut counted = false;
        for v in 1..=meta["latest"].as_u64().unwrap_or(0) {
            if !ok(v) || !ok(v - 1) {
                continue;
            }
            // Across a schema change rows are printed with different columns: that commit is a
            // schema event, not row changes.
            let schema = |v: u64| {
                let d: Value =
                    serde_json::from_slice(&deltabus(&["describe", t, "--version", &v.to_string()]).stdout).unwrap();
                d["schema"].clone()
            };
            if schema(v) != schema(v - 1) {
                continue;
            }
            let before = deltabus(&["cat", t, "--version", &(v - 1).to_string()]);
            let after = deltabus(&["cat", t, "--version", &v.to_string()]);
            let feed = deltabus(&["changes", t, "--from", &v.to_string(), "--to", &v.to_string()]);
            if !feed.status.success() {
                // The commit file may be gone (the snapshot came from a checkpoint).
                let err = String::from_utf8_lossy(&feed.stderr);
                assert!(err.contains("missing"), "{name} v{v}: {err}");
                continue;
            }
            let mut state = multiset(&lines(&before.stdout));
            for change in lines(&feed.stdout) {
                let delta = match change["_change_type"].as_str().unwrap() {
                    "insert" | "update_postimage" => 1,
                    "delete" | "update_preimage" => -1,
                    other => panic!("{name}: change type {other}"),
                };
                *state.entry(key(&change)).or_insert(0) += delta;
            }
            state.retain(|_, n| *n != 0);
            assert_eq!(state, multiset(&lines(&after.stdout)), "{name}: v{} + changes of v{v} != v{v}", v - 1);
            pairs += 1;
            counted = true;
        }
        tables += usize::from(counted);
    }
    println!("snapshot differences: {pairs} version pairs over {tables} tables");
    assert!(pairs >= 30, "too few version pairs checked: {pairs}");
}
#[test]
fn tail_follows_new_commits_and_resumes_from_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let state = dir.path().join("tail.state");
    write_ok(&table, &[], "{\"n\":0}\n");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let spawn_tail = || {
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args([
                "tail",
                table.to_str().unwrap(),
                "--from",
                "0",
                "--poll-interval",
                "20ms",
                "--state-file",
                state.to_str().unwrap(),
                "--metrics-addr",
                &addr,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut tail = spawn_tail();
    let mut reader = BufReader::new(tail.stdout.take().unwrap());
    let read_rows = |reader: &mut BufReader<std::process::ChildStdout>, n: usize| {
        (0..n)
            .map(|_| {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                serde_json::from_str::<Value>(&line).unwrap()
            })
            .collect::<Vec<_>>()
    };
    let first = read_rows(&mut reader, 1);
    assert_eq!(first[0]["n"], 0);
    assert_eq!(first[0]["_commit_version"], 0);
    write_ok(&table, &[], "{\"n\":1}\n{\"n\":2}\n");
    let second = read_rows(&mut reader, 2);
    assert!(second.iter().all(|r| r["_commit_version"] == 1 && r["_change_type"] == "insert"));
    // The follower's position and lag on its metrics endpoint.
    let mut metrics = String::new();
    for _ in 0..100 {
        use std::io::Read as _;
        if let Ok(mut c) = std::net::TcpStream::connect(&addr) {
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            metrics.clear();
            let _ = c.read_to_string(&mut metrics);
            if metrics.contains("deltabus_source_version{pipeline=\"tail\"} 1") {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(metrics.contains("deltabus_source_version{pipeline=\"tail\"} 1"), "{metrics}");
    assert!(metrics.contains("deltabus_source_lag_versions{pipeline=\"tail\"} 0"), "{metrics}");
    // The state is recorded right after the rows are flushed; then stop with kill -9.
    let recorded = |v: i64| {
        std::fs::read(&state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|s| s["version"] == v)
    };
    for _ in 0..500 {
        if recorded(1) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    tail.kill().unwrap();
    tail.wait().unwrap();
    let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(saved["version"], 1);
    // While it is down, two more commits land; on restart exactly those are emitted.
    write_ok(&table, &[], "{\"n\":3}\n");
    write_ok(&table, &[], "{\"n\":4}\n");
    let mut tail = spawn_tail();
    let mut reader = BufReader::new(tail.stdout.take().unwrap());
    let resumed = read_rows(&mut reader, 2);
    tail.kill().unwrap();
    tail.wait().unwrap();
    let versions: Vec<i64> = resumed.iter().map(|r| r["_commit_version"].as_i64().unwrap()).collect();
    assert_eq!(versions, vec![2, 3], "no repeat of version 1, no gap");
}

#[test]
fn a_vacuumed_commit_is_an_error_not_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for n in 0..3 {
        write_ok(&table, &[], &format!("{{\"n\":{n}}}\n"));
    }
    std::fs::remove_file(table.join("_delta_log/00000000000000000001.json")).unwrap();
    let t = table.to_str().unwrap();
    let out = deltabus(&["changes", t, "--from", "1"]);
    crate::support::assert_clean_failure(&out, "missing commit");
    let out = deltabus(&["tail", t, "--from", "0", "--once"]);
    crate::support::assert_clean_failure(&out, "tail over a missing commit");
    assert!(String::from_utf8_lossy(&out.stderr).contains("commit 2 exists but 1 does not"));
}

#[test]
fn gaps_are_skipped_only_when_asked_and_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for n in 0..13 {
        write_ok(&table, &[], &format!("{{\"n\":{n}}}\n"));
    }
    assert!(table.join("_delta_log/00000000000000000010.checkpoint.parquet").exists());
    std::fs::remove_file(table.join("_delta_log/00000000000000000004.json")).unwrap();
    let t = table.to_str().unwrap();
    let out = deltabus(&["tail", t, "--from", "0", "--once", "--skip-gaps"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Version 4's state cannot be replayed: the follower resumes after the checkpoint at 10.
    let versions: Vec<i64> = lines(&out.stdout).iter().map(|r| r["_commit_version"].as_i64().unwrap()).collect();
    assert_eq!(versions, vec![0, 1, 2, 3, 11, 12]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("versions 4..10 are skipped"), "the skip is reported");
}

/// A source table that a thread fills with 59 more commits of 50 rows (each ~250 bytes).
fn start_source_writer(table: &std::path::Path) -> std::thread::JoinHandle<()> {
    write_ok(table, &[], "{\"n\":0,\"pad\":\"\"}\n");
    let table = table.to_path_buf();
    std::thread::spawn(move || {
        for n in 1..60 {
            let rows: String =
                (0..50).map(|i| format!("{{\"n\":{},\"pad\":\"{}\"}}\n", n * 100 + i, "x".repeat(200))).collect();
            write_ok(&table, &[], &rows);
        }
    })
}

/// Runs `deltabus <args>` and kills it with -9 after a varying pause, again and again, until
/// `writer` is done; then once more with `--once` to catch up. Returns the number of kills.
fn kill_repeatedly_then_catch_up(args: &[&str], writer: std::thread::JoinHandle<()>) -> u64 {
    let mut kills = 0;
    while !writer.is_finished() {
        let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus")).args(args).stderr(Stdio::null()).spawn().unwrap();
        // A pause about time: the kill's moment is what the test varies.
        std::thread::sleep(std::time::Duration::from_millis(50 + (kills * 37) % 120));
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
    }
    writer.join().unwrap();
    let last = deltabus(&[args, &["--once"]].concat());
    assert!(last.status.success(), "{}", String::from_utf8_lossy(&last.stderr));
    assert!(kills >= 3, "the follower was killed mid-stream");
    kills
}

#[test]
fn tail_into_a_file_is_exact_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let (state, output) = (dir.path().join("tail.state"), dir.path().join("changes.jsonl"));
    let writer = start_source_writer(&table);
    let t = table.to_str().unwrap();
    let (state, output) = (state.to_str().unwrap(), output.to_str().unwrap());
    let args = ["tail", t, "--from", "0", "--poll-interval", "5ms", "--state-file", state, "--output", output];
    let kills = kill_repeatedly_then_catch_up(&args, writer);
    let written = std::fs::read(output).unwrap();
    let feed = deltabus(&["changes", t, "--from", "0"]);
    println!("{kills} kills, {} lines", lines(&written).len());
    assert_eq!(canonical_rows(&written), canonical_rows(&feed.stdout), "no repeat, no gap, no torn line");
}

#[test]
fn tail_into_kafka_is_exact_across_kill_9() {
    let _guard = crate::support::native_clients_lock();
    let cluster = rdkafka::mocking::MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("changes", 3, 1).expect("topic");
    cluster.create_topic("deltabus-progress", 1, 1).expect("progress topic");
    tail_into_kafka_across_kill_9(&cluster.bootstrap_servers(), "changes", "deltabus-progress");
}

/// The same against Apache Kafka, whose transaction coordinator aborts what a killed
/// follower left open when the next one fences it: a read_committed consumer sees every change
/// once, with no repeat.
#[test]
fn tail_into_apache_kafka_is_exact_across_kill_9() {
    let Some(brokers) = crate::support::emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let _guard = crate::support::native_clients_lock();
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (topic, progress) = (format!("changes-{run}"), format!("progress-{run}"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
        let admin: AdminClient<_> =
            rdkafka::config::ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
        let changes = NewTopic::new(&topic, 3, TopicReplication::Fixed(1));
        let compacted = NewTopic::new(&progress, 1, TopicReplication::Fixed(1)).set("cleanup.policy", "compact");
        let r = admin.create_topics([&changes, &compacted], &AdminOptions::new()).await.expect("create topics");
        assert!(r.iter().all(Result::is_ok), "{r:?}");
    });
    tail_into_kafka_across_kill_9(&brokers, &topic, &progress);
}

/// `deltabus tail` into `topic` of `brokers` (3 partitions), killed with -9 again and again
/// while a writer commits, then caught up: what a read_committed consumer reads is the feed,
/// each change once.
fn tail_into_kafka_across_kill_9(brokers: &str, topic: &str, progress: &str) {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let writer = start_source_writer(&table);
    let t = table.to_str().unwrap();
    let args = ["tail", t, "--from", "0", "--poll-interval", "5ms", "--to-topic", topic, "--brokers", brokers];
    let args = [&args[..], &["--follower-id", "feed", "--key-columns", "n", "--progress-topic", progress]].concat();
    let kills = kill_repeatedly_then_catch_up(&args, writer);
    // Everything a read_committed consumer sees on the topic.
    let mut got = Vec::new();
    for (key, payload) in crate::support::kafka::read_committed(brokers, topic, 3) {
        let row: Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(key, Some(row["n"].to_string()));
        got.extend_from_slice(payload.as_bytes());
        got.push(b'\n');
    }
    let feed = deltabus(&["changes", t, "--from", "0"]);
    println!("{kills} kills, {} records", lines(&got).len());
    assert_eq!(canonical_rows(&got), canonical_rows(&feed.stdout), "no repeat, no gap");
}

fn canonical_rows(out: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(out)
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).unwrap();
            r.as_object_mut().unwrap().remove("_commit_timestamp");
            r.to_string()
        })
        .collect();
    v.sort();
    v
}

#[test]
fn follower_replicates_the_feed_exactly_once_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let target = dir.path().join("target");
    let (s, t) = (source.to_str().unwrap(), target.to_str().unwrap());
    for n in 0..30 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["write", s, "--property", "delta.enableDeletionVectors=true"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let input: String = (0..20).map(|i| format!("{{\"id\":{},\"n\":{n}}}\n", n * 20 + i)).collect();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
    }
    assert!(deltabus(&["delete", s, "--where", "id < 15"]).status.success());
    assert!(deltabus(&["compact", s]).status.success());
    // A follower killed with -9 part-way, then resumed.
    let mut follower = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["follow", s, "--into", t, "--follower-id", "replica", "--poll-interval", "10ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it has delivered something (waiting for that, not for a fixed time).
    let delivered = || {
        serde_json::from_slice::<Value>(&deltabus(&["describe", t]).stdout)
            .is_ok_and(|d| d["txns"].as_object().is_some_and(|m| !m.is_empty()))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !delivered() {
        assert!(std::time::Instant::now() < deadline, "the follower delivered nothing within 120 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    follower.kill().unwrap();
    follower.wait().unwrap();
    let partial: Value = serde_json::from_slice(&deltabus(&["describe", t]).stdout).unwrap_or(Value::Null);
    println!("follower killed at target txns {}", partial["txns"]);
    let resumed = deltabus(&["follow", s, "--into", t, "--follower-id", "replica", "--once"]);
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let report: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(report["position"], 31, "caught up past the compaction (which has no rows): {report}");
    let feed = deltabus(&["changes", s, "--from", "0"]);
    let replica = deltabus(&["cat", t]);
    assert_eq!(canonical_rows(&replica.stdout), canonical_rows(&feed.stdout), "no repeat, no gap");
    // Idempotent: nothing new, nothing written.
    let again: Value =
        serde_json::from_slice(&deltabus(&["follow", s, "--into", t, "--follower-id", "replica", "--once"]).stdout)
            .unwrap();
    assert_eq!(again["targetCommits"], 0);
    // A second follower id keeps its own position in the same target.
    let other: Value = serde_json::from_slice(
        &deltabus(&["follow", s, "--into", t, "--follower-id", "audit", "--from", "29", "--once"]).stdout,
    )
    .unwrap();
    assert_eq!(other["targetCommits"], 2, "{other}");
}

#[test]
fn row_filters_select_changes() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for k in 0..10 {
        let input: String = (k * 10..k * 10 + 10).map(|id| format!("{{\"id\":{id},\"p\":\"b{}\"}}\n", k % 2)).collect();
        let out = crate::support::write_jsonl(
            &table,
            &["--partition-by", "p", "--property", "delta.enableDeletionVectors=true"],
            &input,
        );
        assert!(out.status.success());
    }
    let t = table.to_str().unwrap();
    assert!(deltabus(&["delete", t, "--where", "id IN (52, 77)"]).status.success());
    let out = deltabus(&["changes", t, "--where", "id >= 50 AND id < 55 OR p = 'b1' AND id = 77"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut got: Vec<(i64, String)> = lines(&out.stdout)
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["_change_type"].as_str().unwrap().to_string()))
        .collect();
    got.sort();
    let mut expected: Vec<(i64, String)> = (50..55).map(|i| (i, "insert".to_string())).collect();
    expected.extend([(52, "delete".to_string()), (77, "insert".to_string()), (77, "delete".to_string())]);
    expected.sort();
    assert_eq!(got, expected);
    crate::support::assert_clean_failure(&deltabus(&["changes", t, "--where", "id >"]), "bad filter");
}

#[test]
fn follower_options_shape_and_batch_the_feed() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    for n in 0..6 {
        let out = crate::support::write_jsonl(
            &table,
            &["--property", "delta.enableDeletionVectors=true"],
            &format!("{{\"id\":{n}}}\n{{\"id\":{}}}\n", n + 100),
        );
        assert!(out.status.success());
    }
    assert!(deltabus(&["delete", t, "--where", "id >= 104"]).status.success()); // version 6
    let tail = |extra: &[&str]| -> Vec<(i64, i64, String)> {
        let out = deltabus(&[&["tail", t, "--once"][..], extra].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut rows: Vec<(i64, i64, String)> = lines(&out.stdout)
            .iter()
            .map(|r| {
                (
                    r["_commit_version"].as_i64().unwrap(),
                    r["id"].as_i64().unwrap(),
                    r["_change_type"].as_str().unwrap().into(),
                )
            })
            .collect();
        rows.sort();
        rows
    };
    let all = tail(&["--from", "0"]);
    assert_eq!(all.len(), 14, "12 inserts and 2 deletes: {all:?}");
    // A start time: the first commit at or after version 3's timestamp.
    let history: Vec<Value> = lines(&deltabus(&["history", t]).stdout);
    let v3 = history.iter().find(|c| c["version"] == 3).unwrap();
    let ts = v3["timestamp"].as_i64().unwrap();
    let from_time = tail(&["--from", &format!("timestamp:{ts}")]);
    assert_eq!(from_time.first().map(|r| r.0), Some(3), "{from_time:?}");
    assert_eq!(from_time.len(), 8);
    let rfc3339 = chrono::DateTime::from_timestamp_millis(ts).unwrap().to_rfc3339();
    assert_eq!(tail(&["--from", &format!("timestamp:{rfc3339}")]), from_time);
    crate::support::assert_clean_failure(&deltabus(&["tail", t, "--from", "timestamp:soon"]), "bad time");
    // ignore_deletes drops the two delete rows; skip_change_commits drops the delete commit.
    let no_deletes = tail(&["--from", "0", "--ignore-deletes"]);
    assert_eq!(no_deletes.len(), 12);
    assert!(no_deletes.iter().all(|r| r.2 == "insert"));
    assert_eq!(tail(&["--from", "0", "--skip-change-commits"]), no_deletes);
    // Batching: the replica gets the same rows in fewer commits.
    let replica = dir.path().join("replica");
    let r = replica.to_str().unwrap();
    let report: Value = serde_json::from_slice(
        &deltabus(&["follow", t, "--into", r, "--follower-id", "b", "--once", "--max-files-per-batch", "4"]).stdout,
    )
    .unwrap();
    assert_eq!(report["position"], 6, "{report}");
    let target_commits = report["targetCommits"].as_u64().unwrap();
    assert!((2..7).contains(&target_commits), "7 source commits merged into fewer: {report}");
    let feed = deltabus(&["changes", t, "--from", "0"]);
    assert_eq!(canonical_rows(&deltabus(&["cat", r]).stdout), canonical_rows(&feed.stdout));
}

/// Staleness is judged on the one clock: a follower whose next commit is older than the
/// table's `delta.deletedFileRetentionDuration` refuses to go on (another engine's VACUUM may
/// have removed what it needs) unless told to; no sleeping, no edited timestamps.
#[tokio::test(flavor = "multi_thread")]
async fn a_follower_beyond_the_retention_is_refused_by_the_clock() {
    use deltabus::common::clock::Clock;
    use deltabus::common::follow::{FollowerOptions, StartAt};
    use deltabus::delta::actions::Action;
    use deltabus::delta::create::{infer_schema, new_table};
    use deltabus::delta::transaction::{Operation, Transaction};
    use deltabus::feed::follow::run_follower;
    use deltabus::feed::sink::lines::LinesSink;
    use deltabus::storage::{RetryPolicy, StorageOptions, Table};

    // Commit times are the store's modification times (real time): the clock starts at now.
    let clock = Clock::manual(chrono::Utc::now().timestamp_millis());
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    let table = Table::open(&url, StorageOptions { clock: clock.clone(), ..StorageOptions::default() }).unwrap();
    let (p, m) = new_table(infer_schema(&[r#"{"id":1}"#]).unwrap(), &[], &Default::default()).unwrap();
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    table.commit(None, &create, &RetryPolicy::default()).await.unwrap();
    let follow = |allow_stale: bool| {
        let table = table.clone();
        async move {
            let mut out = Vec::new();
            let mut sink = LinesSink::stream(&mut out, table.url(), None);
            let mut opts = FollowerOptions::new(StartAt::Version(0));
            opts.once = true;
            opts.allow_stale = allow_stale;
            run_follower(&table, &mut sink, &opts, None, std::future::pending()).await.map(|r| r.source_commits)
        }
    };
    assert_eq!(follow(false).await.unwrap(), 1, "fresh: followed");
    // Eight days later (the default retention is one week).
    clock.advance(8 * 24 * 3600 * 1000);
    let err = follow(false).await.unwrap_err().to_string();
    assert!(err.contains("deletedFileRetentionDuration"), "{err}");
    assert_eq!(follow(true).await.unwrap(), 1, "--allow-stale follows anyway");
}

/// A follower into a table skips commits without rows (compaction, say); when nothing but those
/// arrive for long, it still saves its position, so a restart after the retention passed is
/// not refused as stale.
#[tokio::test(flavor = "multi_thread")]
async fn a_follower_seeing_only_commits_without_rows_keeps_its_position_fresh() {
    use deltabus::common::clock::Clock;
    use deltabus::common::follow::{FollowerOptions, StartAt};
    use deltabus::delta::actions::{Action, Txn};
    use deltabus::delta::create::{infer_schema, new_table};
    use deltabus::delta::transaction::{Operation, Transaction};
    use deltabus::feed::follow::run_follower;
    use deltabus::feed::sink::table::TableSink;
    use deltabus::storage::{RetryPolicy, StorageOptions, Table};

    let clock = Clock::manual(chrono::Utc::now().timestamp_millis());
    let root = uuid::Uuid::new_v4().simple().to_string();
    let options = StorageOptions { clock: clock.clone(), ..StorageOptions::default() };
    let source = Table::open(&format!("memory://{root}/source"), options.clone()).unwrap();
    let target = Table::open(&format!("memory://{root}/target"), options).unwrap();
    let (p, m) = new_table(infer_schema(&[r#"{"id":1}"#]).unwrap(), &[], &Default::default()).unwrap();
    let source_id = m.id.clone();
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    source.commit(None, &create, &RetryPolicy::default()).await.unwrap();
    let out = deltabus::ops::write::write_json_lines(&source, "{\"id\":1}\n".as_bytes(), &Default::default()).await;
    out.unwrap();
    let follow = |allow_stale: bool| {
        let (source, target, source_id) = (source.clone(), target.clone(), source_id.clone());
        async move {
            let mut sink = TableSink::open(&target, "f", &source_id).await.unwrap();
            let mut opts = FollowerOptions::new(StartAt::Version(0));
            opts.once = true;
            opts.allow_stale = allow_stale;
            run_follower(&source, &mut sink, &opts, None, std::future::pending()).await.map(|r| r.position)
        }
    };
    assert_eq!(follow(false).await.unwrap(), Some(1));
    // A commit without rows (another application's position), read two days later.
    let other = |v: i64| {
        Transaction::new(
            Operation::StreamingUpdate,
            vec![Action::Txn(Txn { app_id: "other".into(), version: v, last_updated: None })],
        )
    };
    let s = source.snapshot(None).await.unwrap();
    source.commit(Some(&s), &other(1), &RetryPolicy::default()).await.unwrap();
    clock.advance(2 * 24 * 3600 * 1000);
    assert_eq!(follow(false).await.unwrap(), Some(2));
    // Eight days after that commit: the follower's saved position is the commit itself, so
    // nothing it still needs is past the retention.
    clock.advance(6 * 24 * 3600 * 1000);
    assert_eq!(follow(false).await.unwrap(), Some(2), "refused as stale after commits without rows");
    let target_txn = target
        .snapshot(None)
        .await
        .unwrap()
        .txn_version(&TableSink::open(&target, "f", &source_id).await.unwrap().app_id());
    assert_eq!(target_txn, Some(2));
}

/// A follower batching commits (`max_files`) rides out a store fault on a commit it reads for
/// the batch, as it does on any other poll.
#[tokio::test(flavor = "multi_thread")]
async fn a_batching_follower_rides_out_store_faults() {
    use std::sync::Arc;

    use deltabus::common::follow::{FollowerOptions, StartAt};
    use deltabus::feed::follow::run_follower;
    use deltabus::feed::sink::lines::LinesSink;
    use deltabus::storage::faulty::{FaultConfig, FaultyStore};
    use object_store::ObjectStore;

    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    let commits: Vec<String> = (0..8).map(|i| format!("{{\"id\":{i}}}\n")).collect();
    let clean = crate::support::table_of_commits(&url, &commits.iter().map(String::as_str).collect::<Vec<_>>()).await;
    // Reads of commit 3 fail half of the time, below any retry layer: seeds until one failed.
    let mut faulted = 0;
    for seed in 1..=20 {
        let only = Some("00000000000000000003.json".to_string());
        let faults = FaultConfig { seed, rate: 0.5, only, lose: vec![], delay: None };
        let faulty = Arc::new(FaultyStore::new(clean.object_store(), faults));
        let counts = faulty.counts();
        let table = clean.clone().map_store(|_| faulty.clone() as Arc<dyn ObjectStore>);
        let mut out = Vec::new();
        let mut sink = LinesSink::stream(&mut out, table.url(), None);
        let mut opts = FollowerOptions::new(StartAt::Version(0));
        opts.once = true;
        opts.max_files = Some(100);
        let report = run_follower(&table, &mut sink, &opts, None, std::future::pending()).await;
        drop(sink);
        let report = report.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!((report.rows, report.position), (8, Some(7)), "seed {seed}");
        let ids: Vec<i64> = String::from_utf8_lossy(&out)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, (0..8).collect::<Vec<_>>(), "seed {seed}");
        if counts.failures() > 0 {
            faulted += 1;
            if faulted == 3 {
                return;
            }
        }
    }
    panic!("only {faulted} runs met a fault");
}
