//! Delta `add` actions as Iceberg data files: the absolute path, the partition tuple, the
//! record count, and the column statistics in Iceberg's single-value binary form, keyed by
//! field id.
//!
//! Bounds are converted only where the Delta statistic is a valid Iceberg bound: integers,
//! floats, dates and strings as written (a truncated string maximum carries Spark's
//! tie-breaker character, so it still bounds), timestamps with their maximum raised by 999 µs
//! (Delta truncates them to milliseconds); decimals and binary get none. `value_counts` are
//! the file's record count, `null_value_counts` the Delta null counts.

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
        let raw = add.partition_values.get(&p.physical).or_else(|| add.partition_values.get(&p.name)).cloned().flatten();
        file.partition.push(partition_value(raw.as_deref(), p).map_err(|e| Error::invalid_log(rel, e))?);
    }
    leaves(&schema.fields, mode, &stats["minValues"], &stats["maxValues"], &stats["nullCount"], record_count, &mut file);
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
        let (Some(id), name) = (f.column_mapping_id().and_then(|i| i32::try_from(i).ok()), f.physical_name(mode)) else {
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
            (if upper { us.checked_add(999)? } else { us }).to_le_bytes().to_vec()
        }
        _ => return None,
    })
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
    use crate::delta::iceberg::schema::partition_fields;
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
