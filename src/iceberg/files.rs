//! Delta `add` actions as Iceberg data files: the absolute path, the partition tuple, the
//! record count, and the column statistics in Iceberg's single-value binary form, keyed by
//! field id.
//!
//! Bounds are converted only where the Delta statistic is a valid Iceberg bound: integers,
//! floats, dates and strings as written (a truncated string minimum is a prefix; a truncated
//! maximum carries a tie-breaker character that sorts after what it replaced), decimals as
//! their unscaled big-endian bytes, timestamps written at millisecond precision widened by
//! 999 µs each way (Delta truncates them, and a writer may truncate a negative one towards
//! zero); binary and booleans get none. `value_counts` are the file's record count,
//! `null_value_counts` the Delta null counts; NaN counts are not known from Delta statistics
//! and are left out (readers then assume NaNs may be there).

use serde_json::Value;

use super::schema::{PartitionField, PartitionKind};
use crate::delta::actions::Add;
use crate::delta::schema::{ColumnMappingMode, DataType, PrimitiveType, StructField, StructType};
use crate::error::{Error, Result};

/// A partition value as Iceberg stores it.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum PartitionValue {
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Boolean(bool),
    String(String),
    Date(i32),
    Micros(i64),
}

impl PartitionValue {
    /// Whether this is a float NaN (left out of bounds, counted in `contains_nan`).
    pub(crate) fn is_nan(&self) -> bool {
        match self {
            PartitionValue::Float(f) => f.is_nan(),
            PartitionValue::Double(f) => f.is_nan(),
            _ => false,
        }
    }

    /// Iceberg's order of two values of one field: numbers by value (`-0.0` before `0.0`),
    /// `false` before `true`, strings by their UTF-8 bytes (code points, as Iceberg's
    /// comparators and Python's). Values of different kinds never meet in one field.
    pub(crate) fn total_cmp(&self, other: &PartitionValue) -> std::cmp::Ordering {
        use PartitionValue as V;
        match (self, other) {
            (V::Int(a), V::Int(b)) | (V::Date(a), V::Date(b)) => a.cmp(b),
            (V::Long(a), V::Long(b)) | (V::Micros(a), V::Micros(b)) => a.cmp(b),
            (V::Float(a), V::Float(b)) => a.total_cmp(b),
            (V::Double(a), V::Double(b)) => a.total_cmp(b),
            (V::Boolean(a), V::Boolean(b)) => a.cmp(b),
            (V::String(a), V::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => std::cmp::Ordering::Equal,
        }
    }
}

/// A partition value in Iceberg's single-value binary form (the manifest list's bounds).
pub(crate) fn partition_bytes(v: &PartitionValue) -> Vec<u8> {
    match v {
        PartitionValue::Int(i) | PartitionValue::Date(i) => i.to_le_bytes().to_vec(),
        PartitionValue::Long(i) | PartitionValue::Micros(i) => i.to_le_bytes().to_vec(),
        PartitionValue::Float(f) => f.to_le_bytes().to_vec(),
        PartitionValue::Double(f) => f.to_le_bytes().to_vec(),
        PartitionValue::Boolean(b) => vec![u8::from(*b)],
        PartitionValue::String(s) => s.as_bytes().to_vec(),
    }
}

/// One data file of an Iceberg manifest.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DataFile {
    /// Absolute (the table root's URL, then the decoded relative path).
    pub path: String,
    pub partition: Vec<Option<PartitionValue>>,
    pub record_count: i64,
    pub size: i64,
    pub value_counts: Vec<(i32, i64)>,
    pub null_counts: Vec<(i32, i64)>,
    pub lower: Vec<(i32, Vec<u8>)>,
    pub upper: Vec<(i32, Vec<u8>)>,
}

