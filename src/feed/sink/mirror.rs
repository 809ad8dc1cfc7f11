//! The mirror sink of `follow --mirror`: the target's live rows equal the source's at every
//! delivered version (where `follow --into` copies the change log instead).
//!
//! Contract:
//! - The target is created with the source's schema and partition columns and with deletion
//!   vectors enabled; a source schema change is carried over as a metadata commit before the
//!   rows of the commit that made it (a change of partition columns is refused).
//! - Each source commit with row changes becomes one `MERGE` commit on the target, by the key
//!   columns: delete rows remove their key's row (as deletion vectors), inserts and update
//!   post-images replace or add it (the upsert planner of keyed pipelines), update pre-images
//!   are skipped. Deletes are applied before inserts, so a key deleted and re-added in one
//!   commit (a copy-on-write update) ends up with its new row.
//! - The commit carries `txn(<follower>-<source table id>, source version)`: a restart resumes
//!   after it, a lost answer or a conflict re-reads the target and plans again, so each source
//!   commit is applied once.
//! - A mirror that starts after version 0 (`--from N`, `--from latest`, a timestamp) first
//!   copies the source's rows as of the version before its first commit, in one commit whose
//!   txn is that version; only then are commits applied, so the target is a copy from the
//!   start (a `--from snapshot` start hands over those rows itself).

use std::collections::HashMap;

use arrow::array::{Array, RecordBatch, StringArray};
use arrow::compute::filter_record_batch;

use super::ChangeSink;
use crate::decode::keyed::{keys_of_batch, ChangeOrder};
use crate::delta::actions::{Action, Metadata};
use crate::delta::app_id::TxnAppId;
use crate::delta::create::{evolved_metadata, new_table, with_current_mapping};
use crate::delta::schema::ColumnMappingMode;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::change_cursor::CommitChanges;
use crate::storage::{commit_exactly_once, Landed, Plan, Planner, RetryPolicy, Table, WriterConfig, CHANGE_TYPE};
use crate::write::upsert::{merge_transaction, plan, KeyedChanges};

/// The mirror sink.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct MirrorSink {
    source: Table,
    target: Table,
    snapshot: Option<Snapshot>,
    app_id: TxnAppId,
    keys: Vec<String>,
    /// Target commits made and source change rows applied.
    pub commits: u64,
    pub rows: u64,
    /// The target's key index, loading while the mirror starts.
    _warm: Option<crate::storage::KeyIndexWarmUp>,
}

impl MirrorSink {
    /// A mirror of the source table `source_table_id` into `target`, matching rows by `keys`.
    ///
    /// # Errors
    /// No key columns; target read errors other than "no table yet".
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn open(
        source: &Table,
        target: &Table,
        follower_id: &str,
        source_table_id: &str,
        keys: &[String],
    ) -> Result<MirrorSink> {
        if keys.is_empty() {
            return Err(Error::InvalidArgument(
                "--mirror needs --key-columns: the columns that identify a row in source and target".into(),
            ));
        }
        let app_id =
            TxnAppId::Follower { follower: follower_id.to_string(), source_table_id: source_table_id.to_string() };
        let snapshot = target.existing_snapshot().await?;
        let warm = snapshot
            .as_ref()
            .filter(|s| !s.files().is_empty())
            .map(|s| target.keys().warm(s.clone(), keys.to_vec(), crate::config::DEFAULT_INDEX_MEMORY.get()));
        Ok(MirrorSink {
            source: source.clone(),
            target: target.clone(),
            snapshot,
            app_id,
            keys: keys.to_vec(),
            commits: 0,
            rows: 0,
            _warm: warm,
        })
    }

    pub(crate) fn app_id(&self) -> String {
        self.app_id.to_string()
    }

