//! `deltabus delete`: deletion vectors that the reference reader applies, copy-on-write on
//! tables without DVs, statistics pruning, the change feed of deletes, and clean refusals.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::write_ok;
use crate::support::{assert_clean_failure, copy_corpus_table, deltabus, kernel_oracle, run_json};
fn run(args: &[&str]) -> Value {
    run_json(args)
}

fn ids(table: &Path) -> Vec<i64> {
    crate::support::ids(table.to_str().unwrap())
}

fn kernel_ids(table: &Path) -> Option<Vec<i64>> {
    Some(crate::support::ids_printed(&Command::new(kernel_oracle()?).arg("rows").arg(table).output().unwrap()))
}

/// Ten commits, each one file of ids 10k..10k+9, partitioned by parity bucket `p`.
fn make_table(table: &Path, props: &[&str]) {
    for k in 0..10 {
        let input: String = (k * 10..k * 10 + 10)
            .map(|id| format!("{{\"id\":{id},\"name\":\"n{id}\",\"p\":\"b{}\"}}\n", k % 2))
            .collect();
        let mut args = vec!["--partition-by", "p"];
        for p in props {
            args.extend(["--property", p]);
        }
        write_ok(table, &args, &input);
    }
}

#[test]
fn deletes_with_deletion_vectors_read_by_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("dv");
    make_table(&table, &["delta.enableDeletionVectors=true", "delta.enableChangeDataFeed=true"]);
    let t = table.to_str().unwrap();
    // Statistics pruning: ids 25 and 27 live in one of the ten files.
    let r = run(&["delete", t, "--where", "id IN (25, 27)"]);
    assert_eq!(
        (r["filesScanned"].as_u64(), r["filesSkipped"].as_u64(), r["rowsDeleted"].as_u64()),
        (Some(1), Some(9), Some(2)),
        "{r}"
    );
    assert_eq!(r["mode"], "deletion-vectors");
    // A second delete on the same file unites the DVs; another spans partitions.
    run(&["delete", t, "--where", "id = 21 OR (id >= 90 AND p = 'b1')"]);
    let expected: Vec<i64> = (0..100).filter(|i| ![25, 27, 21].contains(i) && *i < 90).collect();
    assert_eq!(ids(&table), expected);
    if let Some(k) = kernel_ids(&table) {
        assert_eq!(k, expected, "the reference reader applies our deletion vectors");
    }
    let files: Value = run(&["files", t]);
    assert_eq!(files["files"].as_array().unwrap().iter().filter(|f| f["dv"] == true).count(), 2);
    // The change feed of the deletes: exactly the deleted rows.
    let first = r["version"].as_u64().unwrap().to_string();
    let feed = deltabus(&["changes", t, "--from", &first]);
    let mut deleted: Vec<i64> = String::from_utf8_lossy(&feed.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .inspect(|v| assert_eq!(v["_change_type"], "delete"))
        .map(|v| v["id"].as_i64().unwrap())
        .collect();
    deleted.sort();
    assert_eq!(deleted, vec![21, 25, 27, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99]);
    // They come from change-data files written with the deletes, which the reference reads too.
    let log =
        std::fs::read_to_string(table.join(format!("_delta_log/{:020}.json", r["version"].as_u64().unwrap()))).unwrap();
    assert!(log.contains("\"cdc\"") && log.contains("_change_data/"), "{log}");
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).args(["changes", t, &first]).output().unwrap();
        assert!(out.status.success(), "kernel-oracle changes: {}", String::from_utf8_lossy(&out.stderr));
        let mut k: Vec<i64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .inspect(|v| assert_eq!(v["_change_type"], "delete"))
            .map(|v| v["id"].as_i64().unwrap())
            .collect();
        k.sort();
        assert_eq!(k, deleted, "the reference reader's change feed");
    }
    // Compaction purges the DVs and keeps the rows.
    run(&["compact", t]);
    assert_eq!(ids(&table), expected);
}

#[test]
fn deletes_copy_on_write_without_deletion_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("cow");
    make_table(&table, &[]);
    let t = table.to_str().unwrap();
    let r = run(&["delete", t, "--where", "name = 'n42' OR id < 3"]);
    assert_eq!(r["mode"], "copy-on-write");
    assert_eq!(r["rowsDeleted"], 4);
    let expected: Vec<i64> = (3..100).filter(|i| *i != 42).collect();
    assert_eq!(ids(&table), expected);
    if let Some(k) = kernel_ids(&table) {
        assert_eq!(k, expected);
    }
    if let Ok(py) = std::env::var("DELTABUS_TEST_PYTHON") {
        let script =
            "import sys\nfrom deltalake import DeltaTable\nprint(len(DeltaTable(sys.argv[1]).to_pyarrow_table()))";
        let out = crate::support::run_python(&py, script, &[table.as_os_str()]);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expected.len().to_string());
    }
}

