//! VACUUM and log cleanup: what is deleted, what must survive, and the retention guard.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::write_ok;
use crate::support::{assert_clean_failure, copy_corpus_table, deltabus, run_json};
fn run(args: &[&str]) -> Value {
    run_json(args)
}

fn rows(table: &Path) -> Vec<String> {
    let out = deltabus(&["cat", table.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut r: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    r.sort();
    r
}

#[test]
fn vacuum_deletes_only_unreferenced_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for n in 0..4 {
        write_ok(&table, &[], &format!("{{\"n\":{n}}}\n"));
    }
    let t = table.to_str().unwrap();
    run(&["compact", t]);
    let before = rows(&table);
    std::fs::write(table.join("orphan-from-a-failed-write.parquet"), b"x").unwrap();
    age(&table.join("orphan-from-a-failed-write.parquet"), 2);
    // A file no version names yet and younger than a day: a write in flight, always kept.
    std::fs::write(table.join("staged-by-a-running-write.parquet"), b"x").unwrap();
    std::fs::write(table.join(".hidden.crc"), b"x").unwrap();
    // Default retention (7 days): everything is too recent.
    assert_eq!(run(&["vacuum", t])["numFiles"], 0);
    // A shorter retention needs --force.
    assert_clean_failure(&deltabus(&["vacuum", t, "--retention-hours", "0"]), "retention guard");
    // Lite: only the four compacted-away files the log names.
    let lite = run(&["vacuum", t, "--retention-hours", "0", "--force", "--lite", "--dry-run"]);
    assert_eq!(lite["numFiles"], 4, "{lite}");
    // Full listing: those plus the day-old orphan; never the live file, the log, hidden files
    // or the fresh staged file.
    let dry = run(&["vacuum", t, "--retention-hours", "0", "--force", "--dry-run"]);
    assert_eq!(dry["numFiles"], 5, "{dry}");
    assert!(table.join("orphan-from-a-failed-write.parquet").exists(), "dry run deletes nothing");
    let done = run(&["vacuum", t, "--retention-hours", "0", "--force"]);
    assert_eq!(done["numFiles"], 5);
    assert!(!table.join("orphan-from-a-failed-write.parquet").exists());
    assert!(table.join("staged-by-a-running-write.parquet").exists());
    assert!(table.join(".hidden.crc").exists() && table.join("_delta_log/00000000000000000000.json").exists());
    assert_eq!(rows(&table), before, "live rows survive vacuum");
}

#[test]
fn vacuum_keeps_and_then_drops_deletion_vector_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = copy_corpus_table("table-with-dv-small", dir.path());
    let dv_file = table.join("deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin");
    let t = table.to_str().unwrap();
    // While the DV is live, vacuum keeps its file (the corpus files are old, so they qualify by age).
    let dry = run(&["vacuum", t, "--retention-hours", "0", "--force", "--dry-run"]);
    assert!(!dry["files"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains("deletion_vector")), "{dry}");
    let before = rows(&table);
    run(&["compact", t]);
    run(&["vacuum", t, "--retention-hours", "0", "--force"]);
    assert!(!dv_file.exists(), "the purged DV's file is vacuumed");
    assert_eq!(rows(&table), before);
}

fn age(path: &Path, days: u64) {
    let when = chrono::Utc::now().timestamp() - (days * 86_400) as i64;
    assert!(Command::new("touch").arg("-d").arg(format!("@{when}")).arg(path).status().unwrap().success());
}

#[test]
fn log_cleanup_keeps_what_the_latest_state_needs() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for n in 0..12 {
        write_ok(&table, &[], &format!("{{\"n\":{n}}}\n"));
    }
    let log = table.join("_delta_log");
    assert!(log.join("00000000000000000010.checkpoint.parquet").exists());
    let t = table.to_str().unwrap();
    assert_eq!(run(&["cleanup-log", t])["numFiles"], 0, "nothing is older than 30 days yet");
    for v in 0..=10 {
        age(&log.join(format!("{v:020}.json")), 40);
    }
    age(&log.join("00000000000000000010.checkpoint.parquet"), 40);
    let before = rows(&table);
    let report = run(&["cleanup-log", t]);
    assert_eq!(report["numFiles"], 10, "{report}");
    assert!(!log.join("00000000000000000009.json").exists());
    assert!(
        log.join("00000000000000000010.json").exists() && log.join("00000000000000000010.checkpoint.parquet").exists()
    );
    assert_eq!(rows(&table), before, "the latest state is intact");
    assert_clean_failure(&deltabus(&["cat", t, "--version", "5"]), "time travel before the retained checkpoint");
}

