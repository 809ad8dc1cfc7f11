//! Rows into one table: the open batch ([`Buffer`]) and the flush slot ([`FlushSlot`]), one
//! flush at a time in the background while consumption goes on.
//!
//! Contract:
//! - A flush writes every buffered partition's rows, then commits the adds plus one `txn` per
//!   partition (version = last offset consumed, dead letters included) in one put-if-absent
//!   commit ([`super::commit`]). If another worker moved a partition's txn, that partition's
//!   data is dropped and it restarts at the table's position.
//! - The next flush waits for the running one, which with `flush.max_bytes` bounds memory to
//!   two batches; a revocation touching the running flush aborts it.
//! - With coordinated commits the flush sends its files to the table's committer instead of
//!   committing them ([`super::coordinated`]); a refused batch restarts like a moved one.
//! - After a flush that saw another schema (another worker evolved it), records decode against
//!   the new one.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::commit::Flusher;
use super::dead_letter::DeadLetterSink;
use super::decode::decode;
use super::flushing::{Finished, FlushSlot};
use super::positions;
use super::runner::{Outcome, Rows};
use super::schema::TableSchema;
use crate::common::flush::{BatchState, FlushReason};
use crate::config::KafkaPipeline;
use crate::decode::registry::Registries;
use crate::error::Result;
use crate::metrics::PipelineMetrics;
use crate::source::kafka::stage::{KafkaSource, SourceRecord, StartOffset};
use crate::storage::Table;
use crate::write::batch::Buffer;
use crate::write::schema_change::NewTable;

/// One table's open batch and flush slot.
pub(crate) struct OneTable {
    cfg: KafkaPipeline,
    table: Table,
    metrics: Arc<PipelineMetrics>,
    schema: TableSchema,
    buffer: Buffer,
    slot: FlushSlot,
    /// A keyed table's index, loading while the first batch is consumed.
    _warm: Option<crate::storage::KeyIndexWarmUp>,
}

impl OneTable {
    /// Opens the table (creating it when configured with a schema).
    ///
    /// # Errors
    /// A missing table without `create`, storage and protocol errors.
    pub(crate) async fn open(
        cfg: KafkaPipeline,
        table: Table,
        dead: DeadLetterSink,
        metrics: Arc<PipelineMetrics>,
        registries: &Registries,
        coordinator: Option<Arc<super::coordinated::client::CommitClient>>,
    ) -> Result<OneTable> {
        let schema = TableSchema::open(&table, &cfg, registries).await?;
        let flusher = Flusher {
            table: table.clone(),
            app_id: cfg.app_id.clone(),
            topic: cfg.kafka.topic.clone(),
            dead: Arc::new(dead),
            target_file_size: cfg.target_file_size,
            key_columns: cfg.upsert.as_ref().map(|u| u.key_columns.clone()),
            key_index_memory: cfg
                .upsert
                .as_ref()
                .map_or(crate::config::DEFAULT_INDEX_MEMORY.get(), |u| u.index_memory.get()),
            snapshot: schema.snapshot.clone(),
            coordinator,
            new_table: NewTable::of_pipeline(&cfg),
        };
        let warm = match (&flusher.key_columns, &flusher.snapshot) {
            (Some(keys), Some(snapshot)) if !snapshot.files().is_empty() => {
                Some(table.keys().warm(snapshot.clone(), keys.clone(), flusher.key_index_memory))
            }
            _ => None,
        };
        tracing::info!(table = %table.url(), "table opened");
        Ok(OneTable {
            slot: FlushSlot::new(flusher),
            cfg,
            table,
            metrics,
            schema,
            buffer: Buffer::default(),
            _warm: warm,
        })
    }

    /// Applies a finished flush's result to the open batch and the metrics.
    async fn apply(&mut self, finished: Finished) -> Result<Outcome> {
        let stale = self.schema.differs_from(self.slot.snapshot());
        let result = finished.result?;
        if stale {
            // Another worker changed the schema: decode against it from now on.
            self.schema.refresh(&self.table).await?;
        }
        // Partitions to start again from the table: moved by another worker, or aborted.
        let mut restart: BTreeMap<i32, i64> = result.moved.iter().map(|(p, v)| (*p, v + 1)).collect();
        if result.aborted {
            for (p, first) in &finished.first_offsets {
                restart.entry(*p).or_insert(*first);
            }
        }
        for p in restart.keys() {
            self.metrics.rows_dropped.inc_by(self.buffer.drop_partition(*p));
        }
        self.buffer.observe_ratio(result.arrow_bytes, result.parquet_bytes);
        result.count(&self.metrics);
        self.metrics.flushed(finished.reason, finished.seconds);
        tracing::info!(
            reason = finished.reason.as_str(),
            version = result.version.map_or(-1, |v| v as i64),
            rows = result.rows,
            files = result.files,
            aborted = result.aborted,
            ms = (finished.seconds * 1000.0) as u64,
            "flushed"
        );
        Ok(Outcome { committed: result.committed, restart })
    }
}

impl Rows for OneTable {
    async fn resume(&mut self, source: &KafkaSource, parts: &[i32]) -> Result<BTreeMap<i32, StartOffset>> {
        self.schema.refresh(&self.table).await?;
        positions::resolve(source, &self.table, &mut self.schema, &self.cfg, &self.metrics, parts).await
    }

    async fn take(&mut self, partition: i32, records: Vec<SourceRecord<'_>>) -> Result<()> {
        let consumed = decode(&mut self.schema, &self.table, &self.cfg, partition, &records).await?;
        self.metrics.dead_letters.inc_by(consumed.dead_letters.len() as u64);
        self.buffer.add(consumed, self.table.clock().now_ms());
        Ok(())
    }

    fn state(&self) -> BatchState {
        self.buffer.state()
    }

    fn held_bytes(&self) -> u64 {
        self.buffer.state().bytes + self.slot.bytes()
    }

    fn drop_partitions(&mut self, parts: &[i32]) -> u64 {
        self.slot.abort_if_holds(parts);
        parts.iter().map(|p| self.buffer.drop_partition(*p)).sum()
    }

    async fn flush(&mut self, reason: FlushReason) -> Result<Option<Outcome>> {
        let before = self.finish().await?;
        // (Checked after the running flush ended: its result may have dropped partitions.)
        if !self.buffer.is_empty() {
            let bytes = self.buffer.state().bytes;
            let parts = self.buffer.take();
            self.slot.start(parts, bytes, reason)?;
        }
        Ok(before)
    }

    async fn finished(&mut self) -> Result<Outcome> {
        let finished = self.slot.finished().await;
        self.apply(finished).await
    }

    async fn finish(&mut self) -> Result<Option<Outcome>> {
        match self.slot.wait().await {
            Some(finished) => self.apply(finished).await.map(Some),
            None => Ok(None),
        }
    }
}
