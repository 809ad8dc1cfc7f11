//! Reading back the manifests and manifest lists [`super::avro`] writes (a conversion
//! rewrites or carries over the previous snapshot's), with `apache-avro`. A file that is not
//! such a manifest or list is refused as an invalid log, never a panic.

use apache_avro::types::Value as A;
use apache_avro::Reader;

use super::avro::{Entry, FieldSummary, ManifestFile};
use super::files::{DataFile, PartitionValue};
use crate::error::{Error, Result};

fn bad(what: &str) -> Error {
    Error::invalid_log("metadata", format!("unreadable Iceberg {what}"))
}

fn field<'a>(fields: &'a [(String, A)], name: &str) -> Option<&'a A> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn unwrap_union(v: &A) -> &A {
    match v {
        A::Union(_, inner) => inner,
        other => other,
    }
}

fn long(fields: &[(String, A)], name: &str) -> Option<i64> {
    match unwrap_union(field(fields, name)?) {
        A::Long(v) => Some(*v),
        A::Int(v) => Some(i64::from(*v)),
        _ => None,
    }
}

fn int(fields: &[(String, A)], name: &str) -> Option<i32> {
    i32::try_from(long(fields, name)?).ok()
}

fn kv_read<T>(v: Option<&A>, value: impl Fn(&A) -> Option<T>) -> Option<Vec<(i32, T)>> {
    match v.map(unwrap_union) {
        None | Some(A::Null) => Some(Vec::new()),
        Some(A::Array(items)) => items
            .iter()
            .map(|item| match item {
                A::Record(kv) => Some((int(kv, "key")?, value(field(kv, "value")?)?)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn read_partition(v: &A) -> Option<Option<PartitionValue>> {
    Some(match unwrap_union(v) {
        A::Null => None,
        A::Int(i) => Some(PartitionValue::Int(*i)),
        A::Long(i) => Some(PartitionValue::Long(*i)),
        A::Float(f) => Some(PartitionValue::Float(*f)),
        A::Double(f) => Some(PartitionValue::Double(*f)),
        A::Boolean(b) => Some(PartitionValue::Boolean(*b)),
        A::String(s) => Some(PartitionValue::String(s.clone())),
        A::Date(d) => Some(PartitionValue::Date(*d)),
        A::TimestampMicros(t) => Some(PartitionValue::Micros(*t)),
        _ => return None,
    })
}

/// The entries of a manifest this module wrote.
///
/// # Errors
/// [`Error::InvalidLog`] for a file that is not such a manifest.
pub(crate) fn read_manifest(bytes: &[u8]) -> Result<Vec<Entry>> {
    let reader = Reader::new(bytes).map_err(|_| bad("manifest"))?;
    let mut out = Vec::new();
    for v in reader {
        let A::Record(e) = v.map_err(|_| bad("manifest"))? else { return Err(bad("manifest entry")) };
        let Some(A::Record(f)) = field(&e, "data_file") else { return Err(bad("manifest entry")) };
        let Some(A::Record(partition)) = field(f, "partition") else { return Err(bad("manifest entry")) };
        let file = (|| {
            Some(DataFile {
                path: match field(f, "file_path")? {
                    A::String(s) => s.clone(),
                    _ => return None,
                },
                partition: partition.iter().map(|(_, v)| read_partition(v)).collect::<Option<Vec<_>>>()?,
                record_count: long(f, "record_count")?,
                size: long(f, "file_size_in_bytes")?,
                value_counts: kv_read(field(f, "value_counts"), |v| if let A::Long(n) = v { Some(*n) } else { None })?,
                null_counts: kv_read(
                    field(f, "null_value_counts"),
                    |v| if let A::Long(n) = v { Some(*n) } else { None },
                )?,
                lower: kv_read(field(f, "lower_bounds"), |v| if let A::Bytes(b) = v { Some(b.clone()) } else { None })?,
                upper: kv_read(field(f, "upper_bounds"), |v| if let A::Bytes(b) = v { Some(b.clone()) } else { None })?,
            })
        })()
        .ok_or_else(|| bad("data file"))?;
        out.push(Entry {
            status: int(&e, "status").ok_or_else(|| bad("manifest entry"))?,
            snapshot_id: long(&e, "snapshot_id").ok_or_else(|| bad("manifest entry"))?,
            sequence_number: long(&e, "sequence_number").ok_or_else(|| bad("manifest entry"))?,
            file_sequence_number: long(&e, "file_sequence_number").ok_or_else(|| bad("manifest entry"))?,
            file,
        });
    }
    Ok(out)
}

/// The manifests of a manifest list this module wrote.
///
/// # Errors
/// [`Error::InvalidLog`] for a file that is not such a list.
pub(crate) fn read_manifest_list(bytes: &[u8]) -> Result<Vec<ManifestFile>> {
    let reader = Reader::new(bytes).map_err(|_| bad("manifest list"))?;
    let mut out = Vec::new();
    for v in reader {
        let A::Record(m) = v.map_err(|_| bad("manifest list"))? else { return Err(bad("manifest list entry")) };
        let parsed = (|| {
            let partitions = match field(&m, "partitions").map(unwrap_union) {
                Some(A::Array(items)) => items.iter().map(read_summary).collect::<Option<Vec<_>>>()?,
                _ => Vec::new(),
            };
            Some(ManifestFile {
                path: match field(&m, "manifest_path")? {
                    A::String(s) => s.clone(),
                    _ => return None,
                },
                length: long(&m, "manifest_length")?,
                sequence_number: long(&m, "sequence_number")?,
                min_sequence_number: long(&m, "min_sequence_number")?,
                added_snapshot_id: long(&m, "added_snapshot_id")?,
                added_files: int(&m, "added_files_count")?,
                existing_files: int(&m, "existing_files_count")?,
                deleted_files: int(&m, "deleted_files_count")?,
                added_rows: long(&m, "added_rows_count")?,
                existing_rows: long(&m, "existing_rows_count")?,
                deleted_rows: long(&m, "deleted_rows_count")?,
                partitions,
            })
        })();
        out.push(parsed.ok_or_else(|| bad("manifest list entry"))?);
    }
    Ok(out)
}

/// One partition field's summary as a manifest list holds it.
fn read_summary(v: &A) -> Option<FieldSummary> {
    let A::Record(s) = v else { return None };
    let bytes = |name: &str| match field(s, name).map(unwrap_union) {
        Some(A::Bytes(b)) => Some(Some(b.clone())),
        None | Some(A::Null) => Some(None),
        _ => None,
    };
    Some(FieldSummary {
        contains_null: match field(s, "contains_null")? {
            A::Boolean(b) => *b,
            _ => return None,
        },
        contains_nan: match field(s, "contains_nan").map(unwrap_union) {
            Some(A::Boolean(b)) => Some(*b),
            _ => None,
        },
        lower: bytes("lower_bound")?,
        upper: bytes("upper_bound")?,
    })
}
