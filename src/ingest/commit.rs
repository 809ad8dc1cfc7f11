//! A flush: dead letters out, data files written, one `STREAMING UPDATE` commit with a `txn`
//! per Kafka partition.
//!
//! The rows' commit is also where the table is created, or its schema grown, when the rows
//! were decoded in a proposal ([`crate::write::schema_change`]): the proposals are merged onto
//! the table as it is when the commit is planned. A partition whose proposal no longer fits
//! the table (another writer changed a column's type meanwhile) is dropped like a moved one and
//! consumed again from the table's position, decoded against the table as it now is.
//!
//! Before writing, the table is re-read: a partition whose `txn` version is already at or past
//! the first offset of our data was committed by another worker (a rebalance raced us), so its
//! data is dropped and reported in [`FlushResult::moved`] for the caller to re-seek. When the
//! commit itself loses to such a worker (outcome `AlreadyApplied` or `Conflict`), the written
//! files are deleted and the flush is planned again from the new table state.
//!
//! A [`Flusher`] owns everything a flush needs (its own snapshot of the table included), so
//! the pipeline can run one flush in a task of its own while it keeps consuming. A flush whose
//! `abort` flag is set before its commit (a partition of it was revoked meanwhile) deletes its
//! files and commits nothing ([`FlushResult::aborted`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::coordinated::client::{CommitClient, Decided};
use super::coordinated::messages::{Batch, CommitRequest, SchemaRequest};
use super::dead_letter::DeadLetterSink;
use crate::common::flush::FlushReason;
use crate::common::record::DeadLetter;
use crate::delta::actions::Action;
use crate::delta::app_id::TxnAppId;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{commit_exactly_once, DataWriter, Landed, Plan, Planner, RetryPolicy, Table, WriterConfig};
use crate::write::batch::{Chunk, PartitionBatch};
use crate::write::schema_change::{change, mismatch_reason, onto, target, NewTable, SchemaChange};

/// What a flush needs besides the data; owned, so that a flush can run in its own task.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Flusher {
    pub table: Table,
    pub app_id: String,
    pub topic: String,
    pub dead: Arc<DeadLetterSink>,
    pub target_file_size: Option<u64>,
    /// Keyed ingestion: the key columns.
    pub key_columns: Option<Vec<String>>,
    /// Keyed ingestion: the resident bytes the key index may keep (`upsert.index_memory`).
    pub key_index_memory: u64,
    /// The table as this flusher last read it (refreshed at the start of every attempt).
    pub snapshot: Option<Snapshot>,
    /// Coordinated commits: the table's committer commits the flush.
    pub coordinator: Option<Arc<CommitClient>>,
    /// How the rows' commit creates the table when it finds none.
    pub new_table: NewTable,
}

/// What a flush did.
#[derive(Debug, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FlushResult {
    /// The version committed, if anything was.
    pub version: Option<u64>,
    pub rows: u64,
    pub files: usize,
    /// Committed partitions: last offset and its record's timestamp.
    pub committed: BTreeMap<i32, (i64, Option<i64>)>,
    /// Partitions another worker moved: the table's version for each.
    pub moved: BTreeMap<i32, i64>,
    pub rows_dropped: u64,
    pub conflicts: u64,
    pub arrow_bytes: u64,
    pub parquet_bytes: u64,
    /// The abort flag was set before the commit: nothing was committed.
    pub aborted: bool,
    /// Keyed flushes: the key index's figures after the last plan.
    pub key_index: Option<crate::storage::IndexStats>,
}

impl FlushResult {
    /// Adds what the flush did to the pipeline's counters.
    pub(crate) fn count(&self, m: &crate::metrics::PipelineMetrics) {
        m.rows_dropped.inc_by(self.rows_dropped);
        m.conflicts.inc_by(self.conflicts);
        if let Some(s) = self.key_index {
            m.key_index(s);
        }
        if !self.committed.is_empty() {
            m.commits.inc_by(1);
            m.rows_committed.inc_by(self.rows);
        }
    }
}

/// Store faults a flush rides out (with backoff) before the pipeline fails.
const STORE_RETRIES: u32 = crate::common::retry::RIDDEN_FAULTS;

