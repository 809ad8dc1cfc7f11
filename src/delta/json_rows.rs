//! [sync] Rows of an Arrow array written as JSON text straight into a buffer: the exact text
//! `serde_json::to_vec(&value_at(array, i))` gives ([`super::arrow_value`]), without building
//! a `serde_json::Value` per row.
//!
//! Contract:
//! - The bytes are identical to the `Value` path's for every type (property-tested against it):
//!   struct fields in order with nulls omitted, floats as `serde_json` prints them (`NaN` and
//!   the infinities as strings), binary as lowercase hex, timestamps and dates as ISO-8601.
//! - Booleans, integers, floats, strings, binary, dates and timestamps of years 0–9999,
//!   structs and lists are written directly; everything else (decimals, maps, dictionaries,
//!   years beyond four digits) goes through the `Value` path for that value alone.
//! - An array whose structs repeat a field name (which a `Value` object collapses) is written
//!   through the `Value` path whole.
//!
//! Used where rows become text in bulk: `deltabus changes`/`cat`, the lines sink, and the
//! Kafka listener's change-feed records.

use std::collections::HashSet;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use chrono::{Datelike, Timelike};

use super::arrow_value::{non_finite_name, printed_float, timestamp_micros, value_at};

/// Writes the rows of one array (a batch as a `StructArray`, or any column) as JSON.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct JsonRows<'a> {
    array: &'a dyn Array,
    /// Some struct repeats a field name: every row takes the `Value` path.
    through_values: bool,
}

impl<'a> JsonRows<'a> {
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(array: &'a dyn Array) -> JsonRows<'a> {
        JsonRows { array, through_values: repeats_a_name(array.data_type()) }
    }

    /// Appends row `i` as JSON to `out`.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn write(&self, i: usize, out: &mut Vec<u8>) {
        if self.through_values {
            through_value(self.array, i, out);
        } else {
            write_value(self.array, i, out);
        }
    }
}

/// Whether a struct anywhere in `t` has two fields of one name.
fn repeats_a_name(t: &DataType) -> bool {
    match t {
        DataType::Struct(fields) => {
            let mut seen = HashSet::new();
            fields.iter().any(|f| !seen.insert(f.name().as_str()) || repeats_a_name(f.data_type()))
        }
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => repeats_a_name(f.data_type()),
        DataType::Dictionary(_, v) => repeats_a_name(v),
        _ => false,
    }
}

fn through_value(array: &dyn Array, i: usize, out: &mut Vec<u8>) {
    // Writing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &value_at(array, i));
}

/// Whether a present value of this type can still print as `null` (the `Value` path decides
/// those, and a struct omits them).
fn may_print_null(t: &DataType) -> bool {
    matches!(t, DataType::Null | DataType::Dictionary(_, _))
}

