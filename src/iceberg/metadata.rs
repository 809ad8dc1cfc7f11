//! Iceberg table metadata (`v<N>.metadata.json`, format version 2) as JSON: made for a new
//! conversion, and advanced by one snapshot per conversion.
//!
//! Each snapshot's summary holds `delta-version` (the Delta version it mirrors) beside the
//! usual counts; the `main` branch points at the newest snapshot. Schemas are appended when
//! the Delta schema changes (same ids for old columns, so old files read new columns as
//! null); the partition spec is fixed for the table's life, as Delta's partition columns are.

use serde_json::{json, Value};

use super::DELTA_VERSION;
use crate::error::{Error, Result};

/// Snapshots (and metadata-log entries) a metadata file keeps: older ones expire, as
/// Iceberg writers expire snapshots, so a conversion costs the same at any table age.
pub(crate) const KEPT_SNAPSHOTS: usize = 100;

/// What a conversion reads from the current metadata.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Current {
    pub snapshot_id: i64,
    pub manifest_list: String,
    pub sequence_number: i64,
    pub delta_version: u64,
}

/// One new snapshot.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct NewSnapshot {
    pub snapshot_id: i64,
    pub manifest_list: String,
    pub delta_version: u64,
    pub timestamp_ms: i64,
    /// `append`, `replace`, `overwrite` or `delete`.
    pub operation: &'static str,
    pub added_files: i64,
    pub deleted_files: i64,
    pub added_records: i64,
    pub deleted_records: i64,
    pub total_files: i64,
    pub total_records: i64,
}

/// Metadata for a table that has no snapshot yet.
pub(crate) fn new_metadata(
    table_uuid: &str,
    location: &str,
    schema: Value,
    last_column_id: i64,
    spec: Value,
    now_ms: i64,
) -> Value {
    let last_partition_id =
        spec["fields"].as_array().and_then(|f| f.iter().filter_map(|p| p["field-id"].as_i64()).max()).unwrap_or(999);
    json!({
        "format-version": 2,
        "table-uuid": table_uuid,
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": now_ms,
        "last-column-id": last_column_id,
        "current-schema-id": schema["schema-id"],
        "schemas": [schema],
        "default-spec-id": 0,
        "partition-specs": [spec],
        "last-partition-id": last_partition_id,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {"engine.name": "deltabus", "write.format.default": "parquet"},
        "current-snapshot-id": -1,
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": [],
        "refs": {},
    })
}

fn bad(what: &str) -> Error {
    Error::invalid_log("metadata", format!("Iceberg metadata: {what}"))
}

/// The current snapshot, if any.
///
/// # Errors
/// [`Error::InvalidLog`] for metadata whose current snapshot is missing or lacks what a
/// conversion needs.
pub(crate) fn current(meta: &Value) -> Result<Option<Current>> {
    let id = meta["current-snapshot-id"].as_i64().unwrap_or(-1);
    if id == -1 {
        return Ok(None);
    }
    let s = meta["snapshots"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["snapshot-id"].as_i64() == Some(id)))
        .ok_or_else(|| bad("the current snapshot is not among the snapshots"))?;
    Ok(Some(Current {
        snapshot_id: id,
        manifest_list: s["manifest-list"].as_str().ok_or_else(|| bad("a snapshot without manifest list"))?.to_string(),
        sequence_number: s["sequence-number"].as_i64().ok_or_else(|| bad("a snapshot without sequence number"))?,
        delta_version: s["summary"][DELTA_VERSION]
            .as_str()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad("a snapshot without the Delta version it mirrors"))?,
    }))
}

/// Makes `schema` current, appending it when it differs from every known schema.
pub(crate) fn set_schema(meta: &mut Value, mut schema: Value, last_column_id: i64) {
    let same = |a: &Value, b: &Value| a["fields"] == b["fields"];
    let schemas = meta["schemas"].as_array().cloned().unwrap_or_default();
    let id = match schemas.iter().find(|s| same(s, &schema)) {
        Some(s) => s["schema-id"].clone(),
        None => {
            let next = schemas.iter().filter_map(|s| s["schema-id"].as_i64()).max().map_or(0, |m| m + 1);
            schema["schema-id"] = json!(next);
            if let Some(list) = meta["schemas"].as_array_mut() {
                list.push(schema);
            }
            json!(next)
        }
    };
    meta["current-schema-id"] = id;
    let last = meta["last-column-id"].as_i64().unwrap_or(0).max(last_column_id);
    meta["last-column-id"] = json!(last);
}

