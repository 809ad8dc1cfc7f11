//! Deleting rows by physical index, shared by `deltabus delete` and keyed ingestion: finding
//! the rows a matcher selects in candidate files (minus what their deletion vectors already
//! delete), and turning them into commit actions — a united deletion vector per file (inline
//! when small, else one checksummed `deletion_vector_<uuid>.bin` per commit) recommitted as
//! `remove` (old DV) + `add` (new DV, stats marked not tight), or a copy-on-write rewrite.

use arrow::array::{Array, BooleanArray, RecordBatch};
use roaring::RoaringTreemap;
use serde_json::Value;

use crate::delta::actions::{Action, Add, Remove};
use crate::delta::dv::{encode_bitmap, inline_descriptor, DeletionVectorDescriptor};
use crate::delta::scan::{RowFilter, ScanPlan};
use crate::delta::z85;
use crate::error::{Error, Result};
use crate::storage::{DataWriter, Table, WriterConfig};

/// One file's newly deleted rows: the file, the new row indexes, its existing DV, and the
/// deleted rows themselves (as the table's logical rows, for change data).
pub(crate) type FileDeletes = (Add, RoaringTreemap, Option<RoaringTreemap>);

/// The rows a matcher selected.
#[derive(Debug, Default)]
pub(crate) struct FoundRows {
    pub changes: Vec<FileDeletes>,
    /// The selected rows' values, per changed file (same order as `changes`).
    pub rows: Vec<Vec<RecordBatch>>,
    pub files_scanned: usize,
}

impl FoundRows {
    /// Rows selected in all files.
    pub(crate) fn rows(&self) -> u64 {
        self.changes.iter().map(|(_, m, _)| m.len()).sum()
    }
}

/// Reads each candidate file (with its DV applied) and collects the physical indexes of the
/// rows `matcher` marks true, with those rows' values.
pub(crate) async fn find_rows<'a>(
    table: &Table,
    plan: &ScanPlan,
    candidates: impl Iterator<Item = &'a Add>,
    mut matcher: impl FnMut(&RecordBatch) -> Result<BooleanArray>,
) -> Result<FoundRows> {
    let mut found = FoundRows::default();
    for add in candidates {
        found.files_scanned += 1;
        let existing = match &add.deletion_vector {
            Some(d) => Some(table.data().load_dv(d).await?),
            None => None,
        };
        let rows =
            table.data().read_rows(plan, &add.path, &add.partition_values, Some(add.size), RowFilter::All).await?;
        let mut matched = RoaringTreemap::new();
        let mut values = Vec::new();
        let mut offset = 0u64;
        for batch in &rows.batches {
            let mut mask = matcher(batch)?;
            // Rows the existing DV already deletes are not selected again.
            if let Some(old) = &existing {
                mask = (0..batch.num_rows())
                    .map(|i| Some(mask.value(i) && mask.is_valid(i) && !old.contains(offset + i as u64)))
                    .collect();
            }
            for (i, hit) in mask.iter().enumerate() {
                if hit == Some(true) {
                    matched.insert(offset + i as u64);
                }
            }
            if mask.true_count() > 0 {
                values.push(
                    arrow::compute::filter_record_batch(batch, &mask)
                        .map_err(|e| Error::Internal(format!("selecting rows: {e}")))?,
                );
            }
            offset += batch.num_rows() as u64;
        }
        if !matched.is_empty() {
            found.changes.push((add.clone(), matched, existing));
            found.rows.push(values);
        }
    }
    Ok(found)
}

