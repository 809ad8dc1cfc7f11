//! One pipeline's task: consume, decode, buffer, flush, commit — exactly once per partition.
//!
//! Contract:
//! - On assignment the table is re-read and each partition is assigned at its `txn` version
//!   plus one (or the configured start when the table has none); the group's committed
//!   offsets are never used. Records below that are skipped as a second line of defence.
//! - On revocation the partitions' in-flight data is dropped; nothing is ever committed for a
//!   partition after its revocation has been processed.
//! - A flush writes every buffered partition's rows, then commits the adds plus one `txn`
//!   per partition (version = last offset consumed, dead letters included) in one
//!   put-if-absent commit ([`super::commit`]). If another worker moved a partition's txn, that
//!   partition's data is dropped and it seeks to the table's position.
//! - Flushes run in the background, one at a time, while consumption goes on
//!   ([`super::flushing`]); consumption waits when the next batch is due before the running
//!   flush ended, which with `flush.max_bytes` bounds memory to two batches.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use rdkafka::consumer::Consumer;
use rdkafka::message::{BorrowedMessage, Headers as _};
use rdkafka::{Message, Offset};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;

use super::buffer::{Buffer, Consumed};
use super::commit::Flusher;
use super::dead_letter::DeadLetterSink;
use super::flushing::{Done, InFlight};
use super::positions::{self, record_latest, Resume};
use super::schema::TableSchema;
use crate::common::flush::FlushReason;
use arrow::array::{Array, BooleanArray, RecordBatch, StringArray};

use super::keyed::{debezium_change, key_of_kafka_key, keys_of_batch, RecordChange};
use crate::config::{ResolvedPipeline, StartPosition, UpsertConfig};
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::source::kafka::columns::{self, Headers};
use crate::source::kafka::consumer::{
    assign, create_consumer, offsets_for_timestamp, prefetch_kbytes, seek, watermarks, ConsumerEvent, ConsumerSettings,
    PipelineConsumer,
};
use crate::source::kafka::payload::{DeadLetter, RawRecord};
use crate::storage::Table;

/// Messages taken from the consumer per poll at most.
const MAX_CHUNK: usize = 4096;

/// A partition this member owns.
#[derive(Debug, Clone)]
pub(crate) struct Owned {
    /// A seek not yet accepted by librdkafka.
    pub seek: Option<Offset>,
    /// Offsets below this are already in the table.
    pub accept_from: i64,
}

/// What a pipeline did, reported when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunReport {
    pub records: u64,
    pub rows_committed: u64,
    pub dead_letters: u64,
    pub commits: u64,
}

