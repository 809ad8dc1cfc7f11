//! The keyed part of a flush: the winning change per key becomes deletion vectors for the rows
//! those keys have in the table (upserted and deleted keys alike) plus new files for the
//! upserted rows, all in the flush's one commit (with its `txn` per Kafka partition).
//!
//! The rows a key already has come from the table's key index (`storage::key_index`), caught
//! up with the snapshot being planned: a flush touches only the files that hold a changed key.
//! On tables with deletion vectors and without the change data feed it reads no data file at
//! all (only those files' DVs); otherwise it reads just those files and matches their rows by
//! key exactly. Rows whose key has a null column are inserts, never matched. On
//! tables with the change data feed enabled, the commit also carries change data: the old rows
//! as `update_preimage` (key upserted) or `delete`, the new rows as `update_postimage` (key
//! existed) or `insert`. On tables without deletion vectors the
//! changed files are rewritten (copy-on-write). The commit is a `MERGE` at WriteSerializable
//! with the changed files as its read set: a concurrent compaction or delete of one of them
//! makes it conflict and the flush is planned again from the new table state, so a replaced
//! row is never resurrected.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow::array::RecordBatch;

use super::batch::PartitionBatch;
use super::deletion::{change_data_actions, dv_actions, find_rows, rewrite_actions, FoundRows};
use crate::decode::keyed::{keys_of_batch, last_change_per_key, Change, ChangeOrder, KeySet};
use crate::delta::actions::{Action, Add};
use crate::delta::conflict::{IsolationLevel, ReadSet};
use crate::delta::features::{has_reader_feature, Feature};
use crate::delta::replay::FileKey;
use crate::delta::schema::{DataType, PrimitiveType};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{DataWriter, IndexStats, Table, WriterConfig};
use roaring::RoaringTreemap;

/// What the keyed flush will commit.
#[derive(Debug, Default)]
pub(crate) struct UpsertPlan {
    pub actions: Vec<Action>,
    /// Files written (deleted again when the commit does not land).
    pub written: Vec<String>,
    /// Files whose rows changed: the commit's read set.
    pub read: Vec<FileKey>,
    pub inserted: u64,
    pub updated: u64,
    pub deleted: u64,
    pub rows_written: u64,
    pub files_added: usize,
    pub bytes_added: i64,
    pub files_scanned: usize,
    pub files_skipped: usize,
    /// The key index after the lookup.
    pub index: Option<IndexStats>,
}

/// The `MERGE` transaction of `plan` (without its `txn`s), and the files it wrote: at
/// WriteSerializable with the changed files as its read set, so blind appends beside it do not
/// conflict but a change to a file whose rows it replaced does (and it is planned again).
/// `source_rows` counts every change, upserts and deletes.
pub(crate) fn merge_transaction(
    plan: UpsertPlan,
    keys: &[String],
    query_id: &str,
    source_rows: u64,
) -> (Transaction, Vec<String>) {
    let mut txn = Transaction::new(Operation::Merge, plan.actions)
        .with_parameter(
            "predicate",
            serde_json::to_string(&vec![format!("key({})", keys.join(", "))]).unwrap_or_default(),
        )
        .with_parameter("queryId", query_id)
        .with_metric("numSourceRows", source_rows)
        .with_metric("numTargetRowsInserted", plan.inserted)
        .with_metric("numTargetRowsUpdated", plan.updated)
        .with_metric("numTargetRowsDeleted", plan.deleted)
        .with_metric("numTargetFilesAdded", plan.files_added)
        .with_metric("numTargetFilesScanned", plan.files_scanned)
        .with_metric("numTargetFilesSkipped", plan.files_skipped)
        .with_metric("numTargetBytesAdded", plan.bytes_added);
    txn.isolation = IsolationLevel::WriteSerializable;
    txn.read = ReadSet { whole_table: true, files: plan.read.into_iter().collect(), ..ReadSet::default() };
    (txn, plan.written)
}

/// One source's keyed changes in a commit: its rows, the place of each (in row order), and
/// the keys it deletes with the place of their records.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct KeyedChanges<'a> {
    pub batches: &'a [RecordBatch],
    pub rows: Vec<ChangeOrder>,
    pub deletes: Vec<(ChangeOrder, &'a str)>,
}

