//! One table of values, each with the column it goes into and whether it lands (and as what) or
//! is refused, run through `deltabus write` (JSON lines, the decoder every JSON path shares:
//! Kafka, push, Protobuf's proto3 JSON) and through typed input (an Arrow IPC body, the
//! projection Avro and Protobuf rows share): numbers are read from their text, timestamps keep
//! microseconds, fractions never become integers.

use std::sync::Arc;

use arrow::array::{ArrayRef, Decimal128Array, Float64Array, RecordBatch, StringArray, TimestampNanosecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use deltabus::decode::projection::{project, Mismatch};

use crate::support::tables::rows;
use crate::support::write_jsonl;

/// (column type as Delta JSON, JSON value sent, what `cat` shows or `Err(part of the reason)`).
fn cases() -> Vec<(&'static str, String, Result<String, &'static str>)> {
    let nines = "9".repeat(38);
    vec![
        ("\"long\"", "-2.9".into(), Err("has a fraction")),
        ("\"long\"", "2.0".into(), Ok("2".into())),
        ("\"long\"", "9007199254740993.0".into(), Ok("9007199254740993".into())),
        ("\"long\"", "99999999999999999999".into(), Err("out of range for long")),
        ("\"decimal(38,0)\"", nines.clone(), Ok(nines.clone())),
        ("\"decimal(38,0)\"", format!("{nines}9"), Err("more than 38 integer digits")),
        ("\"decimal(5,2)\"", "1.234".into(), Err("more than 2 fraction digits")),
        ("\"timestamp\"", "\"2024-01-02T03:04:05.1234567Z\"".into(), Err("finer than a microsecond")),
        ("\"timestamp\"", "\"2024-01-02T03:04:05.123456Z\"".into(), Ok("2024-01-02T03:04:05.123456Z".into())),
        ("\"timestamp\"", "1704164645.1234567".into(), Err("finer than a microsecond")),
        ("\"string\"", "123456789012345678901234567890".into(), Ok("123456789012345678901234567890".into())),
        // Characters past U+1FFFF escaped as surrogate pairs (Arrow's JSON decoder alone reads them
        // as other characters), in a string, in an array and inside a text of JSON.
        ("\"string\"", r#""\ud84d\ude00\ud83d\ude00""#.into(), Ok("\u{23600}\u{1F600}".into())),
        (
            r#"{"type":"array","elementType":"string","containsNull":true}"#,
            r#"["\udbff\udfff"]"#.into(),
            Ok("[\"\u{10FFFF}\"]".into()),
        ),
        ("\"string\"", r#"{"k":"\ud840\udc00"}"#.into(), Ok("{\"k\":\"\u{20000}\"}".into())),
    ]
}

fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn every_value_of_the_table_through_write() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (column, value, want)) in cases().into_iter().enumerate() {
        let schema = dir.path().join(format!("schema{i}.json"));
        std::fs::write(
            &schema,
            format!(r#"{{"type":"struct","fields":[{{"name":"v","type":{column},"nullable":true,"metadata":{{}}}}]}}"#),
        )
        .unwrap();
        let table = dir.path().join(format!("t{i}"));
        let out = write_jsonl(&table, &["--schema", schema.to_str().unwrap()], &format!("{{\"v\":{value}}}\n"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        match want {
            Ok(text) => {
                assert!(out.status.success(), "{column} {value}: {stderr}");
                let got = rows(table.to_str().unwrap());
                assert_eq!(shown(&got[0]["v"]), text, "{column} {value}");
            }
            Err(why) => {
                assert!(!out.status.success() && stderr.contains(why), "{column} {value}: {stderr}");
                assert!(!table.join("_delta_log/00000000000000000001.json").exists());
            }
        }
    }
}

#[test]
fn inference_reads_numbers_from_their_text_and_refuses_names_that_differ_by_case() {
    let dir = tempfile::tempdir().unwrap();
    let nines = "9".repeat(38);
    let big = dir.path().join("big");
    let out = write_jsonl(&big, &[], &format!("{{\"big\":{nines}}}\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(shown(&rows(big.to_str().unwrap())[0]["big"]), nines);
    let described = crate::support::run_json(&["describe", big.to_str().unwrap()]);
    assert!(described.to_string().contains("decimal(38,0)"), "{described}");
    let cased = dir.path().join("cased");
    let out = write_jsonl(&cased, &[], "{\"A\":1,\"a\":2}\n");
    crate::support::assert_clean_failure(&out, "names that differ only in case");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("differ only in case") && !stderr.contains("Delta log"), "{stderr}");
}

/// Typed rows (an Arrow IPC body, Avro, Protobuf) onto the table's columns: the same rules.
#[test]
fn typed_values_follow_the_same_rules() {
    let one = |name: &str, array: ArrayRef, to: DataType| {
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(name, array.data_type().clone(), true)])),
            vec![array],
        )
        .unwrap();
        project(&batch, &Arc::new(Schema::new(vec![Field::new(name, to, true)])))
    };
    let refused = |r: Result<RecordBatch, Mismatch>, why: &str| match r {
        Err(Mismatch::Refused(m)) => assert!(m.contains(why), "{m}"),
        other => panic!("expected a refusal ({why}), got {other:?}"),
    };
    refused(one("v", Arc::new(Float64Array::from(vec![-2.9])), DataType::Int64), "-2.9 has a fraction");
    assert!(one("v", Arc::new(Float64Array::from(vec![2.0])), DataType::Int64).is_ok());
    let cents = Decimal128Array::from(vec![12345]).with_precision_and_scale(10, 3).unwrap();
    refused(one("v", Arc::new(cents), DataType::Decimal128(10, 2)), "12.345 has more than 2 fraction digits");
    let ns = TimestampNanosecondArray::from(vec![1_704_164_645_123_456_789]).with_timezone("UTC");
    refused(
        one("v", Arc::new(ns), DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))),
        "finer than a microsecond",
    );
    let text = StringArray::from(vec!["2024-01-02T03:04:05.1234567Z"]);
    refused(
        one("v", Arc::new(text), DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))),
        "finer than a microsecond",
    );
}
