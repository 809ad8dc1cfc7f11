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
//! - Flushes run in the background, one at a time, while consumption goes on (the runner
//!   holds a [`FlushSlot`]); consumption waits when the next batch is due before the running
//!   flush ended, which with `flush.max_bytes` bounds memory to two batches.
//!
//! One record walks down: the [`KafkaSource`] polls it as a plain record → [`decode`] makes
//! it rows, a delete or a dead letter → the [`Buffer`] holds it per partition → the flush
//! policy calls for a flush → the [`FlushSlot`] writes and commits it ([`super::commit`]).

use std::collections::{BTreeMap, HashSet};
use std::num::NonZeroU32;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::watch;
use tracing::Instrument;

use super::buffer::Buffer;
use super::commit::Flusher;
use super::dead_letter::DeadLetterSink;
use super::decode::decode;
use super::flushing::{Finished, FlushSlot};
use super::positions;
use super::schema::TableSchema;
use crate::common::flush::FlushReason;
use crate::config::ResolvedPipeline;
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::source::kafka::consumer::{prefetch_kbytes, ConsumerEvent, ConsumerSettings};
use crate::source::kafka::stage::{KafkaSource, Poll, StartOffset};
use crate::storage::Table;

/// A partition this member owns.
#[derive(Debug, Clone)]
struct Owned {
    /// A seek not yet accepted by librdkafka.
    seek: Option<i64>,
    /// Offsets below this are already in the table.
    accept_from: i64,
}

/// What a pipeline did, reported when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunReport {
    pub records: u64,
    pub rows_committed: u64,
    pub dead_letters: u64,
    pub commits: u64,
}

impl RunReport {
    /// The report of a pipeline's counters.
    pub fn of(m: &PipelineMetrics) -> RunReport {
        RunReport {
            records: m.records_in.get(),
            rows_committed: m.rows_committed.get(),
            dead_letters: m.dead_letters.get(),
            commits: m.commits.get(),
        }
    }
}

/// The Kafka source of a pipeline's topic, with its group events.
///
/// # Errors
/// [`crate::error::Error::Kafka`] when librdkafka refuses the configuration.
pub(crate) fn open_source(cfg: &ResolvedPipeline) -> Result<(KafkaSource, UnboundedReceiver<ConsumerEvent>)> {
    let (tx, events) = unbounded_channel();
    let k = cfg.kafka()?;
    let settings = ConsumerSettings {
        brokers: &k.brokers,
        topic: &k.topic,
        group_id: &k.group_id,
        assignment: &k.assignment,
        properties: &k.properties,
        prefetch_kbytes: prefetch_kbytes(cfg.policy.max_bytes),
    };
    Ok((KafkaSource::open(&settings, tx)?, events))
}

