//! Variant columns (`variantType`) as deltabus reads them: a table Spark writes with a
//! `VARIANT` column (objects, arrays, exact integers and decimals, doubles, strings with
//! Unicode, JSON null and SQL NULL) is printed by `deltabus cat` and `changes` as the JSON
//! Spark's `to_json` gives for each value.

use serde_json::Value;

use crate::support::spark::{spark, spark_sql};
use crate::support::{deltabus, rows};

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
