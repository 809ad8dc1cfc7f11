//! Reading the row-level changes of commits (the rules are in
//! [`delta::change_feed`](crate::delta::change_feed)): change rows carry the table's columns
//! plus `_change_type`, `_commit_version` and `_commit_timestamp`.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use object_store::ObjectStoreExt;

use crate::delta::actions::{parse_commit, Action};
use crate::delta::change_feed::{plan_changes, ChangeType, RowSelection};
use crate::delta::log_segment::commit_name;
use crate::delta::predicate::Expr;
use crate::delta::scan::{RowFilter, ScanPlan};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};

/// The change-type column name.
pub(crate) const CHANGE_TYPE: &str = "_change_type";

table_view!(
    /// A table's commits as change rows: the change feed's one reader of them.
    ChangeReader,
    /// The table's commits as change rows.
    change_rows
);

impl ChangeReader<'_> {
    /// Reads commit `version` and its file's modification time (ms).
    ///
    /// # Errors
    /// [`Error::MissingVersion`] when the commit file does not exist (never written, or
    /// removed by log cleanup).
    pub(crate) async fn read_commit_with_time(&self, version: u64) -> Result<(Vec<Action>, i64)> {
        let name = commit_name(version);
        match self.store.get(&self.log_path(&name)).await {
            Ok(r) => {
                let modified = r.meta.last_modified.timestamp_millis();
                let bytes = r.bytes().await.map_err(|e| Error::storage(&name, e))?;
                Ok((parse_commit(&bytes, &name)?, modified))
            }
            Err(object_store::Error::NotFound { .. }) => {
                Err(Error::MissingVersion { version, reason: "the commit file does not exist".into() })
            }
            Err(e) => Err(Error::storage(name, e)),
        }
    }

    /// The change rows of commit `version`, read with the table as of that commit
    /// (`snapshot.version == version`). `timestamp_ms` becomes `_commit_timestamp`. With a
    /// `filter`, files that cannot match are skipped and only matching rows are returned.
    ///
    /// # Errors
    /// Storage, data-file and deletion-vector errors of the files the commit references.
    pub(crate) async fn commit_changes(
        &self,
        snapshot: &Snapshot,
        version: u64,
        actions: &[Action],
        timestamp_ms: i64,
        filter: Option<&Expr>,
    ) -> Result<Vec<RecordBatch>> {
        let tagged =
            self.commit_changes_by_file(snapshot, version, actions, timestamp_ms, filter, &|_| Some(0)).await?;
        Ok(tagged.into_iter().map(|(_, b)| b).collect())
    }

    /// As [`ChangeReader::commit_changes`], reading only the files `tag_of(path)` gives a tag (the
    /// path as the log names it), each batch with its file's tag.
    ///
    /// # Errors
    /// As [`ChangeReader::commit_changes`].
    pub(crate) async fn commit_changes_by_file(
        &self,
        snapshot: &Snapshot,
        version: u64,
        actions: &[Action],
        timestamp_ms: i64,
        filter: Option<&Expr>,
        tag_of: &(dyn Fn(&str) -> Option<u32> + Sync),
    ) -> Result<Vec<(u32, RecordBatch)>> {
        let plan = self.data().scan_plan(snapshot);
        self.changes_in_plan(&plan, version, actions, timestamp_ms, filter.map(|f| (f, snapshot)), tag_of).await
    }

    /// As [`ChangeReader::commit_changes_by_file`] without a filter, with the table's `plan` as of
    /// the commit instead of its snapshot (so that it can be read apart from the snapshot).
    ///
    /// # Errors
    /// As [`ChangeReader::commit_changes`].
    pub(crate) async fn commit_changes_in_plan(
        &self,
        plan: &ScanPlan,
        version: u64,
        actions: &[Action],
        timestamp_ms: i64,
        tag_of: &(dyn Fn(&str) -> Option<u32> + Sync),
    ) -> Result<Vec<(u32, RecordBatch)>> {
        self.changes_in_plan(plan, version, actions, timestamp_ms, None, tag_of).await
    }

    async fn changes_in_plan(
        &self,
        plan: &ScanPlan,
        version: u64,
        actions: &[Action],
        timestamp_ms: i64,
        filter: Option<(&Expr, &Snapshot)>,
        tag_of: &(dyn Fn(&str) -> Option<u32> + Sync),
    ) -> Result<Vec<(u32, RecordBatch)>> {
        let cdc_plan = plan.with_extra_string_column(CHANGE_TYPE);
        let mut out = Vec::new();
        let (mut read, mut skipped) = (0usize, 0usize);
        for source in plan_changes(actions) {
            let Some(tag) = tag_of(&source.path) else { continue };
            if filter.is_some_and(|(f, snapshot)| {
                !f.may_match_in(snapshot, &source.partition_values, source.stats.as_deref())
            }) {
                skipped += 1;
                continue;
            }
            read += 1;
            let rows = match (&source.change_type, &source.selection) {
                (ChangeType::FromFile, _) => {
                    self.data()
                        .read_rows(&cdc_plan, &source.path, &source.partition_values, source.size, RowFilter::All)
                        .await?
                }
                (_, RowSelection::AllExcept(dv)) => {
                    let bitmap = match dv {
                        Some(d) => Some(self.data().load_dv(d).await?),
                        None => None,
                    };
                    let filter = bitmap.as_ref().map_or(RowFilter::All, RowFilter::Exclude);
                    self.data().read_rows(plan, &source.path, &source.partition_values, source.size, filter).await?
                }
                // A DV update: the rows one vector has and the other lacks.
                (_, RowSelection::AddedBy { old, new }) => {
                    let keep = self.dv_difference(Some(new), old.as_ref()).await?;
                    self.data()
                        .read_rows(plan, &source.path, &source.partition_values, source.size, RowFilter::Only(&keep))
                        .await?
                }
                (_, RowSelection::DroppedBy { old, new }) => {
                    let keep = self.dv_difference(Some(old), new.as_ref()).await?;
                    self.data()
                        .read_rows(plan, &source.path, &source.partition_values, source.size, RowFilter::Only(&keep))
                        .await?
                }
            };
            for batch in rows.batches {
                let batch = match filter {
                    Some((f, _)) => {
                        let keep = f.evaluate(&batch).map_err(|e| Error::InvalidArgument(format!("filter: {e}")))?;
                        arrow::compute::filter_record_batch(&batch, &keep)
                            .map_err(|e| Error::Internal(e.to_string()))?
                    }
                    None => batch,
                };
                if batch.num_rows() == 0 {
                    continue;
                }
                let label = (source.change_type != ChangeType::FromFile).then(|| source.change_type.as_str());
                out.push((tag, with_change_columns(batch, label, version, timestamp_ms)?));
            }
        }
        if filter.is_some() {
            tracing::info!(version, files_scanned = read, files_skipped = skipped, "changes.pruned");
        }
        Ok(out)
    }
}

