//! Checkpoint rows (Arrow batches read from Parquet by the storage shell) to actions.
//!
//! One action per row, in one of the top-level struct columns. `add` rows, which dominate large
//! checkpoints, are decoded column-wise; the rare other actions go through their JSON form and
//! the same parser as commit lines, so both paths apply identical validation. `stats_parsed`
//! and `partitionValues_parsed` are ignored (the storage shell does not even read them).

use std::collections::HashMap;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, MapArray, RecordBatch, StringArray, StructArray,
};
use arrow::compute::cast;
use arrow::datatypes::DataType;

use super::actions::{parse_action_value, Action, Add};
use super::arrow_value::{value_at, value_at_with, MapStyle};
use super::dv::DeletionVectorDescriptor;
use crate::error::{Error, Result};

/// Top-level checkpoint columns that hold actions.
pub(crate) const ACTION_COLUMNS: &[&str] =
    &["add", "remove", "metaData", "protocol", "txn", "domainMetadata", "checkpointMetadata", "sidecar"];

/// Decodes every action in a checkpoint batch.
///
/// # Errors
/// [`Error::InvalidLog`] when a row's action is malformed (for example a `metaData` without
/// `schemaString`).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn batch_to_actions(batch: &RecordBatch, file: &str) -> Result<Vec<Action>> {
    let mut out = Vec::new();
    for name in ACTION_COLUMNS {
        let Some(col) = batch.column_by_name(name) else {
            continue;
        };
        if col.null_count() == col.len() {
            continue;
        }
        let Some(s) = col.as_struct_opt() else {
            return Err(Error::invalid_log(file, format!("checkpoint column {name} is not a struct")));
        };
        if *name == "add" {
            decode_adds(s, file, &mut out)?;
            continue;
        }
        for i in 0..s.len() {
            if s.is_null(i) {
                continue;
            }
            let value = value_at_with(s, i, MapStyle::Object);
            if let Some(a) = parse_action_value(name, value, file)? {
                out.push(a);
            }
        }
    }
    Ok(out)
}

fn child(s: &StructArray, name: &str) -> Option<ArrayRef> {
    s.column_by_name(name).cloned()
}

fn as_type(a: Option<ArrayRef>, t: &DataType, file: &str) -> Result<Option<ArrayRef>> {
    a.map(|a| if a.data_type() == t { Ok(a) } else { cast(&a, t) })
        .transpose()
        .map_err(|e| Error::invalid_log(file, format!("checkpoint column has an unexpected type: {e}")))
}

fn strings(a: Option<ArrayRef>, file: &str) -> Result<Option<StringArray>> {
    Ok(as_type(a, &DataType::Utf8, file)?.map(|a| a.as_string::<i32>().clone()))
}

fn longs(a: Option<ArrayRef>, file: &str) -> Result<Option<Int64Array>> {
    Ok(as_type(a, &DataType::Int64, file)?.map(|a| a.as_primitive::<arrow::datatypes::Int64Type>().clone()))
}

fn opt_str(a: &Option<StringArray>, i: usize) -> Option<String> {
    a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i).to_string())
}

fn opt_i64(a: &Option<Int64Array>, i: usize) -> Option<i64> {
    a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i))
}

/// A map column with its keys and values cast to strings once, for all rows.
struct StringMaps {
    map: MapArray,
    keys: StringArray,
    values: StringArray,
}

impl StringMaps {
    fn new(a: Option<ArrayRef>, file: &str) -> Result<Option<StringMaps>> {
        let Some(map) = a.and_then(|a| a.as_map_opt().cloned()) else {
            return Ok(None);
        };
        let keys = strings(Some(map.keys().clone()), file)?.ok_or_else(|| Error::Internal("map keys".into()))?;
        let values = strings(Some(map.values().clone()), file)?.ok_or_else(|| Error::Internal("map values".into()))?;
        Ok(Some(StringMaps { map, keys, values }))
    }

    fn get(&self, i: usize) -> Option<HashMap<String, Option<String>>> {
        if !self.map.is_valid(i) {
            return None;
        }
        let offsets = self.map.value_offsets();
        let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
        Some(
            (start..end)
                .map(|j| {
                    (self.keys.value(j).to_string(), self.values.is_valid(j).then(|| self.values.value(j).to_string()))
                })
                .collect(),
        )
    }
}

fn string_map(a: &Option<StringMaps>, i: usize) -> Option<HashMap<String, Option<String>>> {
    a.as_ref().and_then(|m| m.get(i))
}

fn decode_adds(s: &StructArray, file: &str, out: &mut Vec<Action>) -> Result<()> {
    let missing = |f: &str| Error::invalid_log(file, format!("checkpoint add lacks {f}"));
    let path = strings(child(s, "path"), file)?.ok_or_else(|| missing("path"))?;
    let size = longs(child(s, "size"), file)?.ok_or_else(|| missing("size"))?;
    let mtime = longs(child(s, "modificationTime"), file)?;
    let data_change: Option<BooleanArray> = child(s, "dataChange").and_then(|a| a.as_boolean_opt().cloned());
    let stats = strings(child(s, "stats"), file)?;
    let pv = StringMaps::new(child(s, "partitionValues"), file)?;
    let tags = StringMaps::new(child(s, "tags"), file)?;
    let base_row_id = longs(child(s, "baseRowId"), file)?;
    let drcv = longs(child(s, "defaultRowCommitVersion"), file)?;
    let clustering = strings(child(s, "clusteringProvider"), file)?;
    let dv = child(s, "deletionVector");
    for i in 0..s.len() {
        if s.is_null(i) {
            continue;
        }
        if !path.is_valid(i) || !size.is_valid(i) {
            return Err(Error::invalid_log(file, "checkpoint add with null path or size"));
        }
        let deletion_vector = match &dv {
            Some(d) if d.is_valid(i) => {
                let v = value_at(d.as_ref(), i);
                Some(
                    serde_json::from_value::<DeletionVectorDescriptor>(v)
                        .map_err(|e| Error::invalid_log(file, format!("bad deletionVector: {e}")))?,
                )
            }
            _ => None,
        };
        out.push(Action::Add(Add {
            path: path.value(i).to_string(),
            partition_values: string_map(&pv, i).unwrap_or_default(),
            size: size.value(i),
            modification_time: opt_i64(&mtime, i).unwrap_or(0),
            data_change: data_change.as_ref().is_some_and(|d| d.is_valid(i) && d.value(i)),
            stats: opt_str(&stats, i),
            tags: string_map(&tags, i),
            deletion_vector,
            base_row_id: opt_i64(&base_row_id, i),
            default_row_commit_version: opt_i64(&drcv, i),
            clustering_provider: opt_str(&clustering, i),
        }));
    }
    Ok(())
}
