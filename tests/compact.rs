//! The compactor: DV purge on copies of the corpus's DV tables with live rows unchanged and
//! read identically by the reference reader; compaction beside concurrent writers; no change
//! rows from compaction commits; dry runs write nothing.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{copy_corpus_table, deltabus, kernel_oracle};

fn sorted_rows(table: &Path) -> Vec<String> {
    let out = deltabus(&["cat", table.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut rows: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    rows.sort();
    rows
}

fn compact(table: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["compact", table.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = deltabus(&args);
    assert!(out.status.success(), "compact: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn files(table: &Path) -> Value {
    serde_json::from_slice(&deltabus(&["files", table.to_str().unwrap()]).stdout).unwrap()
}

fn kernel_rows_match(table: &Path, ours: &[String]) {
    let Some(oracle) = kernel_oracle() else { return };
    let out = Command::new(oracle).arg("rows").arg(table).output().unwrap();
    assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
    let cmp = crate::compare::rows(ours.join("\n").as_bytes(), &out.stdout, &[]);
    assert!(cmp.is_ok(), "kernel reads the compacted table differently: {}", cmp.unwrap_err());
}

#[test]
fn purges_deletion_vectors_on_corpus_tables() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "table-with-dv-small",
        "dv-partitioned-with-checkpoint",
        "cdf-table-with-cdc-and-dvs",
        "log-replay-dv-key-cases",
    ] {
        let table = copy_corpus_table(name, dir.path());
        let before = sorted_rows(&table);
        let dvs_before = files(&table)["files"].as_array().unwrap().iter().filter(|f| f["dv"] == true).count();
        assert!(dvs_before > 0, "{name} has DVs to purge");
        let dry = compact(&table, &["--dry-run"]);
        assert_eq!(dry["versions"], serde_json::json!([]));
        let version_before = files(&table)["version"].clone();
        let report = compact(&table, &[]);
        assert!(report["dvRowsPurged"].as_i64().unwrap() > 0, "{name}: {report}");
        assert_eq!(report["abandoned"], serde_json::json!([]));
        let after = sorted_rows(&table);
        assert_eq!(after, before, "{name}: live rows changed");
        let f = files(&table);
        assert!(f["files"].as_array().unwrap().iter().all(|f| f["dv"] == false), "{name}: DVs remain: {f}");
        assert!(f["version"].as_u64() > version_before.as_u64());
        kernel_rows_match(&table, &after);
        // The change feed sees nothing in the compaction commits.
        let first = report["versions"][0].as_u64().unwrap().to_string();
        let feed = deltabus(&["changes", table.to_str().unwrap(), "--from", &first]);
        assert!(feed.status.success(), "{}", String::from_utf8_lossy(&feed.stderr));
        assert!(feed.stdout.is_empty(), "{name}: compaction emitted change rows");
    }
}

fn spawn_write(table: &Path, input: String) -> std::process::Child {
    // The first write creates the table partitioned by `p`; later ones append.
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .arg("write")
        .arg(table)
        .args(["--partition-by", "p"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child
}

#[test]
fn compacts_beside_concurrent_writers() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let mut expected = 0;
    for batch in 0..20 {
        let input: String =
            (0..50).map(|n| format!("{{\"w\":\"init\",\"b\":{batch},\"n\":{n},\"p\":\"p{}\"}}\n", n % 2)).collect();
        let out = spawn_write(&table, input);
        let args_ok = out.wait_with_output().unwrap();
        assert!(args_ok.status.success(), "{}", String::from_utf8_lossy(&args_ok.stderr));
        expected += 50;
    }
    // Writers keep appending while the compactor runs.
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let table = table.clone();
            std::thread::spawn(move || {
                for batch in 0..8 {
                    let input: String = (0..25)
                        .map(|n| format!("{{\"w\":\"w{w}\",\"b\":{batch},\"n\":{n},\"p\":\"p{}\"}}\n", n % 2))
                        .collect();
                    let out = spawn_write(&table, input).wait_with_output().unwrap();
                    assert!(out.status.success(), "writer: {}", String::from_utf8_lossy(&out.stderr));
                }
            })
        })
        .collect();
    let report = compact(&table, &[]);
    for w in writers {
        w.join().unwrap();
    }
    expected += 3 * 8 * 25;
    assert!(report["filesIn"].as_u64().unwrap() >= 20, "{report}");
    assert_eq!(report["abandoned"], serde_json::json!([]), "blind appends never conflict with compaction");
    let rows = sorted_rows(&table);
    assert_eq!(rows.len(), expected, "no row lost or duplicated");
    let mut dedup = rows.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), rows.len());
    kernel_rows_match(&table, &rows);
    // Each partition's 20 initial small files became one.
    let compacted = files(&table)["files"].as_array().unwrap().len();
    assert!(compacted <= 2 + 3 * 8 * 2, "{compacted} files");
    // The Python package reads the compacted table identically.
    if let Ok(py) = std::env::var("DELTABUS_TEST_PYTHON") {
        let script = "import sys, json\nfrom deltalake import DeltaTable\nprint(len(DeltaTable(sys.argv[1]).to_pyarrow_table()))";
        let out = crate::support::run_python(&py, script, &[table.as_os_str()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expected.to_string());
    }
}

#[test]
fn partition_predicate_limits_the_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    for b in 0..4 {
        let input: String = (0..10).map(|n| format!("{{\"b\":{b},\"n\":{n},\"p\":\"p{}\"}}\n", n % 2)).collect();
        assert!(spawn_write(&table, input).wait_with_output().unwrap().status.success());
    }
    let report = compact(&table, &["--where", "p = 'p0'"]);
    assert_eq!(report["filesIn"], 4);
    let f = files(&table);
    let in_p1 = f["files"].as_array().unwrap().iter().filter(|f| f["partitionValues"]["p"] == "p1").count();
    assert_eq!(in_p1, 4, "the other partition is untouched");
    let out = deltabus(&["compact", table.to_str().unwrap(), "--where", "n = 3"]);
    crate::support::assert_clean_failure(&out, "non-partition predicate");
}
