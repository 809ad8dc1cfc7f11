//! The pipeline's flush slot: one flush at a time in the background, beside consumption.
//!
//! Contract:
//! - A due batch is taken out of the buffer and handed to [`FlushSlot::start`], which flushes
//!   it in a task of its own (write Parquet, commit) while the pipeline keeps consuming into a
//!   fresh buffer. At most one flush runs: starting another waits for the running one first.
//!   Memory thus holds at most two batches, the one being written and the one filling.
//! - Flushes commit in the order they were taken (each refreshes the table first), so the
//!   table's `txn` versions only move forward.
//! - A finished flush comes back as a [`Finished`] value; the runner applies it before
//!   anything else (partitions another worker moved or whose flush was aborted seek back to the
//!   table's position; committed partitions advance).
//! - A revocation that touches the running flush's partitions sets its abort flag
//!   ([`FlushSlot::abort_if_holds`]): if the flag is seen before the commit, nothing is
//!   committed for any of them (the `txn` check in the commit covers the remaining window: a
//!   worker that took the partition over and committed first makes ours conflict).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Release;
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

use super::commit::{FlushResult, Flusher};
use crate::common::flush::FlushReason;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::write::batch::PartitionBatch;

/// A flush's task hands back its flusher with the result.
type Done = (Flusher, Result<FlushResult>);

/// The running flush.
struct InFlight {
    abort: Arc<AtomicBool>,
    /// Partition → first offset of its data in the flush.
    first_offsets: BTreeMap<i32, i64>,
    reason: FlushReason,
    started: Instant,
    /// Buffered bytes it holds (for the buffer gauge).
    bytes: u64,
}

/// A flush that ended.
pub(crate) struct Finished {
    pub result: Result<FlushResult>,
    /// Partition → first offset of its data in the flush.
    pub first_offsets: BTreeMap<i32, i64>,
    pub reason: FlushReason,
    pub seconds: f64,
}

/// The flusher while no flush runs, or the running flush and where its result arrives.
pub(crate) struct FlushSlot {
    flusher: Option<Flusher>,
    inflight: Option<InFlight>,
    done_tx: UnboundedSender<Done>,
    done_rx: UnboundedReceiver<Done>,
}

impl FlushSlot {
    pub(super) fn new(flusher: Flusher) -> FlushSlot {
        let (done_tx, done_rx) = unbounded_channel();
        FlushSlot { flusher: Some(flusher), inflight: None, done_tx, done_rx }
    }

    /// Buffered bytes the running flush holds.
    pub(super) fn bytes(&self) -> u64 {
        self.inflight.as_ref().map_or(0, |f| f.bytes)
    }

    /// The table as the flusher last read it (while no flush runs).
    pub(super) fn snapshot(&self) -> Option<&Snapshot> {
        self.flusher.as_ref().and_then(|f| f.snapshot.as_ref())
    }

