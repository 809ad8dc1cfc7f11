//! Conformance: every table of `tests/data/conformance/tables` is read by the `deltabus` binary
//! and compared with the reference reader's answers (`expected/`, written by kernel-oracle;
//! `scripts/conformance-expected.sh` regenerates them) through `compare.rs`:
//! rows at every version the reference reconstructed, live files at every version, and
//! refusals for tables the reference refuses. Prints one line per table.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::support::{assert_clean_failure, conformance_dir, deltabus};

/// Tables whose rows are not compared, with the reason. Files and refusals still are.
const ROW_EXCEPTIONS: &[(&str, &str)] = &[];

fn compare(kind: &str, expected: &Path, actual: &[u8]) -> Result<(), String> {
    let want = std::fs::read(expected).map_err(|e| format!("{}: {e}", expected.display()))?;
    match kind {
        "files" => crate::compare::files(&want, actual),
        _ => crate::compare::rows(&want, actual, &[]),
    }
    .map(|_| ())
}

fn check_table(name: &str) -> Result<String, String> {
    let dir = conformance_dir();
    let table = dir.join("tables").join(name);
    let expected = dir.join("expected").join(name);
    let table_arg = table.to_str().ok_or("non-UTF-8 path")?;
    let meta: Value = serde_json::from_slice(&std::fs::read(expected.join("meta.json")).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if meta.get("error").and_then(Value::as_bool) == Some(true) {
        for cmd in ["files", "cat", "describe"] {
            let out = deltabus(&[cmd, table_arg]);
            if out.status.success() {
                return Err(format!("`{cmd}` accepted a table the reference refuses"));
            }
            assert_clean_failure(&out, &format!("{name} {cmd}"));
        }
        return Ok("refused, as the reference".into());
    }
    let versions: BTreeMap<u64, String> = meta["versions"]
        .as_object()
        .ok_or("meta.json lacks versions")?
        .iter()
        .map(|(k, v)| (k.parse().unwrap_or(u64::MAX), v.as_str().unwrap_or("").to_string()))
        .collect();
    let row_exception = ROW_EXCEPTIONS.iter().find(|(t, _)| *t == name).map(|(_, why)| *why);
    let (mut rows_checked, mut files_checked, mut skipped) = (0, 0, 0);
    for (version, status) in &versions {
        let v = version.to_string();
        if status == "unreadable" {
            skipped += 1;
            continue;
        }
        let files_out = deltabus(&["files", table_arg, "--version", &v]);
        if !files_out.status.success() {
            return Err(format!("v{v} files failed: {}", String::from_utf8_lossy(&files_out.stderr).trim()));
        }
        compare("files", &expected.join(format!("v{v}.files.json")), &files_out.stdout)
            .map_err(|e| format!("v{v} files: {e}"))?;
        files_checked += 1;
        if status == "ok" && row_exception.is_none() {
            let rows_out = deltabus(&["cat", table_arg, "--version", &v]);
            if !rows_out.status.success() {
                return Err(format!("v{v} cat failed: {}", String::from_utf8_lossy(&rows_out.stderr).trim()));
            }
            compare("rows", &expected.join(format!("v{v}.rows.jsonl")), &rows_out.stdout)
                .map_err(|e| format!("v{v} rows: {e}"))?;
            rows_checked += 1;
        }
    }
    let mut summary = format!("{files_checked} file sets, {rows_checked} row sets");
    if skipped > 0 {
        summary += &format!(", {skipped} versions the reference could not read");
    }
    if let Some(why) = row_exception {
        summary += &format!(" (rows not compared: {why})");
    }
    Ok(summary)
}

#[test]
fn conformance_corpus() {
    let dir = conformance_dir();
    let mut names: Vec<String> = std::fs::read_dir(dir.join("expected"))
        .unwrap_or_else(|e| panic!("conformance corpus not found at {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    assert!(names.len() >= 100, "corpus looks incomplete: {} tables", names.len());
    let filter = std::env::var("CONFORMANCE_FILTER").ok();
    let mut failures = Vec::new();
    let mut passed = 0;
    for name in names.iter().filter(|n| filter.as_ref().is_none_or(|f| n.contains(f.as_str()))) {
        match check_table(name) {
            Ok(summary) => {
                passed += 1;
                println!("conformance {name}: pass ({summary})");
            }
            Err(why) => {
                println!("conformance {name}: FAIL {why}");
                failures.push(format!("{name}: {why}"));
            }
        }
    }
    println!("conformance: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} tables differ from the reference:\n{}", failures.len(), failures.join("\n"));
}
