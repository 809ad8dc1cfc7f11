//! The direct writer against the `Value` path, byte for byte, on seeded random rows of every
//! type the `Value` path knows, nulls, extreme instants and Unicode included.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, LargeStringArray, ListArray, MapArray,
    NullArray, StringArray, StringViewArray, StructArray, TimestampMicrosecondArray, TimestampMillisecondArray,
    TimestampNanosecondArray, TimestampSecondArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Fields, Int32Type};

use super::*;
use crate::delta::test_rng::xorshift;

fn value_path(array: &dyn Array, i: usize) -> String {
    serde_json::to_string(&value_at(array, i)).unwrap_or_else(|e| panic!("{e}"))
}

fn direct(array: &dyn Array, i: usize) -> String {
    let mut out = Vec::new();
    JsonRows::new(array).write(i, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_same(array: &dyn Array, what: &str) {
    for i in 0..array.len() {
        assert_eq!(direct(array, i), value_path(array, i), "{what}, row {i}");
    }
}

/// Values that probe each type's edges, then seeded random ones.
fn pick<T: Copy>(edges: &[T], rng: &mut impl FnMut() -> u64, random: impl Fn(u64) -> T) -> T {
    let r = rng();
    if r.is_multiple_of(3) {
        edges[(r / 3) as usize % edges.len()]
    } else {
        random(rng())
    }
}

const TEXTS: &[&str] =
    &["", "plain", "quote \" and \\ backslash", "tab\tnew\nline\u{1}", "ünïcødé ✓", "𝄞 astral", "\u{7f}\u{2028}"];

fn columns(n: usize, seed: u64) -> Vec<(&'static str, ArrayRef)> {
    let mut rng = xorshift(seed);
    let mut some = |p: u64| -> bool { rng() % 100 >= p };
    let mut rng2 = xorshift(seed ^ 0x9e37_79b9);
    let mut v: Vec<(&'static str, ArrayRef)> = Vec::new();
    let nulls: Vec<bool> = (0..n).map(|_| some(20)).collect();
    macro_rules! col {
        ($name:literal, $arr:ty, $edges:expr, $f:expr) => {{
            let vals: Vec<_> = (0..n).map(|i| nulls[(i * 7 + 3) % n].then(|| pick($edges, &mut rng2, $f))).collect();
            v.push(($name, Arc::new(<$arr>::from(vals)) as ArrayRef));
        }};
    }
    col!("i8", Int8Array, &[i8::MIN, -1, 0, i8::MAX], |r| r as i8);
    col!("i16", Int16Array, &[i16::MIN, 0, i16::MAX], |r| r as i16);
    col!("i32", Int32Array, &[i32::MIN, 0, i32::MAX], |r| r as i32);
    col!("i64", Int64Array, &[i64::MIN, -1, 0, i64::MAX], |r| r as i64);
    col!("u8", UInt8Array, &[0, u8::MAX], |r| r as u8);
    col!("u16", UInt16Array, &[0, u16::MAX], |r| r as u16);
    col!("u32", UInt32Array, &[0, u32::MAX], |r| r as u32);
    col!("u64", UInt64Array, &[0, u64::MAX], |r| r);
    col!("bool", BooleanArray, &[true, false], |r| r % 2 == 0);
    let f64_edges =
        [0.0, -0.0, 1.0, 0.1, 1e300, -1e-300, 5e-324, f64::MAX, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e21, 1e-7];
    col!("f64", Float64Array, &f64_edges, f64::from_bits);
    col!("f64_small", Float64Array, &f64_edges, |r| (r % 2_000_000) as f64 / 1000.0 - 1000.0);
    let f32_edges = [0.0f32, -0.0, 0.1, 16_777_217.0, f32::MAX, f32::MIN_POSITIVE, f32::NAN, f32::INFINITY];
    col!("f32", Float32Array, &f32_edges, |r| f32::from_bits(r as u32));
    col!("f32_small", Float32Array, &f32_edges, |r| (r % 20_000) as f32 / 7.0);
    let days = [i32::MIN, -719_529, -719_528, -1, 0, 2_932_896, 2_932_897, i32::MAX];
    col!("date", Date32Array, &days, |r| (r % 6_000_000) as i32 - 3_000_000);
    let micros = [
        i64::MIN,
        -62_167_219_200_000_001,
        -62_167_219_200_000_000,
        -1,
        0,
        1,
        253_402_300_799_999_999,
        253_402_300_800_000_000,
        i64::MAX,
    ];
    col!("ts_us", TimestampMicrosecondArray, &micros, |r| r as i64);
    col!("ts_us_near", TimestampMicrosecondArray, &micros, |r| (r % 400_000_000_000_000_000) as i64
        - 100_000_000_000_000_000);
    col!("ts_ms", TimestampMillisecondArray, &[i64::MIN, -1, 0, i64::MAX], |r| (r % 10_000_000_000_000) as i64);
    col!("ts_s", TimestampSecondArray, &[i64::MIN, -1, 0, i64::MAX], |r| (r % 100_000_000_000) as i64);
    col!("ts_ns", TimestampNanosecondArray, &[i64::MIN, -1, 0, 999, i64::MAX], |r| r as i64);
    let texts: Vec<Option<String>> = (0..n)
        .map(|i| {
            nulls[(i * 5 + 1) % n].then(|| {
                let r = rng2();
                let mut s = TEXTS[r as usize % TEXTS.len()].to_string();
                s.extend(char::from_u32((r >> 8) as u32 % 0x11_0000));
                s
            })
        })
        .collect();
    v.push(("s", Arc::new(StringArray::from(texts.clone()))));
    v.push(("ls", Arc::new(LargeStringArray::from(texts.clone()))));
    v.push(("sv", Arc::new(StringViewArray::from(texts.iter().map(|t| t.as_deref()).collect::<Vec<_>>()))));
    let bins: Vec<Option<Vec<u8>>> =
        (0..n).map(|i| nulls[(i * 3) % n].then(|| rng2().to_le_bytes()[..(i % 9)].to_vec())).collect();
    v.push(("bin", Arc::new(BinaryArray::from(bins.iter().map(|b| b.as_deref()).collect::<Vec<_>>()))));
    let fixed = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
        (0..n).map(|i| nulls[(i * 11) % n].then(|| rng2().to_be_bytes()[..3].to_vec())),
        3,
    );
    v.push(("fixed", Arc::new(fixed.unwrap_or_else(|e| panic!("{e}")))));
    let decimals: Decimal128Array =
        (0..n).map(|i| nulls[(i * 13) % n].then(|| i128::from(rng2() as i64) * 1_000)).collect();
    v.push(("dec_small", Arc::new(decimals.clone().with_precision_and_scale(12, 3).unwrap_or_else(|e| panic!("{e}")))));
    v.push(("dec_big", Arc::new(decimals.with_precision_and_scale(38, 5).unwrap_or_else(|e| panic!("{e}")))));
    let dict: DictionaryArray<Int32Type> = texts.iter().map(|t| t.as_deref()).collect();
    v.push(("dict", Arc::new(dict)));
    v.push(("null", Arc::new(NullArray::new(n))));
    v
}

fn struct_of(cols: Vec<(&'static str, ArrayRef)>, nulls: Option<arrow::buffer::NullBuffer>) -> StructArray {
    let fields: Fields = cols.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), true)).collect();
    StructArray::new(fields, cols.into_iter().map(|(_, a)| a).collect(), nulls)
}

