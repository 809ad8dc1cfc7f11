//! Per-file statistics (digest §4), computed from the Arrow data as it is written.
//!
//! Columns: the first `delta.dataSkippingNumIndexedCols` leaves (default 32, `-1` all) in
//! schema order, depth first, or the columns named by `delta.dataSkippingStatsColumns`;
//! partition columns never. `minValues`/`maxValues` for numbers, decimals, dates, timestamps
//! and strings; `nullCount` for every included leaf. Strings are truncated to
//! `delta.dataSkippingStringPrefixLength` characters (max with Spark's tie-breaker character),
//! timestamps are written truncated to milliseconds. Keys are physical names.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::{max, min};
use arrow::datatypes::{
    DataType as A, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimeUnit, TimestampMicrosecondType,
};
use serde_json::{json, Map, Value};

use super::arrow_value::decimal_string;
use super::properties::TableProperties;
use super::schema::{ColumnMappingMode, DataType, StructType};

/// A comparable statistic value.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Scalar {
    Int(i64),
    Float(f64),
    Decimal(i128),
    Str(String),
    Date(i32),
    Micros(i64),
}

#[derive(Debug, Clone)]
struct Leaf {
    /// Physical path from the top-level column.
    path: Vec<String>,
    /// Logical type of the leaf.
    data_type: DataType,
    min: Option<Scalar>,
    max: Option<Scalar>,
    /// False once a value made min/max unusable (NaN, unrepresentable).
    min_max_ok: bool,
    nulls: i64,
}

/// Accumulates statistics for one data file across its batches.
#[derive(Debug, Clone)]
pub(crate) struct StatsCollector {
    leaves: Vec<Leaf>,
    rows: i64,
    prefix: usize,
}

impl StatsCollector {
    /// Chooses the stats columns for a table's data (physical) schema.
    pub(crate) fn new(
        schema: &StructType,
        partition_columns: &[String],
        props: &TableProperties,
        mode: ColumnMappingMode,
    ) -> Self {
        let mut leaves = Vec::new();
        let named = props
            .data_skipping_stats_columns
            .as_ref()
            .map(|cols| cols.iter().map(|c| c.to_lowercase()).collect::<Vec<_>>());
        fn walk(
            t: &DataType,
            logical: Vec<String>,
            physical: Vec<String>,
            named: &Option<Vec<String>>,
            mode: ColumnMappingMode,
            out: &mut Vec<Leaf>,
        ) {
            if let DataType::Struct(s) = t {
                for f in &s.fields {
                    let (mut l, mut p) = (logical.clone(), physical.clone());
                    l.push(f.name.clone());
                    p.push(f.physical_name(mode).to_string());
                    walk(&f.data_type, l, p, named, mode, out);
                }
                return;
            }
            if let Some(names) = named {
                let joined = logical.join(".").to_lowercase();
                let selected = names.iter().any(|n| joined == *n || joined.starts_with(&format!("{n}.")));
                if !selected {
                    return;
                }
            }
            out.push(Leaf { path: physical, data_type: t.clone(), min: None, max: None, min_max_ok: true, nulls: 0 });
        }
        for f in schema.fields.iter().filter(|f| !partition_columns.contains(&f.name)) {
            walk(
                &f.data_type,
                vec![f.name.clone()],
                vec![f.physical_name(mode).to_string()],
                &named,
                mode,
                &mut leaves,
            );
        }
        if named.is_none() && props.data_skipping_num_indexed_cols >= 0 {
            leaves.truncate(props.data_skipping_num_indexed_cols as usize);
        }
        StatsCollector { leaves, rows: 0, prefix: props.data_skipping_string_prefix_length.max(1) }
    }

    /// The collector with the leaves at `paths` (physical) too, whatever the table's
    /// statistics settings chose: a clustered table's clustering columns.
    pub(crate) fn with_leaves(mut self, schema: &StructType, mode: ColumnMappingMode, paths: &[Vec<String>]) -> Self {
        for path in paths {
            if self.leaves.iter().any(|l| l.path == *path) {
                continue;
            }
            if let Some(data_type) = leaf_type(schema, mode, path) {
                let leaf = Leaf { path: path.clone(), data_type, min: None, max: None, min_max_ok: true, nulls: 0 };
                self.leaves.push(leaf);
            }
        }
        self
    }