impl ChangeReader<'_> {
    /// Rows in `a` but not in `b`.
    async fn dv_difference(
        &self,
        a: Option<&crate::delta::dv::DeletionVectorDescriptor>,
        b: Option<&crate::delta::dv::DeletionVectorDescriptor>,
    ) -> Result<roaring::RoaringTreemap> {
        let mut out = match a {
            Some(d) => self.data().load_dv(d).await?,
            None => roaring::RoaringTreemap::new(),
        };
        if let Some(d) = b {
            out -= self.data().load_dv(d).await?;
        }
        Ok(out)
    }
}

/// Appends `_change_type` (when `label` is given; change-data files carry their own),
/// `_commit_version` and `_commit_timestamp`.
fn with_change_columns(
    batch: RecordBatch,
    label: Option<&str>,
    version: u64,
    timestamp_ms: i64,
) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    if let Some(label) = label {
        fields.push(Field::new(CHANGE_TYPE, DataType::Utf8, true));
        columns.push(Arc::new(StringArray::from(vec![label; n])));
    }
    fields.push(Field::new("_commit_version", DataType::Int64, true));
    columns.push(Arc::new(Int64Array::from(vec![version as i64; n])));
    fields.push(Field::new("_commit_timestamp", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true));
    columns.push(Arc::new(TimestampMicrosecondArray::from(vec![timestamp_ms * 1000; n]).with_timezone("UTC")));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::Internal(format!("change columns: {e}")))
}