/// A pipeline ready to run.
pub struct Runner {
    pub(crate) cfg: ResolvedPipeline,
    pub(crate) table: Table,
    pub(crate) metrics: Arc<PipelineMetrics>,
    pub(crate) schema: TableSchema,
    pub(crate) owned: BTreeMap<i32, Owned>,
    pub(crate) buffer: Buffer,
    /// The flusher while no flush runs; the running flush; where its result arrives.
    pub(crate) flusher: Option<Flusher>,
    pub(crate) inflight: Option<InFlight>,
    pub(crate) done_tx: UnboundedSender<Done>,
    pub(crate) done_rx: UnboundedReceiver<Done>,
    records_limit: Option<DefaultDirectRateLimiter>,
    bytes_limit: Option<DefaultDirectRateLimiter>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Runner {
    /// Opens the table (creating it when configured with a schema) and the dead-letter sink.
    ///
    /// # Errors
    /// A missing table without `create`, storage and protocol errors.
    pub async fn new(
        cfg: ResolvedPipeline,
        table: Table,
        dead: DeadLetterSink,
        metrics: Arc<PipelineMetrics>,
    ) -> Result<Runner> {
        let schema = TableSchema::open(&table, &cfg).await?;
        let limiter = |n: u32| NonZeroU32::new(n).map(|n| RateLimiter::direct(Quota::per_second(n)));
        metrics.buffer_limit.store(cfg.policy.max_bytes, Relaxed);
        let flusher = Flusher {
            table: table.clone(),
            app_id: cfg.app_id.clone(),
            topic: cfg.config.kafka.topic.clone(),
            dead: Arc::new(dead),
            target_file_size: cfg.target_file_size,
            key_columns: cfg.upsert.as_ref().map(|u| u.key_columns.clone()),
            snapshot: schema.snapshot.clone(),
        };
        let (done_tx, done_rx) = unbounded_channel();
        Ok(Runner {
            flusher: Some(flusher),
            inflight: None,
            done_tx,
            done_rx,
            records_limit: limiter(cfg.config.flush.records_per_second),
            bytes_limit: limiter(cfg.config.flush.bytes_per_second),
            cfg,
            table,
            metrics,
            schema,
            owned: BTreeMap::new(),
            buffer: Buffer::default(),
        })
    }

    /// Runs until `shutdown` turns true (then flushes and commits) or an error.
    ///
    /// # Errors
    /// Kafka client creation, storage, protocol errors; a commit that keeps conflicting.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<RunReport> {
        let (tx, mut events) = unbounded_channel();
        let k = &self.cfg.config.kafka;
        let settings = ConsumerSettings {
            brokers: &k.brokers,
            topic: &k.topic,
            group_id: &self.cfg.group_id,
            assignment: &k.assignment,
            properties: &k.properties,
            prefetch_kbytes: prefetch_kbytes(self.cfg.policy.max_bytes),
        };
        let consumer = Arc::new(create_consumer(&settings, tx)?);
        tracing::info!(pipeline = %self.cfg.name, topic = %k.topic, table = %self.table.url(), "pipeline started");
        let result = self.consume(&consumer, &mut events, &mut shutdown).await;
        let result = match result {
            Ok(()) => self.flush_now(&consumer, FlushReason::Shutdown).await,
            Err(e) => Err(e),
        };
        close(consumer).await;
        let m = &self.metrics;
        let report = RunReport {
            records: m.records_in.load(Relaxed),
            rows_committed: m.rows_committed.load(Relaxed),
            dead_letters: m.dead_letters.load(Relaxed),
            commits: m.commits.load(Relaxed),
        };
        tracing::info!(pipeline = %self.cfg.name, ?report, ok = result.is_ok(), "pipeline stopped");
        result.map(|()| report)
    }