    /// Starts flushing `parts` (holding `bytes` buffered bytes) in the background.
    ///
    /// # Errors
    /// [`Error::Internal`] when a flush is already running.
    pub(super) fn start(
        &mut self,
        parts: BTreeMap<i32, PartitionBatch>,
        bytes: u64,
        reason: FlushReason,
    ) -> Result<()> {
        let Some(mut flusher) = self.flusher.take() else {
            return Err(Error::Internal("a flush started while another runs".into()));
        };
        let abort = Arc::new(AtomicBool::new(false));
        let first_offsets = parts.iter().map(|(p, b)| (*p, b.first_offset)).collect();
        self.inflight = Some(InFlight { abort: abort.clone(), first_offsets, reason, started: Instant::now(), bytes });
        let done = self.done_tx.clone();
        // A child of the pipeline's span: the flush's log lines say which pipeline and table.
        let span = tracing::info_span!("flush", reason = reason.as_str());
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                // A panic must end the pipeline with an error, not leave it waiting for a result.
                let result = match AssertUnwindSafe(flusher.flush(parts, reason, &abort)).catch_unwind().await {
                    Ok(r) => r,
                    Err(_) => Err(Error::Internal("the flush task panicked".into())),
                };
                let _ = done.send((flusher, result));
            },
            span,
        ));
        Ok(())
    }

    /// The running flush's end; pending forever while none runs (for `select!`).
    pub(super) async fn finished(&mut self) -> Finished {
        if self.inflight.is_none() {
            return std::future::pending().await;
        }
        let done = self.done_rx.recv().await;
        self.accept(done)
    }

    /// Waits for the running flush, if any.
    pub(super) async fn wait(&mut self) -> Option<Finished> {
        self.inflight.as_ref()?;
        let done = self.done_rx.recv().await;
        Some(self.accept(done))
    }

    fn accept(&mut self, done: Option<Done>) -> Finished {
        let flight = self.inflight.take();
        let (result, reason, first_offsets, seconds) = match (done, flight) {
            (Some((flusher, result)), Some(f)) => {
                self.flusher = Some(flusher);
                (result, f.reason, f.first_offsets, f.started.elapsed().as_secs_f64())
            }
            (None, f) => (
                Err(Error::Internal("the flush task ended without a result".into())),
                f.as_ref().map_or(FlushReason::Shutdown, |f| f.reason),
                BTreeMap::new(),
                0.0,
            ),
            (Some(_), None) => (
                Err(Error::Internal("a flush result without a running flush".into())),
                FlushReason::Shutdown,
                BTreeMap::new(),
                0.0,
            ),
        };
        Finished { result, first_offsets, reason, seconds }
    }

    /// Marks the running flush aborted when it holds one of `partitions`.
    pub(super) fn abort_if_holds(&self, partitions: &[i32]) {
        if let Some(f) = &self.inflight {
            if partitions.iter().any(|p| f.first_offsets.contains_key(p)) {
                f.abort.store(true, Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};

    use super::*;
    use crate::ingest::dead_letter::DeadLetterSink;
    use crate::storage::{StorageOptions, Table};

    async fn slot() -> (Table, FlushSlot) {
        let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
        let table = Table::open(&url, StorageOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        // A table with one `id` column, created through the commit path.
        let schema = crate::delta::create::infer_schema(&[r#"{"id":0}"#]).unwrap_or_else(|e| panic!("{e}"));
        let (protocol, metadata) =
            crate::delta::create::new_table(schema, &[], &Default::default()).unwrap_or_else(|e| panic!("{e}"));
        let create = crate::delta::transaction::Transaction::new(
            crate::delta::transaction::Operation::CreateTable,
            vec![crate::delta::actions::Action::Protocol(protocol), crate::delta::actions::Action::Metadata(metadata)],
        );
        let step = |_: Option<&crate::delta::snapshot::Snapshot>| {
            Ok(crate::storage::Plan::commit(create.clone(), Vec::new(), Vec::new(), ()))
        };
        crate::storage::commit_exactly_once(&table, &mut None, &Default::default(), &mut crate::storage::PlanFn(step))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let snapshot = table.snapshot(None).await.unwrap_or_else(|e| panic!("{e}"));
        let flusher = Flusher {
            table: table.clone(),
            app_id: "app".into(),
            topic: "t".into(),
            dead: Arc::new(DeadLetterSink::Discard),
            target_file_size: None,
            key_columns: None,
            key_index_memory: crate::config::DEFAULT_INDEX_MEMORY.get(),
            snapshot: Some(snapshot),
            coordinator: None,
            new_table: Default::default(),
        };
        (table, FlushSlot::new(flusher))
    }

    fn batch(partition: i32, offsets: std::ops::Range<i64>) -> BTreeMap<i32, PartitionBatch> {
        let ids: Vec<i64> = offsets.clone().collect();
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new(
            "id",
            arrow::datatypes::DataType::Int64,
            true,
        )]));
        let b = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids.clone()))])
            .unwrap_or_else(|e| panic!("{e}"));
        let part = PartitionBatch {
            batches: vec![b],
            first_offset: offsets.start,
            last_offset: offsets.end - 1,
            rows: ids.len() as u64,
            ..PartitionBatch::default()
        };
        BTreeMap::from([(partition, part)])
    }

    #[tokio::test]
    async fn one_flush_at_a_time_in_the_background_then_the_flusher_comes_back() {
        let (table, mut slot) = slot().await;
        assert!(slot.wait().await.is_none(), "nothing runs yet");
        slot.start(batch(0, 10..13), 300, FlushReason::Rows).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(slot.bytes(), 300, "the running flush holds its bytes");
        assert!(slot.start(batch(1, 0..1), 10, FlushReason::Rows).is_err(), "a second flush waits its turn");
        let done = slot.wait().await.unwrap_or_else(|| panic!("a running flush"));
        let result = done.result.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((result.version, result.rows, result.aborted), (Some(1), 3, false));
        assert_eq!(result.committed.get(&0).map(|c| c.0), Some(12));
        assert_eq!(done.first_offsets, BTreeMap::from([(0, 10)]));
        assert_eq!(slot.bytes(), 0);
        assert_eq!(table.snapshot(None).await.unwrap_or_else(|e| panic!("{e}")).version, 1);
        // The flusher is back (with the table as it read it before committing): the next
        // flush starts, and commits after the first.
        assert!(slot.snapshot().is_some());
        slot.start(batch(0, 13..14), 10, FlushReason::Rows).unwrap_or_else(|e| panic!("{e}"));
        let next = slot.wait().await.unwrap_or_else(|| panic!("a running flush")).result;
        assert_eq!(next.unwrap_or_else(|e| panic!("{e}")).version, Some(2));
    }

    #[tokio::test]
    async fn a_revocation_of_a_partition_it_holds_aborts_the_running_flush() {
        let (table, mut slot) = slot().await;
        slot.start(batch(0, 0..5), 100, FlushReason::Rows).unwrap_or_else(|e| panic!("{e}"));
        slot.abort_if_holds(&[3]);
        slot.abort_if_holds(&[0]);
        let result = slot.wait().await.unwrap_or_else(|| panic!("a running flush")).result;
        let result = result.unwrap_or_else(|e| panic!("{e}"));
        assert!(result.aborted && result.version.is_none(), "{result:?}");
        assert_eq!(table.snapshot(None).await.unwrap_or_else(|e| panic!("{e}")).version, 0, "nothing committed");
        // Another partition's revocation leaves a flush alone.
        slot.start(batch(1, 0..2), 100, FlushReason::Rows).unwrap_or_else(|e| panic!("{e}"));
        slot.abort_if_holds(&[0]);
        let result = slot.wait().await.unwrap_or_else(|| panic!("a running flush")).result;
        assert_eq!(result.unwrap_or_else(|e| panic!("{e}")).version, Some(1));
    }
}
