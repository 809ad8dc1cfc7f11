//! Compaction beside writers that delete rows: a delete that lands while a bin is being
//! committed (here: just before the bin's commit reaches the store, at the same version) no
//! longer makes the compactor abandon the bin. The rows it deleted are carried onto the
//! rewritten file as its deletion vector, the bin commits at the next version, and deltabus
//! and the reference reader both read exactly the rows the delete left. A competitor that
//! removes an input instead still makes the bin abandon.

use deltabus::compactor::rewriter::{compact, CompactOptions};
use deltabus::ops::delete::{delete, DeleteOptions};
use deltabus::storage::{StorageOptions, Table};

use crate::support::racing::{GoesFirst, Hook};

/// What lands just before the compactor's first `OPTIMIZE` commit reaches the store (through
/// a clean handle of the same table, so at the version the compactor is going for).
#[derive(Debug, Clone, Copy)]
enum Competitor {
    /// A delete by this predicate (deletion vectors).
    Delete(&'static str),
    /// A compaction of the same files (every input removed).
    Compact,
}

/// Four small files of 25 rows (ids 0..100), deletion vectors on; rows `pre` already deleted.
fn table_of_four_files(dir: &std::path::Path, pre: &str) -> String {
    let path = dir.join("t");
    for chunk in 0..4 {
        let rows: String =
            (chunk * 25..(chunk + 1) * 25).map(|i| format!("{{\"id\":{i},\"name\":\"ü-{i}\"}}\n")).collect();
        let out = crate::support::write_jsonl(&path, &["--property", "delta.enableDeletionVectors=true"], &rows);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let location = path.to_string_lossy().into_owned();
    let out = crate::support::deltabus(&["delete", &location, "--where", pre]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    location
}

fn compact_racing(location: &str, competitor: Competitor) -> deltabus::compactor::rewriter::CompactReport {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let clean = Table::open(location, StorageOptions::default()).unwrap();
        let other = clean.clone();
        let hook: Hook = Box::new(move |_, _, _, _| {
            let other = other.clone();
            Box::pin(async move {
                match competitor {
                    Competitor::Delete(predicate) => {
                        let report = delete(&other, predicate, &DeleteOptions::default()).await.expect("the delete");
                        assert!(report.rows_deleted > 0, "the competitor deleted rows");
                    }
                    Competitor::Compact => {
                        let report = compact(&other, &CompactOptions::default()).await.expect("the compaction");
                        assert_eq!(report.versions.len(), 1, "the competitor compacted");
                    }
                }
                Ok(())
            })
        });
        let table = clean.clone().map_store(|inner| GoesFirst::wrap(inner, "\"operation\":\"OPTIMIZE\"", hook));
        compact(&table, &CompactOptions::default()).await.unwrap()
    })
}

#[test]
fn rows_deleted_while_a_bin_commits_are_carried_onto_its_output() {
    let dir = tempfile::tempdir().unwrap();
    // Rows 3 and 60 deleted before the compaction (its inputs carry DVs as read).
    let location = table_of_four_files(dir.path(), "id = 3 OR id = 60");
    // Meanwhile: rows in three of the four inputs, around the ones already deleted.
    let report = compact_racing(&location, Competitor::Delete("id = 2 OR id = 4 OR id = 26 OR id = 61 OR id = 99"));
    assert_eq!((report.bins, report.remapped_bins, report.abandoned.len()), (1, 1, 0), "{report:?}");
    let expected: Vec<i64> = (0..100).filter(|i| ![2, 3, 4, 26, 60, 61, 99].contains(i)).collect();
    assert_eq!(crate::support::ids_printed(&crate::support::deltabus(&["cat", &location])), expected, "deltabus");
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = std::process::Command::new(oracle).args(["rows", &location]).output().unwrap();
        assert_eq!(crate::support::ids_printed(&out), expected, "the reference reader");
    }
    let files = crate::support::run_json(&["files", &location]);
    let files = files["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "the bin's one output is the only live file: {files:?}");
    let history = crate::support::deltabus(&["history", &location]);
    let last: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&history.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(last["operation"], "OPTIMIZE");
    assert_eq!(last["operationMetrics"]["numDeletionVectorsRemapped"], "1", "{last}");
    // The next compaction purges the carried rows.
    let out = crate::support::deltabus(&["compact", &location]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(crate::support::ids_printed(&crate::support::deltabus(&["cat", &location])), expected);
}

#[test]
fn a_bin_whose_input_was_rewritten_meanwhile_is_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    let location = table_of_four_files(dir.path(), "id = 3");
    let report = compact_racing(&location, Competitor::Compact);
    assert_eq!((report.remapped_bins, report.abandoned.len()), (0, 1), "{report:?}");
    let expected: Vec<i64> = (0..100).filter(|i| *i != 3).collect();
    assert_eq!(crate::support::ids_printed(&crate::support::deltabus(&["cat", &location])), expected);
}