/// The data file of `add`, whose decoded path relative to the root is `rel`.
///
/// # Errors
/// [`Error::Unsupported`] for a file without `numRecords` (icebergCompatV2 requires it);
/// [`Error::InvalidLog`] for a partition value that does not parse as its column's type.
pub(crate) fn data_file(
    add: &Add,
    root_url: &str,
    rel: &str,
    schema: &StructType,
    mode: ColumnMappingMode,
    spec: &[PartitionField],
) -> Result<DataFile> {
    let stats: Value = add.stats.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or(Value::Null);
    let record_count = stats["numRecords"].as_i64().ok_or_else(|| {
        Error::unsupported(format!("data file {rel} has no numRecords statistic, which Iceberg metadata needs"))
    })?;
    let mut file = DataFile {
        path: format!("{}/{rel}", root_url.trim_end_matches('/')),
        partition: Vec::with_capacity(spec.len()),
        record_count,
        size: add.size,
        value_counts: Vec::new(),
        null_counts: Vec::new(),
        lower: Vec::new(),
        upper: Vec::new(),
    };
    for p in spec {
        let raw =
            add.partition_values.get(&p.physical).or_else(|| add.partition_values.get(&p.name)).cloned().flatten();
        file.partition.push(partition_value(raw.as_deref(), p).map_err(|e| Error::invalid_log(rel, e))?);
    }
    leaves(
        &schema.fields,
        mode,
        &stats["minValues"],
        &stats["maxValues"],
        &stats["nullCount"],
        record_count,
        &mut file,
    );
    Ok(file)
}

/// Walks the leaves the statistics cover.
fn leaves(
    fields: &[StructField],
    mode: ColumnMappingMode,
    min: &Value,
    max: &Value,
    nulls: &Value,
    records: i64,
    out: &mut DataFile,
) {
    for f in fields {
        let (Some(id), name) = (f.column_mapping_id().and_then(|i| i32::try_from(i).ok()), f.physical_name(mode))
        else {
            continue;
        };
        if let DataType::Struct(s) = &f.data_type {
            leaves(&s.fields, mode, &min[name], &max[name], &nulls[name], records, out);
            continue;
        }
        if let Some(n) = nulls[name].as_i64() {
            out.null_counts.push((id, n));
            out.value_counts.push((id, records));
        }
        if let DataType::Primitive(p) = &f.data_type {
            if let Some(b) = bound(p, &min[name], false) {
                out.lower.push((id, b));
            }
            if let Some(b) = bound(p, &max[name], true) {
                out.upper.push((id, b));
            }
        }
    }
}

/// Iceberg's single-value serialisation of a Delta statistic.
fn bound(t: &PrimitiveType, v: &Value, upper: bool) -> Option<Vec<u8>> {
    use PrimitiveType as P;
    if v.is_null() {
        return None;
    }
    Some(match t {
        P::Byte | P::Short | P::Integer => i32::try_from(v.as_i64()?).ok()?.to_le_bytes().to_vec(),
        P::Long => v.as_i64()?.to_le_bytes().to_vec(),
        P::Float => {
            let f = v.as_f64()? as f32;
            f.is_finite().then(|| f.to_le_bytes().to_vec())?
        }
        P::Double => {
            let f = v.as_f64()?;
            f.is_finite().then(|| f.to_le_bytes().to_vec())?
        }
        P::String => v.as_str()?.as_bytes().to_vec(),
        P::Date => days(v.as_str()?)?.to_le_bytes().to_vec(),
        P::Timestamp | P::TimestampNtz => {
            let us = micros(v.as_str()?)?;
            let widen = if us % 1000 != 0 {
                0
            } else if upper {
                999
            } else {
                -999
            };
            us.checked_add(widen)?.to_le_bytes().to_vec()
        }
        P::Decimal { precision, scale } => decimal_bytes(v, *precision, *scale, upper)?,
        _ => return None,
    })
}

/// A decimal statistic as Iceberg's bound: the unscaled value, big-endian two's complement in
/// the fewest bytes. Statistics are JSON numbers (f64 here): exact to 15 significant digits,
/// so a wider decimal's bound is moved one unit outwards, which still bounds.
fn decimal_bytes(v: &Value, precision: u8, scale: i8, upper: bool) -> Option<Vec<u8>> {
    let scaled = v.as_f64()? * 10f64.powi(i32::from(scale));
    if !scaled.is_finite() || scaled.abs() >= 1e38 {
        return None;
    }
    let mut unscaled = scaled.round() as i128;
    if precision > 15 {
        unscaled += if upper { 1 } else { -1 };
    }
    let bytes = unscaled.to_be_bytes();
    // Drop leading bytes that only repeat the sign.
    let mut start = 0;
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xFF && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    Some(bytes[start..].to_vec())
}

