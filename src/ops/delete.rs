//! `deltabus delete --where`: removes matching rows in one `DELETE` commit.
//!
//! Files are first pruned by partition values and statistics; only files that may match are
//! read. Within a file, the physical row indexes of matching rows (not already deleted) are
//! collected. On tables with deletion vectors enabled (`delta.enableDeletionVectors=true`,
//! `deletionVectors` in the protocol) the new indexes are united with the file's DV and stored
//! in one `deletion_vector_<uuid>.bin` for the commit, and the file is recommitted as
//! `remove` (old DV) + `add` (same path, new DV, stats marked not tight). Otherwise the file is
//! rewritten without those rows (copy-on-write). The change feed derives the deleted rows from
//! the DV difference or from the rewritten file's removal and re-add, so no change-data files
//! are written for DV deletes.

use roaring::RoaringTreemap;
use serde_json::{json, Value};

use crate::delta::actions::{Action, Add, Remove};
use crate::delta::conflict::{IsolationLevel, ReadSet};
use crate::delta::dv::{encode_bitmap, inline_descriptor, DeletionVectorDescriptor};
use crate::delta::features::{check_writable, has_reader_feature};
use crate::delta::predicate::parse;
use crate::delta::replay::FileKey;
use crate::delta::scan::RowFilter;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::delta::z85;
use crate::error::{Error, Result};
use crate::storage::{DataWriter, RetryPolicy, Table, WriterConfig};
use object_store::{ObjectStoreExt, PutPayload};

/// What a delete did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeleteReport {
    pub files_scanned: usize,
    pub files_skipped: usize,
    pub files_changed: usize,
    pub rows_deleted: u64,
    pub deletion_vectors: bool,
    pub version: Option<u64>,
}

impl DeleteReport {
    /// The command output.
    pub fn to_json(&self) -> Value {
        json!({
            "version": self.version, "filesScanned": self.files_scanned, "filesSkipped": self.files_skipped,
            "filesChanged": self.files_changed, "rowsDeleted": self.rows_deleted,
            "mode": if self.deletion_vectors { "deletion-vectors" } else { "copy-on-write" },
        })
    }
}

/// Deletes the rows matching `predicate`.
///
/// # Errors
/// [`Error::InvalidArgument`] for a predicate that does not parse or names unknown columns
/// (nothing is committed); [`Error::Unsupported`] for tables deltabus may not write or that
/// are append-only; [`Error::CommitConflict`] when a concurrent commit invalidates the delete.
pub async fn delete(table: &Table, predicate: &str, retry: &RetryPolicy) -> Result<DeleteReport> {
    let expr = parse(predicate).map_err(|e| Error::InvalidArgument(format!("--where: {e}")))?;
    let snapshot = table.snapshot(None).await?;
    check_writable(&snapshot.protocol, &snapshot.metadata)?;
    if snapshot.properties.append_only {
        return Err(Error::unsupported("the table is append-only (delta.appendOnly=true)"));
    }
    for c in expr.columns() {
        if snapshot.schema.fields.iter().all(|f| !f.name.eq_ignore_ascii_case(c)) {
            return Err(Error::InvalidArgument(format!("--where: no column {c:?} in the table")));
        }
    }
    let use_dvs =
        snapshot.properties.enable_deletion_vectors && has_reader_feature(&snapshot.protocol, "deletionVectors");
    let plan = table.scan_plan(&snapshot);
    let mut report = DeleteReport { deletion_vectors: use_dvs, ..DeleteReport::default() };
    let mut changes: Vec<(Add, RoaringTreemap, Option<RoaringTreemap>)> = Vec::new();
    for add in snapshot.files() {
        if !expr.may_match_in(&snapshot, &add.partition_values, add.stats.as_deref()) {
            report.files_skipped += 1;
            continue;
        }
        report.files_scanned += 1;
        let existing = match &add.deletion_vector {
            Some(d) => Some(table.load_dv(d).await?),
            None => None,
        };
        let rows = table.read_rows(&plan, &add.path, &add.partition_values, Some(add.size), RowFilter::All).await?;
        let mut matched = RoaringTreemap::new();
        let mut offset = 0u64;
        for batch in &rows.batches {
            let mask = expr.evaluate(batch).map_err(|e| Error::InvalidArgument(format!("--where: {e}")))?;
            for (i, hit) in mask.iter().enumerate() {
                if hit == Some(true) {
                    matched.insert(offset + i as u64);
                }
            }
            offset += batch.num_rows() as u64;
        }
        if let Some(old) = &existing {
            matched -= old;
        }
        if !matched.is_empty() {
            report.rows_deleted += matched.len();
            changes.push((add.clone(), matched, existing));
        }
    }
    report.files_changed = changes.len();
    if changes.is_empty() {
        return Ok(report);
    }
    let now = chrono::Utc::now().timestamp_millis();
    let mut actions = Vec::new();
    let mut written: Vec<String> = Vec::new();
    let build = if use_dvs {
        dv_actions(table, &changes, now, &mut actions, &mut written).await
    } else {
        rewrite_actions(table, &snapshot, &plan, &changes, now, &mut actions, &mut written).await
    };
    if let Err(e) = build {
        cleanup(table, &written).await;
        return Err(e);
    }
    let mut txn = Transaction::new("DELETE", actions)
        .with_parameter("predicate", serde_json::to_string(&vec![predicate]).unwrap_or_default())
        .with_metric("numDeletedRows", report.rows_deleted)
        .with_metric("numFilesScanned", report.files_scanned)
        .with_metric("numFilesSkipped", report.files_skipped)
        .with_metric(if use_dvs { "numDeletionVectorsAdded" } else { "numRemovedFiles" }, report.files_changed);
    // Blind appends running beside the delete do not invalidate it (WriteSerializable);
    // any change to a file it read does.
    txn.isolation = IsolationLevel::WriteSerializable;
    txn.read = ReadSet {
        whole_table: true,
        files: changes.iter().map(|(a, _, _)| FileKey::of_add(a)).collect(),
        ..ReadSet::default()
    };
    match table.commit(Some(&snapshot), &txn, retry).await {
        Ok(CommitOutcome::Committed { version }) => {
            report.version = Some(version);
            Ok(report)
        }
        Ok(CommitOutcome::Conflict { version, reason }) => {
            cleanup(table, &written).await;
            Err(Error::CommitConflict { version, reason })
        }
        Ok(CommitOutcome::AlreadyApplied { .. }) => Err(Error::Internal("a delete carries no txn".into())),
        Err(e) => {
            cleanup(table, &written).await;
            Err(e)
        }
    }
}

