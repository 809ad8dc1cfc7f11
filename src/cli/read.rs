//! [async] The read commands, whose output forms are a contract that scripts rely on:
//! - `cat`: one JSON object per live row (JSON lines).
//! - `files`: one JSON object `{"version", "files": [{"path", "size", "dv", "partitionValues",
//!   "numRecords"}]}` with paths percent-decoded and relative to the table root.
//! - `describe`: one JSON object.
//! - `history`: one JSON object per commit, newest first.

use std::collections::BTreeMap;
use std::io::Write;

use arrow::array::Array;
use serde_json::{json, Map, Value};

use crate::delta::actions::CommitInfo;
use crate::delta::json_rows::JsonRows;
use crate::error::{Error, Result};
use crate::storage::Table;

pub(super) async fn cat(
    table: &Table,
    version: Option<u64>,
    limit: Option<usize>,
    predicate: Option<&str>,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    let snapshot = table.snapshot(version).await?;
    let expr = predicate.map(|p| checked_predicate(&snapshot, p)).transpose()?;
    let plan = table.data().scan_plan(&snapshot);
    let mut remaining = limit.unwrap_or(usize::MAX);
    let files = snapshot.files();
    let total = files.len();
    let files: Vec<_> = match &expr {
        Some(e) => {
            files.into_iter().filter(|a| e.may_match_in(&snapshot, &a.partition_values, a.stats.as_deref())).collect()
        }
        None => files,
    };
    if expr.is_some() {
        tracing::info!(files_scanned = files.len(), files_skipped = total - files.len(), "cat.pruned");
    }
    // File by file, batch by batch: memory stays at one decoded batch, and a limit stops the
    // decoding as soon as it is reached.
    for add in files {
        if remaining == 0 {
            break;
        }
        let mut print = |batch: arrow::array::RecordBatch| -> Result<bool> {
            let batch = match &expr {
                Some(e) => {
                    let mask = e.evaluate(&batch).map_err(|why| Error::InvalidArgument(format!("--where: {why}")))?;
                    arrow::compute::filter_record_batch(&batch, &mask)
                        .map_err(|e| Error::Internal(format!("filtering rows: {e}")))?
                }
                None => batch,
            };
            let as_struct = arrow::array::StructArray::from(batch);
            let (json, mut text) = (JsonRows::new(&as_struct), Vec::with_capacity(64 << 10));
            for i in 0..as_struct.len().min(remaining) {
                json.write(i, &mut text);
                text.push(b'\n');
                if text.len() >= 60 << 10 {
                    out.write_all(&text)?;
                    text.clear();
                }
            }
            out.write_all(&text)?;
            remaining = remaining.saturating_sub(as_struct.len());
            Ok(remaining > 0)
        };
        table.data().visit_file(&plan, add, &mut print).await?;
    }
    Ok(())
}

/// `predicate` parsed and checked against the table's columns and types.
fn checked_predicate(
    snapshot: &crate::delta::snapshot::Snapshot,
    predicate: &str,
) -> Result<crate::delta::predicate::Expr> {
    let bad = |why: String| Error::InvalidArgument(format!("--where: {why}"));
    let expr = crate::delta::predicate::parse(predicate).map_err(bad)?;
    for c in expr.columns() {
        if snapshot.schema.fields.iter().all(|f| !f.name.eq_ignore_ascii_case(c)) {
            return Err(bad(format!("no column {c:?} in the table")));
        }
    }
    expr.check_types(&snapshot.schema).map_err(|e| bad(e.to_string()))?;
    Ok(expr)
}