fn days(s: &str) -> Option<i32> {
    let d = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    i32::try_from(d.signed_duration_since(chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?).num_days()).ok()
}

fn micros(s: &str) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_micros());
    }
    let t = s.trim_end_matches('Z').replace(' ', "T");
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(&t, f).ok())
        .map(|t| t.and_utc().timestamp_micros())
}

/// A `partitionValues` string as its Iceberg value (`None`: null).
fn partition_value(raw: Option<&str>, p: &PartitionField) -> std::result::Result<Option<PartitionValue>, String> {
    let Some(raw) = raw.filter(|v| !v.is_empty() && *v != "__HIVE_DEFAULT_PARTITION__") else {
        return Ok(None);
    };
    let bad = || format!("partition value {raw:?} of {:?} is not a valid {:?}", p.name, p.delta_type);
    Ok(Some(match p.kind {
        PartitionKind::Int => PartitionValue::Int(raw.parse().map_err(|_| bad())?),
        PartitionKind::Long => PartitionValue::Long(raw.parse().map_err(|_| bad())?),
        PartitionKind::Float => PartitionValue::Float(raw.parse().map_err(|_| bad())?),
        PartitionKind::Double => PartitionValue::Double(raw.parse().map_err(|_| bad())?),
        PartitionKind::Boolean => PartitionValue::Boolean(raw.eq_ignore_ascii_case("true")),
        PartitionKind::String => PartitionValue::String(raw.to_string()),
        PartitionKind::Date => PartitionValue::Date(days(raw).ok_or_else(bad)?),
        PartitionKind::Timestamp(_) => PartitionValue::Micros(micros(raw).ok_or_else(bad)?),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::iceberg_compat::schema::partition_fields;
    use serde_json::json;

    #[test]
    fn adds_become_data_files_with_valid_bounds() {
        let mut s = StructType::new(vec![
            StructField::new("id", DataType::Primitive(PrimitiveType::Long), true),
            StructField::new("ts", DataType::Primitive(PrimitiveType::Timestamp), true),
            StructField::new("p", DataType::Primitive(PrimitiveType::String), true),
            StructField::new("d", DataType::Primitive(PrimitiveType::Date), true),
        ]);
        for (i, f) in s.fields.iter_mut().enumerate() {
            f.metadata.insert(crate::delta::schema::CM_ID.into(), json!(i + 1));
            f.metadata.insert("delta.columnMapping.physicalName".into(), json!(format!("c{i}")));
        }
        let spec = partition_fields(&s, &["p".into(), "d".into()], ColumnMappingMode::Name).unwrap();
        let add: Add = serde_json::from_value(json!({
            "path": "p=%C3%A9/x.parquet", "size": 10, "modificationTime": 0, "dataChange": true,
            "partitionValues": {"c2": "é", "c3": null},
            "stats": r#"{"numRecords":3,"minValues":{"c0":-5,"c1":"2024-01-01T00:00:00.001Z"},"maxValues":{"c0":9,"c1":"2024-01-01T00:00:00.002Z"},"nullCount":{"c0":0,"c1":1}}"#,
        }))
        .unwrap();
        let f = data_file(&add, "file:///t", "p=é/x.parquet", &s, ColumnMappingMode::Name, &spec).unwrap();
        assert_eq!(f.path, "file:///t/p=é/x.parquet");
        assert_eq!(f.partition, vec![Some(PartitionValue::String("é".into())), None]);
        assert_eq!(f.record_count, 3);
        assert_eq!(f.lower[0], (1, (-5i64).to_le_bytes().to_vec()));
        assert_eq!(f.upper[0], (1, 9i64.to_le_bytes().to_vec()));
        let max_us = 1_704_067_200_002_000i64 + 999;
        assert_eq!(f.upper[1], (2, max_us.to_le_bytes().to_vec()));
        assert_eq!(f.null_counts, vec![(1, 0), (2, 1)]);
        let no_stats: Add = serde_json::from_value(json!({
            "path": "y.parquet", "size": 1, "modificationTime": 0, "dataChange": true, "partitionValues": {},
        }))
        .unwrap();
        assert!(data_file(&no_stats, "file:///t", "y.parquet", &s, ColumnMappingMode::Name, &[]).is_err());
    }
}
