//! UniForm: Iceberg metadata beside the Delta log, judged by Iceberg readers nobody here
//! wrote (pyiceberg's `StaticTable`, DuckDB's iceberg extension), against `deltabus cat` at
//! every converted version: appends over several commits, Unicode column names and partition
//! values, schema evolution (old files read the new column as null), copy-on-write deletes, a
//! compaction (a replace snapshot with the same rows), a writer killed between the Delta
//! commit and the Iceberg metadata (caught up by the next commit or `deltabus uniform`), and
//! store faults under the conversion (the pointer always opens a complete snapshot).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::python::{compare_rows, iceberg_rows, python};
use crate::support::{assert_clean_failure, deltabus, kernel_oracle, required, run_json, write_jsonl};

const UNIFORM: &[&str] = &["--property", "delta.universalFormat.enabledFormats=iceberg"];

fn ok(out: &Output) -> Value {
    assert!(out.status.success(), "deltabus failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(out.stdout.split(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap_or(b"null")).unwrap()
}

fn cat(table: &Path, version: Option<u64>) -> Vec<u8> {
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
fn current_metadata(table: &Path) -> std::path::PathBuf {
    let hint = std::fs::read_to_string(table.join("metadata/version-hint.text")).expect("version-hint.text");
    table.join(format!("metadata/v{}.metadata.json", hint.trim()))
}

fn metadata(table: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(current_metadata(table)).unwrap()).unwrap()
}

/// Every Iceberg reader sees what `deltabus cat` prints at the version each snapshot mirrors,
/// for every snapshot of the current metadata.
pub(crate) fn assert_readers_agree(py: &str, table: &Path) {
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

pub(crate) fn python_or_skip() -> Option<String> {
    let py = python();
    required(py.is_some(), "DELTABUS_TEST_PYTHON is not set", "scripts/setup.sh installs pyiceberg and duckdb")
        .then_some(())?;
    py
}

#[test]
fn uniform_tables_read_alike_in_iceberg_and_delta_readers() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let mut args = UNIFORM.to_vec();
    args.extend(["--partition-by", "région"]);
    let created = ok(&write_jsonl(&table, &args, "{\"id\":1,\"région\":\"é\",\"名前\":\"一\",\"n\":1.5}\n{\"id\":2,\"région\":\"日本\",\"名前\":\"二\",\"n\":2.5}\n"));
    assert_eq!(created["version"], 0);
    let described = run_json(&["describe", table.to_str().unwrap()]);
    let features: Vec<&str> =
        described["protocol"]["writerFeatures"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(features.contains(&"icebergCompatV2") && features.contains(&"columnMapping"), "{features:?}");
    assert_eq!(described["iceberg"]["deltaVersion"], 0);
    assert_eq!(described["iceberg"]["behind"], 0);
    for i in 3..6 {
        let rows = format!(
            "{{\"id\":{i},\"région\":\"é\",\"名前\":\"x{i}\",\"n\":{i}.0}}\n{{\"id\":{},\"région\":\"é\",\"名前\":\"w\",\"n\":1e3}}\n{{\"id\":{},\"région\":null,\"名前\":\"y\",\"n\":0.5}}\n",
            i + 100,
            i * 10
        );
        ok(&write_jsonl(&table, &[], &rows));
    }
    assert_readers_agree(&py, &table);
    // A new column mid-stream: old files read it as null.
    ok(&write_jsonl(
        &table,
        &["--merge-schema"],
        "{\"id\":7,\"région\":\"日本\",\"名前\":\"新\",\"n\":7.0,\"extra\":\"ü\"}\n",
    ));
    let meta = metadata(&table);
    assert_eq!(meta["schemas"].as_array().unwrap().len(), 2, "the evolved schema is appended");
    assert_readers_agree(&py, &table);
    // Copy-on-write delete: no deletion vectors on a UniForm table.
    let deleted = ok(&deltabus(&["delete", table.to_str().unwrap(), "--where", "id = 3 OR id = 40"]));
    assert_eq!(deleted["mode"], "copy-on-write");
    assert_eq!(metadata(&table)["snapshots"].as_array().unwrap().last().unwrap()["summary"]["operation"], "overwrite");
    assert_readers_agree(&py, &table);
    // Compaction: a replace snapshot holding the same rows.
    let before = cat(&table, None);
    ok(&deltabus(&["compact", table.to_str().unwrap()]));
    let last = metadata(&table)["snapshots"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["summary"]["operation"], "replace");
    compare_rows(&before, &cat(&table, None)).unwrap();
    assert_readers_agree(&py, &table);
    // Partition values are materialised in the data files (icebergCompatV2).
    let summary = &last["summary"];
    assert_eq!(summary["delta-version"], run_json(&["describe", table.to_str().unwrap()])["version"].to_string());
}

#[test]
fn uniform_turned_on_for_an_existing_table_reads_alike() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    // A plain Delta table: no column mapping, partition values only in the log, files without
    // field ids, a nested struct, Unicode names and values, two commits.
    ok(&write_jsonl(
        &table,
        &["--partition-by", "région"],
        "{\"id\":1,\"région\":\"é\",\"名前\":\"一\",\"s\":{\"x\":1.5,\"ü\":\"a\"}}\n{\"id\":2,\"région\":\"日本\",\"名前\":\"二\",\"s\":null}\n",
    ));
    ok(&write_jsonl(&table, &[], "{\"id\":3,\"région\":null,\"名前\":\"三\",\"s\":{\"x\":-2.0,\"ü\":null}}\n"));
    let out = deltabus(&["uniform", t]);
    assert_clean_failure(&out, "--enable");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--enable"), "the error names the way to turn it on");
    let before = cat(&table, None);
    let enabled = ok(&deltabus(&["uniform", "--enable", t]));
    assert_eq!(enabled["enabledAt"], 2, "{enabled}");
    assert_eq!(enabled["deltaVersion"], 2);
    compare_rows(&before, &cat(&table, None)).unwrap();
    let d = run_json(&["describe", t]);
    let features: Vec<&str> =
        d["protocol"]["writerFeatures"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(features.contains(&"icebergCompatV2") && features.contains(&"columnMapping"), "{features:?}");
    assert_eq!(d["iceberg"]["behind"], 0);
    // The files written before read by name on both sides.
    assert_readers_agree(&py, &table);
    // New files carry field ids and their partition values.
    ok(&write_jsonl(&table, &[], "{\"id\":4,\"région\":\"é\",\"名前\":\"四\",\"s\":{\"x\":4.0,\"ü\":\"ö\"}}\n"));
    ok(&write_jsonl(&table, &["--merge-schema"], "{\"id\":5,\"région\":\"日本\",\"名前\":\"五\",\"new\":true}\n"));
    assert_readers_agree(&py, &table);
    let again = ok(&deltabus(&["uniform", "--enable", t]));
    assert_eq!((again["enabledAt"].clone(), again["converted"].clone()), (Value::Null, Value::Bool(false)));

    // Deletion vectors in live files are refused until a compaction rewrites them.
    let dv = dir.path().join("dv");
    let d = dv.to_str().unwrap();
    ok(&write_jsonl(&dv, &["--property", "delta.enableDeletionVectors=true"], "{\"id\":1}\n{\"id\":2}\n"));
    assert_eq!(ok(&deltabus(&["delete", d, "--where", "id = 1"]))["mode"], "deletion-vectors");
    let out = deltabus(&["uniform", "--enable", d]);
    assert_clean_failure(&out, "deletion vectors");
    assert!(String::from_utf8_lossy(&out.stderr).contains("deletion vectors"));
    assert_eq!(run_json(&["describe", d])["version"], 1, "nothing committed");
    ok(&deltabus(&["compact", d]));
    ok(&deltabus(&["uniform", "--enable", d]));
    assert_eq!(run_json(&["describe", d])["properties"]["delta.enableDeletionVectors"], "false");
    assert_readers_agree(&py, &dv);
    let deleted = ok(&deltabus(&["delete", d, "--where", "id = 2"]));
    assert_eq!(deleted["mode"], "copy-on-write", "deletes rewrite files once UniForm is on");
    assert_readers_agree(&py, &dv);
}

/// `deltabus write` with `input`, dying at crash point `point`.
fn crashing_write(table: &Path, point: &str, input: &str) -> Output {
    write_with_env(table, ("DELTABUS_CRASH_AT", point), input)
}

/// `deltabus write` with `input` and one environment variable set (a test hook).
fn write_with_env(table: &Path, (key, value): (&str, &str), input: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["write", table.to_str().unwrap()])
        .env(key, value)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_writer_killed_between_commit_and_conversion_is_caught_up() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok(&write_jsonl(&table, UNIFORM, "{\"id\":1,\"s\":\"a\"}\n"));
    for point in ["commit.before_uniform", "uniform.before_metadata"] {
        let out = crashing_write(&table, point, "{\"id\":2,\"s\":\"b\"}\n");
        assert!(!out.status.success(), "{point}: the process was to die");
        let d = run_json(&["describe", table.to_str().unwrap()]);
        assert_eq!(d["iceberg"]["behind"], 1, "{point}: the Delta commit landed, its Iceberg metadata did not: {d}");
        // Readers of the pointer still see the previous version, complete.
        assert_readers_agree(&py, &table);
        let caught = ok(&deltabus(&["uniform", table.to_str().unwrap()]));
        assert_eq!(caught["converted"], true);
        assert_eq!(caught["deltaVersion"], d["version"]);
        assert_eq!(ok(&deltabus(&["uniform", table.to_str().unwrap()]))["converted"], false, "nothing left to do");
        assert_readers_agree(&py, &table);
    }
    // The next commit also catches up what an earlier death left behind.
    let out = crashing_write(&table, "commit.before_uniform", "{\"id\":8,\"s\":\"y\"}\n");
    assert!(!out.status.success());
    assert_eq!(run_json(&["describe", table.to_str().unwrap()])["iceberg"]["behind"], 1);
    ok(&write_jsonl(&table, &[], "{\"id\":9,\"s\":\"z\"}\n"));
    assert_eq!(run_json(&["describe", table.to_str().unwrap()])["iceberg"]["behind"], 0);
    assert_readers_agree(&py, &table);
}

#[test]
fn store_faults_under_the_conversion_never_corrupt_the_pointer() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    ok(&write_jsonl(&table, UNIFORM, "{\"id\":0}\n"));
    for i in 1..12 {
        let faults = format!("rate=0.15,seed={i}");
        let out = write_with_env(&table, ("DELTABUS_FAULTS", &faults), &format!("{{\"id\":{i}}}\n"));
        // Whatever happened, the pointer opens a complete snapshot that matches its Delta version.
        if table.join("metadata/version-hint.text").exists() {
            let meta = metadata(&table);
            let version: u64 = meta["snapshots"].as_array().unwrap().last().unwrap()["summary"]["delta-version"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            let got = iceberg_rows(&py, &current_metadata(&table), "pyiceberg", None).unwrap();
            compare_rows(&cat(&table, Some(version)), &got).unwrap_or_else(|e| panic!("after write {i}: {e}"));
        }
        let _ = out;
    }
    let caught = ok(&deltabus(&["uniform", table.to_str().unwrap()]));
    assert_eq!(caught["deltaVersion"], run_json(&["describe", table.to_str().unwrap()])["version"]);
    assert_readers_agree(&py, &table);
}

#[test]
fn what_iceberg_cannot_hold_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for (props, input, needle) in [
        (&["delta.enableDeletionVectors=true"][..], "{\"id\":1}\n", "deletion vectors"),
        (&["delta.enableIcebergCompatV2=false"], "{\"id\":1}\n", "enableIcebergCompatV2"),
        (&["delta.columnMapping.mode=none"], "{\"id\":1}\n", "column mapping"),
        (&[], "{\"id\":1,\"tags\":[\"a\"]}\n", "array"),
    ] {
        let table = dir.path().join(format!("t{}", needle.len()));
        let mut args = UNIFORM.to_vec();
        for p in props {
            args.extend(["--property", p]);
        }
        let out = write_jsonl(&table, &args, input);
        assert_clean_failure(&out, needle);
        assert!(String::from_utf8_lossy(&out.stderr).contains(needle), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!table.join("_delta_log").exists() && !table.join("metadata").exists(), "{props:?}: nothing written");
    }
    let out = deltabus(&["uniform", dir.path().join("nope").to_str().unwrap()]);
    assert_clean_failure(&out, "not a table");
}
