//! A routed pipeline (`route_by`): one topic's records into the tables their field names,
//! exactly once per (table, topic, partition).
//!
//! Contract:
//! - Each record's route field (dotted for nested; any payload format, read by
//!   [`super::route_values`]) names its table through the `{field}` template; tables are
//!   opened or created on demand with the pipeline's settings, at most `max_tables` of them. A record without the field, with a value that cannot name a
//!   table, or for a table past the limit is a dead letter with the reason.
//! - A flush delivers every dead letter once, then commits to each table that received rows
//!   (its adds and one `txn` per partition, as an unrouted flush), and last records in the
//!   route-state table one `txn` per partition: the last offset consumed. Every routed table
//!   holds at least that much of each partition, so the state is where a new owner resumes;
//!   a record at or below a table's own `txn` is skipped for that table. A crash between any
//!   two commits therefore repeats nothing and loses nothing.
//! - Flushes run in the pipeline's task (consumption pauses while one commits). When another
//!   worker moved a partition in some table, its data is dropped from every table not yet
//!   committed and the partition resumes from the state's position.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;

use super::buffer::{Buffer, PartitionBatch};
use super::commit::Flusher;
use super::dead_letter::DeadLetterSink;
use super::decode::decode;
use super::positions;
use super::route_values::RouteReader;
use super::runner::{open_source, RunReport};
use super::schema::TableSchema;
use crate::common::flush::{BatchState, FlushReason};
use crate::config::{ResolvedPipeline, Route};
use crate::error::Result;
use crate::metrics::PipelineMetrics;
use crate::source::kafka::consumer::ConsumerEvent;
use crate::source::kafka::payload::DeadLetter;
use crate::source::kafka::stage::{KafkaSource, Poll, SourceRecord, StartOffset};
use crate::storage::{StorageOptions, Table};

/// One routed table and its open batch.
struct Destination {
    cfg: ResolvedPipeline,
    table: Table,
    schema: TableSchema,
    buffer: Buffer,
    flusher: Flusher,
}

/// A routed pipeline ready to run.
pub struct RoutedRunner {
    cfg: ResolvedPipeline,
    route: Route,
    storage: StorageOptions,
    metrics: Arc<PipelineMetrics>,
    dead: Arc<DeadLetterSink>,
    state: Table,
    state_schema: TableSchema,
    tables: BTreeMap<String, Destination>,
    /// Owned partitions: the next offset accepted.
    owned: BTreeMap<i32, i64>,
    /// Last offset consumed per partition since the last flush.
    consumed: BTreeMap<i32, i64>,
    /// Dead letters of records no table took.
    unroutable: BTreeMap<i32, Vec<DeadLetter>>,
    first_record_ms: Option<i64>,
    /// Reads route values in the pipeline's payload format.
    reader: RouteReader,
}

impl RoutedRunner {
    /// Opens (or creates) the route-state table.
    ///
    /// # Errors
    /// Storage and protocol errors.
    pub async fn new(
        cfg: ResolvedPipeline,
        storage: StorageOptions,
        dead: DeadLetterSink,
        metrics: Arc<PipelineMetrics>,
    ) -> Result<RoutedRunner> {
        let route = cfg.route.clone().ok_or_else(|| crate::error::Error::Internal("not a routed pipeline".into()))?;
        let state = Table::open_for_write(&route.state, storage.clone())?;
        create_state_table(&state).await?;
        let mut state_cfg = cfg.clone();
        state_cfg.create = false;
        let state_schema = TableSchema::open(&state, &state_cfg).await?;
        let reader = RouteReader::for_pipeline(&cfg)?;
        Ok(RoutedRunner {
            cfg,
            route,
            storage,
            metrics,
            dead: Arc::new(dead),
            state,
            state_schema,
            tables: BTreeMap::new(),
            owned: BTreeMap::new(),
            consumed: BTreeMap::new(),
            unroutable: BTreeMap::new(),
            first_record_ms: None,
            reader,
        })
    }

