//! Rows routed by a field (`route_by`): one topic's records into the tables their field names,
//! exactly once per (table, topic, partition). The consume loop is the one every Kafka
//! pipeline runs ([`super::runner`]); this is where its rows go.
//!
//! Contract:
//! - Each record's route field (dotted for nested; any payload format, read by
//!   [`crate::decode::route_values`]) names its table through the `{field}` template; tables are
//!   opened or created on demand with the pipeline's settings, at most `max_tables` of them.
//!   A record without the field, with a value that cannot name a table, or for a table past
//!   the limit is a dead letter with the reason.
//! - A flush delivers every dead letter once, then commits to each table that received rows
//!   (its adds and one `txn` per partition, as an unrouted flush), and last records in the
//!   route-state table one `txn` per partition: the last offset consumed. Every routed table
//!   holds at least that much of each partition, so the state is where a new owner resumes;
//!   a record at or below a table's own `txn` is skipped for that table. A crash between any
//!   two commits therefore repeats nothing and loses nothing.
//! - Flushes run in the pipeline's task (consumption pauses while one commits). When another
//!   worker moved a partition in some table, its data is dropped from every table not yet
//!   committed and the partition restarts at the state's position.
//! - With `[compaction]`, every routed table gets its own background compactor (started when
//!   the table is first opened, stopped with the pipeline); the template is never a table.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tokio::task::JoinSet;

use super::commit::Flusher;
use super::dead_letter::DeadLetterSink;
use super::decode::decode;
use super::positions;
use super::runner::{Outcome, Rows};
use super::schema::TableSchema;
use crate::common::flush::{BatchState, FlushReason};
use crate::common::record::DeadLetter;
use crate::config::{KafkaPipeline, Route};
use crate::decode::format::Format;
use crate::decode::registry::Registries;
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::source::kafka::stage::{KafkaSource, SourceRecord, StartOffset};
use crate::storage::{StorageOptions, Table};
use crate::write::batch::{Buffer, PartitionBatch};
use crate::write::schema_change::NewTable;

/// One routed table and its open batch.
struct Destination {
    cfg: KafkaPipeline,
    table: Table,
    schema: TableSchema,
    buffer: Buffer,
    flusher: Flusher,
}

/// Since the last flush, per partition: the first and last offsets consumed and the last
/// record's timestamp.
#[derive(Debug, Clone, Copy)]
struct Span {
    first: i64,
    last: i64,
    timestamp_ms: Option<i64>,
}

/// The tables of a routed pipeline, with the route state.
/// A task to run beside a routed table (given the table), for as long as the router lives.
pub(crate) type Background = Arc<dyn Fn(Table) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

pub(crate) struct Router {
    cfg: KafkaPipeline,
    topic: String,
    route: Route,
    storage: StorageOptions,
    metrics: Arc<PipelineMetrics>,
    dead: Arc<DeadLetterSink>,
    state: Table,
    state_schema: TableSchema,
    tables: BTreeMap<String, Destination>,
    consumed: BTreeMap<i32, Span>,
    /// Dead letters of records no table took.
    unroutable: BTreeMap<i32, Vec<DeadLetter>>,
    first_record_ms: Option<i64>,
    /// Reads route values in the pipeline's payload format.
    reader: Format,
    /// The routed tables' background compactors (aborted when the router is dropped).
    compactors: JoinSet<()>,
    /// What runs beside each routed table once it is opened (its background compactor, as
    /// the composition root wires it).
    background: Option<Background>,
    /// The process's registry clients, shared by every routed table.
    registries: Registries,
}

