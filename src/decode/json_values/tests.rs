//! The JSON value rules' unit tests: exact values as they are, refusals named by field,
//! timestamps from seconds, numbers read from their text, strings taking any value.

use super::*;
use arrow::datatypes::{Field, TimeUnit};
use std::sync::Arc;

fn rules() -> RecordRules {
    let inner = A::Struct(vec![Field::new("n", A::Int32, true)].into());
    RecordRules::new(&Schema::new(vec![
        Field::new("x", A::Int64, true),
        Field::new("b", A::Int8, true),
        Field::new("d", A::Decimal128(5, 2), true),
        Field::new("ts", A::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
        Field::new("day", A::Date32, true),
        Field::new("s", A::Utf8, true),
        Field::new("f", A::Float64, true),
        Field::new("inner", inner, true),
        Field::new("xs", A::List(Arc::new(Field::new("element", A::Int64, true))), true),
    ]))
}

fn refused(json: &str) -> String {
    rules().check(json.as_bytes()).expect_err(json)
}

fn rewritten(json: &str) -> serde_json::Value {
    match rules().check(json.as_bytes()).unwrap() {
        Verdict::Rewritten(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Verdict::AsIs => panic!("{json} was not rewritten"),
    }
}

#[test]
fn exact_values_pass_as_they_are() {
    for ok in [
        r#"{"x": 2, "b": -128, "d": 123.45, "f": 2.9, "s": "a", "day": "2024-01-02"}"#,
        r#"{"x": 2.0, "d": "-999.99", "ts": "2024-01-02T03:04:05Z", "inner": {"n": 7}, "xs": [1, 2]}"#,
        r#"{"x": "5", "d": 1e2, "x2": 5}"#,
        r#"{"x": 9223372036854775807}"#,
        "{not json",
    ] {
        assert_eq!(rules().check(ok.as_bytes()), Ok(Verdict::AsIs), "{ok}");
    }
}

#[test]
fn values_that_would_change_are_refused_by_field() {
    assert!(refused(r#"{"x": 2.9}"#).contains(r#"field "x": 2.9 has a fraction"#));
    assert!(refused(r#"{"x": -0.5}"#).contains("fraction"));
    assert!(refused(r#"{"x": 99999999999999999999999}"#).contains("field \"x\""));
    assert!(refused(r#"{"x": 9223372036854775808}"#).contains("out of range for long"));
    assert!(refused(r#"{"b": 128}"#).contains("out of range for byte"));
    assert!(refused(r#"{"x": true}"#).contains("boolean"));
    assert!(refused(r#"{"x": "2.5"}"#).contains("not a number"));
    assert!(refused(r#"{"x": {"a": 1}}"#).contains("an object"));
    assert!(refused(r#"{"d": 1.234}"#).contains("more than 2 fraction digits"));
    assert!(refused(r#"{"d": 1234.5}"#).contains("more than 3 integer digits"));
    assert!(refused(r#"{"day": 19000}"#).contains("date"));
    assert!(refused(r#"{"inner": {"n": 1.5}}"#).contains(r#"field "inner.n""#));
    assert!(refused(r#"{"xs": [1, 2.5]}"#).contains(r#"field "xs.[1]""#));
    assert!(refused(r#"{"ts": 1.0000001}"#).contains("microsecond"));
}

#[test]
fn timestamps_as_numbers_are_seconds() {
    assert_eq!(rewritten(r#"{"ts": 1700000000}"#)["ts"], "2023-11-14T22:13:20.000000Z");
    assert_eq!(rewritten(r#"{"ts": 1700000000.25, "x": 1}"#)["ts"], "2023-11-14T22:13:20.250000Z");
    assert_eq!(rewritten(r#"{"ts": -1.5}"#)["ts"], "1969-12-31T23:59:58.500000Z");
}

#[test]
fn numbers_are_read_from_their_text() {
    let big = RecordRules::new(&Schema::new(vec![
        Field::new("big", A::Decimal128(38, 0), true),
        Field::new("x", A::Int64, true),
        Field::new("s", A::Utf8, true),
        Field::new("ts", A::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
    ]));
    let nines = "9".repeat(38);
    assert_eq!(big.check(format!(r#"{{"big": {nines}}}"#).as_bytes()), Ok(Verdict::AsIs));
    let why = big.check(format!(r#"{{"big": {nines}9}}"#).as_bytes()).unwrap_err();
    assert!(why.contains(&format!("{nines}9 has more than 38 integer digits")), "{why}");
    assert_eq!(big.check(format!(r#"{{"big": "{nines}"}}"#).as_bytes()), Ok(Verdict::AsIs));
    // Past 2^53 a respelled integer keeps its digits, and so does the rest of the record.
    let Ok(Verdict::Rewritten(out)) =
        big.check(br#"{"x": 9007199254740993.0, "s": 123456789012345678901234567890, "big": 1}"#)
    else {
        panic!("rewritten")
    };
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"x": 9007199254740993, "s": "123456789012345678901234567890", "big": 1}"#
    );
    assert!(big.check(br#"{"x": 1e400}"#).is_err());
    // Timestamp strings keep microseconds, like numbers.
    assert!(big.check(br#"{"ts": "2024-01-02T03:04:05.1234567Z"}"#).unwrap_err().contains("finer than a microsecond"));
    assert_eq!(big.check(br#"{"ts": "2024-01-02T03:04:05.1234560+05:30"}"#), Ok(Verdict::AsIs));
    assert!(big.check(br#"{"ts": 1704164645.1234567}"#).unwrap_err().contains("microsecond"));
    assert_eq!(plain("-1.5e3").map(|p| (p.negative, p.int, p.frac)), Some((true, "1500".into(), String::new())));
    assert_eq!(plain("12.5e-3").map(|p| (p.int, p.frac)), Some((String::new(), "0125".into())));
}

#[test]
fn strings_take_any_value_as_its_json_text() {
    let v = rewritten(r#"{"s": 5, "x": 1}"#);
    assert_eq!((v["s"].as_str(), v["x"].as_i64()), (Some("5"), Some(1)));
    assert_eq!(rewritten(r#"{"s": {"a": [1, true]}}"#)["s"], r#"{"a":[1,true]}"#);
    assert_eq!(rewritten(r#"{"s": false}"#)["s"], "false");
}
