//! [sync] Which column types JSON records need widened: records refused by a table's decoder
//! are decoded again with every widenable column at the widest type schema evolution may give
//! it by itself (integers as `long`, `float` as `double`, decimals at precision 38, dates as
//! `timestamp_ntz`: [`crate::delta::type_widening::automatic`]), and each column then takes the
//! narrowest of those types that holds the values they carry (a `byte` column holding 300
//! becomes `short`, not `long`). Records that still do not fit are left to the caller's
//! dead letters.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType as A, Decimal128Type, Float64Type, Int64Type, TimestampMicrosecondType};

use crate::common::record::RawRecord;
use crate::decode::json::PayloadDecoder;
use crate::delta::arrow_schema::arrow_schema_strict;
use crate::delta::schema::{DataType, PrimitiveType as P, StructField, StructType};
use crate::delta::type_widening::automatic;

/// Fraction digits a decimal column is tried at (its integral digits are kept).
const TRIED_SCALE: i8 = 18;

/// `current` with the columns widened that `payloads` (JSON objects the table refused) need
/// wider, or `None` when no automatic widening makes any of them fit. Fields named in `skip`
/// (record columns) are left as they are.
pub(crate) fn widened(
    current: &StructType,
    skip: &[String],
    payloads: &[&[u8]],
    max_record_bytes: usize,
) -> Option<StructType> {
    // Decimals are tried twice: at their own scale (room for 38 - scale integral digits),
    // then at up to 18 fraction digits.
    let first = pass(current, skip, payloads, max_record_bytes, Scale::Kept);
    let second = pass(first.as_ref().unwrap_or(current), skip, payloads, max_record_bytes, Scale::Fractions);
    second.or(first)
}

/// How decimals are tried.
#[derive(Clone, Copy)]
enum Scale {
    Kept,
    Fractions,
}

fn pass(
    current: &StructType,
    skip: &[String],
    payloads: &[&[u8]],
    max_record_bytes: usize,
    scale: Scale,
) -> Option<StructType> {
    let payload = StructType::new(current.fields.iter().filter(|f| !skip.contains(&f.name)).cloned().collect());
    let wide = StructType::new(payload.fields.iter().map(|f| with_type(f, widest(&f.data_type, scale))).collect());
    if wide == payload {
        return None;
    }
    let decoder = PayloadDecoder::new(std::sync::Arc::new(arrow_schema_strict(&wide)), max_record_bytes);
    let records: Vec<RawRecord<'_>> = payloads
        .iter()
        .map(|p| RawRecord { topic: "", partition: 0, offset: 0, timestamp_ms: None, key: None, payload: Some(p) })
        .collect();
    let batch = decoder.decode(&records).batch?;
    let mut out = current.clone();
    let mut changed = false;
    for f in out.fields.iter_mut().filter(|f| !skip.contains(&f.name)) {
        if let Some(column) = batch.column_by_name(&f.name) {
            let needed = narrowest(&f.data_type, column);
            changed |= needed != f.data_type;
            f.data_type = needed;
        }
    }
    changed.then_some(out)
}

fn with_type(f: &StructField, data_type: DataType) -> StructField {
    StructField { data_type, ..f.clone() }
}

/// The widest type schema evolution gives `t` by itself (nested types inside), decimals at
/// the scale `scale` says.
fn widest(t: &DataType, scale: Scale) -> DataType {
    match t {
        DataType::Primitive(p) => DataType::Primitive(widest_primitive(*p, scale)),
        DataType::Struct(s) => DataType::Struct(Box::new(StructType::new(
            s.fields.iter().map(|f| with_type(f, widest(&f.data_type, scale))).collect(),
        ))),
        DataType::Array(a) => {
            let mut a = a.clone();
            a.element_type = widest(&a.element_type, scale);
            DataType::Array(a)
        }
        DataType::Map(m) => {
            let mut m = m.clone();
            m.key_type = widest(&m.key_type, scale);
            m.value_type = widest(&m.value_type, scale);
            DataType::Map(m)
        }
        DataType::Variant => DataType::Variant,
    }
}