#[test]
fn every_type_prints_as_the_value_path_prints_it() {
    for seed in 1..=12u64 {
        let n = 97;
        let cols = columns(n, seed);
        for (name, col) in &cols {
            assert_same(col.as_ref(), &format!("seed {seed}, column {name}"));
        }
        let row = struct_of(cols, None);
        assert_same(&row, &format!("seed {seed}, rows"));
    }
}

#[test]
fn nested_structs_lists_and_maps_print_as_the_value_path() {
    let n = 60;
    let cols = columns(n, 77);
    let inner_nulls = arrow::buffer::NullBuffer::from((0..n).map(|i| i % 4 != 1).collect::<Vec<_>>());
    let inner = struct_of(cols.iter().take(12).cloned().collect(), Some(inner_nulls));
    let inner_type = inner.data_type().clone();
    // Lists of 0-3 of the inner structs (some lists null).
    let lens: Vec<usize> = (0..n).map(|i| i % 4).collect();
    let mut offsets = vec![0i32];
    for l in &lens {
        offsets.push(offsets.last().copied().unwrap_or(0) + *l as i32);
    }
    let total = offsets.last().copied().unwrap_or(0) as usize;
    let idx = arrow::array::UInt32Array::from((0..total as u32).map(|j| j % n as u32).collect::<Vec<_>>());
    let items = arrow::compute::take(&inner, &idx, None).unwrap_or_else(|e| panic!("{e}"));
    let list = ListArray::new(
        Arc::new(Field::new("item", inner_type, true)),
        OffsetBuffer::new(offsets.clone().into()),
        items,
        Some(arrow::buffer::NullBuffer::from((0..n).map(|i| i % 5 != 2).collect::<Vec<_>>())),
    );
    // A map of string keys to doubles.
    let keys = StringArray::from((0..total).map(|j| format!("k{j}")).collect::<Vec<_>>());
    let values = Float64Array::from((0..total).map(|j| (j % 3 != 0).then_some(j as f64 / 3.0)).collect::<Vec<_>>());
    let entries = StructArray::new(
        Fields::from(vec![Field::new("key", DataType::Utf8, false), Field::new("value", DataType::Float64, true)]),
        vec![Arc::new(keys), Arc::new(values)],
        None,
    );
    let map = MapArray::new(
        Arc::new(Field::new("entries", entries.data_type().clone(), false)),
        OffsetBuffer::new(offsets.into()),
        entries,
        None,
        false,
    );
    let mut top: Vec<(&'static str, ArrayRef)> =
        vec![("inner", Arc::new(inner)), ("list", Arc::new(list)), ("map", Arc::new(map))];
    top.extend(cols.into_iter().skip(20));
    let row = struct_of(top, None);
    assert_same(&row, "nested rows");
}

#[test]
fn a_repeated_field_name_takes_the_value_path() {
    let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)]));
    let b: ArrayRef = Arc::new(Int64Array::from(vec![Some(10), Some(20), None]));
    let row = struct_of(vec![("x", a), ("x", b)], None);
    assert!(JsonRows::new(&row).through_values);
    assert_same(&row, "repeated name");
}

#[test]
fn typical_rows_are_written_directly() {
    let cols = columns(10, 3);
    let row = struct_of(cols, None);
    assert!(!JsonRows::new(&row).through_values);
    assert!(direct(&row, 0).starts_with('{'));
}