pub(crate) fn remove_of(add: &Add, now: i64) -> Remove {
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

/// Change-data files for rows a commit changes (tables with `delta.enableChangeDataFeed`):
/// each batch (the table's logical columns) with the `_change_type` of each of its rows. The
/// `cdc` actions go to `actions`, the files to `written`.
///
/// # Errors
/// Storage errors; [`Error::Internal`] when a batch and its types disagree.
pub(crate) async fn change_data_actions(
    table: &Table,
    snapshot: &crate::delta::snapshot::Snapshot,
    rows: Vec<(RecordBatch, Vec<&'static str>)>,
    actions: &mut Vec<Action>,
    written: &mut Vec<String>,
) -> Result<()> {
    let mut writer = DataWriter::for_change_data(table, snapshot, WriterConfig::for_snapshot(snapshot))?.rewriting();
    for (batch, types) in rows {
        let mut fields: Vec<arrow::datatypes::FieldRef> = batch.schema().fields().iter().cloned().collect();
        fields.push(std::sync::Arc::new(arrow::datatypes::Field::new(
            crate::storage::CHANGE_TYPE,
            arrow::datatypes::DataType::Utf8,
            true,
        )));
        let mut columns = batch.columns().to_vec();
        columns.push(std::sync::Arc::new(arrow::array::StringArray::from(types)));
        let with_type = RecordBatch::try_new(std::sync::Arc::new(arrow::datatypes::Schema::new(fields)), columns)
            .map_err(|e| Error::Internal(format!("change rows: {e}")))?;
        if let Err(e) = writer.write(&with_type).await {
            writer.abort().await;
            return Err(e);
        }
    }
    let cdcs = writer.finish_cdc().await?;
    written.extend(cdcs.iter().map(|c| c.path.clone()));
    actions.extend(cdcs.into_iter().map(Action::Cdc));
    Ok(())
}

/// Serialised DVs up to this size are stored inline in the log (storage type `i`).
const INLINE_MAX_BYTES: usize = 64;

/// Small DVs inline, the rest as records of one DV file for the commit; for each changed
/// file, remove(old DV) + add(new DV).
pub(crate) async fn dv_actions(
    table: &Table,
    changes: &[FileDeletes],
    now: i64,
    actions: &mut Vec<Action>,
    written: &mut Vec<String>,
) -> Result<()> {
    let bitmaps: Vec<RoaringTreemap> = changes
        .iter()
        .map(|(_, matched, existing)| {
            let mut bitmap = matched.clone();
            if let Some(old) = existing {
                bitmap |= old;
            }
            bitmap
        })
        .collect();
    let descriptors = dv_descriptors(table, &bitmaps, written).await?;
    for ((add, _, _), descriptor) in changes.iter().zip(descriptors) {
        actions.push(Action::Remove(remove_of(add, now)));
        let mut new_add = add.clone();
        new_add.deletion_vector = Some(descriptor);
        new_add.data_change = true;
        new_add.modification_time = now;
        new_add.stats = add.stats.as_deref().map(loose_stats);
        actions.push(Action::Add(new_add));
    }
    Ok(())
}

/// The descriptors of `bitmaps`: small ones inline, the rest as records of one checksummed
/// `deletion_vector_<uuid>.bin` (written, and its name pushed to `written` before the PUT: a
/// PUT whose answer is lost may still have created it).
///
/// # Errors
/// Storage errors writing the DV file.
pub(crate) async fn dv_descriptors(
    table: &Table,
    bitmaps: &[RoaringTreemap],
    written: &mut Vec<String>,
) -> Result<Vec<DeletionVectorDescriptor>> {
    let uuid = uuid::Uuid::new_v4();
    let file_name = format!("deletion_vector_{}.bin", uuid.hyphenated());
    let encoded_path = z85::encode(uuid.as_bytes());
    let mut file = vec![1u8];
    let mut out = Vec::with_capacity(bitmaps.len());
    for bitmap in bitmaps {
        let data = encode_bitmap(bitmap);
        out.push(if data.len() <= INLINE_MAX_BYTES {
            inline_descriptor(bitmap)
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
        });
    }
    if file.len() > 1 {
        written.push(file_name.clone());
        table.objects().put_bytes(&file_name, file).await?;
    }
    Ok(out)
}

/// Stats of a file with a new DV: min/max no longer tight (Spark writes `tightBounds: false`).
pub(crate) fn loose_stats(stats: &str) -> String {
    match serde_json::from_str::<Value>(stats) {
        Ok(Value::Object(mut m)) => {
            m.insert("tightBounds".into(), Value::Bool(false));
            Value::Object(m).to_string()
        }
        _ => stats.to_string(),
    }
}

/// Copy-on-write: each changed file rewritten without the deleted (and previously deleted) rows.
///
/// # Errors
/// [`Error::Unsupported`] on row-tracking tables, before anything is written: the rows kept
/// would get new row ids (deletion vectors keep them); storage and data errors.
pub(crate) async fn rewrite_actions(
    table: &Table,
    snapshot: &crate::delta::snapshot::Snapshot,
    plan: &ScanPlan,
    changes: &[FileDeletes],
    now: i64,
    actions: &mut Vec<Action>,
    written: &mut Vec<String>,
) -> Result<()> {
    if crate::delta::features::has_writer_feature(&snapshot.protocol, crate::delta::features::Feature::RowTracking) {
        return Err(Error::unsupported(
            "copy-on-write rewrites of row-tracking tables (the rows kept would lose their row ids; \
             tables created with delta.enableDeletionVectors=true delete without rewriting)",
        ));
    }
    for (add, matched, existing) in changes {
        let mut gone = matched.clone();
        if let Some(old) = existing {
            gone |= old;
        }
        let rows = table
            .data()
            .read_rows(plan, &add.path, &add.partition_values, Some(add.size), RowFilter::Exclude(&gone))
            .await?;
        let mut writer = DataWriter::new(table, snapshot, WriterConfig::for_snapshot(snapshot))?.rewriting();
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
