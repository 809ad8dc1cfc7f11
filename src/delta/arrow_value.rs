//! One Arrow value as JSON, the way deltabus prints rows and reads checkpoint structs.
//!
//! Nulls inside structs are omitted (as Spark's `to_json`), maps become
//! `[{"key":..,"value":..}]` (lossless for any key type), binary becomes lowercase hex,
//! timestamps become ISO-8601 with microseconds (`Z` for UTC, none for timestamp_ntz), dates
//! `YYYY-MM-DD`, decimals exact numbers when they fit a double's 15 digits and strings beyond.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use serde_json::{Map, Number, Value};

/// How maps are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MapStyle {
    /// `[{"key":..,"value":..}]`: lossless for any key type (row output).
    Entries,
    /// `{"key": value}` with keys as strings (log actions such as `configuration`).
    Object,
}

/// Converts row `i` of `array` to JSON (`Value::Null` when null), maps as entries.
pub(crate) fn value_at(array: &dyn Array, i: usize) -> Value {
    value_at_with(array, i, MapStyle::Entries)
}

/// Converts row `i` of `array` to JSON with the given map style.
pub(crate) fn value_at_with(array: &dyn Array, i: usize, maps: MapStyle) -> Value {
    let value_at = |a: &dyn Array, j: usize| value_at_with(a, j, maps);
    if array.is_null(i) {
        return Value::Null;
    }
    macro_rules! num {
        ($t:ty) => {
            Value::from(array.as_primitive::<$t>().value(i))
        };
    }
    match array.data_type() {
        DataType::Boolean => Value::Bool(array.as_boolean().value(i)),
        DataType::Int8 => num!(Int8Type),
        DataType::Int16 => num!(Int16Type),
        DataType::Int32 => num!(Int32Type),
        DataType::Int64 => num!(Int64Type),
        DataType::UInt8 => num!(UInt8Type),
        DataType::UInt16 => num!(UInt16Type),
        DataType::UInt32 => num!(UInt32Type),
        DataType::UInt64 => num!(UInt64Type),
        DataType::Float32 => float(f64::from(array.as_primitive::<arrow::datatypes::Float32Type>().value(i)), true),
        DataType::Float64 => float(array.as_primitive::<arrow::datatypes::Float64Type>().value(i), false),
        DataType::Utf8 => Value::String(array.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Value::String(array.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Value::String(array.as_string_view().value(i).to_string()),
        DataType::Binary => Value::String(hex::encode(array.as_binary::<i32>().value(i))),
        DataType::LargeBinary => Value::String(hex::encode(array.as_binary::<i64>().value(i))),
        DataType::BinaryView => Value::String(hex::encode(array.as_binary_view().value(i))),
        DataType::FixedSizeBinary(_) => Value::String(hex::encode(array.as_fixed_size_binary().value(i))),
        DataType::Date32 => {
            let days = array.as_primitive::<arrow::datatypes::Date32Type>().value(i);
            chrono::DateTime::from_timestamp(i64::from(days) * 86_400, 0)
                .map_or(Value::from(days), |d| Value::String(d.format("%Y-%m-%d").to_string()))
        }
        DataType::Timestamp(unit, tz) => format_timestamp(timestamp_micros(array, i, *unit), tz.is_some()),
        DataType::Decimal128(precision, scale) => {
            let v = array.as_primitive::<arrow::datatypes::Decimal128Type>().value(i);
            decimal(v, *precision, *scale)
        }
        DataType::Struct(fields) if super::arrow_schema::is_variant(fields) => variant_at(array.as_struct(), i),
        DataType::Struct(_) => {
            let s = array.as_struct();
            let mut obj = Map::new();
            for (field, col) in s.fields().iter().zip(s.columns()) {
                let v = value_at(col.as_ref(), i);
                if !v.is_null() {
                    obj.insert(field.name().clone(), v);
                }
            }
            Value::Object(obj)
        }
        DataType::List(_) => list(&array.as_list::<i32>().value(i), maps),
        DataType::LargeList(_) => list(&array.as_list::<i64>().value(i), maps),
        DataType::Map(_, _) => {
            let entries = array.as_map().value(i);
            let (keys, values) = (entries.column(0), entries.column(1));
            if maps == MapStyle::Object {
                let mut obj = Map::new();
                for j in 0..entries.len() {
                    let k = match value_at(keys.as_ref(), j) {
                        Value::String(k) => k,
                        other => other.to_string(),
                    };
                    obj.insert(k, value_at(values.as_ref(), j));
                }
                return Value::Object(obj);
            }
            Value::Array(
                (0..entries.len())
                    .map(|j| {
                        let mut e = Map::new();
                        e.insert("key".into(), value_at(keys.as_ref(), j));
                        let v = value_at(values.as_ref(), j);
                        if !v.is_null() {
                            e.insert("value".into(), v);
                        }
                        Value::Object(e)
                    })
                    .collect(),
            )
        }
        DataType::Dictionary(_, _) => {
            match arrow::compute::cast(&array.slice(i, 1), &array.data_type().clone().dictionary_value_type()) {
                Ok(plain) => value_at(plain.as_ref(), 0),
                Err(_) => Value::Null,
            }
        }
        DataType::Null => Value::Null,
        other => Value::String(format!("<unsupported type {other}>")),
    }
}

trait DictValue {
    fn dictionary_value_type(self) -> DataType;
}

impl DictValue for DataType {
    fn dictionary_value_type(self) -> DataType {
        match self {
            DataType::Dictionary(_, v) => *v,
            other => other,
        }
    }
}

fn list(values: &ArrayRef, maps: MapStyle) -> Value {
    Value::Array((0..values.len()).map(|j| value_at_with(values.as_ref(), j, maps)).collect())
}

fn float(v: f64, single: bool) -> Value {
    if let Some(name) = non_finite_name(v) {
        return Value::String(name.into());
    }
    Number::from_f64(printed_float(v, single)).map_or(Value::Null, Value::Number)
}

/// How a non-finite float prints (`None` for a finite one).
pub(crate) fn non_finite_name(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("NaN")
    } else if v == f64::INFINITY {
        Some("Infinity")
    } else if v == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    }
}

