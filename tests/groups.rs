//! Consumer groups over a table's change feed: members (`follow --group`) share the slices of a
//! source that writers append to and delete from, while members are killed with -9 and
//! restarted, a fourth joins mid-stream and one is paused past its lease; every store call may
//! fail. The target holds every change row of the source exactly once, and each key's changes
//! were delivered in version order (group keys are Cyrillic and Japanese text).

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::signal;
use crate::support::tables::write_lines;
use crate::support::{deltabus, free_addr, run_json, scrape_until};

fn append(table: &str, ids: std::ops::Range<i64>) {
    // Group keys in several scripts: a key is hashed as its JSON text, whatever its characters.
    let rows: String = ids.map(|id| format!("{{\"id\":{id},\"k\":\"ключ-{}-東京\"}}\n", id % 13)).collect();
    write_lines(table, &rows);
}

fn member(source: &str, target: &str, name: &str, log: &std::path::Path, seed: u64) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["follow", source, "--into", target, "--group", "g", "--member", name])
        .args(["--slices", "8", "--group-key", "k", "--lease", "2s", "--poll-interval", "50ms", "--from", "0"])
        .env("DELTABUS_FAULTS", format!("rate=0.02,seed={seed}"))
        .env("DELTABUS_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}
/// The source's change rows as (id, change type, version), from `changes`.
fn source_changes(source: &str) -> Vec<(i64, String, i64)> {
    let out = deltabus(&["changes", source, "--from", "0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    rows_of(&out.stdout)
}

fn rows_of(text: &[u8]) -> Vec<(i64, String, i64)> {
    let mut rows: Vec<_> = String::from_utf8_lossy(text)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (
                v["id"].as_i64().unwrap(),
                v["_change_type"].as_str().unwrap().to_string(),
                v["_commit_version"].as_i64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Every slice's recorded position is past the source's latest version.
fn all_delivered(source: &str) -> bool {
    let f = run_json(&["followers", source]);
    let Some(g) = f["groups"].as_array().and_then(|g| g.first()) else { return false };
    let slices = g["slicePositions"].as_array().cloned().unwrap_or_default();
    slices.len() == 8 && slices.iter().all(|s| s["versionsBehind"] == 0)
}

#[test]
fn members_share_a_churning_feed_and_deliver_every_change_once_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let (s, t) = (source.to_str().unwrap().to_string(), target.to_str().unwrap().to_string());
    let log = dir.path().join("members.log");
    append(&s, 0..50);
    let mut members: BTreeMap<&str, Child> =
        [("a", 1u64), ("b", 2), ("c", 3)].into_iter().map(|(n, seed)| (n, member(&s, &t, n, &log, seed))).collect();
    let mut next = 50;
    for round in 0..12 {
        append(&s, next..next + 40);
        next += 40;
        if round % 4 == 3 {
            let out = deltabus(&["delete", &s, "--where", &format!("id < {}", round * 10)]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        match round {
            2 => {
                // kill -9 and restart: its slices come back from the target's positions.
                let mut a = members.remove("a").unwrap();
                signal(&a, "-KILL");
                a.wait().unwrap();
                members.insert("a", member(&s, &t, "a", &log, 11));
            }
            4 => {
                members.insert("d", member(&s, &t, "d", &log, 4));
            }
            6 => {
                // Paused past its lease: the others take its slices; resumed, it must not
                // deliver what it no longer holds.
                signal(&members["b"], "-STOP");
                std::thread::sleep(Duration::from_secs(5));
                signal(&members["b"], "-CONT");
            }
            8 => {
                let mut c = members.remove("c").unwrap();
                signal(&c, "-KILL");
                c.wait().unwrap();
            }
            _ => {}
        }
        // A pause about time: membership changes are spaced while the members deliver.
        std::thread::sleep(Duration::from_millis(400));
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    while !all_delivered(&s) {
        assert!(
            Instant::now() < deadline,
            "the group did not catch up: {}\n{}",
            run_json(&["followers", &s]),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    for (_, m) in members {
        signal(&m, "-TERM");
        let out = m.wait_with_output().unwrap();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: String = text.chars().rev().take(4000).collect::<Vec<_>>().into_iter().rev().collect();
        assert!(out.status.success(), "member exit: {:?}\n{tail}", out.status);
    }
    let expected = source_changes(&s);
    let out = deltabus(&["cat", &t]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got = rows_of(&out.stdout);
    let distinct: BTreeSet<_> = got.iter().collect();
    assert_eq!(distinct.len(), got.len(), "a change row delivered twice");
    assert_eq!(got.len(), expected.len(), "change rows delivered");
    assert_eq!(got, expected);
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(logs.contains("group.slice_taken"), "slices moved between members");
    assert!(logs.contains("group.slice_lost"), "the paused member found its slices taken");
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&t).output().unwrap();
        assert!(out.status.success(), "reference reader: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(rows_of(&out.stdout).len(), expected.len(), "the reference reader sees the same rows");
    }
    // Each key's changes in version order: one target commit holds one source commit's rows
    // (its `epochId`); read in target order, no key goes back to an older source version.
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    let latest = run_json(&["describe", &t])["version"].as_i64().unwrap();
    let mut checked = 0;
    for v in 1..=latest {
        let commit = std::fs::read_to_string(target.join(format!("_delta_log/{v:020}.json"))).unwrap();
        let epoch: i64 = commit
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find_map(|a| a["commitInfo"]["operationParameters"]["epochId"].as_str().map(|e| e.parse().unwrap()))
            .expect("a group commit names its source version");
        let out = deltabus(&["changes", &t, "--from", &v.to_string(), "--to", &v.to_string()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let k = serde_json::from_str::<Value>(line).unwrap()["k"].as_str().unwrap().to_string();
            let before = last.insert(k.clone(), epoch).unwrap_or(0);
            assert!(before <= epoch, "key {k}: source version {epoch} delivered after {before}");
            checked += 1;
        }
    }
    assert!(checked > 0);
}

/// `tail --group` prints lines; a member that leaves records its slices' positions in their
/// leases, so the next member resumes there: taking turns, the members print every change once.
#[test]
fn tail_members_taking_turns_resume_from_the_positions_in_the_leases() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("source").to_str().unwrap().to_string();
    let mut printed = Vec::new();
    for (turn, name) in ["a", "b", "a", "c"].into_iter().enumerate() {
        let turn = turn as i64;
        append(&s, turn * 30..turn * 30 + 30);
        let out = dir.path().join(format!("{turn}-{name}.jsonl"));
        let o = deltabus(&["tail", &s, "--group", "t", "--member", name, "--from", "0", "--once"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(&out, &o.stdout).unwrap();
        printed.extend(rows_of(&o.stdout));
        assert_eq!(rows_of(&o.stdout).len(), 30, "turn {turn}: this turn's commit only");
    }
    printed.sort();
    assert_eq!(printed, source_changes(&s));
    let f = run_json(&["followers", &s]);
    assert_eq!(f["groups"][0]["slicePositions"].as_array().unwrap().len(), 16);
    assert!(f["groups"][0]["members"].as_array().unwrap().is_empty(), "every member left");
}

/// `tail --group --to-topic`: two members produce the feed in transactions per slice, one is
/// killed with -9 and restarted; a read_committed consumer sees every change row once.
#[test]
fn kafka_members_produce_every_change_once_across_kill_9() {
    let _guard = crate::support::native_clients_lock();
    let cluster = rdkafka::mocking::MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("changes", 3, 1).expect("topic");
    cluster.create_topic("deltabus-progress", 1, 1).expect("progress topic");
    let brokers = cluster.bootstrap_servers();
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("source").to_str().unwrap().to_string();
    let log = dir.path().join("members.log");
    append(&s, 0..40);
    let spawn = |name: &str| {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["tail", &s, "--group", "kg", "--member", name, "--slices", "4", "--lease", "2s", "--from", "0"])
            .args(["--poll-interval", "50ms", "--to-topic", "changes", "--brokers", &brokers, "--key-columns", "id"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let (mut a, b) = (spawn("a"), spawn("b"));
    for round in 1..6 {
        append(&s, round * 40..round * 40 + 40);
        if round == 2 {
            signal(&a, "-KILL");
            a.wait().unwrap();
            a = spawn("a");
        }
        // A pause about time: kills are spaced while the members deliver.
        std::thread::sleep(Duration::from_millis(500));
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let caught_up = || {
        let f = run_json(&["followers", &s]);
        f["groups"][0]["slicePositions"]
            .as_array()
            .is_some_and(|v| v.len() == 4 && v.iter().all(|p| p["versionsBehind"] == 0))
    };
    while !caught_up() {
        assert!(Instant::now() < deadline, "not caught up: {}", std::fs::read_to_string(&log).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(300));
    }
    for m in [a, b] {
        signal(&m, "-TERM");
        let out = m.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
    let got: String =
        crate::support::kafka::read_committed(&brokers, "changes", 3).into_iter().map(|(_, v)| v + "\n").collect();
    // A transaction carries one slice's rows of one or more versions: each (version, slice)
    // unit arrives complete; extra copies only come from the mock cluster's missing aborts.
    let slice = |id: i64| {
        use deltabus::beside::groups::{fnv1a, slice_of, FNV_START};
        slice_of(fnv1a(fnv1a(FNV_START, id.to_string().as_bytes()), &[0]), 4)
    };
    let repeated = crate::support::kafka::assert_once_but_repeats_after_kills(
        &rows_of(got.as_bytes()),
        &source_changes(&s),
        |(id, _, version)| (*version, slice(*id)),
        true,
    );
    eprintln!("{repeated} (version, slice) units repeated after the kill");
}

/// A group member exports the same source-lag metrics as a single follower: its position and
/// versions behind, once it has caught up with the source.
#[test]
fn a_group_member_exports_the_source_lag_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let (s, t) = (source.to_str().unwrap(), target.to_str().unwrap());
    append(s, 0..5);
    append(s, 5..9);
    let addr = free_addr();
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["follow", s, "--into", t, "--group", "lagged", "--member", "m-1", "--from", "0"])
        .args(["--poll-interval", "20ms", "--metrics-addr", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let text = scrape_until(&addr, "deltabus_source_version{pipeline=\"lagged\"} 1\n");
    assert!(child.try_wait().unwrap().is_none(), "the member stopped early");
    let _ = child.kill();
    let _ = child.wait();
    assert!(text.contains("deltabus_source_version{pipeline=\"lagged\"} 1\n"), "{text}");
    assert!(text.contains("deltabus_source_lag_versions{pipeline=\"lagged\"} 0\n"), "{text}");
    assert!(text.contains("deltabus_records_in_total{pipeline=\"lagged\"} 9\n"), "{text}");
}
