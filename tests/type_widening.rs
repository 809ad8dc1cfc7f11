//! Type widening (`typeWidening`): a Kafka pipeline with `evolve_schema` on a table with
//! `delta.enableTypeWidening=true` widens each column to the narrowest wider type its values
//! need, in the rows' own commit, through a crash right after that commit; values no
//! automatic widening holds are dead letters naming the change that would; `deltabus alter
//! --widen` makes explicit changes and refuses what the protocol (or Iceberg, on a UniForm
//! table) forbids; deltabus reads and follows the tables Spark widens. Every table is read
//! alike by `deltabus cat`, the reference reader (delta-kernel-rs) and Spark (delta-rs refuses
//! the feature).

use serde_json::{json, Value};

use crate::support::spark::{spark, spark_sql};
use crate::support::{deltabus, emulator, kernel_oracle, rows, run_json, write_ok};

const SCHEMA: &str = r#"{"type":"struct","fields":[
 {"name":"id","type":"integer","nullable":true,"metadata":{}},
 {"name":"n","type":"byte","nullable":true,"metadata":{}},
 {"name":"d","type":"date","nullable":true,"metadata":{}},
 {"name":"m","type":"decimal(6,2)","nullable":true,"metadata":{}},
 {"name":"f","type":"float","nullable":true,"metadata":{}},
 {"name":"name","type":"string","nullable":true,"metadata":{}}]}"#;

/// The type of each top-level column and its recorded changes.
fn types(table: &str) -> Vec<(String, String, Value)> {
    let d = run_json(&["describe", table]);
    d["schema"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let changes = f["metadata"].get("delta.typeChanges").cloned().unwrap_or(Value::Null);
            (f["name"].as_str().unwrap().to_string(), f["type"].as_str().unwrap_or("nested").to_string(), changes)
        })
        .collect()
}

/// The rows the reference reader (delta-kernel-rs) reads, as deltabus's `cat` prints them.
fn kernel_agrees(table: &str) {
    let Some(oracle) = kernel_oracle() else { return };
    let out = std::process::Command::new(oracle).args(["rows", table]).output().unwrap();
    assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
    let ours = deltabus(&["cat", table]);
    crate::support::python::compare_rows(&out.stdout, &ours.stdout).unwrap_or_else(|e| panic!("kernel vs cat: {e}"));
}

/// Spark reads `table` as `deltabus cat` does, its decimals (past what a JSON number holds
/// exactly) compared as text and timestamps in either spelling.
fn spark_agrees(table: &str) {
    let Some(spark) = spark() else { return };
    let columns: Vec<String> = types(table)
        .into_iter()
        .map(
            |(n, ty, _)| {
                if ty.starts_with("decimal") {
                    format!("CAST(`{n}` AS STRING) AS `{n}`")
                } else {
                    format!("`{n}`")
                }
            },
        )
        .collect();
    let sql = format!("SELECT {} FROM delta.`{table}`", columns.join(", "));
    let theirs = spark_sql(&spark, &[&sql]).unwrap_or_else(|e| panic!("{e}"));
    let jsonl = |rows: Vec<Value>| rows.iter().map(|r| format!("{r}\n")).collect::<String>().into_bytes();
    let ours = deltabus(&["cat", table]).stdout;
    crate::support::python::compare_rows(&ours, &jsonl(theirs))
        .unwrap_or_else(|e| panic!("Spark reads {table} otherwise: {e}"));
}

