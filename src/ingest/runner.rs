//! The one consume loop of every Kafka pipeline: ownership, polling, rate limits, health,
//! metrics and spans, generic over where the rows go ([`Rows`]: one table behind the flush
//! slot, [`super::one_table`], or a router over many tables, [`super::routed`]).
//!
//! Contract:
//! - On assignment the running flush ends first, then the destination says where each
//!   partition resumes (its table's `txn` version plus one, or the configured start); the
//!   group's committed offsets are never used. Records below that are skipped as a second
//!   line of defence ([`Ownership`]).
//! - On revocation the partitions' in-flight data is dropped; nothing is ever committed for a
//!   partition after its revocation has been processed.
//! - A flush's [`Outcome`] is applied before anything else: partitions another worker moved,
//!   or whose flush was aborted, seek back to the table's position; committed ones advance
//!   (their offsets are committed to the group as a courtesy).
//! - `records_per_second` / `bytes_per_second` hold for polls of any size: a poll larger than
//!   one second's quota waits for it in parts.
//! - `stop_at_end`: the run ends when every owned partition is consumed to the end it had when
//!   assigned, and fails after `kafka.stall_timeout` without records or partitions.
//!
//! One record walks down: the [`KafkaSource`] polls it as a plain record → the loop takes it
//! if [`Ownership`] accepts it → [`Rows::take`] decodes and buffers it → the flush policy
//! calls for a flush → [`Rows::flush`] writes and commits it.

use std::collections::BTreeMap;
use std::future::Future;
use std::num::NonZeroU32;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::watch;
use tracing::Instrument;

use super::ownership::Ownership;
use crate::common::flush::{BatchState, FlushReason};
use crate::config::{KafkaPipeline, ResolvedKafka};
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::source::kafka::consumer::{prefetch_kbytes, ConsumerEvent, ConsumerSettings};
use crate::source::kafka::stage::{KafkaSource, Poll, SourceRecord, StartOffset};

/// What a pipeline did, reported when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct RunReport {
    pub records: u64,
    pub rows_committed: u64,
    pub dead_letters: u64,
    pub commits: u64,
}

impl RunReport {
    /// The report of a pipeline's counters.
    pub(crate) fn of(m: &PipelineMetrics) -> RunReport {
        RunReport {
            records: m.records_in.get(),
            rows_committed: m.rows_committed.get(),
            dead_letters: m.dead_letters.get(),
            commits: m.commits.get(),
        }
    }
}

/// What a finished flush means for the partitions.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Committed partitions: last offset and its record's timestamp.
    pub committed: BTreeMap<i32, (i64, Option<i64>)>,
    /// Partitions to start again at an offset (another worker committed them, or the flush
    /// was aborted); their buffered data is already dropped.
    pub restart: BTreeMap<i32, i64>,
}

/// Where a pipeline's rows go: decoding, buffering, flushing and committing, for one table or
/// many. The consume loop calls it; it never sees the Kafka client but through `source`.
pub(crate) trait Rows: Send {
    /// Where `parts` (just assigned) resume, after the destination re-read its tables.
    fn resume(
        &mut self,
        source: &KafkaSource,
        parts: &[i32],
    ) -> impl Future<Output = Result<BTreeMap<i32, StartOffset>>> + Send;

