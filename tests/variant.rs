//! Variant columns (`variantType`) both ways: a table Spark writes with a `VARIANT` column
//! (objects, arrays, exact integers and decimals, doubles, strings with Unicode, JSON null and
//! SQL NULL) is printed by `deltabus cat` and `changes` as the JSON Spark's `to_json` gives for
//! each value; a Kafka pipeline lands a drifting JSON field (`--variant-columns`) or the whole
//! record (`--record-variant`) as variant, exactly once through a crash, and Spark's `to_json`
//! and `variant_get` of every row give back what was sent.

use serde_json::Value;

use crate::support::spark::{spark, spark_sql};
use crate::support::{deltabus, emulator, rows, run_json};

#[test]
fn deltabus_prints_the_variant_values_spark_writes_as_their_json() {
    let Some(spark) = spark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("v").to_string_lossy().into_owned();
    let table = format!("delta.`{t}`");
    let values = [
        r#"{"a":1,"b":[true,null,"ü 🦀"],"c":{"d":1.25,"e":-12345678901234567890.5}}"#,
        "9223372036854775807",
        r#""text""#,
        "[1e300,-0.5,0]",
        "null",
    ];
    let selects: Vec<String> =
        values.iter().enumerate().map(|(i, v)| format!("SELECT {i} AS id, parse_json('{v}') AS v")).collect();
    let create = format!("CREATE TABLE {table} (id BIGINT, v VARIANT) USING delta");
    let insert = format!("INSERT INTO {table} {} UNION ALL SELECT 9, NULL", selects.join(" UNION ALL "));
    spark_sql(&spark, &[&create, &insert]).unwrap_or_else(|e| panic!("{e}"));
    let theirs = spark_sql(&spark, &[&format!("SELECT id, to_json(v) AS v FROM {table} ORDER BY id")]).unwrap();
    let ours = crate::support::tables::rows_by_id(&t);
    assert_eq!(ours.len(), theirs.len(), "{ours:?}");
    for (o, s) in ours.iter().zip(&theirs) {
        assert_eq!(o["id"], s["id"]);
        let expected: Value = match s.get("v").and_then(Value::as_str) {
            Some(text) => serde_json::from_str(text).unwrap(),
            None => Value::Null,
        };
        // Past 15 digits a decimal prints as a string (as decimal columns do), exact.
        let got = match (&o["v"], &expected) {
            (Value::Object(m), _) if m.contains_key("c") => {
                let mut m = m.clone();
                let e = m["c"]["e"].clone();
                assert_eq!(e, "-12345678901234567890.5", "exact: {o}");
                m["c"]["e"] = expected["c"]["e"].clone();
                Value::Object(m)
            }
            (v, _) => v.clone(),
        };
        assert_eq!(got, expected, "row {}", o["id"]);
    }
    // The change feed prints them alike.
    let out = deltabus(&["changes", &t]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(text.contains(r#""v":"text""#) && text.contains(r#""v":9223372036854775807"#), "{text}");
    assert_eq!(rows(&t).len(), 6);
}

/// Records whose `properties` drift in shape (and edge values of every kind) land in one
/// variant column beside typed ones; the values no variant holds are dead letters; `cat` and
/// Spark give back the JSON sent.
#[test]
fn a_pipeline_lands_a_drifting_field_as_variant_through_a_crash_and_spark_reads_it_as_sent() {
    let Some(brokers) = emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").to_string_lossy().into_owned();
    let dead = dir.path().join("dead").to_string_lossy().into_owned();
    let sent: &[&str] = &[
        r#"{"a":1,"tags":["x","y"]}"#,
        r#"{"a":"now text","nested":{"ключ":"значение 😀","deep":[[1],[2.50,-0.001]]}}"#,
        "9223372036854775807",
        "-9223372036854775808",
        "12345.678901234",
        "1e-320",
        r#""\ud83e\udd80 crab \u00e9""#,
        "[]",
        "{}",
        "true",
        r#"{"a":null,"b":[{"c":{"d":[1e300]}}]}"#,
    ];
    let mut records: Vec<String> =
        sent.iter().enumerate().map(|(i, v)| format!(r#"{{"id":{},"properties":{v},"name":"n{i}"}}"#, i + 1)).collect();
    records.push(r#"{"id":12,"name":"no properties"}"#.into());
    records.push(r#"{"id":13,"properties":{"a":1,"a":2}}"#.into());
    records.push(r#"{"id":14,"properties":[1e400]}"#.into());
    let topic = format!("variant-{}", uuid::Uuid::new_v4().simple());
    let produced: Vec<(i32, Option<String>, Option<String>)> =
        records.into_iter().map(|r| (0, None, Some(r))).collect();
    crate::support::runtime().block_on(crate::support::kafka::produce(&brokers, &topic, &produced));
    crate::support::ingest_through_a_crash(
        &brokers,
        &topic,
        &t,
        &["--app-id", "v", "--create", "--variant-columns", "properties", "--dead-letter-table", &dead],
    );
    // (The Kafka clients are done; the Python readers below fork.)
    drop(guard);

    let d = run_json(&["describe", &t]);
    assert!(d["protocol"]["readerFeatures"].as_array().unwrap().contains(&Value::from("variantType")), "{d}");
    let fields = d["schema"]["fields"].as_array().unwrap();
    assert!(fields.iter().any(|f| f["name"] == "properties" && f["type"] == "variant"), "{d}");
    let got = crate::support::tables::rows_by_id(&t);
    let ids: Vec<i64> = got.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, (1..=12).collect::<Vec<_>>(), "each record once: {got:?}");
    for (row, text) in got.iter().zip(sent) {
        assert_eq!(row["properties"], serde_json::from_str::<Value>(text).unwrap(), "row {}", row["id"]);
    }
    assert_eq!(got[11]["properties"], Value::Null);
    let letters = rows(&dead);
    assert_eq!(letters.len(), 2, "{letters:?}");
    let reasons: String = letters.iter().map(|l| l.to_string()).collect();
    assert!(reasons.contains("appears twice") && reasons.contains("out of the range of a double"), "{reasons}");

    // `--where` on paths inside the variant: keys, Unicode keys, list indexes, numbers.
    let ids_where = |predicate: &str| -> Vec<i64> {
        let out = deltabus(&["cat", &t, "--where", predicate]);
        assert!(out.status.success(), "{predicate}: {}", String::from_utf8_lossy(&out.stderr));
        let mut ids: Vec<i64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_i64().unwrap())
            .collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(ids_where("properties.a = 'now text'"), [2]);
    assert_eq!(ids_where("properties.nested.ключ = 'значение 😀'"), [2]);
    assert_eq!(ids_where("properties.tags.1 = 'y' OR properties.a >= 1"), [1]);
    assert_eq!(ids_where("properties.nested.deep.1.0 = 2.5"), [2]);
    assert_eq!(ids_where("properties.a IS NULL AND id < 3"), Vec::<i64>::new());
    let refused = deltabus(&["cat", &t, "--where", "properties = 'x'"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("by a path inside it"), "{refused:?}");

    // A follower and a mirror carry the variant column into their targets.
    for (name, extra) in [("copy", None), ("mirror", Some("--mirror"))] {
        let target = dir.path().join(name).to_string_lossy().into_owned();
        let mut args = vec!["follow", &t, "--into", &target, "--follower-id", name, "--once"];
        args.extend(extra);
        let f = run_json(&args);
        assert_eq!(f["rows"], 12, "{f}");
        let copied = crate::support::tables::rows_by_id(&target);
        let props =
            |rows: &[Value]| rows.iter().map(|r| (r["id"].clone(), r["properties"].clone())).collect::<Vec<_>>();
        assert_eq!(props(&copied), props(&got), "{name}");
        let d = run_json(&["describe", &target]);
        assert!(d["protocol"]["readerFeatures"].as_array().unwrap().contains(&Value::from("variantType")), "{d}");
    }

    // The reference reader and delta-rs read the same values (printed as the binaries).
    let ours = deltabus(&["cat", &t]).stdout;
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = std::process::Command::new(oracle).args(["rows", &t]).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        crate::support::python::compare_rows(&out.stdout, &ours).unwrap_or_else(|e| panic!("kernel vs cat: {e}"));
    }
    if let Some(python) = crate::support::python::python() {
        let theirs = crate::support::python::deltalake_rows(&python, std::path::Path::new(&t));
        crate::support::python::compare_rows(&theirs, &ours).unwrap_or_else(|e| panic!("delta-rs vs cat: {e}"));
    }

    // Spark: to_json of every row is the JSON sent; variant_get reads a path of any shape.
    let Some(spark) = spark() else { return };
    let sql = format!(
        "SELECT id, to_json(properties) AS j, variant_get(properties, '$.a', 'string') AS a FROM delta.`{t}` ORDER BY id"
    );
    let theirs = spark_sql(&spark, &[&sql]).unwrap_or_else(|e| panic!("Spark reads {t}: {e}"));
    assert_eq!(theirs.len(), 12);
    for (row, text) in theirs.iter().zip(sent) {
        let printed: Value = serde_json::from_str(row["j"].as_str().unwrap()).unwrap();
        assert_eq!(printed, serde_json::from_str::<Value>(text).unwrap(), "Spark's row {}", row["id"]);
    }
    assert_eq!((theirs[0]["a"].as_str(), theirs[1]["a"].as_str()), (Some("1"), Some("now text")));
    assert!(theirs[11].get("j").is_none_or(Value::is_null), "{}", theirs[11]);
}

/// `--record-variant`: every record, whatever JSON value it is, lands whole in one column.
#[test]
fn a_pipeline_lands_whole_records_of_any_shape_in_one_variant_column() {
    let Some(brokers) = emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t").to_string_lossy().into_owned();
    let sent = [r#"{"id":1,"kind":"order","lines":[{"sku":"ü-1","qty":2}]}"#, "[1,2,3]", r#""just text""#, "42.50"];
    let topic = format!("variant-raw-{}", uuid::Uuid::new_v4().simple());
    let produced: Vec<(i32, Option<String>, Option<String>)> =
        sent.iter().map(|r| (0, None, Some(r.to_string()))).collect();
    crate::support::runtime().block_on(crate::support::kafka::produce(&brokers, &topic, &produced));
    crate::support::ingest_through_a_crash(
        &brokers,
        &topic,
        &t,
        &["--app-id", "v", "--create", "--record-variant", "raw"],
    );
    let out = deltabus(&["cat", &t]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut got: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["raw"].clone())
        .collect();
    let mut want: Vec<Value> = sent.iter().map(|s| serde_json::from_str(s).unwrap()).collect();
    let key = |v: &Value| v.to_string();
    got.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(got, want, "each record once, whole");
    let d = run_json(&["describe", &t]);
    assert_eq!(d["schema"]["fields"].as_array().unwrap().len(), 1, "{d}");
    let Some(spark) = spark() else { return };
    let theirs = spark_sql(&spark, &[&format!("SELECT to_json(raw) AS j FROM delta.`{t}`")]).unwrap();
    let mut printed: Vec<Value> =
        theirs.iter().map(|r| serde_json::from_str(r["j"].as_str().unwrap()).unwrap()).collect();
    printed.sort_by_key(key);
    assert_eq!(printed, want);
}

/// `deltabus write` into a table declared with a variant column (`--schema`): each line's
/// field lands whole (objects, arrays, a number past a double, a string, absent), the table
/// gets the `variantType` feature, a value the encoding refuses fails the write in one line
/// naming its line and field (nothing committed), and Spark reads every value as written.
#[test]
fn write_lands_json_lines_in_a_declared_variant_column() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("w");
    let t = table.to_str().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},
        {"name":"props","type":"variant","nullable":true,"metadata":{}}]}"#,
    )
    .unwrap();
    let sent = [
        r#"{"a":[1,2.5,"x"],"b":null,"ü":{"k":true}}"#,
        r#""plain text 😀""#,
        r#"12345678901234567890.5"#,
        r#"[{"n":-9223372036854775808}]"#,
    ];
    let mut lines: String = sent.iter().enumerate().map(|(i, v)| format!("{{\"id\":{i},\"props\":{v}}}\n")).collect();
    lines.push_str("{\"id\":4}\n");
    crate::support::write_ok(&table, &["--schema", schema.to_str().unwrap()], &lines);
    let d = run_json(&["describe", t]);
    assert!(d["protocol"]["readerFeatures"].to_string().contains("variantType"), "{d}");
    let got = rows(t);
    assert_eq!(got.len(), 5);
    for (i, v) in sent.iter().enumerate() {
        let row = got.iter().find(|r| r["id"] == i).unwrap();
        let want: Value = serde_json::from_str(v).unwrap();
        // Numbers past a double print as their exact text (a string), as decimal columns do.
        let want = if i == 2 { Value::String("12345678901234567890.5".into()) } else { want };
        assert_eq!(row["props"], want, "row {i}");
    }
    for (line, why) in [
        (
            "{\"id\":9,\"props\":{\"z\":1e400}}",
            "line 1: field \"props\": the number 1e400 is out of the range of a double",
        ),
        ("{\"id\":9,\"props\":{\"k\":1,\"k\":2}}", "line 1: field \"props\": the key \"k\" appears twice"),
    ] {
        let out = crate::support::write_jsonl(&table, &[], &format!("{line}\n"));
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && e.contains(why) && e.trim().lines().count() == 1, "{line}: {e}");
    }
    assert_eq!(rows(t).len(), 5, "nothing committed by the refused writes");
    let Some(spark) = spark() else { return };
    let theirs = spark_sql(&spark, &[&format!("SELECT id, to_json(props) AS j FROM delta.`{t}` ORDER BY id")])
        .unwrap_or_else(|e| panic!("Spark reads {t}: {e}"));
    assert_eq!(theirs.len(), 5);
    for (row, v) in theirs.iter().zip(sent) {
        let printed: Value = serde_json::from_str(row["j"].as_str().unwrap()).unwrap();
        assert_eq!(printed, serde_json::from_str::<Value>(v).unwrap(), "Spark's row {}", row["id"]);
    }
    assert!(theirs[4].get("j").is_none_or(Value::is_null), "{}", theirs[4]);
}

/// `write --variant-columns` creates the table with those fields typed `variant` (lines whose
/// fields take any shape, inference left to the other fields), adds another with
/// `--evolve-schema`, and refuses to name a column the table types otherwise;
/// `--record-variant` lands each whole line in one column. Spark reads both.
#[test]
fn write_types_named_fields_variant_and_lands_whole_lines_in_a_record_variant() {
    let dir = tempfile::tempdir().unwrap();
    let (table, whole) = (dir.path().join("named"), dir.path().join("whole"));
    let (t, w) = (table.to_str().unwrap(), whole.to_str().unwrap());
    let sent = [r#"{"a":[1,"x"],"ü":{"k":true}}"#, r#""texte 😀""#, r#"[1,[2,{"n":null}]]"#, r#"7"#];
    let lines: String =
        sent.iter().enumerate().map(|(i, v)| format!("{{\"id\":{i},\"props\":{v},\"name\":\"n{i}\"}}\n")).collect();
    crate::support::write_ok(&table, &["--variant-columns", "props"], &lines);
    let d = run_json(&["describe", t]);
    assert!(d["protocol"]["readerFeatures"].to_string().contains("variantType"), "{d}");
    let got = rows(t);
    assert_eq!(got.len(), 4);
    for (i, v) in sent.iter().enumerate() {
        let row = got.iter().find(|r| r["id"] == i).unwrap();
        assert_eq!(
            (&row["props"], &row["name"]),
            (&serde_json::from_str::<Value>(v).unwrap(), &Value::from(format!("n{i}")))
        );
    }
    // A new field named as a variant column joins the table as one.
    let more = "{\"id\":4,\"props\":{},\"tags\":{\"x\":[1]}}\n{\"id\":5,\"tags\":\"just text\"}\n";
    crate::support::write_ok(&table, &["--variant-columns", "props,tags", "--evolve-schema"], more);
    let got = rows(t);
    assert_eq!(got.len(), 6);
    let tags: Vec<&Value> = [4, 5].iter().map(|i| &got.iter().find(|r| r["id"] == *i).unwrap()["tags"]).collect();
    assert_eq!(tags, [&serde_json::json!({"x":[1]}), &Value::from("just text")]);
    // A column the table types otherwise is refused in one line, and nothing lands.
    let out = crate::support::write_jsonl(&table, &["--variant-columns", "name"], "{\"id\":6,\"name\":{\"a\":1}}\n");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("\"name\"") && e.trim().lines().count() == 1, "{e}");
    assert_eq!(rows(t).len(), 6);
    // Whole lines of any shape into one column.
    let any = "{\"a\":1}\n[1,2]\n\"ß\"\n{\"deep\":{\"er\":[{}]}}\n";
    crate::support::write_ok(&whole, &["--record-variant", "raw"], any);
    let mut got: Vec<String> = rows(w).iter().map(|r| r["raw"].to_string()).collect();
    got.sort();
    let mut want: Vec<String> = any.lines().map(|l| serde_json::from_str::<Value>(l).unwrap().to_string()).collect();
    want.sort();
    assert_eq!(got, want);
    let Some(spark) = spark() else { return };
    for (table, query) in [
        (t, "SELECT to_json(props) AS j FROM delta.`{}` WHERE id < 4 ORDER BY id"),
        (w, "SELECT to_json(raw) AS j FROM delta.`{}`"),
    ] {
        let theirs =
            spark_sql(&spark, &[&query.replace("{}", table)]).unwrap_or_else(|e| panic!("Spark reads {table}: {e}"));
        let mut printed: Vec<Value> =
            theirs.iter().map(|r| serde_json::from_str(r["j"].as_str().unwrap()).unwrap()).collect();
        let mut want: Vec<Value> = if table == t {
            sent.iter().map(|v| serde_json::from_str(v).unwrap()).collect()
        } else {
            any.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
        };
        if table == w {
            printed.sort_by_key(Value::to_string);
            want.sort_by_key(Value::to_string);
        }
        assert_eq!(printed, want, "Spark's rows of {table}");
    }
}