#[test]
fn a_pipeline_widens_columns_in_the_rows_commit_through_a_crash_and_every_reader_upcasts() {
    let Some(brokers) = emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    let dead = dir.path().join("dead").to_string_lossy().into_owned();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let first = r#"{"id":0,"n":5,"d":"2024-01-01","m":1.5,"f":1.5,"name":"narrow"}"#;
    write_ok(
        &table,
        &["--schema", schema.to_str().unwrap(), "--property", "delta.enableTypeWidening=true"],
        &format!("{first}\n"),
    );
    let records = [
        r#"{"id":1,"n":-128,"d":"2024-01-02","m":9999.99,"f":-0.5,"name":"still narrow"}"#,
        r#"{"id":3000000000,"n":300,"d":"2024-01-02T10:11:12","m":12345.125,"f":1e39,"name":"ü wide"}"#,
        r#"{"id":-9223372036854775808,"n":-32768,"m":123456789012345678901234567890.12,"f":1e-300,"name":"min"}"#,
        r#"{"id":9223372036854775807,"n":32767,"m":-0.01,"name":"max 🦀"}"#,
        r#"{"id":2.5,"name":"a fraction into a whole-number column"}"#,
        r#"{"id":9223372036854775808,"name":"past long"}"#,
    ];
    let topic = format!("widen-{}", uuid::Uuid::new_v4().simple());
    let produced: Vec<(i32, Option<String>, Option<String>)> =
        records.iter().map(|r| (0, None, Some(r.to_string()))).collect();
    crate::support::runtime().block_on(crate::support::kafka::produce(&brokers, &topic, &produced));
    // The process dies right after the first commit lands (the widening one, or the dead
    // letters'); the run after it finishes without repeating or losing a record.
    let args = ["--app-id", "w", "--evolve-schema", "--dead-letter-table", &dead];
    crate::support::ingest_through_a_crash(&brokers, &topic, t, &args);

    let by_name: std::collections::BTreeMap<String, (String, Value)> =
        types(t).into_iter().map(|(n, ty, c)| (n, (ty, c))).collect();
    let change = |from: &str, to: &str| json!([{"fromType": from, "toType": to}]);
    assert_eq!(by_name["id"], ("long".into(), change("integer", "long")));
    assert_eq!(by_name["n"], ("short".into(), change("byte", "short")), "the narrowest type that holds 300");
    assert_eq!(by_name["d"], ("timestamp_ntz".into(), change("date", "timestamp_ntz")));
    assert_eq!(by_name["m"], ("decimal(33,3)".into(), change("decimal(6,2)", "decimal(33,3)")));
    assert_eq!(by_name["f"], ("double".into(), change("float", "double")));
    assert_eq!(by_name["name"], ("string".into(), Value::Null));
    let p = run_json(&["describe", t])["protocol"].clone();
    assert!(p["readerFeatures"].as_array().unwrap().contains(&json!("typeWidening")), "{p}");
    // The widening came with the rows that needed it, never on its own.
    let changes = crate::support::tables::schema_changes(&table);
    assert!(changes.iter().all(|(_, adds)| *adds > 0), "{changes:?}");

    let got: Vec<Value> = crate::support::tables::rows_by_id(t);
    let ids: Vec<i64> = got.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [i64::MIN, 0, 1, 3_000_000_000, i64::MAX], "each record once: {got:?}");
    let printed = String::from_utf8_lossy(&deltabus(&["cat", t]).stdout).into_owned();
    assert!(printed.contains(r#""m":"123456789012345678901234567890.120""#), "exact: {printed}");
    assert_eq!(got[0]["f"].as_f64(), Some(1e-300));
    assert_eq!(got[1]["d"], "2024-01-01T00:00:00.000000", "a date written before reads upcast");
    assert_eq!(got[1]["f"].as_f64(), Some(1.5));
    assert_eq!(got[3]["d"], "2024-01-02T10:11:12.000000");
    assert_eq!(got[3]["n"], 300);
    assert_eq!(got[4]["name"], "max 🦀");

    let letters = rows(&dead);
    assert_eq!(letters.len(), 2, "{letters:?}");
    let reasons: String = letters.iter().map(|l| l.to_string()).collect();
    assert!(reasons.contains("2.5 has a fraction") && reasons.contains("deltabus alter"), "{reasons}");
    assert!(reasons.contains("9223372036854775808 is out of range for long"), "{reasons}");

    kernel_agrees(t);
    spark_agrees(t);
    // delta-rs does not read the feature: it says so rather than reading old files wrong.
    if let Some(python) = crate::support::python::python() {
        let out = std::process::Command::new(python)
            .args(["-c", "import deltalake,sys; deltalake.DeltaTable(sys.argv[1]).to_pyarrow_table()", t])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).contains("typeWidening"), "delta-rs reads it now: update README");
    }
    // A follower crossing the widening carries it into its target.
    let target = dir.path().join("copy").to_string_lossy().into_owned();
    let f = run_json(&["follow", t, "--into", &target, "--follower-id", "c", "--once"]);
    assert_eq!(f["rows"], 5, "{f}");
    let copied: std::collections::BTreeMap<String, String> =
        types(&target).into_iter().map(|(n, ty, _)| (n, ty)).collect();
    assert_eq!((copied["id"].as_str(), copied["d"].as_str()), ("long", "timestamp_ntz"));
    kernel_agrees(&target);
    spark_agrees(&target);
}

