//! Spark with Delta Lake, the reference engine: one session for the whole run
//! (`tools/spark-delta/server.py`, started by scripts/test.sh at `DELTABUS_TEST_SPARK`),
//! asked SQL over a local socket.

use std::io::{BufRead, BufReader, Write};

use serde_json::Value;

/// The Spark server's address; `None` (with a note) when it is not running, a failure when
/// emulators are required.
pub fn spark() -> Option<String> {
    crate::support::emulator("DELTABUS_TEST_SPARK")
}

/// Runs `statements` in order in the Spark session: the rows of the last one (each as Spark's
/// `to_json` object, nulls kept), or Spark's error.
pub fn spark_sql(addr: &str, statements: &[&str]) -> Result<Vec<Value>, String> {
    ask(addr, serde_json::json!({ "sql": statements }))
}

/// Runs a Structured Streaming query from the Delta table `source` into the one at `sink`
/// (checkpoint at `checkpoint`) with `trigger(availableNow)`, to the end of what the source
/// holds now.
pub fn spark_stream_once(addr: &str, source: &str, sink: &str, checkpoint: &str) -> Result<(), String> {
    ask(addr, serde_json::json!({ "stream_once": {"source": source, "sink": sink, "checkpoint": checkpoint} }))
        .map(|_| ())
}

fn ask(addr: &str, request: Value) -> Result<Vec<Value>, String> {
    let mut stream = std::net::TcpStream::connect(addr).map_err(|e| format!("Spark at {addr}: {e}"))?;
    stream.write_all(format!("{request}\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("Spark answered {line:?} ({e})"));
    match answer.get("rows") {
        Some(Value::Array(rows)) => Ok(rows.clone()),
        _ => Err(answer["error"].as_str().unwrap_or("no answer").to_string()),
    }
}

/// The rows of `SELECT * FROM delta.<table>` as Spark reads them, sorted by their JSON text.
pub fn spark_rows(addr: &str, table: &str) -> Vec<Value> {
    let rows = spark_sql(addr, &[&format!("SELECT * FROM delta.`{table}`")]).unwrap_or_else(|e| panic!("{e}"));
    sorted(rows)
}

/// Spark reads `table` row for row as `deltabus cat` does (when Spark runs).
pub fn spark_reads_as_deltabus(table: &str) {
    if let Some(spark) = spark() {
        let ours = sorted(crate::support::rows(table));
        assert_eq!(spark_rows(&spark, table), ours, "Spark reads {table} as deltabus does");
    }
}

/// `rows` with null fields left out, at every depth (readers differ in printing or omitting
/// them), sorted by their JSON text.
pub fn sorted(rows: Vec<Value>) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                o.retain(|_, v| !v.is_null());
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut rows = rows;
    rows.iter_mut().for_each(strip);
    rows.sort_by_key(|r| r.to_string());
    rows
}

/// Each row's `key` column (as JSON text) with the row id and row commit version Spark reads
/// for it (`_metadata.row_id`, `_metadata.row_commit_version`: row tracking as Spark sees it).
pub fn spark_row_ids(addr: &str, table: &str, key: &str) -> std::collections::BTreeMap<String, (i64, i64)> {
    let sql = format!(
        "SELECT `{key}` AS k, _metadata.row_id AS row_id, _metadata.row_commit_version AS v FROM delta.`{table}`"
    );
    let rows = spark_sql(addr, &[&sql]).unwrap_or_else(|e| panic!("{e}"));
    let ids: std::collections::BTreeMap<String, (i64, i64)> =
        rows.iter().map(|r| (r["k"].to_string(), (r["row_id"].as_i64().unwrap(), r["v"].as_i64().unwrap()))).collect();
    assert_eq!(ids.len(), rows.len(), "{key} is unique in {table}");
    let distinct: std::collections::BTreeSet<i64> = ids.values().map(|v| v.0).collect();
    assert_eq!(distinct.len(), ids.len(), "Spark reads a distinct row id for each row of {table}");
    ids
}