fn widest_primitive(p: P, tried: Scale) -> P {
    match p {
        P::Byte | P::Short | P::Integer => P::Long,
        P::Float => P::Double,
        P::Date => P::TimestampNtz,
        P::Decimal { precision, scale } => {
            let integral = precision as i8 - scale;
            let wide_scale = match tried {
                Scale::Kept => scale,
                Scale::Fractions => scale.max(TRIED_SCALE.min(38 - integral)),
            };
            let wide = P::Decimal { precision: 38, scale: wide_scale };
            if automatic(p, wide) {
                wide
            } else {
                p
            }
        }
        other => other,
    }
}

/// The narrowest type at least `t` (and automatic from it) that holds `column`'s values,
/// decoded at [`widest`]`(t)`.
fn narrowest(t: &DataType, column: &ArrayRef) -> DataType {
    match (t, column.data_type()) {
        (DataType::Primitive(p), _) => DataType::Primitive(narrowest_primitive(*p, column).unwrap_or(*p)),
        (DataType::Struct(s), A::Struct(_)) => {
            let c = column.as_struct();
            DataType::Struct(Box::new(StructType::new(
                s.fields
                    .iter()
                    .map(|f| match c.column_by_name(&f.name) {
                        Some(child) => with_type(f, narrowest(&f.data_type, child)),
                        None => f.clone(),
                    })
                    .collect(),
            )))
        }
        (DataType::Array(a), A::List(_)) => {
            let mut a = a.clone();
            a.element_type = narrowest(&a.element_type, column.as_list::<i32>().values());
            DataType::Array(a)
        }
        (DataType::Map(m), A::Map(_, _)) => {
            let (map, mut m) = (column.as_map(), m.clone());
            m.key_type = narrowest(&m.key_type, map.keys());
            m.value_type = narrowest(&m.value_type, map.values());
            DataType::Map(m)
        }
        _ => t.clone(),
    }
}