    /// A target without this mirror's position gets the source's rows as of `at` first (one
    /// commit recording `at`), so that the commits after it apply to a copy.
    async fn start_at(&mut self, at: Option<u64>) -> Result<()> {
        // A recorded position never goes away: only a target without one is read again.
        let app = self.app_id.clone();
        let started = move |s: &Option<Snapshot>| s.as_ref().is_some_and(|t| app.version_in(t).is_some());
        if at.is_none() || started(&self.snapshot) {
            return Ok(());
        }
        self.target.refresh(&mut self.snapshot).await?;
        let Some(at) = at.filter(|_| !started(&self.snapshot)) else { return Ok(()) };
        let (rows, cursor) = crate::storage::change_cursor::ChangeCursor::snapshot_rows(&self.source, at, None).await?;
        let snapshot = cursor.snapshot().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
        tracing::info!(
            target = self.target.url(),
            version = at,
            rows = rows.rows(),
            "mirror: copying the source as of its start"
        );
        self.apply(snapshot, &rows).await
    }

    /// Applies one source commit (and records its version) through the commit path.
    async fn apply(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        let target = self.target.clone();
        let mut snapshot = self.snapshot.take();
        let mut planner = Merge { mirror: self, source, changes };
        let result = commit_exactly_once(&target, &mut snapshot, &RetryPolicy::default(), &mut planner).await;
        self.snapshot = snapshot;
        if let Ok(Landed::Committed { answer, .. }) = &result {
            self.rows += answer;
        }
        result.map(|_| ())
    }

    /// The target created like the source.
    fn create(&self, source: &Snapshot) -> Result<Transaction> {
        let mut props = HashMap::new();
        props.insert("delta.enableDeletionVectors".to_string(), "true".to_string());
        let (protocol, metadata) = new_table(source.schema.clone(), &source.metadata.partition_columns, &props)?;
        Ok(Transaction::new(Operation::CreateTable, vec![Action::Protocol(protocol), Action::Metadata(metadata)])
            .with_parameter("queryId", self.app_id.to_string()))
    }

    /// The target given the source's schema.
    fn evolve(&self, target: &Snapshot, source: &Snapshot) -> Result<Transaction> {
        if target.metadata.partition_columns != source.metadata.partition_columns {
            return Err(Error::unsupported(format!(
                "the source's partition columns changed to {:?}; the mirror {} keeps {:?}",
                source.metadata.partition_columns,
                self.target.url(),
                target.metadata.partition_columns
            )));
        }
        // A column-mapped target keeps its columns' ids and physical names (its files use
        // them); the source's new columns get fresh ones.
        let metadata = match target.column_mapping() {
            ColumnMappingMode::None => {
                Metadata { schema_string: source.metadata.schema_string.clone(), ..target.metadata.clone() }
            }
            mode => evolved_metadata(&target.metadata, mode, with_current_mapping(&target.schema, &source.schema)),
        };
        tracing::info!(target = self.target.url(), "mirror: carrying the source's schema over");
        Ok(Transaction::new(Operation::ChangeColumn, vec![Action::Metadata(metadata)])
            .with_parameter("queryId", self.app_id.to_string()))
    }

    /// The commit's changes: the keys it deletes and its new rows (projected on the source's
    /// columns), with the count of change rows they apply.
    fn changes_of(&self, source: &Snapshot, changes: &CommitChanges) -> Result<(Vec<String>, Vec<RecordBatch>, u64)> {
        let columns: Vec<&str> = source.schema.fields.iter().map(|f| f.name.as_str()).collect();
        let (mut deletes, mut batches) = (Vec::new(), Vec::new());
        let mut applied = 0u64;
        for batch in &changes.batches {
            let types = batch
                .column_by_name(CHANGE_TYPE)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
                .ok_or_else(|| Error::Internal("change rows without their change type".into()))?;
            let keys = keys_of_batch(batch, &self.keys);
            for (i, key) in keys.iter().enumerate() {
                if types.value(i) == "delete" {
                    applied += 1;
                    match key {
                        Some(k) => deletes.push(k.clone()),
                        None => tracing::warn!(version = changes.version, "mirror: a deleted row without its key"),
                    }
                }
            }
            let keep: arrow::array::BooleanArray =
                types.iter().map(|t| Some(matches!(t, Some("insert" | "update_postimage")))).collect();
            let rows = filter_record_batch(batch, &keep).map_err(|e| Error::Internal(format!("mirror rows: {e}")))?;
            if rows.num_rows() == 0 {
                continue;
            }
            let projected = project(&rows, &columns)?;
            applied += projected.num_rows() as u64;
            batches.push(projected);
        }
        Ok((deletes, batches, applied))
    }
}

