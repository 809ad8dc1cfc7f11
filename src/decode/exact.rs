//! [sync] The value rules of the README's value table for typed input (Arrow IPC bodies, Avro
//! and Protobuf rows), checked before a column is cast to the table's type: a cast may widen,
//! respell or fill, never alter a value. JSON input meets the same rules in
//! [`crate::decode::json_values`].
//!
//! Refused, naming the first value that does not fit:
//! - a fraction into an integer column (floats and decimals alike), a non-finite float;
//! - more fraction digits than a decimal column's scale (never rounded), and floats whose
//!   shortest text has more digits than the column holds;
//! - a `double` past `float`'s range into a `float` column;
//! - times finer than a microsecond into a timestamp column (nanoseconds, or a string with
//!   more than six fraction digits); a timestamp into a date column;
//! - booleans into numbers and numbers into booleans.
//!
//! Range errors (a value past an integer or decimal column's range) are the cast's own,
//! which refuses them with `safe = false`.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType as A, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Float16Type, Float32Type, Float64Type,
    TimeUnit,
};

/// Why `column` cannot be cast to `to` without altering a value, if it cannot.
pub(crate) fn check(column: &dyn Array, to: &A) -> Result<(), String> {
    let from = column.data_type();
    if from == to {
        return Ok(());
    }
    match (from, to) {
        (A::Struct(_), A::Struct(target)) => {
            let s = column.as_struct();
            for field in target {
                if let Some(child) = s.column_by_name(field.name()) {
                    check(child.as_ref(), field.data_type()).map_err(|why| format!("{}: {why}", field.name()))?;
                }
            }
            Ok(())
        }
        (A::List(_), A::List(f)) => check(column.as_list::<i32>().values().as_ref(), f.data_type()),
        (A::LargeList(_), A::List(f) | A::LargeList(f)) => {
            check(column.as_list::<i64>().values().as_ref(), f.data_type())
        }
        (f, t) if is_float(f) && (t.is_integer() || is_decimal(t)) => floats(column, t),
        (f, t) if is_decimal(f) && (t.is_integer() || is_decimal(t)) => decimals(column, t),
        (A::Float64, A::Float32) => {
            let past = column
                .as_primitive::<Float64Type>()
                .iter()
                .flatten()
                .find(|x| x.is_finite() && x.abs() > f64::from(f32::MAX));
            past.map_or(Ok(()), |x| Err(format!("{x} is out of range for float")))
        }
        (A::Timestamp(TimeUnit::Nanosecond, _), A::Timestamp(TimeUnit::Microsecond, _)) => {
            let fine = column
                .as_primitive::<arrow::datatypes::TimestampNanosecondType>()
                .iter()
                .flatten()
                .find(|ns| ns % 1000 != 0);
            fine.map_or(Ok(()), |ns| Err(format!("{ns} ns is finer than a microsecond; timestamps keep microseconds")))
        }
        (A::Timestamp(_, _), A::Date32 | A::Date64) => {
            Err("a timestamp; the column is date (give a date, or make the column a timestamp)".into())
        }
        (A::Utf8 | A::LargeUtf8 | A::Utf8View, A::Timestamp(_, _)) => {
            let texts: Vec<Option<&str>> = match from {
                A::Utf8 => column.as_string::<i32>().iter().collect(),
                A::LargeUtf8 => column.as_string::<i64>().iter().collect(),
                _ => column.as_string_view().iter().collect(),
            };
            texts.into_iter().flatten().try_for_each(crate::decode::json_values::check_timestamp_text)
        }
        (A::Boolean, t) if t.is_numeric() => Err("a boolean; the column is a number".into()),
        (f, A::Boolean) if f.is_numeric() => Err("a number; the column is boolean".into()),
        _ => Ok(()),
    }
}

fn is_float(t: &A) -> bool {
    matches!(t, A::Float16 | A::Float32 | A::Float64)
}

fn is_decimal(t: &A) -> bool {
    matches!(t, A::Decimal32(..) | A::Decimal64(..) | A::Decimal128(..) | A::Decimal256(..))
}

/// The scale of a decimal type (0 for integers).
fn scale_of(t: &A) -> i64 {
    match t {
        A::Decimal32(_, s) | A::Decimal64(_, s) | A::Decimal128(_, s) | A::Decimal256(_, s) => i64::from(*s),
        _ => 0,
    }
}

fn column_name(t: &A) -> String {
    match t {
        A::Int8 => "byte".into(),
        A::Int16 => "short".into(),
        A::Int32 => "integer".into(),
        A::Int64 => "long".into(),
        A::Decimal32(p, s) | A::Decimal64(p, s) | A::Decimal128(p, s) => format!("decimal({p},{s})"),
        other => other.to_string(),
    }
}