    async fn consume(
        &mut self,
        consumer: &PipelineConsumer,
        events: &mut tokio::sync::mpsc::UnboundedReceiver<ConsumerEvent>,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<()> {
        let mut stream = consumer.stream().ready_chunks(MAX_CHUNK);
        while !*shutdown.borrow() {
            let now = now_ms();
            let due = self.cfg.policy.deadline_ms(&self.buffer.state()).unwrap_or(now + 1000);
            let tick = if self.owned.values().any(|o| o.seek.is_some()) { 50 } else { 1000 };
            let wake = tokio::time::Instant::now() + Duration::from_millis((due - now).clamp(0, tick) as u64);
            tokio::select! {
                biased;
                _ = shutdown.changed() => break,
                Some(done) = self.done_rx.recv(), if self.inflight.is_some() => self.complete_flush(consumer, done).await?,
                Some(ev) = events.recv() => self.on_event(consumer, ev).await?,
                Some(chunk) = stream.next() => {
                // Events the poll produced (a revocation, say) apply before its messages.
                while let Ok(ev) = events.try_recv() {
                    self.on_event(consumer, ev).await?;
                }
                self.on_messages(chunk).await?;
            }
                _ = tokio::time::sleep_until(wake) => {}
            }
            // ... and before any flush.
            while let Ok(ev) = events.try_recv() {
                self.on_event(consumer, ev).await?;
            }
            self.retry_seeks(consumer);
            if let Some(reason) = self.cfg.policy.decide(&self.buffer.state(), now_ms()) {
                self.start_flush(consumer, reason).await?;
            }
        }
        // Apply revocations that arrived with the shutdown before the final flush.
        while let Ok(ev) = events.try_recv() {
            if matches!(ev, ConsumerEvent::Revoked(_)) {
                self.on_event(consumer, ev).await?;
            }
        }
        Ok(())
    }

    async fn on_event(&mut self, consumer: &PipelineConsumer, ev: ConsumerEvent) -> Result<()> {
        match ev {
            ConsumerEvent::Assigned(parts) => self.on_assigned(consumer, parts).await?,
            ConsumerEvent::Revoked(parts) => {
                self.abort_flush_of(&parts);
                self.drop_partitions(&parts);
                tracing::info!(pipeline = %self.cfg.name, partitions = ?parts, "partitions revoked");
            }
            ConsumerEvent::RebalanceFailed(e) => {
                let all: Vec<i32> = self.owned.keys().copied().collect();
                self.abort_flush_of(&all);
                self.drop_partitions(&all);
                tracing::warn!(pipeline = %self.cfg.name, error = %e, "rebalance failed; assignment dropped");
            }
            ConsumerEvent::HighWatermarks(marks) => self.metrics.high_watermarks(&marks),
            ConsumerEvent::ClientError(e) => tracing::warn!(pipeline = %self.cfg.name, error = %e, "kafka client"),
        }
        Ok(())
    }

    fn drop_partitions(&mut self, parts: &[i32]) {
        for p in parts {
            let dropped = self.buffer.drop_partition(*p);
            self.metrics.rows_dropped.fetch_add(dropped, Relaxed);
            self.owned.remove(p);
        }
        self.metrics.forget(parts);
    }

    async fn on_assigned(&mut self, consumer: &PipelineConsumer, parts: Vec<i32>) -> Result<()> {
        // Positions are read once the running flush has committed (or not).
        self.finish_flush(consumer).await?;
        self.schema.refresh(&self.table).await?;
        let topic = self.cfg.config.kafka.topic.clone();
        let latest = matches!(self.cfg.start, StartPosition::Latest);
        let marks = tokio::task::block_in_place(|| watermarks(consumer, &topic, &parts))?;
        let recorded = |schema: &TableSchema| -> BTreeMap<i32, i64> {
            parts.iter().filter_map(|p| schema.position(&self.cfg.app_id, &topic, *p).map(|v| (*p, v))).collect()
        };
        let mut known = recorded(&self.schema);
        if latest {
            // Resolve "latest" once, in the table, so that the next owner resumes there.
            let ends: BTreeMap<i32, i64> = parts
                .iter()
                .filter(|p| !known.contains_key(p))
                .filter_map(|p| marks.get(p).map(|m| (*p, m.1)))
                .collect();
            if record_latest(&self.table, self.schema.snapshot.as_ref(), &self.cfg.app_id, &topic, &ends).await? {
                self.schema.refresh(&self.table).await?;
                known = recorded(&self.schema);
            }
        }
        let mut fresh = Vec::new();
        let mut positions = BTreeMap::new();
        for p in &parts {
            let Some(v) = known.get(p) else {
                fresh.push(*p);
                continue;
            };
            let next = v + 1;
            let verdict = marks.get(p).map_or(Resume::At(next), |m| positions::check(next, *m));
            let resume = match verdict {
                Resume::At(n) => n,
                Resume::Lost { lost, earliest } if !self.cfg.config.kafka.fail_on_data_loss => {
                    tracing::error!(pipeline = %self.cfg.name, partition = p, lost, earliest, "data loss: the broker deleted records before ingestion; skipping them (fail_on_data_loss = false)");
                    self.metrics.offsets_lost.fetch_add(u64::try_from(lost).unwrap_or(0), Relaxed);
                    earliest
                }
                // Not fatal: some brokers report a high watermark below offsets they served.
                Resume::Ahead { next, end } => {
                    tracing::error!(pipeline = %self.cfg.name, partition = p, next, end, "the table's position is past the partition's end: if the topic was recreated, its records up to the position count as ingested; ingest it under a new app_id");
                    self.metrics.positions_past_end.fetch_add(1, Relaxed);
                    next
                }
                v => {
                    return Err(positions::data_loss_error(&topic, *p, v)
                        .unwrap_or_else(|| Error::Internal("position verdict".into())))
                }
            };
            positions.insert(*p, Offset::Offset(resume));
        }
        let starts: BTreeMap<i32, Offset> = match &self.cfg.start {
            StartPosition::Earliest => fresh.iter().map(|p| (*p, Offset::Beginning)).collect(),
            // Only before the table exists (nothing to record the position in yet).
            StartPosition::Latest => fresh.iter().map(|p| (*p, Offset::End)).collect(),
            StartPosition::Offsets(map) => {
                fresh.iter().map(|p| (*p, map.get(p).map_or(Offset::Beginning, |o| Offset::Offset(*o)))).collect()
            }
            StartPosition::Timestamp(ts) if !fresh.is_empty() => {
                tokio::task::block_in_place(|| offsets_for_timestamp(consumer, &topic, &fresh, *ts))?
            }
            StartPosition::Timestamp(_) => BTreeMap::new(),
        };
        positions.extend(starts);
        for (p, o) in &positions {
            let accept_from = if let Offset::Offset(n) = o { *n } else { 0 };
            self.owned.insert(*p, Owned { seek: None, accept_from });
        }
        assign(consumer, &topic, &positions)?;
        self.metrics.ready.store(true, Relaxed);
        tracing::info!(pipeline = %self.cfg.name, ?positions, "partitions assigned");
        Ok(())
    }

    pub(crate) fn retry_seeks(&mut self, consumer: &PipelineConsumer) {
        let topic = &self.cfg.config.kafka.topic;
        for (p, o) in self.owned.iter_mut() {
            if let Some(target) = o.seek {
                match seek(consumer, topic, *p, target) {
                    Ok(()) => o.seek = None,
                    Err(e) => tracing::debug!(partition = p, error = %e, "seek not accepted yet"),
                }
            }
        }
    }

    async fn on_messages(&mut self, chunk: Vec<rdkafka::error::KafkaResult<BorrowedMessage<'_>>>) -> Result<()> {
        let topic = self.cfg.config.kafka.topic.clone();
        let mut by_part: BTreeMap<i32, Vec<&BorrowedMessage<'_>>> = BTreeMap::new();
        let (mut records, mut bytes) = (0u32, 0u64);
        for m in &chunk {
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(pipeline = %self.cfg.name, error = %e, "consume error");
                    continue;
                }
            };
            let Some(owned) = self.owned.get(&m.partition()) else { continue };
            // (The consumer subscribes to this one topic: no per-message topic check.)
            if owned.seek.is_some() || m.offset() < owned.accept_from {
                continue;
            }
            records += 1;
            bytes += m.payload_len() as u64;
            by_part.entry(m.partition()).or_default().push(m);
        }
        tracing::trace!(received = chunk.len(), accepted = records, partitions = ?by_part.iter().map(|(p, m)| (*p, m.len(), m.last().map(|m| m.offset()))).collect::<Vec<_>>(), "poll");
        if records == 0 {
            return Ok(());
        }
        if let (Some(l), Some(n)) = (&self.records_limit, NonZeroU32::new(records)) {
            let _ = l.until_n_ready(n).await;
        }
        if let (Some(l), Some(n)) = (&self.bytes_limit, NonZeroU32::new(u32::try_from(bytes).unwrap_or(u32::MAX))) {
            let _ = l.until_n_ready(n).await;
        }
        self.metrics.records_in.fetch_add(u64::from(records), Relaxed);
        self.metrics.bytes_in.fetch_add(bytes, Relaxed);
        for (p, msgs) in by_part {
            let consumed = self.decode(&topic, p, &msgs).await?;
            if let Some(o) = self.owned.get_mut(&p) {
                o.accept_from = consumed.last_offset + 1;
            }
            self.metrics.dead_letters.fetch_add(consumed.dead_letters.len() as u64, Relaxed);
            self.buffer.add(consumed, now_ms());
        }
        self.metrics.buffer_bytes.store(self.buffered_bytes(), Relaxed);
        Ok(())
    }

    async fn decode(&mut self, topic: &str, partition: i32, msgs: &[&BorrowedMessage<'_>]) -> Result<Consumed> {
        let key_column = self.cfg.config.columns.key.is_some();
        // Headers are only gathered when a column wants them (a Vec per record otherwise).
        let headers_column = self.cfg.config.columns.headers.is_some();
        let mut letters = Vec::new();
        let mut deletes = Vec::new();
        // Keyed ingestion: what each record does (Debezium `after` images replace payloads).
        let keyed: Vec<Option<RecordChange>> = match &self.cfg.upsert {
            None => Vec::new(),
            Some(u) => msgs
                .iter()
                .map(|m| {
                    let change = match (m.payload(), u.format.as_str()) {
                        (None, _) => m
                            .key()
                            .and_then(|k| key_of_kafka_key(k, &u.key_columns))
                            .map(RecordChange::Delete)
                            .ok_or_else(|| "tombstone without a usable key".to_string()),
                        (Some(p), "debezium") => debezium_change(p, m.key(), &u.key_columns),
                        (Some(_), _) => Ok(RecordChange::UpsertAsIs),
                    };
                    match change {
                        Ok(RecordChange::Delete(k)) => {
                            deletes.push((m.offset(), k));
                            None
                        }
                        Ok(c) => Some(c),
                        Err(reason) => {
                            letters.push(DeadLetter::of(&RawRecord::of(topic, partition, m), reason));
                            None
                        }
                    }
                })
                .collect(),
        };
        let mut raw = Vec::with_capacity(msgs.len());
        let mut headers: Vec<Headers<'_>> = Vec::with_capacity(msgs.len());
        for (i, m) in msgs.iter().enumerate() {
            let mut r = RawRecord::of(topic, partition, m);
            match keyed.get(i) {
                Some(Some(RecordChange::Upsert(after))) => r.payload = Some(after),
                Some(None) => continue, // a delete or a dead letter
                _ => {}
            }
            if key_column && r.key.is_some_and(|k| std::str::from_utf8(k).is_err()) {
                letters.push(DeadLetter::of(&r, "key is not valid UTF-8 (configured as a string column)"));
                continue;
            }
            if headers_column {
                headers.push(m.headers().map(|h| h.iter().map(|h| (h.key, h.value)).collect()).unwrap_or_default());
            }
            raw.push(r);
        }
        let mut row_offsets = Vec::new();
        let batch = if raw.is_empty() {
            None
        } else {
            let mut decoded = self.schema.decode(&self.table, &self.cfg, &raw).await?;
            letters.append(&mut decoded.dead_letters);
            if self.cfg.upsert.is_some() {
                row_offsets = decoded.rows_from.iter().map(|i| raw[*i].offset).collect();
            }
            match decoded.batch {
                Some(b) => Some(columns::append(b, &self.cfg.config.columns, &raw, &headers, &decoded.rows_from)?),
                None => None,
            }
        };
        let batch = match (&self.cfg.upsert, batch) {
            (Some(u), Some(b)) if u.op_field.is_some() => split_op_deletes(b, u, &mut row_offsets, &mut deletes)?,
            (_, b) => b,
        };
        for l in &letters {
            tracing::debug!(pipeline = %self.cfg.name, partition, offset = l.offset, reason = %l.reason, "dead letter");
        }
        letters.sort_by_key(|l| l.offset);
        let last = msgs.last().map_or(0, |m| m.offset());
        Ok(Consumed {
            partition,
            batch,
            dead_letters: letters,
            first_offset: msgs.first().map_or(0, |m| m.offset()),
            last_offset: last,
            bytes: msgs.iter().map(|m| m.payload_len() as u64).sum(),
            last_timestamp_ms: msgs.last().and_then(|m| m.timestamp().to_millis()),
            row_offsets,
            deletes,
        })
    }
}

