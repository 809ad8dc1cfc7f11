//! UniForm helpers: a table's current Iceberg metadata, and the check that every Iceberg
//! reader (pyiceberg at every snapshot, DuckDB at the latest) sees what `deltabus cat` prints
//! at the Delta version each snapshot mirrors, with kernel-oracle on the Delta side.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::python::{compare_rows, iceberg_rows, python};
use crate::support::{deltabus, kernel_oracle, required};

/// `deltabus cat` of `table` (at `version`).
pub fn cat(table: &Path, version: Option<u64>) -> Vec<u8> {
    let mut args = vec!["cat".to_string(), table.to_str().unwrap().to_string()];
    if let Some(v) = version {
        args.extend(["--version".to_string(), v.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = deltabus(&args);
    assert!(out.status.success(), "cat: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The current metadata file, as the hint names it.
pub fn current_metadata(table: &Path) -> std::path::PathBuf {
    let hint = std::fs::read_to_string(table.join("metadata/version-hint.text")).expect("version-hint.text");
    table.join(format!("metadata/v{}.metadata.json", hint.trim()))
}

pub fn metadata(table: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(current_metadata(table)).unwrap()).unwrap()
}

/// Every Iceberg reader sees what `deltabus cat` prints at the version each snapshot mirrors,
/// for every snapshot of the current metadata.
pub fn assert_readers_agree(py: &str, table: &Path) {
    let meta = metadata(table);
    let file = current_metadata(table);
    let latest = meta["current-snapshot-id"].as_i64().unwrap();
    for s in meta["snapshots"].as_array().unwrap() {
        let id = s["snapshot-id"].as_i64().unwrap();
        let version: u64 = s["summary"]["delta-version"].as_str().unwrap().parse().unwrap();
        let want = cat(table, Some(version));
        let got = iceberg_rows(py, &file, "pyiceberg", Some(id)).unwrap();
        compare_rows(&want, &got).unwrap_or_else(|e| panic!("pyiceberg at snapshot {id} (Delta {version}): {e}"));
        if id == latest {
            let got = iceberg_rows(py, &file, "duckdb", None).unwrap();
            compare_rows(&want, &got).unwrap_or_else(|e| panic!("duckdb at Delta {version}: {e}"));
            // The Delta side stays readable by the reference reader (delta-rs's Python
            // reader refuses column mapping).
            if let Some(oracle) = kernel_oracle() {
                let out = Command::new(oracle).arg("rows").arg(table).output().unwrap();
                assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
                compare_rows(&cat(table, None), &out.stdout).unwrap_or_else(|e| panic!("kernel-oracle: {e}"));
            }
        }
    }
}

pub fn python_or_skip() -> Option<String> {
    let py = python();
    required(py.is_some(), "DELTABUS_TEST_PYTHON is not set", "scripts/setup.sh installs pyiceberg and duckdb")
        .then_some(())?;
    py
}