    /// Runs until `shutdown` (then flushes) or an error.
    ///
    /// # Errors
    /// Kafka, storage and protocol errors.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<RunReport> {
        let (source, mut events) = open_source(&self.cfg)?;
        tracing::info!(topic = %source.topic(), route_by = %self.route.field, state = %self.state.url(), "routed pipeline started");
        let mut result = self.consume(&source, &mut events, &mut shutdown).await;
        if result.is_ok() {
            result = self.flush(&source, FlushReason::Shutdown).await;
        }
        source.close().await;
        let report = RunReport::of(&self.metrics);
        tracing::info!(
            records = report.records,
            rows_committed = report.rows_committed,
            tables = self.tables.len(),
            ok = result.is_ok(),
            "routed pipeline stopped"
        );
        result.map(|()| report)
    }

    async fn consume(
        &mut self,
        source: &KafkaSource,
        events: &mut UnboundedReceiver<ConsumerEvent>,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<()> {
        let mut polls = std::pin::pin!(source.polls());
        while !*shutdown.borrow() {
            let now = self.state.clock().now_ms();
            let due = self.cfg.policy.deadline_ms(&self.batch_state()).unwrap_or(now + 1000);
            let wake = tokio::time::Instant::now() + Duration::from_millis((due - now).clamp(0, 1000) as u64);
            tokio::select! {
                biased;
                _ = shutdown.changed() => break,
                Some(ev) = events.recv() => self.on_event(source, ev).await?,
                Some(poll) = polls.next() => {
                    while let Ok(ev) = events.try_recv() {
                        self.on_event(source, ev).await?;
                    }
                    self.on_poll(&poll).await?;
                }
                _ = tokio::time::sleep_until(wake) => {}
            }
            while let Ok(ev) = events.try_recv() {
                self.on_event(source, ev).await?;
            }
            if let Some(reason) = self.cfg.policy.decide(&self.batch_state(), self.state.clock().now_ms()) {
                self.flush(source, reason).await?;
            }
        }
        while let Ok(ev) = events.try_recv() {
            if matches!(ev, ConsumerEvent::Revoked(_)) {
                self.on_event(source, ev).await?;
            }
        }
        Ok(())
    }

    fn batch_state(&self) -> BatchState {
        let mut s = BatchState { first_record_ms: self.first_record_ms, ..BatchState::default() };
        s.rows = self.unroutable.values().map(|l| l.len() as u64).sum();
        for d in self.tables.values() {
            let b = d.buffer.state();
            s.rows += b.rows;
            s.bytes += b.bytes;
            s.largest_file_bytes = s.largest_file_bytes.max(b.largest_file_bytes);
        }
        if s.rows == 0 && s.bytes == 0 && self.consumed.is_empty() {
            s.first_record_ms = None;
        }
        s
    }

    async fn on_event(&mut self, source: &KafkaSource, ev: ConsumerEvent) -> Result<()> {
        match ev {
            ConsumerEvent::Assigned(parts) => self.on_assigned(source, parts).await?,
            ConsumerEvent::Revoked(parts) => self.drop_partitions(&parts),
            ConsumerEvent::RebalanceFailed(_) => {
                let all: Vec<i32> = self.owned.keys().copied().collect();
                self.drop_partitions(&all);
            }
            ConsumerEvent::HighWatermarks(marks) => self.metrics.high_watermarks(&marks),
            ConsumerEvent::ClientError(_) => {
                self.metrics.kafka_errors.inc_by(1);
            }
        }
        Ok(())
    }

    fn drop_partitions(&mut self, parts: &[i32]) {
        for p in parts {
            self.owned.remove(p);
            self.consumed.remove(p);
            self.unroutable.remove(p);
            for d in self.tables.values_mut() {
                let dropped = d.buffer.drop_partition(*p);
                self.metrics.rows_dropped.inc_by(dropped);
            }
        }
        self.metrics.forget(parts);
    }

    async fn on_assigned(&mut self, source: &KafkaSource, parts: Vec<i32>) -> Result<()> {
        let positions = self.resume(source, &parts).await?;
        source.assign(&positions)?;
        self.metrics.ready.store(true, Relaxed);
        tracing::info!(?positions, "partitions assigned");
        Ok(())
    }

    /// Where `parts` resume: the route state's positions (tables re-read for their own).
    async fn resume(&mut self, source: &KafkaSource, parts: &[i32]) -> Result<BTreeMap<i32, StartOffset>> {
        self.state_schema.refresh(&self.state).await?;
        for d in self.tables.values_mut() {
            d.schema.refresh(&d.table).await?;
        }
        let positions =
            positions::resolve(source, &self.state, &mut self.state_schema, &self.cfg, &self.metrics, parts).await?;
        for (p, o) in &positions {
            self.owned.insert(*p, if let StartOffset::At(n) = o { *n } else { 0 });
        }
        Ok(positions)
    }

    async fn on_poll(&mut self, poll: &Poll<'_>) -> Result<()> {
        let owned = &self.owned;
        let topic = self.cfg.kafka()?.topic.clone();
        let accept = |p: i32, offset: i64| owned.get(&p).is_some_and(|from| offset >= *from);
        let by_part = poll.records(&topic, self.cfg.reads_headers(), accept);
        self.metrics.kafka_errors.inc_by(poll.errors() as u64);
        for (p, recs) in by_part {
            let Some(last) = recs.last().map(|r| r.raw.offset) else { continue };
            self.metrics.records_in.inc_by(recs.len() as u64);
            self.metrics.bytes_in.inc_by(recs.iter().map(|r| r.raw.payload.map_or(0, <[u8]>::len) as u64).sum());
            self.first_record_ms.get_or_insert(self.state.clock().now_ms());
            // Group by table, keeping offset order within each.
            let frames = crate::source::kafka::header_ids::reframe(&recs);
            let raws: Vec<_> =
                crate::source::kafka::header_ids::with_frames(&recs, &frames).into_iter().map(|r| r.raw).collect();
            let values = self.reader.values(&self.route.field, &raws).await;
            let mut groups: BTreeMap<String, Vec<SourceRecord<'_>>> = BTreeMap::new();
            for (r, value) in recs.into_iter().zip(values) {
                let table = value.and_then(|v| self.route.table_of(&self.cfg.table, &v));
                match table {
                    // (Tables this poll opens count against the limit as well.)
                    Ok(t)
                        if self.tables.contains_key(&t)
                            || groups.contains_key(&t)
                            || self.tables.len() + groups.keys().filter(|g| !self.tables.contains_key(*g)).count()
                                < self.route.max_tables =>
                    {
                        groups.entry(t).or_default().push(r);
                    }
                    Ok(t) => self
                        .letter(&r, format!("max_tables ({}) reached: no table opened for {t}", self.route.max_tables)),
                    Err(why) => self.letter(&r, why),
                }
            }
            for (t, recs) in groups {
                let metrics = self.metrics.clone();
                let d = self.destination(&t).await?;
                // Records the table already holds (re-read after a restart) are skipped.
                let held = d.schema.position(&d.cfg.app_id, &topic, p).unwrap_or(-1);
                let fresh: Vec<SourceRecord<'_>> = recs.into_iter().filter(|r| r.raw.offset > held).collect();
                if fresh.is_empty() {
                    continue;
                }
                let consumed = decode(&mut d.schema, &d.table, &d.cfg, p, &fresh).await?;
                metrics.dead_letters.inc_by(consumed.dead_letters.len() as u64);
                d.buffer.add(consumed, d.table.clock().now_ms());
            }
            self.consumed.insert(p, last);
            self.owned.insert(p, last + 1);
        }
        Ok(())
    }

    fn letter(&mut self, r: &SourceRecord<'_>, reason: String) {
        self.metrics.dead_letters.inc_by(1);
        self.unroutable.entry(r.raw.partition).or_default().push(DeadLetter::of(&r.raw, reason));
    }

    /// The destination of a table URL, opened (or created on its first batch) on demand.
    async fn destination(&mut self, url: &str) -> Result<&mut Destination> {
        if !self.tables.contains_key(url) {
            let mut cfg = self.cfg.clone();
            cfg.table = url.to_string();
            cfg.create = true;
            let table = Table::open_for_write(url, self.storage.clone())?;
            let schema = TableSchema::open(&table, &cfg).await?;
            let flusher = Flusher {
                table: table.clone(),
                app_id: cfg.app_id.clone(),
                topic: cfg.kafka()?.topic.clone(),
                dead: Arc::new(DeadLetterSink::Discard),
                target_file_size: cfg.target_file_size,
                key_columns: None,
                snapshot: schema.snapshot.clone(),
            };
            tracing::info!(table = %url, tables = self.tables.len() + 1, "routed table opened");
            self.tables.insert(url.to_string(), Destination { cfg, table, schema, buffer: Buffer::default(), flusher });
        }
        self.tables.get_mut(url).ok_or_else(|| crate::error::Error::Internal("destination vanished".into()))
    }

    /// Dead letters, then every table with rows, then the route state.
    async fn flush(&mut self, source: &KafkaSource, reason: FlushReason) -> Result<()> {
        if self.consumed.is_empty() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let topic = self.cfg.kafka()?.topic.clone();
        let mut letters = std::mem::take(&mut self.unroutable);
        let mut batches: Vec<(String, BTreeMap<i32, PartitionBatch>)> = Vec::new();
        for (url, d) in &mut self.tables {
            if d.buffer.is_empty() {
                continue;
            }
            let mut parts = d.buffer.take();
            for (p, b) in &mut parts {
                letters.entry(*p).or_default().append(&mut b.dead_letters);
            }
            batches.push((url.clone(), parts));
        }
        for l in letters.values_mut() {
            l.sort_by_key(|l| l.offset);
        }
        // Dead letters first, ridden through store faults (their table skips repeats).
        let mut faults = 0u32;
        while let Err(e) = self.dead.deliver(&topic, &letters).await {
            if !e.is_retryable() || faults >= 20 {
                return Err(e);
            }
            faults += 1;
            tracing::warn!(error = %e, "dead-letter delivery failed; retrying");
            tokio::time::sleep(Duration::from_millis((20u64 << faults.min(5)).min(1000))).await;
        }
        let mut moved: BTreeMap<i32, i64> = BTreeMap::new();
        let no_abort = AtomicBool::new(false);
        for (url, mut parts) in batches {
            parts.retain(|p, _| !moved.contains_key(p));
            if parts.is_empty() {
                continue;
            }
            let Some(d) = self.tables.get_mut(&url) else { continue };
            let result = d.flusher.flush(parts, reason, &no_abort).await?;
            let m = &self.metrics;
            m.rows_dropped.inc_by(result.rows_dropped);
            m.conflicts.inc_by(result.conflicts);
            if result.version.is_some() {
                m.commits.inc_by(1);
                m.rows_committed.inc_by(result.rows);
            }
            d.buffer.observe_ratio(result.arrow_bytes, result.parquet_bytes);
            if d.schema.differs_from(d.flusher.snapshot.as_ref()) {
                d.schema.refresh(&d.table).await?;
            } else {
                d.schema.snapshot.clone_from(&d.flusher.snapshot);
            }
            moved.extend(result.moved);
            crate::failpoint::hit("routed.between_tables");
        }
        let consumed = std::mem::take(&mut self.consumed);
        self.first_record_ms = None;
        let positions: BTreeMap<i32, i64> =
            consumed.iter().filter(|(p, _)| !moved.contains_key(p)).map(|(p, last)| (*p, last + 1)).collect();
        self.state_schema.refresh(&self.state).await?;
        positions::record_positions(
            &self.state,
            self.state_schema.snapshot.as_ref(),
            &self.cfg.app_id,
            &topic,
            &positions,
        )
        .await?;
        source.commit_courtesy(&positions);
        if !moved.is_empty() {
            // Another worker holds these partitions in some table: start them again from the
            // state (the tables skip what they hold).
            let parts: Vec<i32> = moved.keys().copied().collect();
            tracing::warn!(partitions = ?parts, "partitions moved by another worker; resuming them from the route state");
            self.drop_partitions(&parts);
            let positions = self.resume(source, &parts).await?;
            for (p, o) in positions {
                let StartOffset::At(n) = o else { continue };
                if let Err(e) = source.seek(p, n) {
                    // Not fetched from here on: the partition waits for the next rebalance.
                    tracing::warn!(partition = p, error = %e, "cannot seek; leaving the partition until the next rebalance");
                    self.owned.remove(&p);
                }
            }
        }
        self.metrics.flushed(reason, started.elapsed().as_secs_f64());
        tracing::info!(
            reason = reason.as_str(),
            tables = self.tables.len(),
            ms = started.elapsed().as_millis() as u64,
            "routed flush"
        );
        Ok(())
    }
}

/// Creates the route-state table (no columns but `note`; only `txn`s are ever committed)
/// when it is missing.
async fn create_state_table(state: &Table) -> Result<()> {
    use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
    match state.snapshot(None).await {
        Ok(_) => return Ok(()),
        Err(crate::error::Error::NotATable { .. }) => {}
        Err(e) => return Err(e),
    }
    let schema = StructType::new(vec![StructField::new("note", DataType::Primitive(PrimitiveType::String), true)]);
    let (protocol, metadata) = crate::delta::create::new_table(schema, &[], &Default::default())?;
    let actions =
        vec![crate::delta::actions::Action::Protocol(protocol), crate::delta::actions::Action::Metadata(metadata)];
    let txn = crate::delta::transaction::Transaction::new("CREATE TABLE", actions)
        .with_parameter("description", "deltabus route state: positions every routed table holds");
    // Another worker creating it first is as good.
    let _ =
        crate::storage::StagedCommit::new(state).commit(None, &txn, &crate::storage::RetryPolicy::default()).await?;
    Ok(())
}
