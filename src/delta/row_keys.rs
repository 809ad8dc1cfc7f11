//! The canonical key of a row [sync]: the values of its key columns as a JSON array string
//! (`[42]`, `["eu",7]`), the one spelling that keyed ingestion, mirrors and the key index
//! compare and hash. `None` when a key column is null or missing: such rows are never matched.
//!
//! A key keeps its spelling through every type widening the protocol allows ([`key_value`]):
//! rows written before a key column was widened are read upcast and must still be found by
//! the keys of rows written after it (and by sidecars hashed before it).

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::DataType;
use serde_json::Value;

use crate::delta::arrow_value::{decimal_string, format_timestamp, non_finite_name, value_at};

/// The canonical keys of a batch's rows (`None` where a key column is null).
pub(crate) fn keys_of_batch(batch: &RecordBatch, columns: &[String]) -> Vec<Option<String>> {
    let arrays: Vec<Option<&dyn Array>> =
        columns.iter().map(|c| batch.column_by_name(c).map(|a| a.as_ref() as &dyn Array)).collect();
    if let Some(arrays) = arrays.iter().copied().collect::<Option<Vec<&dyn Array>>>() {
        if let Some(keys) = fast_keys(&arrays, batch.num_rows()) {
            return keys;
        }
    }
    (0..batch.num_rows())
        .map(|i| {
            let values: Option<Vec<Value>> =
                arrays.iter().map(|a| a.map(|a| key_value(a, i)).filter(|v| !v.is_null())).collect();
            values.and_then(|v| serde_json::to_string(&v).ok())
        })
        .collect()
}

/// Row `i` of a key column as keys spell it: as the row prints ([`value_at`]), except where
/// a widening would change the print: a number of any numeric type that is a whole number
/// in the range of a long prints as that integer (`5`, whether byte, long, double `5.0` or
/// decimal `5.00`); other decimals as their exact text without trailing zeros, a string
/// (`"1.25"` at any precision and scale); a float as the double it widens to; a date as the
/// timestamp_ntz of its midnight. Other types print as rows do.
pub(crate) fn key_value(array: &dyn Array, i: usize) -> Value {
    use arrow::datatypes::{Date32Type, Decimal128Type, Float32Type, Float64Type};
    if array.is_null(i) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Float32 => double_key(f64::from(array.as_primitive::<Float32Type>().value(i))),
        DataType::Float64 => double_key(array.as_primitive::<Float64Type>().value(i)),
        DataType::Decimal128(_, scale) => decimal_key(array.as_primitive::<Decimal128Type>().value(i), *scale),
        DataType::Date32 => {
            format_timestamp(i64::from(array.as_primitive::<Date32Type>().value(i)) * 86_400_000_000, false)
        }
        _ => value_at(array, i),
    }
}