impl<'a> KeyedChanges<'a> {
    /// A Kafka flush's changes, one source per partition, placed by offset; `rows` holds each
    /// partition's rows unpacked ([`PartitionBatch::unpacked`]), in the order of `parts`.
    pub(crate) fn of_partitions(
        parts: &'a BTreeMap<i32, PartitionBatch>,
        rows: &'a [Vec<RecordBatch>],
    ) -> Vec<KeyedChanges<'a>> {
        parts
            .values()
            .zip(rows)
            .map(|(p, batches)| KeyedChanges {
                batches,
                rows: p.row_offsets.iter().map(|o| ChangeOrder::Offset(*o)).collect(),
                deletes: p.deletes.iter().map(|(o, k)| (ChangeOrder::Offset(*o), k.as_str())).collect(),
            })
            .collect()
    }
}

/// Plans the keyed commit of `sources` against `snapshot`.
///
/// # Errors
/// Storage and data errors; [`Error::Internal`] for rows without their place.
pub(crate) async fn plan(
    table: &Table,
    snapshot: &Snapshot,
    key_columns: &[String],
    sources: &[KeyedChanges<'_>],
    config: WriterConfig,
    index_memory: u64,
) -> Result<UpsertPlan> {
    for c in key_columns {
        match snapshot.schema.fields.iter().find(|f| &f.name == c).map(|f| &f.data_type) {
            Some(DataType::Primitive(
                PrimitiveType::String
                | PrimitiveType::Long
                | PrimitiveType::Integer
                | PrimitiveType::Short
                | PrimitiveType::Byte
                | PrimitiveType::Decimal { .. }
                | PrimitiveType::Date
                | PrimitiveType::Timestamp
                | PrimitiveType::TimestampNtz,
            )) => {}
            Some(t) => {
                let t = match t {
                    DataType::Primitive(p) => p.to_string(),
                    _ => "a nested type".into(),
                };
                return Err(Error::InvalidArgument(format!(
                    "upsert key column {c:?} is {t}: key columns are strings, integers, decimals, dates or timestamps"
                )));
            }
            None => return Err(Error::InvalidArgument(format!("upsert key column {c:?} is not in the table"))),
        }
    }
    // 1. The winning change per key.
    let batches: Vec<&RecordBatch> = sources.iter().flat_map(|p| p.batches.iter()).collect();
    let mut changes = Vec::new();
    let mut batch_index = 0;
    for p in sources {
        let mut places = p.rows.iter();
        for b in p.batches {
            for (row, key) in keys_of_batch(b, key_columns).into_iter().enumerate() {
                let order = *places.next().ok_or_else(|| Error::Internal("a keyed row without its place".into()))?;
                // Rows without a full key cannot be matched: they are plain inserts.
                let key = key.unwrap_or_else(|| format!("\u{0}unkeyed:{order:?}:{row}"));
                changes.push((key, Change { order, row: Some((batch_index, row)) }));
            }
            batch_index += 1;
        }
        changes.extend(p.deletes.iter().map(|(order, key)| (key.to_string(), Change { order: *order, row: None })));
    }
    let winners = last_change_per_key(changes);
    let mut plan = UpsertPlan::default();

    // 2. Rows of those keys in the table, from the key index: only the files that hold a
    //    changed key are touched.
    let keyed: Vec<&str> = winners.keys().map(String::as_str).filter(|k| !k.starts_with('\u{0}')).collect();
    let files = snapshot.files();
    let started = std::time::Instant::now();
    let (located, stats) = if keyed.is_empty() {
        (Vec::new(), table.keys().stats().await)
    } else {
        table.keys().locate(snapshot, key_columns, index_memory, &keyed).await?
    };
    plan.index = Some(stats);
    plan.files_skipped = files.len() - located.len();
    let scan = table.data().scan_plan(snapshot);
    let cdf = snapshot.properties.enable_change_data_feed;
    let use_dvs =
        snapshot.properties.enable_deletion_vectors && has_reader_feature(&snapshot.protocol, Feature::DeletionVectors);
    let mut matched_keys: HashSet<String> = HashSet::new();
    let found = if use_dvs && !cdf {
        // The index's rows are the rows: only the files' deletion vectors are read.
        let mut found = FoundRows::default();
        for (add, rows) in located {
            let existing = match &add.deletion_vector {
                Some(d) => Some(table.data().load_dv(d).await?),
                None => None,
            };
            let mut matched = RoaringTreemap::new();
            for (row, k) in rows {
                if existing.as_ref().is_some_and(|dv| dv.contains(row)) {
                    continue;
                }
                matched.insert(row);
                matched_keys.insert(keyed[k].to_string());
            }
            if !matched.is_empty() {
                found.changes.push((add.clone(), matched, existing));
            }
        }
        found
    } else {
        // Change data needs the old rows whole, copy-on-write rewrites the files: the files
        // that hold a changed key are read (and their rows matched by key exactly).
        let keys_only = if cdf { scan.clone() } else { scan.projected(key_columns) };
        let key_set = KeySet::new(key_columns, winners.keys());
        let candidates = located.iter().map(|(a, _)| *a);
        let found =
            find_rows(table, &keys_only, candidates, |batch| Ok(key_set.matches(batch, &mut matched_keys))).await?;
        plan.files_scanned = found.files_scanned;
        found
    };
    let found_ms = started.elapsed().as_millis();
    plan.read = found.changes.iter().map(|(a, _, _)| FileKey::of_add(a)).collect();
    for (key, change) in &winners {
        match (change.row.is_some(), matched_keys.contains(key)) {
            (true, true) => plan.updated += 1,
            (true, false) => plan.inserted += 1,
            (false, true) => plan.deleted += 1,
            (false, false) => {}
        }
    }

    // 3. Deletion vectors (or rewrites) for the old rows, new files for the winners' rows.
    let now = table.clock().now_ms();
    if !found.changes.is_empty() {
        let built = if use_dvs {
            dv_actions(table, &found.changes, now, &mut plan.actions, &mut plan.written).await
        } else {
            rewrite_actions(table, snapshot, &scan, &found.changes, now, &mut plan.actions, &mut plan.written).await
        };
        if let Err(e) = built {
            table.delete_uncommitted(&plan.written).await;
            return Err(e);
        }
    }
    let mut by_batch: HashMap<usize, Vec<u32>> = HashMap::new();
    for c in winners.values() {
        if let Some((b, r)) = c.row {
            by_batch.entry(b).or_default().push(u32::try_from(r).unwrap_or(u32::MAX));
        }
    }
    let mut writer = DataWriter::new(table, snapshot, config)?;
    let mut change_rows: Vec<(RecordBatch, Vec<&'static str>)> = Vec::new();
    if cdf {
        for old in found.rows.iter().flatten() {
            let types = keys_of_batch(old, key_columns)
                .iter()
                .map(|k| match k.as_ref().and_then(|k| winners.get(k)) {
                    Some(c) if c.row.is_some() => "update_preimage",
                    _ => "delete",
                })
                .collect();
            change_rows.push((old.clone(), types));
        }
    }
    let mut order: Vec<_> = by_batch.into_iter().collect();
    order.sort_by_key(|(b, _)| *b);
    for (b, mut rows) in order {
        rows.sort_unstable();
        let indices = arrow::array::UInt32Array::from(rows);
        let taken = arrow::compute::take_record_batch(batches[b], &indices)
            .map_err(|e| Error::Internal(format!("selecting upserted rows: {e}")))?;
        plan.rows_written += taken.num_rows() as u64;
        if cdf {
            let types =
                keys_of_batch(&taken, key_columns)
                    .iter()
                    .map(|k| {
                        if k.as_ref().is_some_and(|k| matched_keys.contains(k)) {
                            "update_postimage"
                        } else {
                            "insert"
                        }
                    })
                    .collect();
            change_rows.push((taken.clone(), types));
        }
        if let Err(e) = writer.write(&taken).await {
            writer.abort().await;
            table.delete_uncommitted(&plan.written).await;
            return Err(e);
        }
    }
    let adds = writer.finish().await?;
    plan.written.extend(adds.iter().map(|a| a.path.clone()));
    if cdf {
        if let Err(e) = change_data_actions(table, snapshot, change_rows, &mut plan.actions, &mut plan.written).await {
            table.delete_uncommitted(&plan.written).await;
            return Err(e);
        }
    }
    // Their keys, for the index of whoever plans next (rewritten files included).
    let new_files: Vec<Add> = plan
        .actions
        .iter()
        .filter_map(|a| if let Action::Add(a) = a { Some(a) } else { None })
        .chain(adds.iter())
        .filter(|a| a.deletion_vector.is_none())
        .cloned()
        .collect();
    let written_ms = started.elapsed().as_millis();
    table.keys().prepare(snapshot, key_columns, new_files).await;
    tracing::debug!(
        found_ms,
        written_ms,
        total_ms = started.elapsed().as_millis(),
        files = plan.read.len(),
        "upsert.planned: rows found, files written, sidecars written"
    );
    plan.files_added = adds.len();
    plan.bytes_added = adds.iter().map(|a| a.size).sum();
    plan.actions.extend(adds.into_iter().map(Action::Add));
    Ok(plan)
}