impl Router {
    /// Opens (or creates) the route-state table.
    ///
    /// # Errors
    /// Storage and protocol errors.
    pub(crate) async fn open(
        cfg: KafkaPipeline,
        storage: StorageOptions,
        dead: DeadLetterSink,
        metrics: Arc<PipelineMetrics>,
        registries: Registries,
        background: Option<Background>,
    ) -> Result<Router> {
        let route = cfg.route.clone().ok_or_else(|| Error::Internal("not a routed pipeline".into()))?;
        let state = Table::open_for_write(&route.state, storage.clone())?;
        create_state_table(&state).await?;
        let mut state_cfg = cfg.clone();
        state_cfg.create = false;
        let state_schema = TableSchema::open(&state, &state_cfg, &registries).await?;
        let reader = Format::of(&cfg, &registries)?;
        tracing::info!(route_by = %route.field, state = %state.url(), "routed pipeline opened");
        Ok(Router {
            topic: cfg.kafka.topic.clone(),
            cfg,
            route,
            storage,
            metrics,
            dead: Arc::new(dead),
            state,
            state_schema,
            tables: BTreeMap::new(),
            consumed: BTreeMap::new(),
            unroutable: BTreeMap::new(),
            first_record_ms: None,
            reader,
            compactors: JoinSet::new(),
            registries,
            background,
        })
    }