    /// Decodes and buffers one partition's accepted records (offset order, at least one).
    fn take(&mut self, partition: i32, records: Vec<SourceRecord<'_>>) -> impl Future<Output = Result<()>> + Send;

    /// The open batch, for the flush policy.
    fn state(&self) -> BatchState;

    /// Bytes held: the open batch's and a running flush's.
    fn held_bytes(&self) -> u64;

    /// Drops what is buffered (or flushing) for `parts` (revoked); returns the rows dropped.
    fn drop_partitions(&mut self, parts: &[i32]) -> u64;

    /// Flushes the open batch (in the background, or before returning); the outcome of any
    /// flush that ended meanwhile is returned.
    fn flush(&mut self, reason: FlushReason) -> impl Future<Output = Result<Option<Outcome>>> + Send;

    /// A background flush's end; pending for ever while none runs.
    fn finished(&mut self) -> impl Future<Output = Result<Outcome>> + Send;

    /// Waits for the running flush, if any.
    fn finish(&mut self) -> impl Future<Output = Result<Option<Outcome>>> + Send;
}

/// The partitions a prefetch is shared by when the topic's partitions cannot be counted.
const UNKNOWN_PARTITIONS: usize = 16;

/// The Kafka source of a pipeline's topic (of `partitions` partitions), with its group events.
///
/// # Errors
/// [`crate::error::Error::Kafka`] when librdkafka refuses the configuration.
pub(crate) fn open_source(
    k: &ResolvedKafka,
    max_bytes: u64,
    partitions: usize,
) -> Result<(KafkaSource, UnboundedReceiver<ConsumerEvent>)> {
    let (tx, events) = unbounded_channel();
    let settings = ConsumerSettings {
        brokers: &k.brokers,
        topic: &k.topic,
        group_id: &k.group_id,
        assignment: k.assignment,
        properties: &k.properties,
        prefetch_kbytes: prefetch_kbytes(max_bytes, partitions),
    };
    Ok((KafkaSource::open(&settings, max_bytes, tx)?, events))
}

/// A Kafka pipeline ready to run, its rows going to `R`.
pub(crate) struct Runner<R> {
    rows: R,
    cfg: KafkaPipeline,
    clock: crate::common::clock::Clock,
    metrics: Arc<PipelineMetrics>,
    owned: Ownership,
    records_limit: Option<DefaultDirectRateLimiter>,
    bytes_limit: Option<DefaultDirectRateLimiter>,
    /// When records last arrived or partitions were last assigned (`stop_at_end` fails after
    /// `kafka.stall_timeout` without either).
    progressed: tokio::time::Instant,
}

impl<R: Rows> Runner<R> {
    /// A loop over `cfg`'s Kafka topic into `rows`.
    pub(crate) fn new(
        cfg: KafkaPipeline,
        rows: R,
        clock: crate::common::clock::Clock,
        metrics: Arc<PipelineMetrics>,
    ) -> Runner<R> {
        let limiter = |n: u32| NonZeroU32::new(n).map(|n| RateLimiter::direct(Quota::per_second(n)));
        metrics.buffer_limit.store(cfg.policy.max_bytes, Relaxed);
        Runner {
            rows,
            owned: Ownership::new(cfg.kafka.stop_at_end),
            records_limit: limiter(cfg.records_per_second),
            bytes_limit: limiter(cfg.bytes_per_second),
            cfg,
            clock,
            metrics,
            progressed: tokio::time::Instant::now(),
        }
    }