    /// Adds a batch in the physical schema (partition columns dropped).
    pub(crate) fn update(&mut self, batch: &RecordBatch) {
        self.rows += batch.num_rows() as i64;
        for leaf in &mut self.leaves {
            let Some(array) = find(batch, &leaf.path) else {
                leaf.nulls += batch.num_rows() as i64;
                continue;
            };
            leaf.nulls += array.logical_null_count() as i64;
            if !leaf.min_max_ok || !eligible(&leaf.data_type) || array.null_count() == array.len() {
                continue;
            }
            match min_max(&array) {
                Some((lo, hi)) => {
                    if leaf.min.as_ref().is_none_or(|m| lo < *m) {
                        leaf.min = Some(lo);
                    }
                    if leaf.max.as_ref().is_none_or(|m| hi > *m) {
                        leaf.max = Some(hi);
                    }
                }
                None => leaf.min_max_ok = false,
            }
        }
    }

    /// The `stats` JSON string for the file.
    pub(crate) fn to_json(&self) -> String {
        let (mut mins, mut maxs, mut nulls) = (Map::new(), Map::new(), Map::new());
        for leaf in &self.leaves {
            insert(&mut nulls, &leaf.path, json!(leaf.nulls));
            if !leaf.min_max_ok {
                continue;
            }
            if let Some(v) = leaf.min.as_ref().and_then(|m| render(m, &leaf.data_type, self.prefix, false)) {
                insert(&mut mins, &leaf.path, v);
            }
            if let Some(v) = leaf.max.as_ref().and_then(|m| render(m, &leaf.data_type, self.prefix, true)) {
                insert(&mut maxs, &leaf.path, v);
            }
        }
        json!({"numRecords": self.rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}).to_string()
    }
}

fn find(batch: &RecordBatch, path: &[String]) -> Option<ArrayRef> {
    let mut array = batch.column_by_name(&path[0])?.clone();
    for name in &path[1..] {
        let s = array.as_struct_opt()?;
        let child = s.column_by_name(name)?.clone();
        // A leaf is null where its parent struct is null.
        array = match s.nulls() {
            Some(parent) if parent.null_count() > 0 => {
                let combined = arrow::buffer::NullBuffer::union(Some(parent), child.logical_nulls().as_ref());
                arrow::array::make_array(child.to_data().into_builder().nulls(combined).build().ok()?)
            }
            _ => child,
        };
    }
    Some(array)
}

/// Whether files keep min/max statistics for values of `t` (nullCount covers every leaf).
pub(crate) fn eligible(t: &DataType) -> bool {
    use super::schema::PrimitiveType as P;
    matches!(
        t,
        DataType::Primitive(
            P::Byte
                | P::Short
                | P::Integer
                | P::Long
                | P::Float
                | P::Double
                | P::Decimal { .. }
                | P::Date
                | P::Timestamp
                | P::TimestampNtz
                | P::String
        )
    )
}

fn min_max(a: &ArrayRef) -> Option<(Scalar, Scalar)> {
    macro_rules! int {
        ($t:ty) => {{
            let p = a.as_primitive::<$t>();
            Some((Scalar::Int(i64::from(min(p)?)), Scalar::Int(i64::from(max(p)?))))
        }};
    }
    match a.data_type() {
        A::Int8 => int!(Int8Type),
        A::Int16 => int!(Int16Type),
        A::Int32 => int!(Int32Type),
        A::Int64 => int!(Int64Type),
        A::Float32 => floats(a.as_primitive::<Float32Type>().iter().flatten().map(f64::from)),
        A::Float64 => floats(a.as_primitive::<Float64Type>().iter().flatten()),
        A::Decimal128(_, _) => {
            let p = a.as_primitive::<Decimal128Type>();
            Some((Scalar::Decimal(min(p)?), Scalar::Decimal(max(p)?)))
        }
        A::Date32 => {
            let p = a.as_primitive::<Date32Type>();
            Some((Scalar::Date(min(p)?), Scalar::Date(max(p)?)))
        }
        A::Timestamp(TimeUnit::Microsecond, _) => {
            let p = a.as_primitive::<TimestampMicrosecondType>();
            Some((Scalar::Micros(min(p)?), Scalar::Micros(max(p)?)))
        }
        A::Utf8 => {
            // One pass for both ends: each value is compared with the smallest and the largest.
            let mut values = a.as_string::<i32>().iter().flatten();
            let first = values.next()?;
            let (lo, hi) = values.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v)));
            Some((Scalar::Str(lo.to_string()), Scalar::Str(hi.to_string())))
        }
        _ => None,
    }
}