fn floats(column: &dyn Array, to: &A) -> Result<(), String> {
    let values: Box<dyn Iterator<Item = f64>> = match column.data_type() {
        A::Float16 => Box::new(column.as_primitive::<Float16Type>().iter().flatten().map(f64::from)),
        A::Float32 => Box::new(column.as_primitive::<Float32Type>().iter().flatten().map(f64::from)),
        _ => Box::new(column.as_primitive::<Float64Type>().iter().flatten()),
    };
    let scale = scale_of(to);
    for x in values {
        if !x.is_finite() {
            return Err(format!("{x} is not a number a {} column holds", column_name(to)));
        }
        // The shortest text that reads back as the value: what the producer most likely sent.
        let text = format!("{x}");
        let fraction = text.split_once('.').map_or(0, |(_, f)| f.trim_end_matches('0').len()) as i64;
        if fraction > scale {
            return Err(if scale == 0 {
                format!("{text} has a fraction; the column is {}", column_name(to))
            } else {
                format!("{text} has more than {scale} fraction digits; the column is {}", column_name(to))
            });
        }
    }
    Ok(())
}

fn decimals(column: &dyn Array, to: &A) -> Result<(), String> {
    let (from_scale, to_scale) = (scale_of(column.data_type()), scale_of(to));
    if to_scale >= from_scale {
        return Ok(());
    }
    let drop = u32::try_from(from_scale - to_scale).unwrap_or(u32::MAX);
    let texts: Vec<String> = match column.data_type() {
        A::Decimal32(..) => column.as_primitive::<Decimal32Type>().iter().flatten().map(|v| v.to_string()).collect(),
        A::Decimal64(..) => column.as_primitive::<Decimal64Type>().iter().flatten().map(|v| v.to_string()).collect(),
        A::Decimal128(..) => column.as_primitive::<Decimal128Type>().iter().flatten().map(|v| v.to_string()).collect(),
        _ => column.as_primitive::<Decimal256Type>().iter().flatten().map(|v| v.to_string()).collect(),
    };
    for unscaled in texts {
        let digits = unscaled.trim_start_matches('-');
        let cut = digits.len().saturating_sub(drop as usize);
        if digits[cut..].bytes().any(|b| b != b'0') {
            let shown = render(&unscaled, from_scale);
            return Err(if to_scale == 0 {
                format!("{shown} has a fraction; the column is {}", column_name(to))
            } else {
                format!("{shown} has more than {to_scale} fraction digits; the column is {}", column_name(to))
            });
        }
    }
    Ok(())
}

/// An unscaled decimal's text at `scale` (`-1234`, 2 → `-12.34`).
fn render(unscaled: &str, scale: i64) -> String {
    let (sign, digits) = unscaled.strip_prefix('-').map_or(("", unscaled), |d| ("-", d));
    let scale = usize::try_from(scale).unwrap_or(0);
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

/// `column` cast to `to` after [`check`]: the one exact cast of typed input.
///
/// # Errors
/// The reason a value does not fit.
pub(crate) fn cast(column: &ArrayRef, to: &A) -> Result<ArrayRef, String> {
    check(column.as_ref(), to)?;
    let options = arrow::compute::CastOptions { safe: false, ..arrow::compute::CastOptions::default() };
    arrow::compute::cast_with_options(column, to, &options).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BooleanArray, Decimal128Array, Float64Array, StringArray, TimestampNanosecondArray};
    use std::sync::Arc;

    #[test]
    fn fractions_never_become_integers() {
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None, Some(-2.9)]));
        assert_eq!(cast(&floats, &A::Int64).unwrap_err(), "-2.9 has a fraction; the column is long");
        let whole: ArrayRef = Arc::new(Float64Array::from(vec![1.0, -3.0, 1e3]));
        assert_eq!(cast(&whole, &A::Int64).unwrap().as_primitive::<arrow::datatypes::Int64Type>().value(2), 1000);
        assert!(cast(&whole, &A::Decimal128(10, 0)).is_ok());
        let cents: ArrayRef = Arc::new(Float64Array::from(vec![12.34, 0.125]));
        assert!(cast(&cents, &A::Decimal128(10, 2)).unwrap_err().contains("0.125 has more than 2 fraction digits"));
        let dec: ArrayRef = Arc::new(Decimal128Array::from(vec![1250]).with_precision_and_scale(10, 2).unwrap());
        assert_eq!(cast(&dec, &A::Int32).unwrap_err(), "12.50 has a fraction; the column is integer");
        assert!(cast(&dec, &A::Decimal128(10, 1)).is_ok(), "12.50 fits one fraction digit");
        let nan: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN]));
        assert!(cast(&nan, &A::Int64).is_err());
        let huge: ArrayRef = Arc::new(Float64Array::from(vec![1e300]));
        assert!(cast(&huge, &A::Float32).is_err());
    }

    #[test]
    fn times_keep_microseconds_and_kinds_stay_apart() {
        let ns: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![1_000, 1_001]));
        assert!(cast(&ns, &A::Timestamp(TimeUnit::Microsecond, None))
            .unwrap_err()
            .contains("finer than a microsecond"));
        let text: ArrayRef = Arc::new(StringArray::from(vec!["2024-01-02T03:04:05.1234567Z"]));
        assert!(check(text.as_ref(), &A::Timestamp(TimeUnit::Microsecond, None)).is_err());
        let bools: ArrayRef = Arc::new(BooleanArray::from(vec![true]));
        assert!(cast(&bools, &A::Int64).is_err());
        let one: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
        assert!(cast(&one, &A::Boolean).is_err());
    }
}
