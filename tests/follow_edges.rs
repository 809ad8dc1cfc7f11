//! The edges of followers and mirrors a new user meets: VACUUM keeps what a registered file
//! mirror still replays, a mirror resumes after its source's txn retention passed, `follow`
//! (alone or in a group) carries added columns into its target, a keyed mirror started part way
//! is a copy from its start, and the `changes` range and storage options say what they take.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::tables::{rows, write_lines};
use crate::support::{assert_clean_failure, deltabus, ids, run_json, write_jsonl};
fn sorted(mut rows: Vec<Value>) -> Vec<String> {
    let mut out: Vec<String> = rows
        .drain(..)
        .map(|r| {
            let o: std::collections::BTreeMap<String, Value> = r
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            serde_json::to_string(&o).unwrap()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn vacuum_keeps_the_compacted_files_a_registered_file_mirror_replays() {
    let dir = tempfile::tempdir().unwrap();
    let (s, t) = (dir.path().join("s"), dir.path().join("t"));
    let (s, t) = (s.to_str().unwrap(), t.to_str().unwrap());
    for n in 0..3 {
        write_lines(s, &format!("{{\"id\":{n},\"name\":\"ñ{n}\"}}\n"));
    }
    let mirror = ["follow", s, "--into", t, "--follower-id", "m", "--mirror", "--once"];
    run_json(&mirror);
    run_json(&["compact", s]);
    write_lines(s, "{\"id\":3,\"name\":\"ñ3\"}\n");
    run_json(&["compact", s]);
    let vacuum = run_json(&["vacuum", s, "--retention", "0s", "--force"]);
    assert_eq!(vacuum["keptFromVersion"], 3, "{vacuum}");
    // The first compaction's output is gone from the live table but not yet replayed.
    let out = deltabus(&mirror);
    assert!(out.status.success(), "the mirror lost a file it still replays: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids(t), vec![0, 1, 2, 3]);
    assert_eq!(sorted(rows(t)), sorted(rows(s)));
    // Caught up: the next VACUUM may delete what only the mirror needed.
    let after = run_json(&["vacuum", s, "--retention", "0s", "--force"]);
    assert!(after["numFiles"].as_u64().unwrap() >= 1, "{after}");
}

#[test]
fn a_mirror_resumes_after_its_sources_txn_retention_passed() {
    let dir = tempfile::tempdir().unwrap();
    let (s, t, k) = (dir.path().join("s"), dir.path().join("t"), dir.path().join("k"));
    let (s, t, k) = (s.to_str().unwrap(), t.to_str().unwrap(), k.to_str().unwrap());
    let out = write_jsonl(
        std::path::Path::new(s),
        &["--property", "delta.setTransactionRetentionDuration=interval 1 seconds"],
        "{\"id\":1}\n",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file_mirror = ["follow", s, "--into", t, "--follower-id", "m", "--mirror", "--once"];
    let key_mirror = ["follow", s, "--into", k, "--follower-id", "m", "--mirror", "--key-columns", "id", "--once"];
    run_json(&file_mirror);
    run_json(&key_mirror);
    // Wait until the protocol's readers forget the mirrors' txns (the copied retention).
    let deadline = Instant::now() + Duration::from_secs(60);
    while run_json(&["describe", t])["txns"].as_object().is_some_and(|m| !m.is_empty()) {
        assert!(Instant::now() < deadline, "the txn never expired");
        std::thread::sleep(Duration::from_millis(200));
    }
    write_lines(s, "{\"id\":2}\n");
    for args in [&file_mirror[..], &key_mirror[..]] {
        let out = deltabus(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!((ids(t), ids(k)), (vec![1, 2], vec![1, 2]));
    // And again: a position never expires, however often.
    write_lines(s, "{\"id\":3}\n");
    run_json(&file_mirror);
    assert_eq!(ids(t), vec![1, 2, 3]);
}

#[test]
fn followers_carry_added_columns_into_their_targets() {
    let dir = tempfile::tempdir().unwrap();
    let (s, t, g) = (dir.path().join("s"), dir.path().join("t"), dir.path().join("g"));
    let (s, t, g) = (s.to_str().unwrap(), t.to_str().unwrap(), g.to_str().unwrap());
    write_lines(s, "{\"id\":1}\n");
    let follow = ["follow", s, "--into", t, "--follower-id", "f", "--from", "0", "--once"];
    let group = ["follow", s, "--into", g, "--group", "grp", "--member", "a", "--slices", "2", "--from", "0", "--once"];
    run_json(&follow);
    run_json(&group);
    let out =
        write_jsonl(std::path::Path::new(s), &["--evolve-schema"], "{\"id\":2,\"名前\":\"ü\",\"nested\":{\"a\":1}}\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    write_lines(s, "{\"id\":3,\"名前\":\"z\",\"nested\":{\"a\":2}}\n");
    for (args, target) in [(&follow[..], t), (&group[..], g)] {
        let out = deltabus(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let mut got: Vec<(i64, Value)> =
            rows(target).iter().map(|r| (r["id"].as_i64().unwrap(), r["名前"].clone())).collect();
        got.sort_by_key(|(id, _)| *id);
        assert_eq!(got, vec![(1, Value::Null), (2, "ü".into()), (3, "z".into())], "{target}");
    }
    // A fresh target of the evolved source starts with every column.
    let fresh = dir.path().join("fresh");
    run_json(&["follow", s, "--into", fresh.to_str().unwrap(), "--follower-id", "f2", "--from", "0", "--once"]);
    assert_eq!(ids(fresh.to_str().unwrap()), vec![1, 2, 3]);
    // The group's report counts each source commit once.
    let report = run_json(&["follow", s, "--into", g, "--group", "grp", "--member", "a", "--once"]);
    assert_eq!(report["sourceCommits"], 0, "{report}");
}

#[test]
fn a_keyed_mirror_started_part_way_is_a_copy_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    for round in 0..4 {
        let lines: String =
            (round * 10..round * 10 + 10).map(|id| format!("{{\"id\":{id},\"v\":\"é{round}\"}}\n")).collect();
        write_lines(s, &lines);
    }
    assert!(deltabus(&["delete", s, "--where", "id < 5"]).status.success());
    for (name, from) in [("latest", "latest"), ("v2", "2"), ("ts", "timestamp:0")] {
        let target = dir.path().join(name);
        let t = target.to_str().unwrap();
        let args = [
            "follow",
            s,
            "--into",
            t,
            "--follower-id",
            "m",
            "--mirror",
            "--key-columns",
            "id",
            "--from",
            from,
            "--once",
        ];
        let out = deltabus(&args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(sorted(rows(t)), sorted(rows(s)), "--from {from}");
    }
    // Later commits apply on top of the copy.
    write_lines(s, "{\"id\":100,\"v\":\"new\"}\n");
    let t = dir.path().join("latest");
    let t = t.to_str().unwrap();
    run_json(&["follow", s, "--into", t, "--follower-id", "m", "--mirror", "--key-columns", "id", "--once"]);
    assert_eq!(sorted(rows(t)), sorted(rows(s)));
}

#[test]
fn changes_ranges_and_storage_options_say_what_they_take() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    write_lines(s, "{\"id\":1}\n");
    write_lines(s, "{\"id\":2}\n");
    let lines = |args: &[&str]| {
        let out = deltabus(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(lines(&["changes", s, "--from", "0", "--to", "latest"]), 2);
    assert_eq!(lines(&["changes", s, "--from", "latest", "--to", "latest"]), 1);
    assert_eq!(lines(&["changes", s, "--to", "timestamp:2999-01-01T00:00:00Z"]), 2);
    let past = deltabus(&["changes", s, "--from", "timestamp:2999-01-01T00:00:00Z"]);
    assert_clean_failure(&past, "--from past the newest commit");
    assert!(String::from_utf8_lossy(&past.stderr).contains("no commit at or after"));
    let before = deltabus(&["changes", s, "--to", "timestamp:1970-01-02T00:00:00Z"]);
    assert_clean_failure(&before, "--to before the oldest commit");
    let bogus = deltabus(&["cat", s, "--storage-option", "bogus=1"]);
    assert_clean_failure(&bogus, "an unknown storage option on a local path");
    assert!(String::from_utf8_lossy(&bogus.stderr).contains("unknown storage option \"bogus\""));
    // An option of another backend is not an error on a local table.
    assert_eq!(lines(&["cat", s, "--storage-option", "aws_region=eu-west-1"]), 2);
}

#[test]
fn followers_log_what_they_run_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let (s, t) = (dir.path().join("s"), dir.path().join("t"));
    let (s, t) = (s.to_str().unwrap(), t.to_str().unwrap());
    write_lines(s, "{\"id\":1}\n");
    write_lines(s, "{\"id\":2}\n");
    // Started past the last commit: nothing to deliver, and still said at start.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["follow", s, "--into", t, "--follower-id", "f", "--from", "latest", "--once"])
        .env("DELTABUS_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("follow.started"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A long-running follower (info by default) says so before any event.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["tail", s, "--from", "latest"])
        .env_remove("DELTABUS_LOG")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("follow.started") {
                let _ = tx.send(line);
                return;
            }
        }
    });
    let started = rx.recv_timeout(Duration::from_secs(60));
    child.kill().ok();
    child.wait().ok();
    assert!(started.is_ok(), "tail logged nothing at start");
}