/// A pipeline ready to run.
pub struct Runner {
    cfg: ResolvedPipeline,
    table: Table,
    metrics: Arc<PipelineMetrics>,
    schema: TableSchema,
    owned: BTreeMap<i32, Owned>,
    buffer: Buffer,
    slot: FlushSlot,
    records_limit: Option<DefaultDirectRateLimiter>,
    bytes_limit: Option<DefaultDirectRateLimiter>,
    /// `stop_at_end`: each owned partition's end offset when it was assigned.
    ends: Option<BTreeMap<i32, i64>>,
    /// When records last arrived or partitions were last assigned (`stop_at_end` fails after
    /// `kafka.stall_timeout` without either).
    progressed: tokio::time::Instant,
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
        let kafka = cfg.kafka()?;
        let limiter = |n: u32| NonZeroU32::new(n).map(|n| RateLimiter::direct(Quota::per_second(n)));
        metrics.buffer_limit.store(cfg.policy.max_bytes, Relaxed);
        let flusher = Flusher {
            table: table.clone(),
            app_id: cfg.app_id.clone(),
            topic: kafka.topic.clone(),
            dead: Arc::new(dead),
            target_file_size: cfg.target_file_size,
            key_columns: cfg.upsert.as_ref().map(|u| u.key_columns.clone()),
            snapshot: schema.snapshot.clone(),
        };
        let ends = kafka.stop_at_end.then(BTreeMap::new);
        Ok(Runner {
            slot: FlushSlot::new(flusher),
            records_limit: limiter(cfg.records_per_second),
            bytes_limit: limiter(cfg.bytes_per_second),
            cfg,
            table,
            metrics,
            schema,
            owned: BTreeMap::new(),
            buffer: Buffer::default(),
            ends,
            progressed: tokio::time::Instant::now(),
        })
    }

    /// Runs until `shutdown` turns true (then flushes and commits) or an error.
    ///
    /// # Errors
    /// Kafka client creation, storage, protocol errors; a commit that keeps conflicting.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<RunReport> {
        let (source, mut events) = open_source(&self.cfg)?;
        tracing::info!(topic = %source.topic(), table = %self.table.url(), "pipeline started");
        let result = self.consume(&source, &mut events, &mut shutdown).await;
        let result = match result {
            Ok(()) => self.flush_now(&source, FlushReason::Shutdown).await,
            Err(e) => Err(e),
        };
        source.close().await;
        let report = RunReport::of(&self.metrics);
        tracing::info!(
            records = report.records,
            rows_committed = report.rows_committed,
            dead_letters = report.dead_letters,
            commits = report.commits,
            ok = result.is_ok(),
            "pipeline stopped"
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
            let now = self.table.clock().now_ms();
            let due = self.cfg.policy.deadline_ms(&self.buffer.state()).unwrap_or(now + 1000);
            let tick = if self.owned.values().any(|o| o.seek.is_some()) { 50 } else { 1000 };
            let wake = tokio::time::Instant::now() + Duration::from_millis((due - now).clamp(0, tick) as u64);
            tokio::select! {
                biased;
                _ = shutdown.changed() => break,
                finished = self.slot.finished() => self.apply(source, finished).await?,
                Some(ev) = events.recv() => self.on_event(source, ev).await?,
                Some(poll) = polls.next() => {
                    // Events the poll produced (a revocation, say) apply before its messages.
                    while let Ok(ev) = events.try_recv() {
                        self.on_event(source, ev).await?;
                    }
                    self.on_poll(source, &poll).await?;
                }
                _ = tokio::time::sleep_until(wake) => {}
            }
            // ... and before any flush.
            while let Ok(ev) = events.try_recv() {
                self.on_event(source, ev).await?;
            }
            self.retry_seeks(source);
            if let Some(reason) = self.cfg.policy.decide(&self.buffer.state(), self.table.clock().now_ms()) {
                self.start_flush(source, reason).await?;
            }
            if self.reached_the_end() {
                tracing::info!("stop_at_end: every assigned partition consumed to its end; committing and stopping");
                break;
            }
            self.check_stalled()?;
        }
        // Apply revocations that arrived with the shutdown before the final flush.
        while let Ok(ev) = events.try_recv() {
            if matches!(ev, ConsumerEvent::Revoked(_)) {
                self.on_event(source, ev).await?;
            }
        }
        Ok(())
    }

    async fn on_event(&mut self, source: &KafkaSource, ev: ConsumerEvent) -> Result<()> {
        match ev {
            ConsumerEvent::Assigned(parts) => self.on_assigned(source, parts).await?,
            ConsumerEvent::Revoked(parts) => {
                self.slot.abort_if_holds(&parts);
                self.drop_partitions(&parts);
                tracing::info!(partitions = ?parts, "partitions revoked");
            }
            ConsumerEvent::RebalanceFailed(e) => {
                let all: Vec<i32> = self.owned.keys().copied().collect();
                self.slot.abort_if_holds(&all);
                self.drop_partitions(&all);
                tracing::warn!(error = %e, "rebalance failed; assignment dropped");
            }
            ConsumerEvent::HighWatermarks(marks) => self.metrics.high_watermarks(&marks),
            // Logged (throttled) by the consumer's callback; counted here.
            ConsumerEvent::ClientError(_) => {
                self.metrics.kafka_errors.inc_by(1);
            }
        }
        Ok(())
    }

    /// `stop_at_end`: a run that neither receives records nor gets partitions for
    /// `kafka.stall_timeout` fails (an unreachable broker, a missing topic) rather than
    /// waiting for ever.
    fn check_stalled(&self) -> Result<()> {
        let Some(k) = self.cfg.kafka().ok().filter(|k| k.stop_at_end) else { return Ok(()) };
        if self.progressed.elapsed() <= k.stall_timeout {
            return Ok(());
        }
        let what = if self.owned.is_empty() { "no partition was assigned" } else { "no record arrived" };
        Err(Error::Kafka(format!(
            "stop_at_end: {what} for {} (is the broker {} reachable, and does topic {:?} exist?); \
             the wait is kafka.stall_timeout (--until-end-timeout)",
            humantime::format_duration(k.stall_timeout),
            crate::config::redact::without_userinfo(&k.brokers),
            k.topic
        )))
    }

    /// `stop_at_end`: whether every owned partition has been consumed up to the end it had
    /// when assigned (the final flush then commits it).
    fn reached_the_end(&self) -> bool {
        let Some(ends) = &self.ends else { return false };
        !self.owned.is_empty()
            && self.owned.iter().all(|(p, o)| o.seek.is_none() && ends.get(p).is_some_and(|end| o.accept_from >= *end))
    }

    fn drop_partitions(&mut self, parts: &[i32]) {
        for p in parts {
            let dropped = self.buffer.drop_partition(*p);
            self.metrics.rows_dropped.inc_by(dropped);
            self.owned.remove(p);
        }
        self.metrics.forget(parts);
    }

    async fn on_assigned(&mut self, source: &KafkaSource, parts: Vec<i32>) -> Result<()> {
        self.progressed = tokio::time::Instant::now();
        // Positions are read once the running flush has committed (or not).
        self.finish_flush(source).await?;
        self.schema.refresh(&self.table).await?;
        let positions =
            positions::resolve(source, &self.table, &mut self.schema, &self.cfg, &self.metrics, &parts).await?;
        let marks = match self.ends {
            Some(_) => source.watermarks(&parts).await?,
            None => BTreeMap::new(),
        };
        if let Some(ends) = self.ends.as_mut() {
            ends.extend(marks.iter().map(|(p, (_, high))| (*p, *high)));
        }
        for (p, o) in &positions {
            // (Without stop_at_end there are no watermarks here: starts at the beginning or
            // the end accept whatever arrives.)
            let accept_from = match o {
                StartOffset::At(n) => *n,
                StartOffset::End => marks.get(p).map_or(0, |m| m.1),
                StartOffset::Beginning => marks.get(p).map_or(0, |m| m.0),
            };
            self.owned.insert(*p, Owned { seek: None, accept_from });
        }
        source.assign(&positions)?;
        self.metrics.ready.store(true, Relaxed);
        tracing::info!(?positions, "partitions assigned");
        Ok(())
    }

    fn retry_seeks(&mut self, source: &KafkaSource) {
        for (p, o) in self.owned.iter_mut() {
            if let Some(target) = o.seek {
                match source.seek(*p, target) {
                    Ok(()) => o.seek = None,
                    Err(e) => tracing::debug!(partition = p, error = %e, "seek not accepted yet"),
                }
            }
        }
    }

    async fn on_poll(&mut self, source: &KafkaSource, poll: &Poll<'_>) -> Result<()> {
        let owned = &self.owned;
        let accept = |p: i32, offset: i64| owned.get(&p).is_some_and(|o| o.seek.is_none() && offset >= o.accept_from);
        let by_part = poll.records(source.topic(), self.cfg.reads_headers(), accept);
        let records: usize = by_part.values().map(Vec::len).sum();
        tracing::trace!(received = poll.len(), accepted = records, "poll");
        self.metrics.kafka_errors.inc_by(poll.errors() as u64);
        if records == 0 {
            return Ok(());
        }
        self.progressed = tokio::time::Instant::now();
        source.note_healthy();
        let bytes: u64 = by_part.values().flatten().map(|r| r.raw.payload.map_or(0, <[u8]>::len) as u64).sum();
        let records = u32::try_from(records).unwrap_or(u32::MAX);
        if let Some(l) = &self.records_limit {
            take_quota(l, u64::from(records), self.cfg.records_per_second).await;
        }
        if let Some(l) = &self.bytes_limit {
            take_quota(l, bytes, self.cfg.bytes_per_second).await;
        }
        self.metrics.records_in.inc_by(u64::from(records));
        self.metrics.bytes_in.inc_by(bytes);
        for (p, recs) in by_part {
            let span = tracing::debug_span!("decode", partition = p);
            let consumed = decode(&mut self.schema, &self.table, &self.cfg, p, &recs).instrument(span).await?;
            if let Some(o) = self.owned.get_mut(&p) {
                o.accept_from = consumed.last_offset + 1;
            }
            self.metrics.dead_letters.inc_by(consumed.dead_letters.len() as u64);
            self.buffer.add(consumed, self.table.clock().now_ms());
        }
        self.metrics.buffer_bytes.store(self.buffered_bytes(), Relaxed);
        Ok(())
    }

    /// Bytes held: the buffer's and the running flush's.
    fn buffered_bytes(&self) -> u64 {
        self.buffer.state().bytes + self.slot.bytes()
    }

    /// Starts flushing the buffer in the background (waiting for a running flush first).
    async fn start_flush(&mut self, source: &KafkaSource, reason: FlushReason) -> Result<()> {
        self.finish_flush(source).await?;
        // (Checked after the running flush ended: its result may have dropped partitions.)
        if self.buffer.is_empty() {
            return Ok(());
        }
        let bytes = self.buffer.state().bytes;
        let parts = self.buffer.take();
        self.slot.start(parts, bytes, reason)?;
        self.metrics.buffer_bytes.store(self.buffered_bytes(), Relaxed);
        Ok(())
    }

    /// Flushes the buffer and waits until it is committed (shutdown).
    async fn flush_now(&mut self, source: &KafkaSource, reason: FlushReason) -> Result<()> {
        self.start_flush(source, reason).await?;
        self.finish_flush(source).await
    }

    /// Waits for the running flush, if any, and applies its result.
    async fn finish_flush(&mut self, source: &KafkaSource) -> Result<()> {
        match self.slot.wait().await {
            Some(finished) => self.apply(source, finished).await,
            None => Ok(()),
        }
    }

    /// Applies a finished flush's result.
    async fn apply(&mut self, source: &KafkaSource, finished: Finished) -> Result<()> {
        let stale = self.schema.differs_from(self.slot.snapshot());
        self.metrics.buffer_bytes.store(self.buffered_bytes(), Relaxed);
        let result = finished.result?;
        if stale {
            // Another worker changed the schema: decode against it from now on.
            self.schema.refresh(&self.table).await?;
        }
        // Partitions to start again from the table: moved by another worker, or aborted.
        let mut reseek: BTreeMap<i32, i64> = result.moved.iter().map(|(p, v)| (*p, v + 1)).collect();
        if result.aborted {
            for (p, first) in &finished.first_offsets {
                reseek.entry(*p).or_insert(*first);
            }
        }
        for (p, next) in &reseek {
            if let Some(o) = self.owned.get_mut(p) {
                let dropped = self.buffer.drop_partition(*p);
                self.metrics.rows_dropped.inc_by(dropped);
                o.seek = Some(*next);
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
        source.commit_courtesy(&next);
        self.buffer.observe_ratio(result.arrow_bytes, result.parquet_bytes);
        let m = &self.metrics;
        m.rows_dropped.inc_by(result.rows_dropped);
        m.conflicts.inc_by(result.conflicts);
        if result.version.is_some() {
            m.commits.inc_by(1);
            m.rows_committed.inc_by(result.rows);
        }
        m.flushed(finished.reason, finished.seconds);
        tracing::info!(
            reason = finished.reason.as_str(),
            version = result.version.map_or(-1, |v| v as i64),
            rows = result.rows,
            files = result.files,
            aborted = result.aborted,
            ms = (finished.seconds * 1000.0) as u64,
            "flushed"
        );
        self.retry_seeks(source);
        Ok(())
    }
}

/// Waits until the limiter grants `n` units. A poll may bring more than one second's quota
/// (the limiter's burst), which the limiter refuses as one request: it is taken in
/// burst-sized parts, so a backlog is ingested at the configured rate, never past it.
async fn take_quota(limiter: &DefaultDirectRateLimiter, n: u64, per_second: u32) {
    for part in quota_parts(n, per_second) {
        // Each part is at most the burst, which the limiter always grants in time.
        let _ = limiter.until_n_ready(part).await;
    }
}

/// `n` split into parts of at most `burst` (`burst` 0: no parts, no limit).
fn quota_parts(n: u64, burst: u32) -> impl Iterator<Item = NonZeroU32> {
    let burst = u64::from(burst);
    let mut left = if burst == 0 { 0 } else { n };
    std::iter::from_fn(move || {
        let part = left.min(burst);
        left -= part;
        NonZeroU32::new(u32::try_from(part).unwrap_or(u32::MAX))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_larger_than_the_burst_is_taken_in_parts() {
        let parts: Vec<u32> = quota_parts(12_000, 2_000).map(NonZeroU32::get).collect();
        assert_eq!(parts, vec![2_000; 6]);
        let parts: Vec<u32> = quota_parts(2_500, 2_000).map(NonZeroU32::get).collect();
        assert_eq!(parts, vec![2_000, 500]);
        assert_eq!(quota_parts(0, 10).count(), 0);
        assert_eq!(quota_parts(5, 0).count(), 0);
    }

    #[tokio::test]
    async fn a_backlog_waits_for_its_quota() {
        // 3 units a second, 7 asked at once: the limiter must hold back at least 1.3 s.
        let limiter = RateLimiter::direct(Quota::per_second(NonZeroU32::new(3).unwrap()));
        let started = std::time::Instant::now();
        take_quota(&limiter, 7, 3).await;
        assert!(started.elapsed() >= Duration::from_millis(1_300), "{:?}", started.elapsed());
    }
}
