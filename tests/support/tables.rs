//! Tables for the tests: their live rows through `deltabus cat`, add actions, and an
//! in-process builder of tables from JSON-lines commits.

use deltabus::delta::actions::{Action, Add};
use serde_json::Value;

/// Live rows of a table through the `deltabus cat` command.
pub fn rows(table: &str) -> Vec<Value> {
    let out = crate::support::deltabus(&["cat", table]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

pub fn add(path: &str) -> Action {
    Action::Add(Add {
        path: path.into(),
        partition_values: Default::default(),
        size: 1,
        modification_time: 1,
        data_change: true,
        stats: Some(r#"{"numRecords":1}"#.into()),
        tags: None,
        deletion_vector: None,
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
    })
}

/// A table built in-process at `url` (`memory://…` for a fixture that never touches the disk)
/// from JSON-lines commits: the first creates it (schema inferred), each further one appends.
pub async fn table_of_commits(url: &str, commits: &[&str]) -> deltabus::storage::Table {
    let table = deltabus::storage::Table::open(url, deltabus::storage::StorageOptions::default()).unwrap();
    for lines in commits {
        deltabus::ops::write::write_json_lines(&table, lines.as_bytes(), &Default::default()).await.unwrap();
    }
    table
}

/// Appends JSON lines to `table` with `deltabus write` (one commit; a lost race is retried by
/// the committer, never surfaced).
pub fn write_lines(table: &str, lines: &str) {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["write", table])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The sorted `id`s of a table's rows (`deltabus cat`).
pub fn ids(table: &str) -> Vec<i64> {
    ids_printed(&crate::support::deltabus(&["cat", table]))
}

/// The sorted `id`s of JSON-lines output (blank lines skipped).
pub fn ids_in(lines: &[u8]) -> Vec<i64> {
    let mut ids: Vec<i64> = String::from_utf8_lossy(lines)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

/// The sorted `id`s a command printed, once it succeeded.
pub fn ids_printed(out: &std::process::Output) -> Vec<i64> {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    ids_in(&out.stdout)
}

/// Live rows of a table through `deltabus cat`, sorted by `id`.
pub fn rows_by_id(table: &str) -> Vec<Value> {
    let mut rows = rows(table);
    rows.sort_by_key(|r| r["id"].as_i64());
    rows
}

/// Appends JSON lines with `deltabus write <args>` and asserts that it succeeded.
pub fn write_ok(table: &std::path::Path, args: &[&str], input: &str) {
    let out = crate::support::write_jsonl(table, args, input);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The commits of a local table that change its schema (`metaData`), by version, each with the
/// number of files it adds: the one schema-change rule says a writer of rows changes the
/// schema only in the commit of the rows that need it, so none of them adds zero files.
pub fn schema_changes(table: &std::path::Path) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(table.join("_delta_log")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(version) = name.strip_suffix(".json").and_then(|v| v.parse::<u64>().ok()) else { continue };
        let text = std::fs::read_to_string(&path).unwrap();
        let actions: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        if actions.iter().any(|a| a.get("metaData").is_some()) {
            out.push((version, actions.iter().filter(|a| a.get("add").is_some()).count()));
        }
    }
    out.sort_unstable();
    out
}

/// Waits until `table` holds at least `n` rows (by its files' record counts; an append-only
/// table's live rows): the condition a test producing in bursts waits on between bursts.
pub async fn wait_for_rows_in(table: &str, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Ok(t) = deltabus::storage::Table::open(table, Default::default()) {
            if let Ok(s) = t.snapshot(None).await {
                let rows: i64 = s
                    .files()
                    .iter()
                    .filter_map(|f| f.stats.as_deref())
                    .filter_map(|st| serde_json::from_str::<Value>(st).ok())
                    .filter_map(|v| v["numRecords"].as_i64())
                    .sum();
                if rows >= i64::try_from(n).unwrap() {
                    return;
                }
            }
        }
        assert!(std::time::Instant::now() < deadline, "{table} never held {n} rows");
        // A pause about time: the poll interval of a wait on another task's commits.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
