//! A live table as a message bus: two writer processes append while `deltabus compact` keeps
//! rewriting the source and a `deltabus run` pipeline with a Delta source follows it into a
//! replica (killed with -9 once and restarted). Every inserted row reaches the replica exactly
//! once, no compaction commit produces a row, the follower's lag is in the metrics, and its
//! registration on the source records its position when it stops.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::tables::write_lines;
use crate::support::{deltabus, run_json, scrape};

fn append(table: &str, ids: std::ops::Range<i64>) {
    let rows: String = ids.map(|id| format!("{{\"id\":{id},\"w\":\"{}\"}}\n", "x".repeat(64))).collect();
    // Two writers race: a lost race is retried by the committer, never surfaced.
    write_lines(table, &rows);
}

#[test]
fn writers_compactor_and_follower_together() {
    let dir = tempfile::tempdir().unwrap();
    let (source, replica) = (dir.path().join("source"), dir.path().join("replica"));
    let (s, r) = (source.to_str().unwrap().to_string(), replica.to_str().unwrap().to_string());
    append(&s, 0..1);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let config = dir.path().join("replica.toml");
    std::fs::write(
        &config,
        format!(
            "[pipelines.replica]\ntable = \"{r}\"\n[pipelines.replica.delta]\nsource = \"{s}\"\nstart = \"0\"\npoll_interval = \"20ms\"\n"
        ),
    )
    .unwrap();
    let spawn_follower = || {
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["--config", config.to_str().unwrap(), "run", "--metrics-addr", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut follower = spawn_follower();
    let writers: Vec<_> = (0..2i64)
        .map(|w| {
            let s = s.clone();
            std::thread::spawn(move || {
                for batch in 0..20i64 {
                    let start = 1 + (w * 20 + batch) * 25;
                    append(&s, start..start + 25);
                    // A pause about time: the writers' commits are spread over the follower's life.
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        })
        .collect();
    let compactor = {
        let s = s.clone();
        std::thread::spawn(move || {
            let mut optimize_commits = 0;
            for _ in 0..8 {
                // A pause about time: compactions land between the appends.
                std::thread::sleep(Duration::from_millis(300));
                let report = run_json(&["compact", &s, "--min-file-size", "1mb"]);
                optimize_commits += report["versions"].as_array().map_or(0, Vec::len);
            }
            optimize_commits
        })
    };
    // Mid-stream, the follower dies without warning and comes back (A pause about time: its moment).
    std::thread::sleep(Duration::from_millis(1200));
    let lag_metrics = scrape(&addr).unwrap_or_default();
    follower.kill().unwrap();
    follower.wait().unwrap();
    follower = spawn_follower();
    for w in writers {
        w.join().unwrap();
    }
    let optimize_commits = compactor.join().unwrap();
    let latest = run_json(&["describe", &s])["version"].as_u64().unwrap();
    // Wait until the follower reports the latest source version in its metrics.
    let done = format!("deltabus_source_version{{pipeline=\"replica\"}} {latest}\n");
    let mut metrics = String::new();
    for _ in 0..600 {
        metrics = scrape(&addr).unwrap_or_default();
        if metrics.contains(&done) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Command::new("kill").arg("-TERM").arg(follower.id().to_string()).status().unwrap();
    let status = follower.wait().unwrap();
    assert!(metrics.contains(&done), "the follower reached the latest source version {latest}: {metrics}");
    assert!(metrics.contains("deltabus_source_lag_versions{pipeline=\"replica\"} 0"), "{metrics}");
    assert!(status.success(), "graceful stop");
    assert!(optimize_commits > 0, "the compactor committed while everything ran");
    let lag_line = lag_metrics.lines().find(|l| l.starts_with("deltabus_source_version")).unwrap_or("-").to_string();
    println!("source version {latest}, {optimize_commits} compaction commits; at the kill: {lag_line}");
    // On exit the follower registered where it stopped.
    let listed = run_json(&["followers", &s]);
    assert_eq!(listed["followers"][0]["nextVersion"].as_u64(), Some(latest + 1), "{listed}");

    let out = deltabus(&["cat", &r]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut seen: BTreeMap<i64, u32> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        assert_eq!(row["_change_type"], "insert", "compaction produced no change rows: {row}");
        *seen.entry(row["id"].as_i64().unwrap()).or_default() += 1;
    }
    let expected: BTreeMap<i64, u32> = (0..1001).map(|id| (id, 1)).collect();
    assert_eq!(seen.len(), 1001, "every row arrived");
    assert_eq!(seen, expected, "each exactly once");
}