/// Plain keyed payloads with an op field: rows whose op is `d` or `delete` become deletes of
/// their keys and leave the batch.
fn split_op_deletes(
    batch: RecordBatch,
    u: &UpsertConfig,
    row_offsets: &mut Vec<i64>,
    deletes: &mut Vec<(i64, String)>,
) -> Result<Option<RecordBatch>> {
    let Some(field) = &u.op_field else { return Ok(Some(batch)) };
    let Some(ops) = batch.column_by_name(field).and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned()) else {
        return Ok(Some(batch));
    };
    let is_delete = |i: usize| ops.is_valid(i) && matches!(ops.value(i), "d" | "delete");
    if !(0..batch.num_rows()).any(is_delete) {
        return Ok(Some(batch));
    }
    let keys = keys_of_batch(&batch, &u.key_columns);
    let mut kept_offsets = Vec::with_capacity(row_offsets.len());
    let mut keep = Vec::with_capacity(batch.num_rows());
    for (i, key) in keys.into_iter().enumerate() {
        match (is_delete(i), key) {
            (true, Some(k)) => {
                deletes.push((row_offsets[i], k));
                keep.push(Some(false));
            }
            _ => {
                kept_offsets.push(row_offsets[i]);
                keep.push(Some(true));
            }
        }
    }
    *row_offsets = kept_offsets;
    let kept = arrow::compute::filter_record_batch(&batch, &BooleanArray::from(keep))
        .map_err(|e| Error::Internal(format!("splitting deletes: {e}")))?;
    Ok((kept.num_rows() > 0).then_some(kept))
}

/// Leaves the group and destroys the client with a deadline: `rd_kafka_destroy` has been
/// seen to block forever with librdkafka's mock cluster, and shutdown must not hang.
async fn close(consumer: Arc<PipelineConsumer>) {
    consumer.unsubscribe();
    let closing = tokio::task::spawn_blocking(move || drop(consumer));
    if tokio::time::timeout(Duration::from_secs(10), closing).await.is_err() {
        tracing::warn!("the Kafka consumer did not close within 10 s; leaving it behind");
    }
}