/// The wider type `p` needs for `column` (`None`: `p` holds it).
fn narrowest_primitive(p: P, column: &ArrayRef) -> Option<P> {
    match (p, column.data_type()) {
        (P::Byte | P::Short | P::Integer, A::Int64) => {
            let values = column.as_primitive::<Int64Type>();
            let (lo, hi) = values.iter().flatten().fold((0i64, 0i64), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let fits = |t: P| match t {
                P::Byte => lo >= i64::from(i8::MIN) && hi <= i64::from(i8::MAX),
                P::Short => lo >= i64::from(i16::MIN) && hi <= i64::from(i16::MAX),
                P::Integer => lo >= i64::from(i32::MIN) && hi <= i64::from(i32::MAX),
                _ => true,
            };
            [P::Byte, P::Short, P::Integer, P::Long].into_iter().find(|t| (*t == p || automatic(p, *t)) && fits(*t))
        }
        (P::Float, A::Float64) => column
            .as_primitive::<Float64Type>()
            .iter()
            .flatten()
            .any(|x| x.is_finite() && (x.abs() > f64::from(f32::MAX) || (x != 0.0 && (x as f32) == 0.0)))
            .then_some(P::Double),
        (P::Date, A::Timestamp(_, None)) => {
            const DAY_US: i64 = 86_400_000_000;
            let values = column.as_primitive::<TimestampMicrosecondType>();
            values.iter().flatten().any(|us| us % DAY_US != 0).then_some(P::TimestampNtz)
        }
        (P::Decimal { precision, scale }, A::Decimal128(_, wide_scale)) => {
            decimal_needed(precision, scale, *wide_scale, column.as_primitive::<Decimal128Type>())
        }
        _ => None,
    }
}

/// decimal(p, s) grown to the fraction and integral digits the values use, when it must grow
/// and 38 digits hold them.
fn decimal_needed(
    precision: u8,
    scale: i8,
    wide_scale: i8,
    values: &arrow::array::PrimitiveArray<Decimal128Type>,
) -> Option<P> {
    let (mut frac, mut integral) = (i32::from(scale), i32::from(precision as i8 - scale));
    for v in values.iter().flatten() {
        let digits = v.unsigned_abs().to_string();
        let zeros = digits.bytes().rev().take_while(|b| *b == b'0').count() as i32;
        let used_frac = (i32::from(wide_scale) - zeros).max(0);
        let used_integral = digits.len() as i32 - i32::from(wide_scale);
        frac = frac.max(used_frac);
        integral = integral.max(used_integral);
    }
    let (p2, s2) = (integral + frac, frac);
    if p2 > 38 || (p2 == i32::from(precision) && s2 == i32::from(scale)) {
        return None;
    }
    let wider = P::Decimal { precision: p2 as u8, scale: s2 as i8 };
    automatic(P::Decimal { precision, scale }, wider).then_some(wider)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(fields: &[(&str, P)]) -> StructType {
        StructType::new(fields.iter().map(|(n, t)| StructField::new(*n, DataType::Primitive(*t), true)).collect())
    }

    fn widen(current: &StructType, lines: &[&str]) -> Option<StructType> {
        let payloads: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        widened(current, &[], &payloads, 1 << 20)
    }

    #[test]
    fn each_column_takes_the_narrowest_type_that_holds_its_values() {
        let current = schema(&[
            ("b", P::Byte),
            ("i", P::Integer),
            ("f", P::Float),
            ("d", P::Date),
            ("m", P::Decimal { precision: 6, scale: 2 }),
        ]);
        let out = widen(
            &current,
            &[
                r#"{"b": 300, "i": 3000000000, "f": 1e39, "d": "2024-05-01T10:30:00", "m": 12345.125}"#,
                r#"{"b": -5, "i": -9223372036854775808, "f": 1.5, "d": "2024-05-02", "m": 1.5}"#,
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            schema(&[
                ("b", P::Short),
                ("i", P::Long),
                ("f", P::Double),
                ("d", P::TimestampNtz),
                ("m", P::Decimal { precision: 8, scale: 3 }),
            ])
        );
    }

    #[test]
    fn decimals_grow_to_38_digits_and_floats_take_what_float_loses() {
        let current = schema(&[("m", P::Decimal { precision: 6, scale: 2 }), ("f", P::Float)]);
        let out = widen(&current, &[r#"{"m": 123456789012345678901234567890.12, "f": 1e-300}"#]).unwrap();
        assert_eq!(out, schema(&[("m", P::Decimal { precision: 32, scale: 2 }), ("f", P::Double)]));
        let out = widen(&current, &[r#"{"m": 1234.00000000000000000001}"#]);
        assert_eq!(out, None, "more fraction digits than 18: no automatic widening holds it");
        let out = widen(&current, &[r#"{"m": 99999999999999999999.999999999999999999}"#]).unwrap();
        assert_eq!(out, schema(&[("m", P::Decimal { precision: 38, scale: 18 }), ("f", P::Float)]));
    }

    #[test]
    fn values_no_automatic_widening_holds_change_nothing() {
        let current = schema(&[("n", P::Long), ("i", P::Integer)]);
        assert_eq!(widen(&current, &[r#"{"n": 9223372036854775808}"#]), None, "past long");
        assert_eq!(widen(&current, &[r#"{"i": 2.5}"#]), None, "a fraction needs an explicit change");
        assert_eq!(widen(&current, &[r#"{"i": 7}"#]), None, "fits already");
        let dates = schema(&[("d", P::Date)]);
        assert_eq!(widen(&dates, &[r#"{"d": "2024-05-01"}"#]), None, "midnight dates fit");
    }

    #[test]
    fn nested_fields_are_widened_in_place() {
        let current = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[
            {"name":"n","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
            {"name":"l","type":{"type":"array","elementType":"short","containsNull":true},"nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        let out = widen(&current, &[r#"{"s": {"n": 4000000000}, "l": [1, 70000]}"#]).unwrap();
        assert_eq!(
            out.to_json(),
            current
                .to_json()
                .replace(r#""type":"integer""#, r#""type":"long""#)
                .replace(r#""elementType":"short""#, r#""elementType":"integer""#)
        );
    }
}
