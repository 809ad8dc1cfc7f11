//! VACUUM and log cleanup: what is deleted, what must survive, and the retention guard.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{assert_clean_failure, copy_corpus_table, deltabus, run_json, write_jsonl};

fn write(table: &Path, input: &str) {
    let out = write_jsonl(table, &[], input);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

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
        write(&table, &format!("{{\"n\":{n}}}\n"));
    }
    let t = table.to_str().unwrap();
    run(&["compact", t]);
    let before = rows(&table);
    std::fs::write(table.join("orphan-from-a-failed-write.parquet"), b"x").unwrap();
    std::fs::write(table.join(".hidden.crc"), b"x").unwrap();
    // Default retention (7 days): everything is too recent.
    assert_eq!(run(&["vacuum", t])["numFiles"], 0);
    // A shorter retention needs --force.
    assert_clean_failure(&deltabus(&["vacuum", t, "--retention-hours", "0"]), "retention guard");
    // Lite: only the four compacted-away files the log names.
    let lite = run(&["vacuum", t, "--retention-hours", "0", "--force", "--lite", "--dry-run"]);
    assert_eq!(lite["numFiles"], 4, "{lite}");
    // Full listing: those plus the orphan; never the live file, the log or hidden files.
    let dry = run(&["vacuum", t, "--retention-hours", "0", "--force", "--dry-run"]);
    assert_eq!(dry["numFiles"], 5, "{dry}");
    assert!(table.join("orphan-from-a-failed-write.parquet").exists(), "dry run deletes nothing");
    let done = run(&["vacuum", t, "--retention-hours", "0", "--force"]);
    assert_eq!(done["numFiles"], 5);
    assert!(!table.join("orphan-from-a-failed-write.parquet").exists());
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
        write(&table, &format!("{{\"n\":{n}}}\n"));
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
