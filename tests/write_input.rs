//! `deltabus write` on awkward input: empty or blank input on an existing table commits no
//! empty version; a partition column named twice is refused before anything is written.

use crate::support::{assert_clean_failure, write_jsonl};

fn versions(table: &std::path::Path) -> usize {
    std::fs::read_dir(table.join("_delta_log"))
        .map(|d| d.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".json")).count())
        .unwrap_or(0)
}

#[test]
fn empty_input_on_an_existing_table_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    assert!(write_jsonl(&table, &[], "{\"id\":1}\n").status.success());
    for input in ["", "\n\n", "   \n"] {
        let out = write_jsonl(&table, &[], input);
        assert!(out.status.success(), "{input:?}: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["outcome"], "nothing_to_commit", "{input:?}");
    }
    assert_eq!(versions(&table), 1, "no empty versions");
    let parquet = std::fs::read_dir(&table)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "parquet"))
        .count();
    assert_eq!(parquet, 1, "no orphan files");
}

#[test]
fn a_partition_column_named_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let out = write_jsonl(&table, &["--partition-by", "country,country"], "{\"country\":\"de\",\"id\":1}\n");
    assert_clean_failure(&out, "duplicate partition column");
    assert!(String::from_utf8_lossy(&out.stderr).contains("named twice"));
    assert_eq!(versions(&table), 0, "nothing committed");
}

/// A partition value too long for a directory name is refused before any file is written:
/// no orphans are left behind.
#[test]
fn an_over_long_partition_value_is_refused_without_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    assert!(write_jsonl(&table, &["--partition-by", "p"], "{\"p\":\"a\",\"id\":0}\n").status.success());
    let mut input: String = (1..2000).map(|i| format!("{{\"p\":\"v{}\",\"id\":{i}}}\n", i % 20)).collect();
    input.push_str(&format!("{{\"p\":\"{}\",\"id\":9999}}\n", "x".repeat(300)));
    let out = write_jsonl(&table, &[], &input);
    assert_clean_failure(&out, "over-long partition value");
    let mut files = 0;
    let mut stack = vec![table.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if e.path().extension().is_some_and(|x| x == "parquet") {
                files += 1;
            }
        }
    }
    assert_eq!(files, 1, "only the first write's file remains");
    assert_eq!(versions(&table), 1);
}