    /// The route state's clock (every table shares the storage options' clock).
    pub(crate) fn clock(&self) -> crate::common::clock::Clock {
        self.state.clock().clone()
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
            let schema = TableSchema::open(&table, &cfg, &self.registries).await?;
            let flusher = Flusher {
                table: table.clone(),
                app_id: cfg.app_id.clone(),
                topic: self.topic.clone(),
                dead: Arc::new(DeadLetterSink::Discard),
                target_file_size: cfg.target_file_size,
                key_columns: None,
                key_index_memory: crate::config::DEFAULT_INDEX_MEMORY.get(),
                snapshot: schema.snapshot.clone(),
                coordinator: None,
                new_table: NewTable::of_pipeline(&cfg),
            };
            if let Some(background) = &self.background {
                self.compactors.spawn(background(table.clone()));
            }
            tracing::info!(table = %url, tables = self.tables.len() + 1, "routed table opened");
            self.tables.insert(url.to_string(), Destination { cfg, table, schema, buffer: Buffer::default(), flusher });
        }
        self.tables.get_mut(url).ok_or_else(|| Error::Internal("destination vanished".into()))
    }

    /// Dead letters, then every table with rows, then the route state.
    async fn flush_all(&mut self, reason: FlushReason) -> Result<Option<Outcome>> {
        if self.consumed.is_empty() {
            return Ok(None);
        }
        let started = std::time::Instant::now();
        let topic = self.topic.clone();
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
            tokio::time::sleep(crate::common::backoff::FAULTS.delay(faults)).await;
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
            result.count(&self.metrics);
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
            consumed.iter().filter(|(p, _)| !moved.contains_key(p)).map(|(p, s)| (*p, s.last + 1)).collect();
        self.state_schema.refresh(&self.state).await?;
        positions::record_positions(
            &self.state,
            self.state_schema.snapshot.as_ref(),
            &self.cfg.app_id,
            &topic,
            &positions,
        )
        .await?;
        let mut restart = BTreeMap::new();
        if !moved.is_empty() {
            // Another worker holds these partitions in some table: they start again at the
            // state's position (the tables skip what they hold), else where this batch began.
            let parts: Vec<i32> = moved.keys().copied().collect();
            tracing::warn!(partitions = ?parts, "partitions moved by another worker; resuming them from the route state");
            let dropped = self.drop_partitions(&parts);
            self.metrics.rows_dropped.inc_by(dropped);
            self.state_schema.refresh(&self.state).await?;
            for p in parts {
                let held = self.state_schema.position(&self.cfg.app_id, &topic, p).map(|v| v + 1);
                let first = consumed.get(&p).map(|s| s.first);
                if let Some(next) = held.or(first) {
                    restart.insert(p, next);
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
        let committed = consumed
            .iter()
            .filter(|(p, _)| !moved.contains_key(p))
            .map(|(p, s)| (*p, (s.last, s.timestamp_ms)))
            .collect();
        Ok(Some(Outcome { committed, restart }))
    }
}

impl Rows for Router {
    async fn resume(&mut self, source: &KafkaSource, parts: &[i32]) -> Result<BTreeMap<i32, StartOffset>> {
        self.state_schema.refresh(&self.state).await?;
        for d in self.tables.values_mut() {
            d.schema.refresh(&d.table).await?;
        }
        positions::resolve(source, &self.state, &mut self.state_schema, &self.cfg, &self.metrics, parts).await
    }

    async fn take(&mut self, p: i32, recs: Vec<SourceRecord<'_>>) -> Result<()> {
        let (Some(first), Some(last)) = (recs.first().map(|r| r.raw), recs.last().map(|r| r.raw)) else {
            return Ok(());
        };
        self.first_record_ms.get_or_insert(self.state.clock().now_ms());
        // Group by table, keeping offset order within each.
        let frames = crate::decode::header_ids::reframe(&recs);
        let raws: Vec<_> = crate::decode::header_ids::with_frames(&recs, &frames).into_iter().map(|r| r.raw).collect();
        let values = self.reader.route_values(&self.route.field, &raws).await;
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
                Ok(t) => {
                    self.letter(&r, format!("max_tables ({}) reached: no table opened for {t}", self.route.max_tables))
                }
                Err(why) => self.letter(&r, why),
            }
        }
        for (t, recs) in groups {
            let metrics = self.metrics.clone();
            let topic = self.topic.clone();
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
        let span =
            self.consumed.entry(p).or_insert(Span { first: first.offset, last: last.offset, timestamp_ms: None });
        span.last = last.offset;
        span.timestamp_ms = last.timestamp_ms.or(span.timestamp_ms);
        Ok(())
    }

    fn state(&self) -> BatchState {
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

    fn held_bytes(&self) -> u64 {
        self.tables.values().map(|d| d.buffer.state().bytes).sum()
    }

    fn drop_partitions(&mut self, parts: &[i32]) -> u64 {
        let mut dropped = 0;
        for p in parts {
            self.consumed.remove(p);
            self.unroutable.remove(p);
            for d in self.tables.values_mut() {
                dropped += d.buffer.drop_partition(*p);
            }
        }
        dropped
    }

    async fn flush(&mut self, reason: FlushReason) -> Result<Option<Outcome>> {
        self.flush_all(reason).await
    }

    async fn finished(&mut self) -> Result<Outcome> {
        // Flushes run inline: none ever finishes in the background.
        std::future::pending().await
    }

    async fn finish(&mut self) -> Result<Option<Outcome>> {
        Ok(None)
    }
}

/// Creates the route-state table (no columns but `note`; only `txn`s are ever committed)
/// when it is missing; another worker creating it first is as good.
async fn create_state_table(state: &Table) -> Result<()> {
    use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
    use crate::delta::transaction::{Operation, Transaction};
    use crate::storage::{commit_exactly_once, Plan, PlanFn, RetryPolicy};
    let create = |s: Option<&crate::delta::snapshot::Snapshot>| {
        if s.is_some() {
            return Ok(Plan::Nothing(()));
        }
        let schema = StructType::new(vec![StructField::new("note", DataType::Primitive(PrimitiveType::String), true)]);
        let (protocol, metadata) = crate::delta::create::new_table(schema, &[], &Default::default())?;
        let actions =
            vec![crate::delta::actions::Action::Protocol(protocol), crate::delta::actions::Action::Metadata(metadata)];
        let txn = Transaction::new(Operation::CreateTable, actions)
            .with_parameter("description", "deltabus route state: positions every routed table holds");
        Ok(Plan::commit(txn, Vec::new(), Vec::new(), ()))
    };
    commit_exactly_once(state, &mut None, &RetryPolicy::default(), &mut PlanFn(create)).await.map(|_| ())
}
