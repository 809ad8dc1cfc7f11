//! VACUUM's contract against awkward and hostile tables: it never follows a symbolic link out
//! of the root, never deletes a file the log names by an absolute path inside the root, never
//! lets a huge retention (flag or table property) wrap around into "delete everything", and
//! refuses absurd retention values with one clean line.

use std::path::Path;

use serde_json::Value;

use crate::support::write_ok;
use crate::support::{assert_clean_failure, deltabus, run_json, write_jsonl};
fn count(table: &Path) -> usize {
    let out = deltabus(&["cat", table.to_str().unwrap()]);
    assert!(out.status.success(), "cat: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn vacuum_never_deletes_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    write_ok(&table, &[], "{\"n\":1}\n");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), b"keep me").unwrap();
    std::os::unix::fs::symlink(&outside, table.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.join("precious.txt"), table.join("file-link.txt")).unwrap();
    let done = run_json(&["vacuum", table.to_str().unwrap(), "--retention-hours", "0", "--force"]);
    assert!(outside.join("precious.txt").exists(), "deleted a file outside the table: {done}");
    assert_eq!(count(&table), 1);
}

#[test]
fn vacuum_keeps_files_named_by_absolute_paths_inside_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    write_ok(&table, &[], "{\"n\":1}\n");
    write_ok(&table, &[], "{\"n\":2}\n");
    // Rewrite the second commit's add path as an absolute URL inside the root.
    let commit = table.join("_delta_log/00000000000000000001.json");
    let text = std::fs::read_to_string(&commit).unwrap();
    let root = url::Url::from_directory_path(table.canonicalize().unwrap()).unwrap();
    let rewritten: String = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if let Some(p) = v["add"]["path"].as_str() {
                v["add"]["path"] = Value::String(format!("{root}{p}"));
            }
            v.to_string() + "\n"
        })
        .collect();
    std::fs::write(&commit, rewritten).unwrap();
    let before: Vec<_> = std::fs::read_dir(&table).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    let done = run_json(&["vacuum", table.to_str().unwrap(), "--retention-hours", "0", "--force"]);
    assert_eq!(done["numFiles"], 0, "a live file was deleted: {done}");
    let after: Vec<_> = std::fs::read_dir(&table).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(before.len(), after.len());
    let out = deltabus(&["cat", table.to_str().unwrap(), "--allow-absolute-paths"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn huge_retentions_never_wrap_around() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    for n in 0..3 {
        write_ok(&table, &[], &format!("{{\"n\":{n}}}\n"));
    }
    run_json(&["compact", t]);
    // An absurd flag is refused in one line.
    assert_clean_failure(&deltabus(&["vacuum", t, "--retention-hours", "3000000000000"]), "absurd retention");
    // The largest accepted retention keeps the seconds-old tombstones.
    let done = run_json(&["vacuum", t, "--retention-hours", "8784000"]);
    assert_eq!(done["numFiles"], 0, "{done}");
    // Table properties of billions of weeks keep everything too.
    let huge = dir.path().join("huge");
    let out = write_jsonl(
        &huge,
        &[
            "--property",
            "delta.deletedFileRetentionDuration=interval 16000000000 weeks",
            "--property",
            "delta.logRetentionDuration=interval 16000000000 weeks",
            "--property",
            "delta.checkpointInterval=2",
        ],
        "{\"n\":0}\n",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let h = huge.to_str().unwrap();
    for n in 1..4 {
        write_ok(&huge, &[], &format!("{{\"n\":{n}}}\n"));
    }
    run_json(&["compact", h]);
    assert_eq!(run_json(&["vacuum", h])["numFiles"], 0, "huge table retention");
    assert_eq!(run_json(&["cleanup-log", h])["numFiles"], 0, "huge log retention");
    assert!(huge.join("_delta_log/00000000000000000000.json").exists());
    let out = deltabus(&["cat", h, "--version", "0"]);
    assert!(out.status.success(), "time travel to version 0: {}", String::from_utf8_lossy(&out.stderr));
}