fn write_value(array: &dyn Array, i: usize, out: &mut Vec<u8>) {
    if array.is_null(i) {
        out.extend_from_slice(b"null");
        return;
    }
    macro_rules! int {
        ($t:ty) => {{
            let mut b = itoa::Buffer::new();
            out.extend_from_slice(b.format(array.as_primitive::<$t>().value(i)).as_bytes());
        }};
    }
    match array.data_type() {
        DataType::Boolean => out.extend_from_slice(if array.as_boolean().value(i) { b"true" } else { b"false" }),
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float32 => float(f64::from(array.as_primitive::<Float32Type>().value(i)), true, out),
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(i), false, out),
        DataType::Utf8 => string(array.as_string::<i32>().value(i), out),
        DataType::LargeUtf8 => string(array.as_string::<i64>().value(i), out),
        DataType::Utf8View => string(array.as_string_view().value(i), out),
        DataType::Binary => hex_string(array.as_binary::<i32>().value(i), out),
        DataType::LargeBinary => hex_string(array.as_binary::<i64>().value(i), out),
        DataType::BinaryView => hex_string(array.as_binary_view().value(i), out),
        DataType::FixedSizeBinary(_) => hex_string(array.as_fixed_size_binary().value(i), out),
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(i);
            match chrono::DateTime::from_timestamp(i64::from(days) * 86_400, 0)
                .filter(|d| (0..=9999).contains(&d.year()))
            {
                Some(d) => {
                    out.push(b'"');
                    date(&d, out);
                    out.push(b'"');
                }
                None => through_value(array, i, out),
            }
        }
        DataType::Timestamp(unit, tz) => timestamp(timestamp_micros(array, i, *unit), tz.is_some(), array, i, out),
        DataType::Struct(fields) if super::arrow_schema::is_variant(fields) => through_value(array, i, out),
        DataType::Struct(_) => {
            let s = array.as_struct();
            out.push(b'{');
            let mut first = true;
            for (field, col) in s.fields().iter().zip(s.columns()) {
                if col.is_null(i) {
                    continue;
                }
                // A value that may still print as null is written aside first: a struct
                // omits it.
                let aside = may_print_null(col.data_type()).then(|| {
                    let mut v = Vec::new();
                    write_value(col.as_ref(), i, &mut v);
                    v
                });
                if aside.as_deref() == Some(b"null") {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                string(field.name(), out);
                out.push(b':');
                match aside {
                    Some(v) => out.extend_from_slice(&v),
                    None => write_value(col.as_ref(), i, out),
                }
            }
            out.push(b'}');
        }
        DataType::List(_) => list(array.as_list::<i32>().value(i).as_ref(), out),
        DataType::LargeList(_) => list(array.as_list::<i64>().value(i).as_ref(), out),
        _ => through_value(array, i, out),
    }
}

fn list(values: &dyn Array, out: &mut Vec<u8>) {
    out.push(b'[');
    for j in 0..values.len() {
        if j > 0 {
            out.push(b',');
        }
        write_value(values, j, out);
    }
    out.push(b']');
}

fn string(s: &str, out: &mut Vec<u8>) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn hex_string(bytes: &[u8], out: &mut Vec<u8>) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2 + 2);
    out.push(b'"');
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
    out.push(b'"');
}

/// As the `Value` path's floats: non-finite ones as strings, a float32 by its own shortest
/// spelling.
fn float(v: f64, single: bool, out: &mut Vec<u8>) {
    match non_finite_name(v) {
        Some(name) => string(name, out),
        None => {
            let _ = serde_json::to_writer(&mut *out, &printed_float(v, single));
        }
    }
}

fn two(n: u32, out: &mut Vec<u8>) {
    out.push(b'0' + (n / 10 % 10) as u8);
    out.push(b'0' + (n % 10) as u8);
}

/// `YYYY-MM-DD` of a date in years 0–9999.
fn date(d: &impl Datelike, out: &mut Vec<u8>) {
    let y = d.year().unsigned_abs();
    two(y / 100, out);
    two(y % 100, out);
    out.push(b'-');
    two(d.month(), out);
    out.push(b'-');
    two(d.day(), out);
}

/// `YYYY-MM-DDTHH:MM:SS.ffffff` (with `Z` when `utc`) for years 0–9999; other instants
/// through the `Value` path.
fn timestamp(micros: i64, utc: bool, array: &dyn Array, i: usize, out: &mut Vec<u8>) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000) as u32;
    let Some(t) = chrono::DateTime::from_timestamp(secs, frac * 1000).filter(|t| (0..=9999).contains(&t.year())) else {
        through_value(array, i, out);
        return;
    };
    out.push(b'"');
    date(&t, out);
    out.push(b'T');
    two(t.hour(), out);
    out.push(b':');
    two(t.minute(), out);
    out.push(b':');
    two(t.second(), out);
    out.push(b'.');
    two(frac / 10_000, out);
    two(frac / 100 % 100, out);
    two(frac % 100, out);
    if utc {
        out.push(b'Z');
    }
    out.push(b'"');
}

#[cfg(test)]
#[path = "json_rows_tests.rs"]
mod tests;