impl Flusher {
    /// Flushes `parts` (a taken batch). `abort` is checked just before the commit.
    ///
    /// # Errors
    /// Storage, dead-letter and protocol errors; [`Error::CommitConflict`] after repeated
    /// conflicts that are not explained by moved partitions. Nothing is half-committed.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn flush(
        &mut self,
        mut parts: BTreeMap<i32, PartitionBatch>,
        reason: FlushReason,
        abort: &AtomicBool,
    ) -> Result<FlushResult> {
        let result = FlushResult::default();
        let letters: BTreeMap<i32, Vec<DeadLetter>> =
            parts.iter_mut().map(|(p, b)| (*p, std::mem::take(&mut b.dead_letters))).collect();
        let mut faults = 0u32;
        // Dead letters first (their table skips repeats, so a retry is harmless).
        loop {
            match self.dead.deliver(&self.topic, &letters).await {
                Ok(()) => break,
                Err(e) if e.is_retryable() && faults < STORE_RETRIES => {
                    faults += 1;
                    tracing::warn!(error = %e, "dead-letter delivery failed; retrying");
                    tokio::time::sleep(crate::common::backoff::FAULTS.delay(faults)).await;
                }
                Err(e) => return Err(e),
            }
        }
        let letters = letters.values().map(Vec::len).sum::<usize>();
        let (table, mut snapshot) = (self.table.clone(), self.snapshot.take());
        let mut planner = FlushPlanner { flusher: self, parts, result, reason, abort, letters };
        let landed = commit_exactly_once(&table, &mut snapshot, &RetryPolicy::riding_faults(), &mut planner).await;
        let FlushPlanner { flusher, mut result, .. } = planner;
        flusher.snapshot = snapshot;
        if let Landed::Committed { version, answer } = landed? {
            result.version = Some(version);
            (result.rows, result.files, result.parquet_bytes, result.arrow_bytes, result.committed) = answer;
        }
        Ok(result)
    }

    fn app(&self, partition: i32) -> TxnAppId {
        TxnAppId::KafkaPartition { app: self.app_id.clone(), topic: self.topic.clone(), partition }
    }

    /// Writes the files and builds the transaction (without txns) against `snapshot` as
    /// `schema` changes it: (transaction, files written, rows, files, bytes, the key index's
    /// figures).
    async fn plan(
        &self,
        snapshot: Option<&Snapshot>,
        schema: SchemaChange,
        parts: &BTreeMap<i32, PartitionBatch>,
    ) -> Result<(Transaction, Vec<String>, u64, usize, i64, Option<crate::storage::IndexStats>)> {
        let (mut txn, written, rows, files, bytes, index) = self.plan_rows(schema.table(snapshot)?, parts).await?;
        if !schema.actions.is_empty() {
            let mut actions = schema.actions;
            actions.append(&mut txn.actions);
            txn.actions = actions;
        }
        Ok((txn, written, rows, files, bytes, index))
    }

    async fn plan_rows(
        &self,
        snapshot: &Snapshot,
        parts: &BTreeMap<i32, PartitionBatch>,
    ) -> Result<(Transaction, Vec<String>, u64, usize, i64, Option<crate::storage::IndexStats>)> {
        let mut config = WriterConfig::for_snapshot(snapshot);
        if let Some(t) = self.target_file_size {
            config.target_file_size = t;
        }
        Ok(match self.key_columns.as_deref() {
            None => {
                let (actions, rows) = append_actions(&self.table, snapshot, config, parts).await?;
                let adds: Vec<&crate::delta::actions::Add> =
                    actions.iter().filter_map(|a| if let Action::Add(a) = a { Some(a) } else { None }).collect();
                let bytes: i64 = adds.iter().map(|a| a.size).sum();
                let (files, written) = (adds.len(), adds.iter().map(|a| a.path.clone()).collect::<Vec<_>>());
                let txn = Transaction::new(Operation::StreamingUpdate, actions)
                    .with_parameter("outputMode", "Append")
                    .with_parameter("queryId", self.app_id.as_str())
                    .with_parameter("epochId", snapshot.version.to_string())
                    .with_metric("numAddedFiles", files)
                    .with_metric("numOutputRows", rows)
                    .with_metric("numOutputBytes", bytes)
                    .with_metric("numRemovedFiles", 0);
                (txn, written, rows, files, bytes, None)
            }
            Some(keys) => {
                let unpacked: Vec<Vec<arrow::array::RecordBatch>> =
                    parts.values().map(PartitionBatch::unpacked).collect::<Result<_>>()?;
                let sources = crate::write::upsert::KeyedChanges::of_partitions(parts, &unpacked);
                let p =
                    crate::write::upsert::plan(&self.table, snapshot, keys, &sources, config, self.key_index_memory)
                        .await?;
                // Keyed: every change counts (upserts and deletes), not only the rows written.
                let changes = parts.values().map(|b| b.rows).sum::<u64>();
                let (files, bytes, index) = (p.files_added, p.bytes_added, p.index);
                let (txn, written) = crate::write::upsert::merge_transaction(p, keys, &self.app_id, changes);
                (txn, written, changes, files, bytes, index)
            }
        })
    }
}