/// One source commit as a keyed `MERGE` on the target as it is (created, or given the source's
/// schema, first).
struct Merge<'a> {
    mirror: &'a mut MirrorSink,
    source: &'a Snapshot,
    changes: &'a CommitChanges,
}

impl Planner for Merge<'_> {
    /// Source change rows applied.
    type Answer = u64;

    async fn plan(&mut self, target: Option<&Snapshot>) -> Result<Plan<u64>> {
        let m = &*self.mirror;
        let Some(target) = target else { return Ok(Plan::step(m.create(self.source)?, Vec::new())) };
        let version = i64::try_from(self.changes.version).map_err(|e| Error::Internal(e.to_string()))?;
        if m.app_id.version_in(target).is_some_and(|v| v >= version) {
            return Ok(Plan::Nothing(0));
        }
        // The source's schema, with the column mapping the target keeps for its columns.
        if with_current_mapping(&target.schema, &self.source.schema) != target.schema {
            return Ok(Plan::step(m.evolve(target, self.source)?, Vec::new()));
        }
        let (deletes, batches, applied) = m.changes_of(self.source, self.changes)?;
        // Every delete of the commit before every new row.
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let first_row = deletes.len() as u64;
        let source = KeyedChanges {
            batches: &batches,
            rows: (0..rows as u64).map(|i| ChangeOrder::InCommit(first_row + i)).collect(),
            deletes: deletes.iter().enumerate().map(|(i, k)| (ChangeOrder::InCommit(i as u64), k.as_str())).collect(),
        };
        let mut config = WriterConfig::for_snapshot(target);
        config.target_file_size = config.target_file_size.max(1);
        let upsert =
            plan(&m.target, target, &m.keys, &[source], config, crate::config::DEFAULT_INDEX_MEMORY.get()).await?;
        let (txn, written) = merge_transaction(upsert, &m.keys, &m.app_id.to_string(), applied);
        let txn = txn.with_parameter("epochId", self.changes.version.to_string());
        Ok(Plan::commit(txn, vec![(m.app_id.clone(), version)], written, applied))
    }

    fn landed(&mut self, _version: u64) {
        self.mirror.commits += 1;
    }

    fn lost(&mut self, outcome: &CommitOutcome) {
        tracing::info!(?outcome, "mirror: the target moved; planning again");
    }
}

fn project(batch: &RecordBatch, columns: &[&str]) -> Result<RecordBatch> {
    let indices: Vec<usize> = columns
        .iter()
        .map(|c| {
            batch.schema().index_of(c).map_err(|_| Error::Internal(format!("change rows without the column {c:?}")))
        })
        .collect::<Result<_>>()?;
    batch.project(&indices).map_err(|e| Error::Internal(format!("mirror rows: {e}")))
}

impl ChangeSink for MirrorSink {
    async fn position(&mut self) -> Result<Option<u64>> {
        Ok(self.snapshot.as_ref().and_then(|s| self.app_id.version_in(s)).and_then(|v| u64::try_from(v).ok()))
    }

    async fn deliver(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.start_at(changes.version.checked_sub(1)).await?;
        let schema_moved =
            self.snapshot.as_ref().is_some_and(|t| t.metadata.schema_string != source.metadata.schema_string);
        if changes.rows() == 0 && !schema_moved {
            return Ok(());
        }
        self.apply(source, changes).await
    }

    async fn mark(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        // A mark with rows is a `snapshot` start: those rows are the copy. A mark without them
        // records a position, whose state the target must hold.
        if changes.rows() == 0 {
            self.start_at(Some(changes.version)).await?;
        }
        self.apply(source, changes).await
    }

    fn name(&self) -> &'static str {
        "mirror"
    }
}