fn remove_of(add: &Add, now: i64) -> Remove {
    Remove {
        path: add.path.clone(),
        deletion_timestamp: Some(now),
        data_change: true,
        extended_file_metadata: Some(true),
        partition_values: Some(add.partition_values.clone()),
        size: Some(add.size),
        stats: add.stats.clone(),
        tags: add.tags.clone(),
        deletion_vector: add.deletion_vector.clone(),
        base_row_id: add.base_row_id,
        default_row_commit_version: add.default_row_commit_version,
    }
}

/// Serialised DVs up to this size are stored inline in the log (storage type `i`).
const INLINE_MAX_BYTES: usize = 64;

/// Small DVs inline, the rest as records of one DV file for the commit; for each changed
/// file, remove(old DV) + add(new DV).
async fn dv_actions(
    table: &Table,
    changes: &[(Add, RoaringTreemap, Option<RoaringTreemap>)],
    now: i64,
    actions: &mut Vec<Action>,
    written: &mut Vec<String>,
) -> Result<()> {
    let uuid = uuid::Uuid::new_v4();
    let file_name = format!("deletion_vector_{}.bin", uuid.hyphenated());
    let encoded_path = z85::encode(uuid.as_bytes());
    let mut file = vec![1u8];
    for (add, matched, existing) in changes {
        let mut bitmap = matched.clone();
        if let Some(old) = existing {
            bitmap |= old;
        }
        let data = encode_bitmap(&bitmap);
        let descriptor = if data.len() <= INLINE_MAX_BYTES {
            inline_descriptor(&bitmap)
        } else {
            let offset = file.len() as i32;
            file.extend_from_slice(&(data.len() as u32).to_be_bytes());
            file.extend_from_slice(&data);
            file.extend_from_slice(&crc32fast::hash(&data).to_be_bytes());
            DeletionVectorDescriptor {
                storage_type: "u".into(),
                path_or_inline_dv: encoded_path.clone(),
                offset: Some(offset),
                size_in_bytes: data.len() as i32,
                cardinality: bitmap.len() as i64,
            }
        };
        actions.push(Action::Remove(remove_of(add, now)));
        let mut new_add = add.clone();
        new_add.deletion_vector = Some(descriptor);
        new_add.data_change = true;
        new_add.modification_time = now;
        new_add.stats = add.stats.as_deref().map(loose_stats);
        actions.push(Action::Add(new_add));
    }
    table
        .object_store()
        .put(&table.object_path(&file_name), PutPayload::from(file))
        .await
        .map_err(|e| Error::storage(&file_name, e))?;
    written.push(file_name);
    Ok(())
}

/// Stats of a file with a new DV: min/max no longer tight (Spark writes `tightBounds: false`).
fn loose_stats(stats: &str) -> String {
    match serde_json::from_str::<Value>(stats) {
        Ok(Value::Object(mut m)) => {
            m.insert("tightBounds".into(), Value::Bool(false));
            Value::Object(m).to_string()
        }
        _ => stats.to_string(),
    }
}

/// Copy-on-write: each changed file rewritten without the deleted (and previously deleted) rows.
async fn rewrite_actions(
    table: &Table,
    snapshot: &crate::delta::snapshot::Snapshot,
    plan: &crate::delta::scan::ScanPlan,
    changes: &[(Add, RoaringTreemap, Option<RoaringTreemap>)],
    now: i64,
    actions: &mut Vec<Action>,
    written: &mut Vec<String>,
) -> Result<()> {
    for (add, matched, existing) in changes {
        let mut gone = matched.clone();
        if let Some(old) = existing {
            gone |= old;
        }
        let rows =
            table.read_rows(plan, &add.path, &add.partition_values, Some(add.size), RowFilter::Exclude(&gone)).await?;
        let mut writer = DataWriter::new(table, snapshot, WriterConfig::for_snapshot(snapshot))?;
        for b in &rows.batches {
            writer.write(b).await?;
        }
        let adds = writer.finish().await?;
        written.extend(adds.iter().map(|a| a.path.clone()));
        actions.push(Action::Remove(remove_of(add, now)));
        actions.extend(adds.into_iter().map(Action::Add));
    }
    Ok(())
}

async fn cleanup(table: &Table, written: &[String]) {
    table.delete_uncommitted(written).await;
}