fn data_files(table: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(table)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    out.sort();
    out
}

#[test]
fn maintenance_keeps_what_a_registered_follower_needs() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("s"), dir.path().join("t"));
    let (s, t) = (source.to_str().unwrap(), target.to_str().unwrap());
    for n in 0..3 {
        write_ok(&source, &[], &format!("{{\"n\":{n}}}\n"));
    }
    // The follower has processed versions 0..=2 and registered that it needs 3 onwards.
    let report = run(&["follow", s, "--into", t, "--follower-id", "replica", "--from", "0", "--once"]);
    assert_eq!(report["position"], 2, "{report}");
    let listed = run(&["followers", s]);
    assert_eq!(listed["followers"][0]["followerId"], "replica", "{listed}");
    assert_eq!(listed["followers"][0]["nextVersion"], 3);
    let early = data_files(&source);
    for n in 3..5 {
        write_ok(&source, &[], &format!("{{\"n\":{n}}}\n"));
    }
    let late: Vec<String> = data_files(&source).into_iter().filter(|f| !early.contains(f)).collect();
    run(&["compact", s]); // version 5: every file removed with dataChange=false
    run(&["checkpoint", s]);
    let log = source.join("_delta_log");
    for entry in std::fs::read_dir(&log).unwrap().chain(std::fs::read_dir(&source).unwrap()) {
        let path = entry.unwrap().path();
        if path.is_file() {
            age(&path, 40);
        }
    }

    // Log cleanup: without a checkpoint at or before version 2 nothing may go while the
    // follower needs 3 onwards; ignoring followers, everything before the checkpoint at 5 goes.
    let held = run(&["cleanup-log", s, "--dry-run"]);
    assert_eq!((held["numFiles"].as_u64(), held["keptFromVersion"].as_u64()), (Some(0), Some(3)), "{held}");
    assert_eq!(run(&["cleanup-log", s, "--dry-run", "--ignore-followers"])["numFiles"], 5);

    // VACUUM: the files added at 3 and 4 are read by the follower (its inserts); the files
    // of 0..=2 are only named by the compaction, which the follower skips.
    let vacuum = ["vacuum", s, "--retention-hours", "0", "--force", "--dry-run"];
    let held = run(&vacuum);
    let mut would: Vec<String> = held["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().into()).collect();
    would.sort();
    assert_eq!(would, early, "{held}");
    let all = run(&[&vacuum[..], &["--ignore-followers"]].concat());
    assert_eq!(all["numFiles"].as_u64(), Some((early.len() + late.len()) as u64), "{all}");

    // The follower's position is now 40 days old, past the 7-day file retention: it refuses
    // to go on unless told to.
    let stale = deltabus(&["follow", s, "--into", t, "--follower-id", "replica", "--once"]);
    assert_clean_failure(&stale, "stale follower");
    assert!(String::from_utf8_lossy(&stale.stderr).contains("deletedFileRetentionDuration"));
    let resumed = run(&["follow", s, "--into", t, "--follower-id", "replica", "--once", "--allow-stale"]);
    assert_eq!(resumed["position"], 5, "{resumed}");
    assert_eq!(run(&["followers", s])["followers"][0]["nextVersion"], 6);
    // Caught up: nothing is held back any more.
    assert_eq!(run(&[&vacuum[..], &[]].concat())["numFiles"].as_u64(), all["numFiles"].as_u64());
    assert_eq!(run(&["cleanup-log", s, "--dry-run"])["numFiles"], 5);
    // Unregistered.
    assert_eq!(run(&["followers", s, "--remove", "replica"])["existed"], true);
    assert_eq!(run(&["followers", s])["followers"].as_array().unwrap().len(), 0);
    assert_clean_failure(&deltabus(&["followers", s, "--remove", "../escape"]), "bad follower id");
}
