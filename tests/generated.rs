//! Derived partition columns as Delta generated columns: `date(ts)`/`hour(ts)` partitions that
//! kernel-oracle and Python `deltalake` read (and `deltalake` appends to), appends to a
//! Spark-style table with generated columns, and refusals: a given value that disagrees, an
//! expression deltabus cannot compute.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::python;
use crate::support::{assert_clean_failure, deltabus, kernel_oracle, write_jsonl};

const SCHEMA: &str = r#"{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":true,"metadata":{}},
 {"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}"#;

fn lines(n: i64) -> String {
    // Two days, three hours, and a null timestamp.
    (0..n)
        .map(|i| match i % 4 {
            3 => format!("{{\"id\":{i},\"ts\":null}}\n"),
            k => {
                let ts = ["2024-02-28T22:15:00Z", "2024-02-29T23:15:00Z", "2024-02-29T00:15:00Z"][k as usize];
                format!("{{\"id\":{i},\"ts\":\"{ts}\"}}\n")
            }
        })
        .collect()
}

fn files(table: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&deltabus(&["files", table.to_str().unwrap()]).stdout).unwrap();
    v.as_array().cloned().unwrap_or_else(|| v["files"].as_array().cloned().unwrap_or_default())
}

fn describe(table: &Path) -> Value {
    let out = deltabus(&["describe", table.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn date_and_hour_partitions_are_generated_columns_both_readers_read() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events");
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let out = write_jsonl(
        &table,
        &["--schema", schema.to_str().unwrap(), "--partition-by", "date(ts),hour(ts) as h"],
        &lines(40),
    );
    assert!(out.status.success(), "write: {}", String::from_utf8_lossy(&out.stderr));

    // The schema carries Spark's expressions; the protocol the writer feature.
    let d = describe(&table);
    let text = d.to_string();
    assert!(text.contains("CAST(ts AS DATE)") && text.contains("date_format(ts, 'yyyy-MM-dd-HH')"), "{text}");
    assert!(text.contains("generatedColumns"), "{text}");

    // Files are partitioned by the computed values (null ts → null partitions).
    let mut dirs: Vec<String> = files(&table)
        .iter()
        .map(|f| {
            let p = f["path"].as_str().unwrap_or_default();
            p.rsplit_once('/').map_or("", |(d, _)| d).to_string()
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(
        dirs,
        vec![
            "ts_date=2024-02-28/h=2024-02-28-22",
            "ts_date=2024-02-29/h=2024-02-29-00",
            "ts_date=2024-02-29/h=2024-02-29-23",
            "ts_date=__HIVE_DEFAULT_PARTITION__/h=__HIVE_DEFAULT_PARTITION__",
        ],
        "{dirs:?}"
    );

    let expected = |id: i64, date: &str, hour: &str| (id, date.to_string(), hour.to_string());
    let want: Vec<(i64, String, String)> = (0..40)
        .map(|i| match i % 4 {
            0 => expected(i, "2024-02-28", "2024-02-28-22"),
            1 => expected(i, "2024-02-29", "2024-02-29-23"),
            2 => expected(i, "2024-02-29", "2024-02-29-00"),
            _ => expected(i, "null", "null"),
        })
        .collect();
    let pick = |rows: &[Value]| {
        let mut v: Vec<(i64, String, String)> = rows
            .iter()
            .map(|r| {
                let s = |k: &str| match &r[k] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (r["id"].as_i64().unwrap(), s("ts_date"), s("h"))
            })
            .collect();
        v.sort();
        v
    };
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        let rows: Vec<Value> =
            String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(pick(&rows), want, "kernel-oracle");
    }
    let Some(py) = python() else { return };
    let rows = crate::support::deltalake_rows(&py, &table);
    let rows: Vec<Value> = String::from_utf8_lossy(&rows).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(pick(&rows), want, "deltalake");

    // deltalake appends to a `date(ts)` table (computing the column itself: DataFusion reads
    // `CAST(ts AS DATE)` as Spark does; its `date_format` takes chrono patterns, not Spark's,
    // so hour tables are not appended to by deltalake) and deltabus reads the row.
    let daily = dir.path().join("daily");
    let out = write_jsonl(&daily, &["--schema", schema.to_str().unwrap(), "--partition-by", "date(ts)"], &lines(4));
    assert!(out.status.success(), "write: {}", String::from_utf8_lossy(&out.stderr));
    let script = r#"
import sys, datetime, pyarrow as pa
from deltalake import DeltaTable, write_deltalake
dt = DeltaTable(sys.argv[1])
print(sorted(dt.protocol().writer_features or []))
t = pa.table({"id": pa.array([100], pa.int64()),
              "ts": pa.array([datetime.datetime(2025, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)], pa.timestamp("us", "UTC"))})
write_deltalake(sys.argv[1], t, mode="append")
"#;
    let out = crate::support::run_python(&py, script, &[daily.as_os_str()]);
    assert!(out.status.success(), "deltalake append: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("generatedColumns"));
    let cat = deltabus(&["cat", daily.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&cat.stdout);
    let row = text.lines().find(|l| l.contains("\"id\":100")).unwrap_or_default();
    assert!(row.contains("\"ts_date\":\"2025-01-02\""), "{row}");
    assert_eq!(text.lines().count(), 5);
    // ... and deltabus appends after it.
    let out = write_jsonl(&daily, &[], "{\"id\":101,\"ts\":\"2025-01-03T00:00:00Z\"}\n");
    assert!(out.status.success(), "append after deltalake: {}", String::from_utf8_lossy(&out.stderr));
}

/// A table as Spark creates it (`yr INT GENERATED ALWAYS AS (YEAR(ts))`, writer version 4).
fn spark_style_table(dir: &Path, expression: &str) -> std::path::PathBuf {
    let table = dir.join(format!("spark-{}", expression.len()));
    let log = table.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let schema = serde_json::json!({"type":"struct","fields":[
        {"name":"id","type":"long","nullable":true,"metadata":{}},
        {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
        {"name":"yr","type":"integer","nullable":true,"metadata":{"delta.generationExpression": expression}}]});
    let commit = [
        serde_json::json!({"protocol":{"minReaderVersion":1,"minWriterVersion":4}}),
        serde_json::json!({"metaData":{"id":"5b1e0c5e-0000-4000-8000-000000000001","format":{"provider":"parquet","options":{}},
            "schemaString": schema.to_string(),"partitionColumns":["yr"],"configuration":{},"createdTime":1700000000000i64}}),
    ];
    let text: String = commit.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(log.join("00000000000000000000.json"), text).unwrap();
    table
}

#[test]
fn appends_to_spark_tables_compute_generated_columns_and_refuse_disagreement() {
    let dir = tempfile::tempdir().unwrap();
    let table = spark_style_table(dir.path(), "YEAR(ts)");
    let out = write_jsonl(
        &table,
        &[],
        "{\"id\":1,\"ts\":\"2023-12-31T23:59:59Z\"}\n{\"id\":2,\"ts\":\"2024-01-01T00:00:00Z\"}\n",
    );
    assert!(out.status.success(), "append: {}", String::from_utf8_lossy(&out.stderr));
    let mut dirs: Vec<String> = files(&table)
        .iter()
        .map(|f| f["path"].as_str().unwrap_or_default().split('/').next().unwrap_or_default().to_string())
        .collect();
    dirs.sort();
    assert_eq!(dirs, vec!["yr=2023", "yr=2024"]);

    // A given value that agrees is kept; one that differs refuses the write, commits nothing.
    let out = write_jsonl(&table, &[], "{\"id\":3,\"ts\":\"2022-05-05T00:00:00Z\",\"yr\":2022}\n");
    assert!(out.status.success(), "agreeing value: {}", String::from_utf8_lossy(&out.stderr));
    let before = describe(&table)["version"].clone();
    let out = write_jsonl(&table, &[], "{\"id\":4,\"ts\":\"2022-05-05T00:00:00Z\",\"yr\":1999}\n");
    assert_clean_failure(&out, "a generated value that disagrees");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"yr\"") && err.contains("1999") && err.contains("YEAR(ts)"), "{err}");
    assert_eq!(describe(&table)["version"], before, "nothing committed");
    let out = deltabus(&["cat", table.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);

    // An expression deltabus cannot compute: refused by name before anything is written.
    let other = spark_style_table(dir.path(), "id % 7");
    let out = write_jsonl(&other, &[], "{\"id\":1,\"ts\":null}\n");
    assert_clean_failure(&out, "an expression deltabus cannot compute");
    assert!(String::from_utf8_lossy(&out.stderr).contains("`id % 7`"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1, "no data file written");
}

/// A pipeline partitioned by `date(ts)`: the new table has the generated column, every row
/// lands in its day, and a record giving the column a value its timestamp disagrees with is a
/// dead letter naming both values (the rest of its batch commits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_partitions_by_day_and_dead_letters_disagreeing_rows() {
    use deltabus::app::service::{run, ServiceOptions};
    use deltabus::storage::StorageOptions;
    let cluster = rdkafka::mocking::MockCluster::new(1).unwrap();
    cluster.create_topic("clicks", 2, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let mut records: Vec<(i32, Option<String>, Option<String>)> = (0..200)
        .map(|i| {
            let day = 1 + i % 3;
            (i % 2, None, Some(format!("{{\"id\":{i},\"ts\":\"2024-03-0{day}T23:59:59.999999Z\"}}")))
        })
        .collect();
    records.push((0, None, Some("{\"id\":999,\"ts\":\"2024-03-01T10:00:00Z\",\"ts_date\":\"2024-03-02\"}".into())));
    crate::support::produce(&brokers, "clicks", &records).await;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("clicks");
    let dead = dir.path().join("dead");
    let mut p = crate::support::pipeline(&brokers, "clicks", table.to_str().unwrap());
    p.kafka.stop_at_end = true;
    p.schema = Some(SCHEMA.into());
    p.partition_by = vec!["date(ts)".into()];
    p.dead_letter.table = Some(dead.to_string_lossy().into_owned());
    let opts = ServiceOptions {
        pipelines: vec![p.validate("daily").unwrap()],
        storage: StorageOptions::default(),
        metrics_addr: None,
        shutdown_timeout: std::time::Duration::from_secs(30),
    };
    let (_never, stop) = tokio::sync::watch::channel(false);
    let reports = tokio::time::timeout(
        std::time::Duration::from_secs(90),
        run(opts, std::sync::Arc::new(deltabus::metrics::Metrics::default()), stop),
    )
    .await
    .expect("stops at the end")
    .unwrap();
    assert_eq!((reports["daily"].rows_committed, reports["daily"].dead_letters), (200, 1), "{reports:?}");
    drop(cluster);
    let _native = crate::support::native_clients_lock();
    let mut dirs: Vec<String> = files(&table)
        .iter()
        .map(|f| f["path"].as_str().unwrap_or_default().split('/').next().unwrap_or_default().to_string())
        .collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs, vec!["ts_date=2024-03-01", "ts_date=2024-03-02", "ts_date=2024-03-03"]);
    let out = deltabus(&["cat", dead.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ts_date") && text.contains("2024-03-02") && text.contains("CAST(ts AS DATE)"), "{text}");
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count(), 200);
        // 23:59:59.999999 UTC stays on its day.
        assert!(
            text.lines().all(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let day = v["ts"].as_str().unwrap_or_default().get(..10).unwrap_or_default().to_string();
                v["ts_date"].as_str() == Some(day.as_str())
            }),
            "{text}"
        );
    }
}

/// Rows already in a table keep their generated values when deltabus rewrites them
/// (compaction): a table whose `yr` values another engine computed differently (a session
/// time zone, say) compacts without a complaint, while a new row that disagrees is still
/// refused.
#[test]
fn compaction_keeps_stored_generated_values() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},
        {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
        {"name":"yr","type":"integer","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    // Two small files whose yr is not YEAR(ts) in UTC.
    for id in [1, 2] {
        let line = format!("{{\"id\":{id},\"ts\":\"2024-01-01T00:30:00Z\",\"yr\":2023}}\n");
        let out = write_jsonl(&table, &["--schema", schema.to_str().unwrap()], &line);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Then the column becomes generated (as an engine evaluating in UTC-1 would have it).
    let d = describe(&table);
    let version = d["version"].as_i64().unwrap() + 1;
    let mut fields: Vec<Value> = d["schema"]["fields"].as_array().unwrap().clone();
    fields[2]["metadata"] = serde_json::json!({"delta.generationExpression": "YEAR(ts)"});
    let metadata = serde_json::json!({"metaData": {
        "id": d["id"].as_str().unwrap_or("5b1e0c5e-0000-4000-8000-000000000002"),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": serde_json::json!({"type": "struct", "fields": fields}).to_string(),
        "partitionColumns": [], "configuration": {}, "createdTime": 1700000000000i64}});
    let protocol = serde_json::json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}});
    std::fs::write(table.join(format!("_delta_log/{version:020}.json")), format!("{protocol}\n{metadata}\n")).unwrap();
    let out = deltabus(&["compact", table.to_str().unwrap()]);
    assert!(out.status.success(), "compact: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(files(&table).len(), 1, "compacted into one file");
    let text = String::from_utf8_lossy(&deltabus(&["cat", table.to_str().unwrap()]).stdout).to_string();
    assert_eq!(text.matches("\"yr\":2023").count(), 2, "{text}");
    let out = write_jsonl(&table, &[], "{\"id\":3,\"ts\":\"2024-01-01T00:30:00Z\",\"yr\":2023}\n");
    assert_clean_failure(&out, "a new row that disagrees");
}