    /// Runs until `shutdown` turns true (then flushes and commits) or an error.
    ///
    /// # Errors
    /// Kafka client creation, storage, protocol errors; a commit that keeps conflicting.
    pub(crate) async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<RunReport> {
        // The prefetch is shared by the topic's partitions; when their number is unknown
        // (the broker not reachable yet), by as many as `UNKNOWN_PARTITIONS`.
        let k = &self.cfg.kafka;
        let counted = crate::source::kafka::topics::partition_count(&k.brokers, &k.properties, &k.topic).await;
        let (source, mut events) = open_source(k, self.cfg.policy.max_bytes, counted.unwrap_or(UNKNOWN_PARTITIONS))?;
        tracing::info!(topic = %source.topic(), "pipeline started");
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
        let mut polls = std::pin::pin!(source.polls(self.cfg.reads_headers()));
        while !*shutdown.borrow() {
            let now = self.clock.now_ms();
            let due = self.cfg.policy.deadline_ms(&self.rows.state()).unwrap_or(now + 1000);
            let tick = if self.owned.seeks_pending() { 50 } else { 1000 };
            let wake = tokio::time::Instant::now() + Duration::from_millis((due - now).clamp(0, tick) as u64);
            tokio::select! {
                biased;
                _ = shutdown.changed() => break,
                finished = self.rows.finished() => self.apply(source, finished?),
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
            self.owned.retry_seeks(|p, n| source.seek(p, n));
            if let Some(reason) = self.cfg.policy.decide(&self.rows.state(), self.clock.now_ms()) {
                self.flush(source, reason).await?;
            }
            if self.owned.reached_the_end() {
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
                self.drop_partitions(&parts);
                tracing::info!(partitions = ?parts, "partitions revoked");
            }
            ConsumerEvent::RebalanceFailed(e) => {
                let all = self.owned.partitions();
                self.drop_partitions(&all);
                tracing::warn!(error = %e, "rebalance failed; assignment dropped");
            }
            ConsumerEvent::HighWatermarks(marks) => self.metrics.high_watermarks(&marks),
            // Logged (throttled) by the consumer's callback; counted here.
            ConsumerEvent::ClientError(_) => {
                self.metrics.kafka_errors.inc_by(1);
            }
            ConsumerEvent::Refused(why) => {
                self.metrics.kafka_errors.inc_by(1);
                return Err(Error::KafkaRefused(format!(
                    "{why} (brokers {}: check the sasl.*, ssl.* and security.protocol properties and the \
                     principal's ACLs)",
                    crate::config::redact::without_userinfo(&self.cfg.kafka.brokers)
                )));
            }
        }
        Ok(())
    }

    /// `stop_at_end`: a run that neither receives records nor gets partitions for
    /// `kafka.stall_timeout` fails (an unreachable broker, a missing topic) rather than
    /// waiting for ever.
    fn check_stalled(&self) -> Result<()> {
        let k = &self.cfg.kafka;
        if !k.stop_at_end || self.progressed.elapsed() <= k.stall_timeout {
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

    fn drop_partitions(&mut self, parts: &[i32]) {
        let dropped = self.rows.drop_partitions(parts);
        self.metrics.rows_dropped.inc_by(dropped);
        self.owned.revoke(parts);
        self.metrics.forget(parts);
        self.metrics.buffer_bytes.store(self.rows.held_bytes(), Relaxed);
    }

    async fn on_assigned(&mut self, source: &KafkaSource, parts: Vec<i32>) -> Result<()> {
        self.progressed = tokio::time::Instant::now();
        // Positions are read once the running flush has committed (or not).
        if let Some(o) = self.rows.finish().await? {
            self.apply(source, o);
        }
        let positions = self.rows.resume(source, &parts).await?;
        // (Without stop_at_end there are no watermarks here: starts at the beginning or the
        // end accept whatever arrives.)
        let marks = if self.owned.stops_at_end() { source.watermarks(&parts).await? } else { BTreeMap::new() };
        self.owned.assign(&positions, &marks);
        source.assign(&positions)?;
        self.metrics.ready.store(true, Relaxed);
        tracing::info!(?positions, "partitions assigned");
        Ok(())
    }

    async fn on_poll(&mut self, source: &KafkaSource, poll: &Poll<'_>) -> Result<()> {
        let owned = &self.owned;
        let by_part = poll.records(source.topic(), |p, o| owned.accepts(p, o));
        let records: usize = by_part.values().map(Vec::len).sum();
        tracing::trace!(received = poll.len(), accepted = records, "poll");
        self.metrics.kafka_errors.inc_by(poll.errors() as u64);
        if records == 0 {
            return Ok(());
        }
        self.progressed = tokio::time::Instant::now();
        source.note_healthy();
        let bytes: u64 = by_part.values().flatten().map(|r| r.raw.payload.map_or(0, <[u8]>::len) as u64).sum();
        if let Some(l) = &self.records_limit {
            take_quota(l, records as u64, self.cfg.records_per_second).await;
        }
        if let Some(l) = &self.bytes_limit {
            take_quota(l, bytes, self.cfg.bytes_per_second).await;
        }
        self.metrics.records_in.inc_by(records as u64);
        self.metrics.bytes_in.inc_by(bytes);
        for (p, recs) in by_part {
            let Some(last) = recs.last().map(|r| r.raw.offset) else { continue };
            let span = tracing::debug_span!("decode", partition = p);
            self.rows.take(p, recs).instrument(span).await?;
            self.owned.consumed(p, last);
        }
        self.metrics.buffer_bytes.store(self.rows.held_bytes(), Relaxed);
        Ok(())
    }

    /// Flushes the open batch (applying the outcome of a flush that ended meanwhile).
    async fn flush(&mut self, source: &KafkaSource, reason: FlushReason) -> Result<()> {
        if let Some(o) = self.rows.flush(reason).await? {
            self.apply(source, o);
        }
        self.metrics.buffer_bytes.store(self.rows.held_bytes(), Relaxed);
        Ok(())
    }

    /// Flushes the open batch and waits until it is committed (shutdown, `stop_at_end`).
    async fn flush_now(&mut self, source: &KafkaSource, reason: FlushReason) -> Result<()> {
        self.flush(source, reason).await?;
        if let Some(o) = self.rows.finish().await? {
            self.apply(source, o);
        }
        Ok(())
    }

    /// Applies a finished flush: restarts, positions, the courtesy commit.
    fn apply(&mut self, source: &KafkaSource, o: Outcome) {
        for (p, next) in &o.restart {
            self.owned.restart(*p, *next);
        }
        let mut next = BTreeMap::new();
        for (p, (last, ts)) in &o.committed {
            if self.owned.owns(*p) && !o.restart.contains_key(p) {
                next.insert(*p, last + 1);
                self.metrics.position(*p, last + 1, *ts);
            }
        }
        source.commit_courtesy(&next);
        self.metrics.buffer_bytes.store(self.rows.held_bytes(), Relaxed);
        self.owned.retry_seeks(|p, n| source.seek(p, n));
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