/// The double a finite float prints as: a float32 by its own shortest representation, not
/// the widened double's.
pub(crate) fn printed_float(v: f64, single: bool) -> f64 {
    if single {
        format!("{}", v as f32).parse().unwrap_or(v)
    } else {
        v
    }
}

/// Row `i` of a timestamp array in microseconds since the epoch (seconds and milliseconds
/// saturate, nanoseconds round down).
pub(crate) fn timestamp_micros(array: &dyn Array, i: usize, unit: TimeUnit) -> i64 {
    use arrow::datatypes::{
        TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
    };
    match unit {
        TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(i).saturating_mul(1_000_000),
        TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(i).saturating_mul(1000),
        TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(i),
        TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(i).div_euclid(1000),
    }
}

/// Formats microseconds since the epoch as ISO-8601 (`Z` when `utc`).
pub(crate) fn format_timestamp(micros: i64, utc: bool) -> Value {
    let secs = micros.div_euclid(1_000_000);
    let nanos = (micros.rem_euclid(1_000_000) * 1000) as u32;
    match chrono::DateTime::from_timestamp(secs, nanos) {
        Some(dt) => {
            let text = dt.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string();
            Value::String(if utc { text + "Z" } else { text })
        }
        None => Value::from(micros),
    }
}

/// Formats an unscaled decimal.
pub(crate) fn decimal_string(v: i128, scale: i8) -> String {
    if scale <= 0 {
        return (v * 10i128.pow(u32::from(scale.unsigned_abs()))).to_string();
    }
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded =
        if digits.len() <= scale { format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits) } else { digits };
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{}{int}.{frac}", if neg { "-" } else { "" })
}

/// The JSON of a variant value (`metadata` and `value` binaries): objects, arrays, strings,
/// booleans and numbers as they were stored; decimals as decimal columns print (exact numbers
/// up to 15 digits, strings beyond); a value that does not decode is `null`.
fn variant_at(s: &arrow::array::StructArray, i: usize) -> Value {
    let (m, v) = (s.column(0).as_binary::<i32>(), s.column(1).as_binary::<i32>());
    if m.is_null(i) || v.is_null(i) {
        return Value::Null;
    }
    match parquet_variant::Variant::try_new(m.value(i), v.value(i)) {
        Ok(variant) => variant_json(&variant),
        Err(_) => Value::Null,
    }
}

/// The JSON of one decoded variant value (see [`variant_at`] for how each kind prints).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn variant_json(v: &parquet_variant::Variant<'_, '_>) -> Value {
    use parquet_variant::Variant as V;
    let digits = |x: i128| x.unsigned_abs().to_string().len().min(38) as u8;
    match v {
        V::Null => Value::Null,
        V::BooleanTrue => Value::Bool(true),
        V::BooleanFalse => Value::Bool(false),
        V::Int8(x) => Value::from(*x),
        V::Int16(x) => Value::from(*x),
        V::Int32(x) => Value::from(*x),
        V::Int64(x) => Value::from(*x),
        V::Float(x) => Number::from_f64(f64::from(*x)).map_or(Value::Null, Value::Number),
        V::Double(x) => Number::from_f64(*x).map_or(Value::Null, Value::Number),
        V::Decimal4(d) => decimal(i128::from(d.integer()), digits(i128::from(d.integer())), d.scale() as i8),
        V::Decimal8(d) => decimal(i128::from(d.integer()), digits(i128::from(d.integer())), d.scale() as i8),
        V::Decimal16(d) => decimal(d.integer(), digits(d.integer()), d.scale() as i8),
        V::String(s) => Value::String((*s).to_string()),
        V::ShortString(s) => Value::String(s.as_str().to_string()),
        V::Binary(b) => Value::String(hex::encode(b)),
        V::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.to_string(), variant_json(&x))).collect()),
        V::List(l) => Value::Array(l.iter().map(|x| variant_json(&x)).collect()),
        V::Date(d) => Value::String(d.format("%Y-%m-%d").to_string()),
        V::TimestampMicros(t) | V::TimestampNanos(t) => Value::String(t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()),
        V::TimestampNtzMicros(t) | V::TimestampNtzNanos(t) => {
            Value::String(t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
        }
        V::Time(t) => Value::String(t.format("%H:%M:%S%.6f").to_string()),
        V::Uuid(u) => Value::String(u.to_string()),
    }
}

fn decimal(v: i128, precision: u8, scale: i8) -> Value {
    let text = decimal_string(v, scale);
    if precision <= 15 {
        if let Ok(n) = serde_json::from_str::<Number>(&text) {
            return Value::Number(n);
        }
    }
    Value::String(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_and_timestamps() {
        assert_eq!(decimal_string(12345, 2), "123.45");
        assert_eq!(decimal_string(-5, 3), "-0.005");
        assert_eq!(decimal_string(7, 0), "7");
        assert_eq!(format_timestamp(1_500_000, true), Value::String("1970-01-01T00:00:01.500000Z".into()));
        assert_eq!(format_timestamp(-1, false), Value::String("1969-12-31T23:59:59.999999".into()));
    }
}