/// A double key: a whole number within a long's range as that integer, else the double.
fn double_key(v: f64) -> Value {
    if let Some(name) = non_finite_name(v) {
        return Value::String(name.into());
    }
    if v.fract() == 0.0 && v.abs() < 9.223_372_036_854_775e18 {
        return Value::from(v as i64);
    }
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A decimal key: a whole number within a long's range as that integer, else the exact text
/// without trailing zeros.
fn decimal_key(unscaled: i128, scale: i8) -> Value {
    let text = decimal_string(unscaled, scale);
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    match text.parse::<i64>() {
        Ok(n) => Value::from(n),
        Err(_) => Value::String(text.to_string()),
    }
}

/// Whether the key columns `names` of `schema` are all integers or strings (absent ones
/// count as such): the keys whose spelling [`key_value`] did not change from the rows' print.
pub(crate) fn printed_as_rows(names: &[String], schema: &super::schema::StructType) -> bool {
    use super::schema::{DataType as D, PrimitiveType as P};
    names
        .iter()
        .filter_map(|n| schema.field(n))
        .all(|f| matches!(f.data_type, D::Primitive(P::Byte | P::Short | P::Integer | P::Long | P::String)))
}

/// The canonical keys of integer and string key columns written directly (the same text as
/// the JSON array of their values); `None` for other column types.
fn fast_keys(arrays: &[&dyn Array], rows: usize) -> Option<Vec<Option<String>>> {
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, Int16Type, Int32Type, Int64Type, Int8Type};
    use std::fmt::Write;
    let supported = arrays.iter().all(|a| {
        matches!(a.data_type(), DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Utf8)
    });
    if !supported {
        return None;
    }
    let mut out = Vec::with_capacity(rows);
    for i in 0..rows {
        if arrays.iter().any(|a| a.is_null(i)) {
            out.push(None);
            continue;
        }
        let mut key = String::with_capacity(16);
        key.push('[');
        for (n, a) in arrays.iter().enumerate() {
            if n > 0 {
                key.push(',');
            }
            let _ = match a.data_type() {
                DataType::Int8 => write!(key, "{}", a.as_primitive::<Int8Type>().value(i)),
                DataType::Int16 => write!(key, "{}", a.as_primitive::<Int16Type>().value(i)),
                DataType::Int32 => write!(key, "{}", a.as_primitive::<Int32Type>().value(i)),
                DataType::Int64 => write!(key, "{}", a.as_primitive::<Int64Type>().value(i)),
                _ => {
                    key.push_str(&serde_json::to_string(a.as_string::<i32>().value(i)).ok()?);
                    Ok(())
                }
            };
        }
        key.push(']');
        out.push(Some(key));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_keys_are_the_canonical_json_keys() {
        use arrow::array::{Int32Array, StringArray as S};
        let batch = RecordBatch::try_from_iter([
            ("r", std::sync::Arc::new(S::from(vec![Some("Zü\"rich\\"), Some("🔑"), None, Some("\u{1}")])) as _),
            ("n", std::sync::Arc::new(Int32Array::from(vec![Some(-7), Some(i32::MAX), Some(1), None])) as _),
        ])
        .unwrap();
        let cols = ["r".to_string(), "n".to_string()];
        let slow: Vec<Option<String>> = (0..4)
            .map(|i| {
                let v: Option<Vec<Value>> = ["r", "n"]
                    .iter()
                    .map(|c| Some(value_at(batch.column_by_name(c).unwrap().as_ref(), i)).filter(|v| !v.is_null()))
                    .collect();
                v.map(|v| serde_json::to_string(&v).unwrap())
            })
            .collect();
        assert_eq!(keys_of_batch(&batch, &cols), slow);
        assert_eq!(slow[0].as_deref(), Some(r#"["Zü\"rich\\",-7]"#));
    }

    /// Every widening the protocol allows keeps each key's spelling: a row written before the
    /// widening (read upcast, as readers do) has the key of the same value written after.
    #[test]
    fn keys_keep_their_spelling_through_every_widening() {
        use crate::delta::arrow_schema::arrow_type;
        use crate::delta::schema::{DataType as D, PrimitiveType as P};
        use crate::delta::type_widening::allowed;
        use arrow::array::{ArrayRef, StringArray as S};
        let dec = |precision, scale| P::Decimal { precision, scale };
        let types = [
            P::Byte,
            P::Short,
            P::Integer,
            P::Long,
            P::Float,
            P::Double,
            P::Date,
            P::TimestampNtz,
            dec(6, 2),
            dec(12, 4),
            dec(20, 2),
            dec(38, 18),
            dec(10, 0),
            dec(20, 0),
            dec(30, 5),
        ];
        let values = ["0", "1", "-7", "100", "127", "1.25", "-0.5", "1.1", "3000000000", "2024-02-29", "1e300"];
        let mut pairs = 0;
        for from in types {
            for to in types.iter().copied().filter(|to| allowed(from, *to)) {
                let (old_type, new_type) = (arrow_type(&D::Primitive(from)), arrow_type(&D::Primitive(to)));
                let text: ArrayRef = std::sync::Arc::new(S::from(values.to_vec()));
                let old = arrow::compute::cast(&text, &old_type).unwrap();
                let upcast = arrow::compute::cast(&old, &new_type).unwrap();
                for i in (0..values.len()).filter(|i| !old.is_null(*i)) {
                    let before = key_value(old.as_ref(), i);
                    let after = key_value(upcast.as_ref(), i);
                    assert_eq!(before, after, "{from} -> {to}: {}", values[i]);
                    // A row written after the widening with the same value (its text cast).
                    let printed = match value_at(old.as_ref(), i) {
                        Value::String(s) => s,
                        v => v.to_string(),
                    };
                    let one: ArrayRef = std::sync::Arc::new(S::from(vec![printed.as_str()]));
                    if let Ok(fresh) = arrow::compute::cast(&one, &new_type) {
                        if !fresh.is_null(0) && key_value(fresh.as_ref(), 0) != after && from != P::Float {
                            panic!("{from} -> {to}: {printed} written after spells {}", key_value(fresh.as_ref(), 0));
                        }
                    }
                }
                pairs += 1;
            }
        }
        assert!(pairs >= 20, "{pairs} widenings tried");
        // A whole number is one key whatever numeric type holds it; fractions keep exact text.
        let five = |t: P| {
            let text: ArrayRef = std::sync::Arc::new(S::from(vec!["5"]));
            key_value(arrow::compute::cast(&text, &arrow_type(&D::Primitive(t))).unwrap().as_ref(), 0)
        };
        for t in [P::Byte, P::Long, P::Double, dec(10, 2), dec(38, 10)] {
            assert_eq!(five(t), Value::from(5), "{t}");
        }
        assert_eq!(decimal_key(-125, 2), Value::String("-1.25".into()));
        assert_eq!(decimal_key(12_500, 4), Value::String("1.25".into()));
        assert_eq!(decimal_key(i128::MAX, 0), Value::String(i128::MAX.to_string()));
        assert_eq!(double_key(f64::NAN), Value::String("NaN".into()));
    }
}