pub(super) async fn files(table: &Table, version: Option<u64>, out: &mut (dyn Write + Send)) -> Result<()> {
    let snapshot = table.snapshot(version).await?;
    let mut list = Vec::new();
    for add in snapshot.files() {
        let (_, rel) = table.data_path(&add.path)?;
        // A deletion vector outside the root refuses the table, as reading it does.
        if let Some(dv) = &add.deletion_vector {
            match dv.location()? {
                crate::delta::dv::DvLocation::Absolute { uri: p, .. }
                | crate::delta::dv::DvLocation::Relative { path: p, .. } => {
                    table.data_path(&p)?;
                }
                crate::delta::dv::DvLocation::Inline(_) => {}
            }
        }
        let num_records = add
            .stats
            .as_deref()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .and_then(|v| v.get("numRecords").and_then(Value::as_i64));
        let pv: BTreeMap<&String, &Option<String>> = add.partition_values.iter().collect();
        list.push(json!({
            "path": rel,
            "size": add.size,
            "dv": add.deletion_vector.is_some(),
            "partitionValues": pv,
            "numRecords": num_records,
        }));
    }
    writeln_json(out, &json!({"version": snapshot.version, "files": list}))
}

pub(super) async fn describe(table: &Table, version: Option<u64>, out: &mut (dyn Write + Send)) -> Result<()> {
    let s = table.snapshot(version).await?;
    let txns: BTreeMap<&str, i64> = s.txns().into_iter().map(|(k, t)| (k, t.version)).collect();
    let properties: BTreeMap<&String, &String> = s.metadata.configuration.iter().collect();
    let domains: BTreeMap<&String, &String> = s.domains().iter().map(|(k, d)| (k, &d.configuration)).collect();
    let schema: Value = serde_json::from_str(&s.metadata.schema_string).unwrap_or(Value::Null);
    let clustering = match s.domains().get(crate::delta::clustering::DOMAIN) {
        Some(_) => json!(crate::delta::clustering::columns(&s)?),
        None => Value::Null,
    };
    // Bytes in files a clustering rewrite wrote (they name their `clusteringProvider`).
    let clustered_bytes: i64 = s.files().iter().filter(|f| f.clustering_provider.is_some()).map(|f| f.size).sum();
    let iceberg = if crate::delta::iceberg_compat::enabled(&s.metadata.configuration) {
        match table.uniform().iceberg_state().await? {
            Some(st) => json!({
                "metadata": format!("metadata/{}", crate::iceberg::metadata_file_name(st.metadata_version)),
                "snapshotId": st.snapshot_id,
                "deltaVersion": st.delta_version,
                "behind": s.version.saturating_sub(st.delta_version),
            }),
            None => json!({"metadata": null, "behind": s.version + 1}),
        }
    } else {
        Value::Null
    };
    writeln_json(
        out,
        &json!({
            "location": table.url(),
            "version": s.version,
            "id": s.metadata.id,
            "name": s.metadata.name,
            "description": s.metadata.description,
            "createdTime": s.metadata.created_time,
            "protocol": s.protocol,
            "schema": schema,
            "partitionColumns": s.metadata.partition_columns,
            "clusteringColumns": clustering,
            "clusteredBytes": clustered_bytes,
            "properties": properties,
            "txns": txns,
            "domains": domains,
            "numFiles": s.file_count(),
            "sizeInBytes": s.total_bytes(),
            "lastCheckpoint": s.checkpoint_version,
            "iceberg": iceberg,
        }),
    )
}

pub(super) async fn history(table: &Table, limit: Option<usize>, out: &mut (dyn Write + Send)) -> Result<()> {
    for record in table.history(limit).await? {
        let mut obj = Map::new();
        obj.insert("version".into(), json!(record.version));
        obj.insert("timestamp".into(), json!(record.timestamp));
        if let Some(Value::Object(info)) = &record.info {
            let typed = CommitInfo::from_value(&Value::Object(info.clone()));
            obj.insert("operation".into(), json!(typed.operation));
            for (k, v) in info {
                obj.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        writeln_json(out, &Value::Object(obj))?;
    }
    Ok(())
}

/// One JSON value and a newline.
pub(super) fn writeln_json(out: &mut (dyn Write + Send), v: &Value) -> Result<()> {
    serde_json::to_writer(&mut *out, v).map_err(|e| Error::Io(e.into()))?;
    out.write_all(b"\n")?;
    Ok(())
}