/// The least and greatest of the non-null values, `None` when one is NaN (Delta's statistics
/// then leave the column out).
fn floats(values: impl Iterator<Item = f64>) -> Option<(Scalar, Scalar)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        if v.is_nan() {
            return None;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    Some((Scalar::Float(lo), Scalar::Float(hi)))
}

fn render(v: &Scalar, t: &DataType, prefix: usize, is_max: bool) -> Option<Value> {
    use super::schema::PrimitiveType as P;
    Some(match (v, t) {
        (Scalar::Int(i), _) => json!(i),
        (Scalar::Float(f), _) => serde_json::Number::from_f64(*f).map(Value::Number)?,
        (Scalar::Decimal(d), DataType::Primitive(P::Decimal { precision, scale })) => {
            // JSON numbers pass through f64 here: exact only up to 15 digits. Beyond that a
            // rounded bound could exclude real values, so write none.
            if *precision > 15 {
                return None;
            }
            serde_json::from_str::<serde_json::Number>(&decimal_string(*d, *scale)).ok().map(Value::Number)?
        }
        (Scalar::Date(days), _) => {
            json!(chrono::DateTime::from_timestamp(i64::from(*days) * 86_400, 0)?.format("%Y-%m-%d").to_string())
        }
        (Scalar::Micros(us), DataType::Primitive(p)) => {
            let dt = chrono::DateTime::from_timestamp_micros(*us)?.naive_utc();
            let text = dt.format("%Y-%m-%dT%H:%M:%S%.3f").to_string();
            json!(if *p == P::Timestamp { text + "Z" } else { text })
        }
        (Scalar::Str(s), _) => json!(truncate(s, prefix, is_max)?),
        _ => return None,
    })
}

/// Spark's string truncation: min keeps a prefix; max keeps a prefix plus a tie-breaker
/// character that sorts after anything the original could continue with.
fn truncate(s: &str, prefix: usize, is_max: bool) -> Option<String> {
    let mut chars = s.chars();
    let head: String = chars.by_ref().take(prefix).collect();
    let Some(next) = chars.next() else { return Some(s.to_string()) };
    if !is_max {
        return Some(head);
    }
    if head.ends_with('\u{10FFFF}') {
        return None;
    }
    Some(head + if next < '\u{7F}' { "\u{7F}" } else { "\u{10FFFF}" })
}

fn insert(map: &mut Map<String, Value>, path: &[String], v: Value) {
    if path.len() == 1 {
        map.insert(path[0].clone(), v);
        return;
    }
    let child = map.entry(path[0].clone()).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = child {
        insert(m, &path[1..], v);
    }
}