/// What a landed flush committed: rows, files, Parquet bytes, Arrow bytes, and each partition's
/// last offset with its record's timestamp.
type Committed = (u64, usize, u64, u64, BTreeMap<i32, (i64, Option<i64>)>);

/// One flush against the table as it is: partitions another worker moved dropped, the rest
/// written and planned as one commit with a `txn` per partition (or handed to the table's
/// committer under coordinated commits).
struct FlushPlanner<'a> {
    flusher: &'a mut Flusher,
    parts: BTreeMap<i32, PartitionBatch>,
    result: FlushResult,
    reason: FlushReason,
    abort: &'a AtomicBool,
    letters: usize,
}

impl Planner for FlushPlanner<'_> {
    type Answer = Committed;

    async fn plan(&mut self, snapshot: Option<&Snapshot>) -> Result<Plan<Committed>> {
        let (flusher, parts, result) = (&*self.flusher, &mut self.parts, &mut self.result);
        let mut moved: Vec<(i32, i64)> = parts
            .iter()
            .filter_map(|(p, b)| {
                let at = snapshot.and_then(|s| flusher.app(*p).version_in(s));
                at.filter(|v| *v >= b.first_offset).map(|v| (*p, v))
            })
            .collect();
        let target = schema_of(snapshot, parts)?;
        if let Some(t) = &target {
            for p in project_onto(parts, t) {
                let first = parts.get(&p).map_or(0, |b| b.first_offset);
                moved.push((p, snapshot.and_then(|s| flusher.app(p).version_in(s)).unwrap_or(first - 1)));
            }
        }
        for (p, v) in moved {
            let dropped = parts.remove(&p).map_or(0, |b| b.rows);
            tracing::warn!(
                partition = p,
                table_offset = v,
                dropped,
                "the table already holds this partition's batch; re-seeking"
            );
            result.rows_dropped += dropped;
            result.moved.insert(p, v);
        }
        let schema = match target {
            Some(target) => change(snapshot, target, &flusher.new_table)?,
            // Only dead letters so far, and no table to record positions in yet: keep going;
            // they will be re-read after a restart (the dead-letter table skips repeats).
            None => return Ok(Plan::Nothing(Default::default())),
        };
        if parts.is_empty() {
            return Ok(Plan::Nothing(Default::default()));
        }
        let (txn, written, rows, files, bytes, index) = flusher.plan(snapshot, schema, parts).await?;
        result.key_index = index.or(result.key_index);
        let txn = txn.with_parameter("flushReason", self.reason.as_str()).with_metric("numDeadLetters", self.letters);
        let positions: Vec<(TxnAppId, i64)> = parts.iter().map(|(p, b)| (flusher.app(*p), b.last_offset)).collect();
        if self.abort.load(Ordering::Acquire) {
            tracing::info!("a partition of the flush was revoked; nothing committed");
            flusher.table.delete_uncommitted(&written).await;
            result.aborted = true;
            return Ok(Plan::Nothing(Default::default()));
        }
        let committed: Committed = (
            rows,
            files,
            u64::try_from(bytes).unwrap_or(0),
            parts.values().map(|b| b.arrow_bytes).sum(),
            parts.iter().map(|(p, b)| (*p, (b.last_offset, b.last_timestamp_ms))).collect(),
        );
        let Some(client) = flusher.coordinator.clone() else {
            return Ok(Plan::commit(txn, positions, written, committed));
        };
        // Sent: from here on the files are the committer's (never deleted by us).
        let request = CommitRequest {
            id: uuid::Uuid::new_v4().simple().to_string(),
            worker: client.worker.clone(),
            table: flusher.table.url().to_string(),
            app_id: flusher.app_id.clone(),
            topic: flusher.topic.clone(),
            partitions: parts
                .iter()
                .map(|(p, b)| {
                    let base = snapshot.and_then(|s| flusher.app(*p).version_in(s));
                    (*p, Batch { base, last: b.last_offset })
                })
                .collect(),
            adds: txn
                .actions
                .iter()
                .filter_map(|a| if let Action::Add(a) = a { Some(a.clone()) } else { None })
                .collect(),
            rows,
            bytes,
            dead_letters: self.letters as u64,
            schema: schema_request(snapshot, &txn),
        };
        match client.submit(&request, &flusher.table).await? {
            Decided::Committed { version } => {
                result.version = version;
                (result.rows, result.files, result.parquet_bytes, result.arrow_bytes, result.committed) = committed;
            }
            Decided::Refused(positions) => {
                tracing::info!(?positions, "the committer refused the batch; resuming from the table");
                result.rows_dropped += rows;
                for (p, b) in parts.iter() {
                    let at = positions.get(p).copied().flatten().unwrap_or(b.first_offset - 1);
                    result.moved.insert(*p, at);
                }
            }
        }
        Ok(Plan::Nothing(Default::default()))
    }

    fn lost(&mut self, outcome: &CommitOutcome) {
        self.result.conflicts += 1;
        tracing::info!(?outcome, "flush commit lost a race; re-planning");
    }
}