#[test]
fn alter_widens_in_place_and_refuses_what_the_protocol_or_iceberg_forbids() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let t = table.to_str().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    write_ok(&table, &["--schema", schema.to_str().unwrap()], "{\"id\":1,\"n\":1,\"m\":2.5,\"name\":\"α\"}\n");
    // Without type widening on the table, a value that needs it is refused, naming the way.
    let out = crate::support::write_jsonl(&table, &["--evolve-schema"], "{\"id\":3000000000}\n");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("out of range for integer") && e.contains("enableTypeWidening"), "{e}");
    // Whole numbers into a fraction need the explicit change.
    let r = run_json(&["alter", t, "--widen", "id=double", "--widen", "m=decimal(12,4)"]);
    assert_eq!(r["version"], 1, "{r}");
    assert_eq!(r["typeWidening"], true);
    assert_eq!(
        r["typeChanges"],
        json!([{"column": "id", "fromType": "integer", "toType": "double"},
               {"column": "m", "fromType": "decimal(6,2)", "toType": "decimal(12,4)"}])
    );
    write_ok(&table, &[], "{\"id\":2.5,\"m\":12345678.1234,\"name\":\"β\"}\n");
    assert_eq!(run_json(&["alter", t, "--widen", "id=double"])["version"], Value::Null, "nothing to change");
    for (arg, why) in [
        ("id=long", "double cannot be widened to long"),
        ("m=decimal(13,6)", "decimal(12,4) cannot be widened to decimal(13,6)"),
        ("name=binary", "string cannot be widened to binary"),
        ("nope=long", "--widen nope: no such column"),
        ("id=text", "not a Delta primitive type"),
    ] {
        let out = deltabus(&["alter", t, "--widen", arg]);
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && e.contains(why) && e.trim().lines().count() == 1, "{arg}: {e}");
    }
    let history = run_json(&["history", t, "--limit", "1"]);
    assert_eq!(history["operation"], "WRITE");
    kernel_agrees(t);
    spark_agrees(t);
    if let Some(spark) = spark() {
        let history = spark_sql(&spark, &[&format!("DESCRIBE HISTORY delta.`{t}`")]).unwrap();
        let v1 = history.iter().find(|h| h["version"] == 1).unwrap();
        assert_eq!(v1["operation"], "CHANGE COLUMN", "{v1}");
    }

    // A UniForm table takes only what Iceberg can: int to long, not date to timestamp_ntz.
    let uniform = dir.path().join("u");
    let u = uniform.to_str().unwrap();
    write_ok(&uniform, &["--schema", schema.to_str().unwrap()], "{\"id\":1,\"d\":\"2024-01-01\"}\n");
    let enabled = deltabus(&["uniform", "--enable", u]);
    assert!(enabled.status.success(), "{}", String::from_utf8_lossy(&enabled.stderr));
    let out = deltabus(&["alter", u, "--widen", "d=timestamp_ntz"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("on a UniForm table"), "{e}");
    let r = run_json(&["alter", u, "--widen", "id=long"]);
    assert!(r["version"].is_u64(), "{r}");
    write_ok(&uniform, &[], "{\"id\":5000000000,\"d\":\"2024-01-02\"}\n");
    kernel_agrees(u);
    spark_agrees(u);
}

#[test]
fn deltabus_reads_tails_and_follows_a_table_spark_widens() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("s").to_string_lossy().into_owned();
    let table = format!("delta.`{t}`");
    let statements = [
        format!(
            "CREATE TABLE {table} (id BIGINT, n INT, d DATE, m DECIMAL(6,2)) USING delta \
             TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
        ),
        format!("INSERT INTO {table} VALUES (1, 7, DATE'2024-01-01', 1.25), (2, -7, DATE'2024-01-02', -9999.99)"),
        format!("ALTER TABLE {table} CHANGE COLUMN n TYPE BIGINT"),
        format!("ALTER TABLE {table} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')"),
        format!("ALTER TABLE {table} CHANGE COLUMN d TYPE TIMESTAMP_NTZ"),
        format!("ALTER TABLE {table} CHANGE COLUMN m TYPE DECIMAL(10,4)"),
        format!(
            "INSERT INTO {table} VALUES (3, 9223372036854775807, TIMESTAMP_NTZ'2024-01-03 04:05:06.789', 123456.7891)"
        ),
    ];
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    spark_sql(&spark, &statements).unwrap_or_else(|e| panic!("{e}"));
    spark_agrees(&t);
    spark_sql(&spark, &[&format!("DELETE FROM {table} WHERE id = 1")]).unwrap();
    kernel_agrees(&t);
    // The change feed reads the old files upcast too.
    let out = deltabus(&["changes", &t]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let changes: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Each version as it was committed; the delete's row read from a file written before the
    // widening, upcast to the schema of its version.
    let kinds: Vec<(&str, i64)> =
        changes.iter().map(|c| (c["_change_type"].as_str().unwrap(), c["id"].as_i64().unwrap())).collect();
    assert_eq!(kinds, [("insert", 1), ("insert", 2), ("insert", 3), ("delete", 1)], "{changes:?}");
    assert_eq!((&changes[0]["d"], &changes[3]["d"]), (&json!("2024-01-01"), &json!("2024-01-01T00:00:00.000000")));
    assert_eq!(changes[3]["n"], 7);
    // And a follower's target takes Spark's widenings.
    let target = dir.path().join("copy").to_string_lossy().into_owned();
    let f = run_json(&["follow", &t, "--into", &target, "--follower-id", "c", "--once"]);
    assert_eq!(f["rows"], 4, "{f}");
    kernel_agrees(&target);
    spark_agrees(&target);
}
