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
    /// The table's schema changed since the pipeline last read it (a flush created or evolved
    /// it, or another worker did): read again before the next records are decoded.
    schema_stale: bool,
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
            schema_stale: false,
            _warm: warm,
        })
    }

    /// Applies a finished flush's result to the open batch and the metrics.
    ///
    /// Synchronous, so [`Rows::finished`] stays cancel-safe: a consume loop's `select!` drops
    /// it whenever another branch is ready first, and nothing may be lost then. (Reading a
    /// changed schema again waits for the next records, [`OneTable::take`].)
    fn apply(&mut self, finished: Finished) -> Result<Outcome> {
        self.schema_stale |= self.schema.differs_from(self.slot.snapshot());
        let result = finished.result?;
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
        self.schema_stale = false;
        positions::resolve(source, &self.table, &mut self.schema, &self.cfg, &self.metrics, parts).await
    }

    async fn take(&mut self, partition: i32, records: Vec<SourceRecord<'_>>) -> Result<()> {
        if self.schema_stale {
            self.schema.refresh(&self.table).await?;
            self.schema_stale = false;
        }
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
        // Cancel-safe: the channel's receive, then nothing that waits.
        let finished = self.slot.finished().await;
        self.apply(finished)
    }

    async fn finish(&mut self) -> Result<Option<Outcome>> {
        match self.slot.wait().await {
            Some(finished) => self.apply(finished).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use super::*;
    use crate::common::record::RawRecord;
    use crate::config::pipeline::PipelineConfig;
    use crate::config::Pipeline;
    use crate::storage::faulty::{FaultConfig, FaultyStore};

    /// A consume loop's `select!` drops [`Rows::finished`] whenever another branch is ready
    /// first. Here every wait is such a loop at its worst (a new future, polled once, dropped
    /// while pending) against a store that answers every call late, so the schema read after
    /// the flush that creates the table is cut short again and again: the flush's outcome
    /// still comes back once, with its rows.
    #[tokio::test(start_paused = true)]
    async fn a_flush_outcome_survives_waits_dropped_while_pending() {
        let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
        let table = Table::open(&url, crate::storage::StorageOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let delay = FaultConfig { seed: 1, rate: 0.0, only: None, lose: vec![], delay: Some(Duration::from_millis(5)) };
        let table = table.map_store(|s| Arc::new(FaultyStore::new(s, delay)) as Arc<dyn object_store::ObjectStore>);
        let mut p = PipelineConfig::new(&url, "127.0.0.1:9092", "t");
        p.create = true;
        let Pipeline::Kafka(cfg) = p.validate("p").unwrap_or_else(|e| panic!("{e}")).kind() else {
            panic!("a Kafka pipeline")
        };
        let metrics = crate::metrics::Metrics::default().pipeline("p");
        let mut rows = OneTable::open(cfg, table.clone(), DeadLetterSink::Discard, metrics, &Default::default(), None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let payloads: Vec<String> = (0..6).map(|i| format!("{{\"id\":{i},\"name\":\"ü\"}}")).collect();
        let records = |range: std::ops::Range<usize>| -> Vec<SourceRecord<'_>> {
            range
                .map(|i| SourceRecord {
                    raw: RawRecord {
                        topic: "t",
                        partition: 0,
                        offset: i as i64,
                        timestamp_ms: Some(1),
                        key: None,
                        payload: Some(payloads[i].as_bytes()),
                    },
                    headers: Vec::new(),
                })
                .collect()
        };
        // The first flush creates the table; the second is the first whose end finds the
        // table's schema newer than the one the pipeline decodes with.
        rows.take(0, records(0..3)).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(rows.flush(FlushReason::Rows).await.unwrap_or_else(|e| panic!("{e}")).is_none());
        let first = rows.finished().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.committed.get(&0).map(|c| c.0), Some(2));
        rows.take(0, records(3..6)).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(rows.flush(FlushReason::Rows).await.unwrap_or_else(|e| panic!("{e}")).is_none());
        let waker = futures::task::noop_waker();
        let mut dropped = 0;
        let outcome = loop {
            let polled = {
                let wait = std::pin::pin!(rows.finished());
                wait.poll(&mut Context::from_waker(&waker))
            };
            match polled {
                Poll::Ready(outcome) => break outcome.unwrap_or_else(|e| panic!("{e}")),
                Poll::Pending => dropped += 1,
            }
            assert!(dropped < 10_000, "the flush's outcome never came back");
            tokio::time::advance(Duration::from_millis(1)).await;
        };
        assert!(dropped > 5, "the waits were cut short ({dropped})");
        assert_eq!(outcome.committed.get(&0).map(|c| c.0), Some(5), "{:?}", outcome.committed);
        assert_eq!(table.snapshot(None).await.unwrap_or_else(|e| panic!("{e}")).version, 1);
    }
}