#[test]
fn copy_on_write_deletes_on_a_change_data_table_report_only_the_deleted_rows() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("cow-cdf");
    make_table(&table, &["delta.enableChangeDataFeed=true"]);
    let t = table.to_str().unwrap();
    let r = run(&["delete", t, "--where", "id IN (3, 4, 55)"]);
    assert_eq!((r["mode"].as_str(), r["rowsDeleted"].as_u64()), (Some("copy-on-write"), Some(3)), "{r}");
    // Without change data, the feed would show the rewritten files' other rows as re-inserted.
    let from = r["version"].as_u64().unwrap().to_string();
    let feed = deltabus(&["changes", t, "--from", &from]);
    let rows: Vec<(String, i64)> = String::from_utf8_lossy(&feed.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["_change_type"].as_str().unwrap().to_string(), v["id"].as_i64().unwrap()))
        .collect();
    let mut ids: Vec<i64> = rows.iter().map(|r| r.1).collect();
    ids.sort();
    assert!(rows.iter().all(|r| r.0 == "delete"), "{rows:?}");
    assert_eq!(ids, vec![3, 4, 55]);
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).args(["changes", t, &from]).output().unwrap();
        assert!(out.status.success(), "kernel-oracle changes: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(crate::support::ids_printed(&out), vec![3, 4, 55], "the reference reader agrees");
    }
}

#[test]
fn bad_predicates_commit_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    make_table(&table, &["delta.enableDeletionVectors=true"]);
    let t = table.to_str().unwrap();
    for bad in ["id >", "nope = 1", "id = 'x'", "id == 1 garbage"] {
        let out = deltabus(&["delete", t, "--where", bad]);
        assert_clean_failure(&out, bad);
    }
    assert_eq!(run(&["describe", t])["version"], 9, "nothing committed");
    let r = run(&["delete", t, "--where", "id > 1000"]);
    assert_eq!((r["rowsDeleted"].as_u64(), r["filesScanned"].as_u64()), (Some(0), Some(0)));
    assert!(r["version"].is_null());
    // Append-only tables refuse deletes.
    let ao = dir.path().join("ao");
    write_ok(&ao, &["--property", "delta.appendOnly=true"], "{\"id\":1}\n");
    assert_clean_failure(&deltabus(&["delete", ao.to_str().unwrap(), "--where", "id = 1"]), "append-only");
}

#[test]
fn deletes_on_a_corpus_dv_table_extend_its_existing_vector() {
    let dir = tempfile::tempdir().unwrap();
    let table = copy_corpus_table("table-with-dv-small", dir.path());
    let t = table.to_str().unwrap();
    run(&["delete", t, "--where", "value IN (3, 4)"]);
    let out = deltabus(&["cat", t]);
    let mut values: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["value"].as_i64().unwrap())
        .collect();
    values.sort();
    assert_eq!(values, vec![1, 2, 5, 6, 7, 8]);
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 6);
    }
}

#[test]
fn small_vectors_are_inline_and_large_ones_in_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let input: String = (0..300).map(|id| format!("{{\"id\":{id}}}\n")).collect();
    write_ok(&table, &["--property", "delta.enableDeletionVectors=true"], &input);
    let t = table.to_str().unwrap();
    let storage_type = |v: u64| {
        let log = std::fs::read_to_string(table.join(format!("_delta_log/{v:020}.json"))).unwrap();
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).unwrap().get("add").cloned())
            .map(|a| a["deletionVector"]["storageType"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let dv_files = || {
        std::fs::read_dir(&table)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("deletion_vector_"))
            .count()
    };
    run(&["delete", t, "--where", "id IN (1, 2)"]);
    assert_eq!(storage_type(1), vec!["i"], "a two-row DV is stored inline");
    assert_eq!(dv_files(), 0, "inline vectors write no deletion-vector file");
    run(&["delete", t, "--where", "id >= 100 AND id < 250"]);
    assert_eq!(storage_type(2), vec!["u"], "a 152-row DV goes to a deletion_vector file");
    let expected: Vec<i64> = (0..300).filter(|i| !(*i == 1 || *i == 2 || (100..250).contains(i))).collect();
    assert_eq!(ids(&table), expected);
    if let Some(k) = kernel_ids(&table) {
        assert_eq!(k, expected);
    }
    assert!(std::fs::read_dir(&table)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("deletion_vector_")));
}

#[test]
fn deletes_racing_compaction_never_resurrect_rows() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("race");
    for k in 0..20 {
        let input: String = (k * 10..k * 10 + 10).map(|id| format!("{{\"id\":{id}}}\n")).collect();
        write_ok(&table, &["--property", "delta.enableDeletionVectors=true"], &input);
    }
    let t = table.to_str().unwrap().to_string();
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (mut conflicts, mut deleted) = (0, Vec::new());
    for round in 0..8i64 {
        // Each round: a delete and a full compaction start together.
        let id = round * 23 + 5;
        let compact = spawn(&["compact", &t, "--min-file-size", "1mb"]);
        let where_ = format!("id = {id}");
        let delete = spawn(&["delete", &t, "--where", &where_]);
        let (c, d) = (compact.wait_with_output().unwrap(), delete.wait_with_output().unwrap());
        assert!(c.status.success(), "compaction: {}", String::from_utf8_lossy(&c.stderr));
        if !d.status.success() {
            // Losing to the compaction is a clean conflict; the retry then applies.
            assert!(String::from_utf8_lossy(&d.stderr).contains("conflict"), "{}", String::from_utf8_lossy(&d.stderr));
            conflicts += 1;
            assert_eq!(run(&["delete", &t, "--where", &where_])["rowsDeleted"], 1);
        }
        deleted.push(id);
        let expected: Vec<i64> = (0..200).filter(|i| !deleted.contains(i)).collect();
        assert_eq!(ids(&table), expected, "round {round}: no deleted row comes back, none is lost");
    }
    println!("{conflicts} deletes lost to a concurrent compaction and were retried");
    if let Some(k) = kernel_ids(&table) {
        assert_eq!(k, (0..200).filter(|i| !deleted.contains(i)).collect::<Vec<_>>());
    }
}