/// Adds `s` as the current snapshot; `previous_file` is the metadata file this one follows.
pub(crate) fn add_snapshot(meta: &mut Value, s: &NewSnapshot, previous_file: Option<(&str, i64)>) {
    let parent = meta["current-snapshot-id"].as_i64().filter(|p| *p != -1);
    let sequence = meta["last-sequence-number"].as_i64().unwrap_or(0) + 1;
    let mut snap = json!({
        "snapshot-id": s.snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": s.timestamp_ms,
        "manifest-list": s.manifest_list,
        "schema-id": meta["current-schema-id"],
        "summary": {
            "operation": s.operation,
            DELTA_VERSION: s.delta_version.to_string(),
            "added-data-files": s.added_files.to_string(),
            "deleted-data-files": s.deleted_files.to_string(),
            "added-records": s.added_records.to_string(),
            "deleted-records": s.deleted_records.to_string(),
            "total-data-files": s.total_files.to_string(),
            "total-records": s.total_records.to_string(),
            "total-delete-files": "0",
            "total-position-deletes": "0",
            "total-equality-deletes": "0",
        },
    });
    if let Some(p) = parent {
        snap["parent-snapshot-id"] = json!(p);
    }
    push(meta, "snapshots", snap);
    push(meta, "snapshot-log", json!({"timestamp-ms": s.timestamp_ms, "snapshot-id": s.snapshot_id}));
    if let Some((file, ts)) = previous_file {
        push(meta, "metadata-log", json!({"timestamp-ms": ts, "metadata-file": file}));
    }
    for key in ["snapshots", "snapshot-log", "metadata-log"] {
        if let Some(list) = meta[key].as_array_mut() {
            let excess = list.len().saturating_sub(KEPT_SNAPSHOTS);
            list.drain(..excess);
        }
    }
    meta["current-snapshot-id"] = json!(s.snapshot_id);
    meta["last-sequence-number"] = json!(sequence);
    meta["last-updated-ms"] = json!(s.timestamp_ms.max(meta["last-updated-ms"].as_i64().unwrap_or(0)));
    meta["refs"] = json!({"main": {"snapshot-id": s.snapshot_id, "type": "branch"}});
}

fn push(meta: &mut Value, key: &str, v: Value) {
    match meta[key].as_array_mut() {
        Some(a) => a.push(v),
        None => meta[key] = json!([v]),
    }
}

/// The sequence number the next snapshot gets.
pub(crate) fn next_sequence_number(meta: &Value) -> i64 {
    meta["last-sequence-number"].as_i64().unwrap_or(0) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_chain_and_schemas_append() {
        let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "required": false, "type": "long"}]});
        let mut m = new_metadata("u", "file:///t", schema, 1, json!({"spec-id": 0, "fields": []}), 5);
        assert_eq!(current(&m).unwrap(), None);
        let snap = |id, v| NewSnapshot {
            snapshot_id: id,
            manifest_list: format!("file:///t/metadata/snap-{id}.avro"),
            delta_version: v,
            timestamp_ms: 10,
            operation: "append",
            added_files: 1,
            deleted_files: 0,
            added_records: 3,
            deleted_records: 0,
            total_files: 1,
            total_records: 3,
        };
        add_snapshot(&mut m, &snap(7, 0), None);
        let evolved = json!({"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "a", "required": false, "type": "long"},
            {"id": 2, "name": "b", "required": false, "type": "string"}]});
        set_schema(&mut m, evolved, 2);
        add_snapshot(&mut m, &snap(8, 3), Some(("file:///t/metadata/v1.metadata.json", 10)));
        let c = current(&m).unwrap().unwrap();
        assert_eq!((c.snapshot_id, c.sequence_number, c.delta_version), (8, 2, 3));
        assert_eq!(m["snapshots"][1]["parent-snapshot-id"], 7);
        assert_eq!(m["snapshots"][1]["schema-id"], 1);
        assert_eq!((m["current-schema-id"].as_i64(), m["last-column-id"].as_i64()), (Some(1), Some(2)));
        assert_eq!(m["refs"]["main"]["snapshot-id"], 8);
        assert_eq!(next_sequence_number(&m), 3);
        for i in 0..2 * KEPT_SNAPSHOTS as i64 {
            add_snapshot(&mut m, &snap(100 + i, 4 + i as u64), Some(("file:///t/metadata/vx.metadata.json", 10)));
        }
        assert_eq!(m["snapshots"].as_array().unwrap().len(), KEPT_SNAPSHOTS, "old snapshots expire");
        assert_eq!(m["metadata-log"].as_array().unwrap().len(), KEPT_SNAPSHOTS);
        assert_eq!(current(&m).unwrap().unwrap().snapshot_id, 100 + 2 * KEPT_SNAPSHOTS as i64 - 1);
    }
}
