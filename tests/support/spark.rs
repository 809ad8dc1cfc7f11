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

/// `rows` with null values left out (readers differ in printing or omitting them), sorted by
/// their JSON text.
pub fn sorted(rows: Vec<Value>) -> Vec<Value> {
    let mut rows: Vec<Value> = rows
        .into_iter()
        .map(|mut r| {
            if let Some(o) = r.as_object_mut() {
                o.retain(|_, v| !v.is_null());
            }
            r
        })
        .collect();
    rows.sort_by_key(|r| r.to_string());
    rows
}