/// The schema change `txn` carries, for the table's committer to commit with its files.
fn schema_request(snapshot: Option<&Snapshot>, txn: &Transaction) -> Option<Box<SchemaRequest>> {
    let metadata = txn.actions.iter().find_map(|a| if let Action::Metadata(m) = a { Some(m.clone()) } else { None })?;
    let protocol = txn.actions.iter().find_map(|a| if let Action::Protocol(p) = a { Some(p.clone()) } else { None });
    Some(Box::new(SchemaRequest { from: snapshot.map(|s| s.metadata.schema_string.clone()), protocol, metadata }))
}

/// The schema the flush writes (`None`: there is no table and no rows to create one with):
/// the table's, grown by the partitions' proposals.
///
/// # Errors
/// [`Error::InvalidArgument`] when a proposal's new columns cannot be added.
fn schema_of(
    snapshot: Option<&Snapshot>,
    parts: &BTreeMap<i32, PartitionBatch>,
) -> Result<Option<crate::delta::schema::StructType>> {
    let proposals: Vec<_> = parts.values().flat_map(|b| b.proposals.iter().cloned()).collect();
    target(snapshot, proposals.iter().map(AsRef::as_ref)).map_err(Error::InvalidArgument)
}

/// Projects the batches of partitions with proposals onto `target`; returns the partitions
/// whose rows no longer fit (another writer changed a column's type meanwhile), for the caller
/// to consume again against the table as it now is.
fn project_onto(parts: &mut BTreeMap<i32, PartitionBatch>, target: &crate::delta::schema::StructType) -> Vec<i32> {
    let mut unfit = Vec::new();
    for (p, b) in parts.iter_mut().filter(|(_, b)| !b.proposals.is_empty()) {
        match b.map_chunks(|rows| onto(&rows, target).map_err(mismatch_reason)) {
            Ok(()) => {}
            Err(why) => {
                tracing::warn!(partition = p, %why, "rows decoded in a schema the table no longer takes; consuming them again");
                unfit.push(*p);
            }
        }
    }
    unfit
}

/// An append flush: every partition's rows into new files, unpacked one chunk at a time.
async fn append_actions(
    table: &Table,
    snapshot: &Snapshot,
    config: WriterConfig,
    parts: &BTreeMap<i32, PartitionBatch>,
) -> Result<(Vec<Action>, u64)> {
    let chunks: Vec<Chunk<'_>> = parts.values().flat_map(PartitionBatch::chunks).collect();
    let rows = chunks.iter().map(Chunk::rows).sum::<usize>();
    let sample = crate::write::batch::sample(&chunks)?;
    let writer = DataWriter::new(table, snapshot, config)?;
    let adds = writer.write_streamed(&sample.iter().collect::<Vec<_>>(), rows, &chunks[..]).await?;
    Ok((adds.into_iter().map(Action::Add).collect(), rows as u64))
}
