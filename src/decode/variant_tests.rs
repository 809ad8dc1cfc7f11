use super::*;
use parquet_variant::Variant as V;

fn with<R>(text: &str, check: impl FnOnce(&V<'_, '_>) -> R) -> R {
    let (m, v) = encode(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"));
    let variant = V::try_new(&m, &v).expect("a valid variant");
    check(&variant)
}

fn refused(text: &str) -> String {
    encode(text.as_bytes()).map(|_| ()).expect_err(text)
}

/// Numbers take Spark's encoding: the narrowest integer, decimals of their own digits and
/// scale up to 38 digits, doubles for exponents and longer numbers; every edge exact.
#[test]
fn numbers_keep_their_exact_value_and_spark_s_encoding() {
    let cases: &[(&str, &str)] = &[
        ("0", "Int8(0)"),
        ("-0", "Int8(0)"),
        ("127", "Int8(127)"),
        ("-128", "Int8(-128)"),
        ("128", "Int16(128)"),
        ("32768", "Int32(32768)"),
        ("2147483648", "Int64(2147483648)"),
        ("9223372036854775807", "Int64(9223372036854775807)"),
        ("-9223372036854775808", "Int64(-9223372036854775808)"),
        ("9223372036854775808", "Decimal16(VariantDecimal16 { integer: 9223372036854775808, scale: 0 })"),
        ("1.50", "Decimal4(VariantDecimal4 { integer: 150, scale: 2 })"),
        ("-0.0", "Decimal4(VariantDecimal4 { integer: 0, scale: 1 })"),
        ("0.000000001", "Decimal4(VariantDecimal4 { integer: 1, scale: 9 })"),
        ("0.0000000001", "Decimal8(VariantDecimal8 { integer: 1, scale: 10 })"),
        ("1234567890.5", "Decimal8(VariantDecimal8 { integer: 12345678905, scale: 1 })"),
        (
            "-9999999999999999999999999999999999999.9",
            "Decimal16(VariantDecimal16 { integer: -99999999999999999999999999999999999999, scale: 1 })",
        ),
        ("99999999999999999999999999999999999999.9", "Double(1e38)"),
        ("1e3", "Double(1000.0)"),
        ("1.5E-3", "Double(0.0015)"),
        ("4.9e-324", "Double(5e-324)"),
        ("1.7976931348623157e308", "Double(1.7976931348623157e308)"),
    ];
    for (text, want) in cases {
        with(text, |v| assert_eq!(format!("{v:?}"), *want, "{text}"));
    }
    assert!(refused("1e400").contains("out of the range of a double"));
    assert!(refused("-1e400").contains("1e400"));
}

/// Strings decode their escapes (surrogate pairs whole), keys and values in any script;
/// objects keep every key, nested as sent.
#[test]
fn unicode_keys_and_values_land_as_themselves() {
    let text = r#"{"ключ": "значение \ud83d\ude00 \u00e9\n\"q\"", "😀": [true, false, null, {"日本": "語"}], "long": "ääääääääääääääääääääääääääääääääääääääää"}"#;
    with(text, |v| {
        let o = v.as_object().expect("an object");
        assert_eq!(o.get("ключ"), Some(V::from("значение 😀 é\n\"q\"")));
        let list = o.get("😀").unwrap();
        let list = list.as_list().unwrap();
        assert_eq!(list.len(), 4);
        assert_eq!(list.get(2), Some(V::Null));
        assert_eq!(list.get(3).unwrap().as_object().unwrap().get("日本"), Some(V::from("語")));
        assert!(matches!(o.get("long"), Some(V::String(s)) if s.chars().count() == 40));
    });
}

/// What is sent comes back: every value printed as JSON equals the JSON it was encoded from.
#[test]
fn printed_values_equal_what_was_sent() {
    for text in [
        r#"{"a": 1, "b": [1, 2.5, "x", {"c": null}], "d": {"e": {"f": [[], {}]}}, "g": -3.25}"#,
        r#"[{"z": 1, "a": 2, "m": 3}]"#,
        r#""plain""#,
        "true",
        "null",
        " 42 ",
        r#"{"n": -9223372036854775808, "m": 9223372036854775807, "x": 1e-7}"#,
    ] {
        let want: serde_json::Value = serde_json::from_str(text).unwrap();
        with(text, |v| assert_eq!(crate::delta::arrow_value::variant_json(v), want, "{text}"));
    }
}

/// A key named twice in one object is refused (at any depth, scalar or container); the same
/// key in two objects is fine.
#[test]
fn a_key_twice_in_one_object_is_refused() {
    for text in [r#"{"a": 1, "a": 2}"#, r#"{"a": {}, "a": []}"#, r#"{"x": [{"b": 1, "c": 2, "b": [1]}]}"#] {
        assert!(refused(text).contains("appears twice"), "{text}: {}", refused(text));
    }
    assert!(refused(r#"{"é": 1, "\u00e9": 2}"#).contains(r#""é""#));
    with(r#"{"a": 1, "b": {"a": 2}}"#, |v| assert_eq!(v.as_object().unwrap().len(), 2));
}

/// Malformed JSON and values nested past the limit get a one-line reason, never a panic.
#[test]
fn malformed_json_is_refused_with_a_reason() {
    for text in [
        "",
        "{",
        "[1,]",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "01",
        "1.",
        "-",
        "1e",
        "tru",
        "nul",
        "\"\\ud83d\"",
        "\"\\q\"",
        "\"a\tb\"",
        "1 2",
        "{} x",
        "[1 2]",
        "{\"a\":}",
        "\"open",
    ] {
        let why = refused(text);
        assert!(!why.is_empty() && !why.contains('\n'), "{text:?}: {why}");
    }
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(encode(deep(MAX_DEPTH).as_bytes()).is_ok());
    assert!(refused(&deep(MAX_DEPTH + 2)).contains("deeper"));
    assert!(encode(&[b'"', 0xff, b'"']).is_err());
}

/// Wide and large values: objects past 255 keys (four-byte counts, two-byte ids), offsets past
/// 255 and 65,535 bytes, long strings, keys found by name past the first sixteen.
#[test]
fn large_objects_and_arrays_read_back_whole() {
    let long = "ü".repeat(40);
    let object: serde_json::Map<String, serde_json::Value> =
        (0..300).map(|i| (format!("ключ-{i:03}"), serde_json::json!([i, long, {"n": i}]))).collect();
    let mut value = serde_json::json!({"o": object, "a": (0..70_000).collect::<Vec<i32>>()});
    value["again"] = serde_json::json!([{"ключ-007": 1, "ключ-299": 2}]);
    let text = value.to_string();
    with(&text, |v| assert_eq!(crate::delta::arrow_value::variant_json(v), value));
    let twice = format!("{{{}, \"k17\": 0}}", (0..20).map(|i| format!("\"k{i}\": {i}")).collect::<Vec<_>>().join(", "));
    assert!(refused(&twice).contains(r#""k17""#));
}