/// The type of the leaf at physical `path` in `schema`, if it is one.
fn leaf_type(schema: &StructType, mode: ColumnMappingMode, path: &[String]) -> Option<DataType> {
    let (first, rest) = path.split_first()?;
    let f = schema.fields.iter().find(|f| f.physical_name(mode) == first.as_str())?;
    match (&f.data_type, rest.is_empty()) {
        (DataType::Struct(_), true) => None,
        (t, true) => Some(t.clone()),
        (DataType::Struct(s), false) => leaf_type(s, mode, rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray, StructArray, TimestampMicrosecondArray};
    use arrow::datatypes::{Field, Fields};
    use std::collections::HashMap;
    use std::sync::Arc;

    fn schema() -> StructType {
        StructType::parse(r#"{"type":"struct","fields":[
            {"name":"id","type":"long","nullable":true,"metadata":{}},
            {"name":"s","type":"string","nullable":true,"metadata":{}},
            {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
            {"name":"n","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
            {"name":"p","type":"string","nullable":true,"metadata":{}}]}"#).unwrap()
    }

    fn batch(ids: Vec<Option<i64>>, s: Vec<Option<&str>>) -> RecordBatch {
        let n = ids.len();
        let inner = StructArray::new(
            Fields::from(vec![Field::new("x", A::Int64, true)]),
            vec![Arc::new(Int64Array::from(vec![Some(7); n])) as ArrayRef],
            Some(arrow::buffer::NullBuffer::from(
                vec![true; n].into_iter().enumerate().map(|(i, _)| i != 0).collect::<Vec<_>>(),
            )),
        );
        RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("s", Arc::new(StringArray::from(s)) as ArrayRef),
            ("ts", Arc::new(TimestampMicrosecondArray::from(vec![1_500_123i64; n]).with_timezone("UTC")) as ArrayRef),
            ("n", Arc::new(inner) as ArrayRef),
        ])
        .unwrap()
    }

    #[test]
    fn collects_across_batches() {
        let props = TableProperties::from_config(&HashMap::new());
        let mut c = StatsCollector::new(&schema(), &["p".to_string()], &props, ColumnMappingMode::None);
        c.update(&batch(vec![Some(5), None], vec![Some("b"), Some("z")]));
        c.update(&batch(vec![Some(-3), Some(9)], vec![None, Some("a")]));
        let v: Value = serde_json::from_str(&c.to_json()).unwrap();
        assert_eq!(v["numRecords"], 4);
        assert_eq!(v["minValues"]["id"], -3);
        assert_eq!(v["maxValues"]["id"], 9);
        assert_eq!(v["nullCount"]["id"], 1);
        assert_eq!(v["minValues"]["s"], "a");
        assert_eq!(v["maxValues"]["s"], "z");
        assert_eq!(v["minValues"]["ts"], "1970-01-01T00:00:01.500Z");
        assert_eq!(v["nullCount"]["n"]["x"], 2, "null where the parent struct is null");
        assert!(v["nullCount"].get("p").is_none(), "partition columns have no stats");
    }

    /// Each end of a column in one pass: strings by their UTF-8 bytes (as Spark compares
    /// them), floats with NaN leaving the column's bounds out.
    #[test]
    fn one_pass_ends_of_strings_and_floats() {
        let strings: ArrayRef =
            Arc::new(StringArray::from(vec![Some("é"), None, Some("z"), Some(""), Some("zz"), Some("😀")]));
        assert_eq!(min_max(&strings), Some((Scalar::Str(String::new()), Scalar::Str("😀".into()))));
        let floats: ArrayRef = Arc::new(arrow::array::Float32Array::from(vec![Some(2.5), None, Some(-0.5), Some(7.0)]));
        assert_eq!(min_max(&floats), Some((Scalar::Float(-0.5), Scalar::Float(7.0))));
        let nan: ArrayRef = Arc::new(arrow::array::Float64Array::from(vec![Some(1.0), Some(f64::NAN), Some(3.0)]));
        assert_eq!(min_max(&nan), None);
        let none: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>]));
        assert_eq!(min_max(&none), None);
    }

    #[test]
    fn column_selection_and_truncation() {
        let mut cfg = HashMap::new();
        cfg.insert("delta.dataSkippingNumIndexedCols".to_string(), "1".to_string());
        let c = StatsCollector::new(&schema(), &[], &TableProperties::from_config(&cfg), ColumnMappingMode::None);
        assert_eq!(c.leaves.len(), 1);
        cfg.clear();
        cfg.insert("delta.dataSkippingStatsColumns".to_string(), "s, n".to_string());
        let c = StatsCollector::new(&schema(), &[], &TableProperties::from_config(&cfg), ColumnMappingMode::None);
        assert_eq!(c.leaves.iter().map(|l| l.path.join(".")).collect::<Vec<_>>(), vec!["s", "n.x"]);
        // A clustered table's columns keep statistics whatever the settings chose.
        cfg.clear();
        cfg.insert("delta.dataSkippingNumIndexedCols".to_string(), "0".to_string());
        let none = ColumnMappingMode::None;
        let clustering = [vec!["n".to_string(), "x".to_string()], vec!["s".to_string()], vec!["n".to_string()]];
        let c = StatsCollector::new(&schema(), &[], &TableProperties::from_config(&cfg), none).with_leaves(
            &schema(),
            none,
            &clustering,
        );
        assert_eq!(c.leaves.iter().map(|l| l.path.join(".")).collect::<Vec<_>>(), vec!["n.x", "s"]);
        let long = "a".repeat(40);
        assert_eq!(truncate(&long, 32, false).unwrap().len(), 32);
        assert_eq!(truncate(&long, 32, true).unwrap(), format!("{}\u{7F}", "a".repeat(32)));
        assert_eq!(truncate("short", 32, true).unwrap(), "short");
    }
}
