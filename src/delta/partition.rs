//! Partition values on the write side (digest §2.11, §12.3): serialising a value for
//! `partitionValues`, the Hive directory name, and the URI-encoded `add.path`.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType as A, TimeUnit, TimestampMicrosecondType};

use super::arrow_value::decimal_string;

/// The `partitionValues` string of row `i` (`None` for null), as Spark writes it. An empty
/// string or binary value is null, as Spark records it (Hive's default partition): readers
/// differ on what `""` in the log means (Spark and deltabus read null, delta-kernel-rs the
/// empty string), and a null is null to all of them.
pub(crate) fn serialize_value(array: &dyn Array, i: usize) -> Option<String> {
    if array.is_null(i) {
        return None;
    }
    Some(match array.data_type() {
        A::Utf8 if array.as_string::<i32>().value(i).is_empty() => return None,
        A::Binary if array.as_binary::<i32>().value(i).is_empty() => return None,
        A::Utf8 => array.as_string::<i32>().value(i).to_string(),
        A::Float32 | A::Float64 => {
            let v = if let A::Float32 = array.data_type() {
                f64::from(array.as_primitive::<arrow::datatypes::Float32Type>().value(i))
            } else {
                array.as_primitive::<arrow::datatypes::Float64Type>().value(i)
            };
            java_double(v)
        }
        A::Decimal128(_, scale) => {
            decimal_string(array.as_primitive::<arrow::datatypes::Decimal128Type>().value(i), *scale)
        }
        A::Timestamp(TimeUnit::Microsecond, tz) => {
            let us = array.as_primitive::<TimestampMicrosecondType>().value(i);
            let dt = chrono::DateTime::from_timestamp_micros(us)?.naive_utc();
            if tz.is_some() {
                dt.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
            } else {
                dt.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
            }
        }
        A::Binary => String::from_utf8_lossy(array.as_binary::<i32>().value(i)).into_owned(),
        _ => {
            let one = arrow::compute::cast(&array.slice(i, 1), &A::Utf8).ok()?;
            one.as_string::<i32>().value(0).to_string()
        }
    })
}

/// Java's `Double.toString` for the common cases (`1.0`, `0.5`, `NaN`, `Infinity`, `1.0E20`).
fn java_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let v = if v == 0.0 { 0.0 } else { v };
    let abs = v.abs();
    if abs != 0.0 && !(1e-3..1e7).contains(&abs) {
        let s = format!("{v:E}");
        let (m, e) = s.split_once('E').unwrap_or((&s, "0"));
        let m = if m.contains('.') { m.to_string() } else { format!("{m}.0") };
        return format!("{m}E{e}");
    }
    let s = format!("{v}");
    if s.contains('.') {
        s
    } else {
        s + ".0"
    }
}

const HIVE_ESCAPE: &[u8] = b"\"#%'*/:=?\\{[]^\x7f";

/// Hive escaping of a directory name component.
pub(crate) fn hive_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if (c as u32) < 0x20 || (c.is_ascii() && HIVE_ESCAPE.contains(&(c as u8))) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The relative directory of a partition: `a=1/b=__HIVE_DEFAULT_PARTITION__/`.
pub(crate) fn partition_dir(columns: &[(String, Option<String>)]) -> String {
    let mut out = String::new();
    for (name, value) in columns {
        let v = match value {
            Some(v) if !v.is_empty() => hive_escape(v),
            _ => "__HIVE_DEFAULT_PARTITION__".to_string(),
        };
        out.push_str(&format!("{}={}/", hive_escape(name), v));
    }
    out
}

/// URI-encodes a relative file path for `add.path` (controls, space, and
/// `"#%<>?[\]^`{|}` are escaped; `/` separates segments).
pub(crate) fn encode_add_path(rel: &str) -> String {
    // Non-ASCII characters stay as they are (as Spark writes them); only ASCII controls and
    // URI delimiters are escaped.
    let mut out = String::with_capacity(rel.len());
    for c in rel.chars() {
        let escape = c.is_ascii() && {
            let b = c as u8;
            b < 0x20 || b == 0x7f || b" \"#%<>?[\\]^`{|}".contains(&b)
        };
        if escape {
            out.push_str(&format!("%{:02X}", c as u8));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::paths::resolve_in_table;

    #[test]
    fn directories_and_paths_round_trip() {
        let dir = partition_dir(&[("p".into(), Some("a:b".into())), ("q".into(), None)]);
        assert_eq!(dir, "p=a%3Ab/q=__HIVE_DEFAULT_PARTITION__/");
        let rel = format!("{dir}part-0.parquet");
        let encoded = encode_add_path(&rel);
        assert_eq!(encoded, "p=a%253Ab/q=__HIVE_DEFAULT_PARTITION__/part-0.parquet");
        assert_eq!(resolve_in_table(&encoded, "file:///t", false).unwrap(), rel);
        let odd = partition_dir(&[("s".into(), Some("x y/%z#".into()))]) + "f";
        assert_eq!(resolve_in_table(&encode_add_path(&odd), "file:///t", false).unwrap(), odd);
        // Unicode values keep their characters (not one Latin-1 character per UTF-8 byte).
        let city = partition_dir(&[("city".into(), Some("München 東京".into()))]) + "f";
        assert_eq!(encode_add_path(&city), "city=München%20東京/f");
        assert_eq!(resolve_in_table(&encode_add_path(&city), "file:///t", false).unwrap(), city);
    }

    #[test]
    fn empty_strings_are_null_partition_values() {
        let strings = arrow::array::StringArray::from(vec![Some(""), Some("a"), None, Some(" ")]);
        let got: Vec<Option<String>> = (0..4).map(|i| serialize_value(&strings, i)).collect();
        assert_eq!(got, vec![None, Some("a".into()), None, Some(" ".into())]);
        let bytes = arrow::array::BinaryArray::from(vec![Some(&b""[..]), Some(&b"x"[..])]);
        assert_eq!((serialize_value(&bytes, 0), serialize_value(&bytes, 1)), (None, Some("x".into())));
    }

    #[test]
    fn java_doubles() {
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(-0.0), "0.0");
        assert_eq!(java_double(0.25), "0.25");
        assert_eq!(java_double(1e20), "1.0E20");
        assert_eq!(java_double(f64::NAN), "NaN");
    }
}
