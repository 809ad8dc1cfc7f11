//! The pipeline's flushes in the background: one at a time, beside consumption.
//!
//! Contract:
//! - A due batch is taken out of the buffer and flushed by a task of its own (write Parquet,
//!   commit), while the pipeline keeps consuming into a fresh buffer. At most one flush runs:
//!   when the next batch is due before it finished, consumption waits for it. Memory thus
//!   holds at most two batches, the one being written and the one filling.
//! - Flushes commit in the order they were taken (each refreshes the table first), so the
//!   table's `txn` versions only move forward.
//! - When a flush ends, its result is applied before anything else: partitions another
//!   worker moved, or whose flush was aborted, drop what the buffer holds for them and seek
//!   back to the table's position; committed partitions advance their lag metrics and the
//!   courtesy offset commit.
//! - A revocation that touches a running flush's partitions sets its abort flag: if the flag is
//!   seen before the commit, nothing is committed for any of them (the `txn` check in the
//!   commit covers the remaining window: a worker that took the partition over and committed
//!   first makes ours conflict).

use std::collections::{BTreeMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use rdkafka::Offset;

use super::commit::{FlushResult, Flusher};
use super::runner::Runner;
use crate::common::flush::FlushReason;
use crate::error::{Error, Result};
use crate::source::kafka::consumer::{commit_courtesy, PipelineConsumer};

/// A flush's task hands back its flusher with the result.
pub(crate) type Done = (Flusher, Result<FlushResult>);

/// The running flush.
pub(crate) struct InFlight {
    abort: Arc<AtomicBool>,
    /// Partition → first offset of its data in the flush.
    first_offsets: BTreeMap<i32, i64>,
    reason: FlushReason,
    started: Instant,
    /// Buffered bytes it holds (for the buffer gauge).
    bytes: u64,
}

impl Runner {
    /// Starts flushing the buffer in the background (waiting for a running flush first).
    pub(crate) async fn start_flush(&mut self, consumer: &PipelineConsumer, reason: FlushReason) -> Result<()> {
        self.finish_flush(consumer).await?;
        // (Checked after the running flush ended: its result may have dropped partitions.)
        if self.buffer.is_empty() {
            return Ok(());
        }
        let bytes = self.buffer.state().bytes;
        let parts = self.buffer.take();
        let Some(mut flusher) = self.flusher.take() else {
            return Err(Error::Internal("no flusher while none is running".into()));
        };
        let abort = Arc::new(AtomicBool::new(false));
        let first_offsets = parts.iter().map(|(p, b)| (*p, b.first_offset)).collect();
        self.inflight = Some(InFlight { abort: abort.clone(), first_offsets, reason, started: Instant::now(), bytes });
        self.metrics.buffer_bytes.store(self.buffered_bytes(), Relaxed);
        let done = self.done_tx.clone();
        tokio::spawn(async move {
            // A panic must end the pipeline with an error, not leave it waiting for a result.
            let result = match AssertUnwindSafe(flusher.flush(parts, reason, &abort)).catch_unwind().await {
                Ok(r) => r,
                Err(_) => Err(Error::Internal("the flush task panicked".into())),
            };
            let _ = done.send((flusher, result));
        });
        Ok(())
    }

    /// Flushes the buffer and waits until it is committed (shutdown).
    pub(crate) async fn flush_now(&mut self, consumer: &PipelineConsumer, reason: FlushReason) -> Result<()> {
        self.start_flush(consumer, reason).await?;
        self.finish_flush(consumer).await
    }

    /// Waits for the running flush, if any, and applies its result.
    pub(crate) async fn finish_flush(&mut self, consumer: &PipelineConsumer) -> Result<()> {
        if self.inflight.is_none() {
            return Ok(());
        }
        match self.done_rx.recv().await {
            Some(done) => self.complete_flush(consumer, done).await,
            None => Err(Error::Internal("the flush task ended without a result".into())),
        }
    }

    /// Bytes held: the buffer's and the running flush's.
    pub(crate) fn buffered_bytes(&self) -> u64 {
        self.buffer.state().bytes + self.inflight.as_ref().map_or(0, |f| f.bytes)
    }

    /// Marks the running flush aborted when it holds one of `partitions`.
    pub(crate) fn abort_flush_of(&self, partitions: &[i32]) {
        if let Some(f) = &self.inflight {
            if partitions.iter().any(|p| f.first_offsets.contains_key(p)) {
                f.abort.store(true, Release);
            }
        }
    }

    /// Applies a finished flush's result.
    pub(crate) async fn complete_flush(&mut self, consumer: &PipelineConsumer, (flusher, result): Done) -> Result<()> {
        let Some(flight) = self.inflight.take() else {
            return Err(Error::Internal("a flush result without a running flush".into()));
        };
        let stale = self.schema.differs_from(flusher.snapshot.as_ref());
        self.flusher = Some(flusher);
        self.metrics.buffer_bytes.store(self.buffered_bytes(), Relaxed);
        let result = result?;
        if stale {
            // Another worker changed the schema: decode against it from now on.
            self.schema.refresh(&self.table).await?;
        }
        // Partitions to start again from the table: moved by another worker, or aborted.
        let mut reseek: BTreeMap<i32, i64> = result.moved.iter().map(|(p, v)| (*p, v + 1)).collect();
        if result.aborted {
            for (p, first) in &flight.first_offsets {
                reseek.entry(*p).or_insert(*first);
            }
        }
        for (p, next) in &reseek {
            if let Some(o) = self.owned.get_mut(p) {
                let dropped = self.buffer.drop_partition(*p);
                self.metrics.rows_dropped.fetch_add(dropped, Relaxed);
                o.seek = Some(Offset::Offset(*next));
                o.accept_from = *next;
            }
        }
        let skip: HashSet<i32> = reseek.keys().copied().collect();
        let mut next = BTreeMap::new();
        for (p, (last, ts)) in &result.committed {
            if self.owned.contains_key(p) && !skip.contains(p) {
                next.insert(*p, last + 1);
                self.metrics.position(*p, last + 1, *ts);
            }
        }
        commit_courtesy(consumer, &self.cfg.config.kafka.topic, &next);
        self.buffer.observe_ratio(result.arrow_bytes, result.parquet_bytes);
        let m = &self.metrics;
        m.rows_dropped.fetch_add(result.rows_dropped, Relaxed);
        m.conflicts.fetch_add(result.conflicts, Relaxed);
        if result.version.is_some() {
            m.commits.fetch_add(1, Relaxed);
            m.rows_committed.fetch_add(result.rows, Relaxed);
        }
        let seconds = flight.started.elapsed().as_secs_f64();
        m.flushed(flight.reason, seconds);
        tracing::info!(
            pipeline = %self.cfg.name, reason = flight.reason.as_str(), version = ?result.version, rows = result.rows,
            files = result.files, aborted = result.aborted, ms = (seconds * 1000.0) as u64, "flushed"
        );
        self.retry_seeks(consumer);
        Ok(())
    }
}
