//! The Kafka source as a pipeline stage: the consumer behind plain values.
//!
//! The pipeline assigns, seeks and polls through [`KafkaSource`] and receives each poll as a
//! [`Poll`] whose records, per partition, are [`SourceRecord`]s — offsets, key, payload,
//! timestamp and (when asked) headers, borrowed from the poll — so nothing above this folder
//! knows rdkafka. Positions are [`StartOffset`]s.
//!
//! A poll serves the consumer's own queue first (rebalances, statistics and client errors
//! reach the pipeline's events there), then takes the partitions' messages from the
//! [`MessageQueue`] in one batch; it waits for either queue to turn non-empty.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaResult;
use rdkafka::message::{BorrowedMessage, Headers as _};
use rdkafka::{Message, Offset};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;

use super::batch::{self, MessageQueue, Messages};
use super::consumer::{self, ConsumerEvent, ConsumerSettings, PipelineConsumer};
use crate::common::heap::{self, Held};
use crate::common::record::Headers;
use crate::common::record::RawRecord;
use crate::common::throttle::LogThrottle;
use crate::error::Result;

/// Messages taken from the consumer per poll at most.
const MAX_POLL: usize = 4096;

/// Where a partition's fetching starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartOffset {
    Beginning,
    End,
    At(i64),
}

impl StartOffset {
    fn offset(self) -> Offset {
        match self {
            StartOffset::Beginning => Offset::Beginning,
            StartOffset::End => Offset::End,
            StartOffset::At(n) => Offset::Offset(n),
        }
    }
}

/// One record of a poll.
#[derive(Debug, Clone)]
pub(crate) struct SourceRecord<'a> {
    pub raw: RawRecord<'a>,
    /// Empty unless headers were asked for.
    pub headers: Headers<'a>,
}

/// Operations served from the consumer's own queue in one poll at most.
const MAX_EVENTS: usize = 1024;

/// The consumer of one pipeline's topic.
pub(crate) struct KafkaSource {
    /// Declared (so dropped) before the consumer, as its contract asks.
    queue: MessageQueue,
    /// Signalled when the consumer's queue or `queue` turns non-empty.
    wake: Arc<Notify>,
    consumer: Arc<PipelineConsumer>,
    topic: String,
    throttle: Arc<LogThrottle>,
    /// Two batches of `flush.max_bytes`, towards the process's memory bound.
    _bound: Held,
}

impl KafkaSource {
    /// Creates the consumer for batches of `max_bytes`; its callbacks report on `events`.
    ///
    /// # Errors
    /// [`crate::Error::Kafka`] when librdkafka refuses the configuration.
    pub(crate) fn open(
        settings: &ConsumerSettings<'_>,
        max_bytes: u64,
        events: UnboundedSender<ConsumerEvent>,
    ) -> Result<KafkaSource> {
        let throttle = Arc::new(LogThrottle::default());
        let mut consumer = consumer::create_consumer(settings, events, throttle.clone())?;
        let wake = Arc::new(Notify::new());
        let signal = wake.clone();
        consumer.set_nonempty_callback(move || signal.notify_one());
        let queue = MessageQueue::new(&consumer, wake.clone())?;
        let bound = heap::hold(max_bytes.saturating_mul(2));
        let topic = settings.topic.to_string();
        Ok(KafkaSource { queue, wake, consumer: Arc::new(consumer), topic, throttle, _bound: bound })
    }

    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    /// Completes an assignment at the given positions.
    ///
    /// # Errors
    /// [`crate::Error::Kafka`] when librdkafka refuses it.
    pub(crate) fn assign(&self, positions: &BTreeMap<i32, StartOffset>) -> Result<()> {
        for p in positions.keys() {
            self.queue.route(&self.topic, *p)?;
        }
        let positions = positions.iter().map(|(p, o)| (*p, o.offset())).collect();
        consumer::assign(&self.consumer, &self.topic, &positions)
    }

    /// Moves a fetching partition to `offset`; a failure is retried by the caller.
    ///
    /// # Errors
    /// [`crate::Error::Kafka`].
    pub(crate) fn seek(&self, partition: i32, offset: i64) -> Result<()> {
        consumer::seek(&self.consumer, &self.topic, partition, Offset::Offset(offset))
    }

    /// Low and high watermarks per partition (asked on a blocking thread).
    ///
    /// # Errors
    /// [`crate::Error::Kafka`] when the broker does not answer.
    pub(crate) async fn watermarks(&self, partitions: &[i32]) -> Result<BTreeMap<i32, (i64, i64)>> {
        let (consumer, topic, partitions) = (self.consumer.clone(), self.topic.clone(), partitions.to_vec());
        tokio::task::spawn_blocking(move || consumer::watermarks(&consumer, &topic, &partitions))
            .await
            .map_err(|e| crate::Error::Internal(format!("watermarks task: {e}")))?
    }

    /// The first offset at or after `timestamp_ms` per partition.
    ///
    /// # Errors
    /// [`crate::Error::Kafka`] when the brokers do not answer.
    pub(crate) async fn offsets_for_timestamp(
        &self,
        partitions: &[i32],
        timestamp_ms: i64,
    ) -> Result<BTreeMap<i32, StartOffset>> {
        let (consumer, topic, partitions) = (self.consumer.clone(), self.topic.clone(), partitions.to_vec());
        let found = tokio::task::spawn_blocking(move || {
            consumer::offsets_for_timestamp(&consumer, &topic, &partitions, timestamp_ms)
        })
        .await
        .map_err(|e| crate::Error::Internal(format!("offsets task: {e}")))??;
        Ok(found
            .into_iter()
            .map(|(p, o)| {
                let start = match o {
                    Offset::Offset(n) => StartOffset::At(n),
                    Offset::Beginning => StartOffset::Beginning,
                    // No record at or after the time: start at the end.
                    _ => StartOffset::End,
                };
                (p, start)
            })
            .collect())
    }

    /// Commits `next offset` per partition to the group (a courtesy for lag tools).
    pub(crate) fn commit_courtesy(&self, next: &BTreeMap<i32, i64>) {
        consumer::commit_courtesy(&self.consumer, &self.topic, next);
    }

    /// The consumer's messages, up to [`MAX_POLL`] at a time, with their headers when
    /// `with_headers`.
    pub(crate) fn polls(&self, with_headers: bool) -> impl Stream<Item = Poll<'_>> + '_ {
        futures::stream::unfold(self, move |source| async move {
            loop {
                let poll = source.poll_now(with_headers);
                if poll.len() > 0 {
                    return Some((poll, source));
                }
                source.wake.notified().await;
            }
        })
    }

    /// Serves the consumer's own queue (its events, and any message that reached it), then
    /// takes what the message queue holds; waits for nothing.
    fn poll_now(&self, with_headers: bool) -> Poll<'_> {
        let mut stray = Vec::new();
        for _ in 0..MAX_EVENTS {
            if self.queue.consumer_queue_len() == 0 {
                break;
            }
            if let Some(m) = self.consumer.poll(Duration::ZERO) {
                stray.push(m);
            }
        }
        let messages = self.queue.take(MAX_POLL.saturating_sub(stray.len()).max(1), with_headers);
        Poll { stray, messages, with_headers, throttle: self.throttle.clone() }
    }

    /// After messages arrived: logs once that the brokers are reachable again, if they had
    /// failed.
    pub(crate) fn note_healthy(&self) {
        if self.throttle.failing() {
            self.throttle.clear();
            tracing::info!("kafka.reachable: messages arrive again");
        }
    }

    /// Leaves the group and destroys the client with a deadline: `rd_kafka_destroy` has been
    /// seen to block forever with librdkafka's mock cluster, and shutdown must not hang.
    pub(crate) async fn close(self) {
        let KafkaSource { queue, consumer, .. } = self;
        drop(queue);
        consumer.unsubscribe();
        let closing = tokio::task::spawn_blocking(move || drop(consumer));
        if tokio::time::timeout(Duration::from_secs(10), closing).await.is_err() {
            tracing::warn!("the Kafka consumer did not close within 10 s; leaving it behind");
        }
    }
}

/// The messages of one poll.
pub(crate) struct Poll<'c> {
    /// What reached the consumer's own queue: its consume errors, and messages of a partition
    /// not routed to the message queue (none, as partitions are routed before assigning).
    stray: Vec<KafkaResult<BorrowedMessage<'c>>>,
    messages: Messages,
    with_headers: bool,
    throttle: Arc<LogThrottle>,
}

impl Poll<'_> {
    /// The messages received, consume errors included.
    pub(crate) fn len(&self) -> usize {
        self.stray.len() + self.messages.len()
    }

    /// Consume errors among them.
    pub(crate) fn errors(&self) -> usize {
        self.stray.iter().filter(|m| m.is_err()).count() + self.messages.iter().filter(|m| m.error().is_some()).count()
    }

    fn log_error(&self, error: &dyn std::fmt::Display) {
        if let Some(held) = self.throttle.allow("consume") {
            tracing::warn!(error = %error, held, "kafka.consume_error");
        }
    }

    /// The records `accept(partition, offset)` keeps, per partition in offset order, with
    /// their headers when the poll was asked for them. Consume errors are logged and skipped.
    pub(crate) fn records<'s>(
        &'s self,
        topic: &'s str,
        accept: impl Fn(i32, i64) -> bool,
    ) -> BTreeMap<i32, Vec<SourceRecord<'s>>> {
        let with_headers = self.with_headers;
        // Each partition's list is allocated once at its size: grown from empty, the lists
        // of a 4,096-message poll were reallocated a dozen times into fresh pages.
        let mut counts: BTreeMap<i32, usize> = BTreeMap::new();
        for p in self.stray.iter().flatten().map(|m| m.partition()) {
            *counts.entry(p).or_default() += 1;
        }
        for m in self.messages.iter().filter(|m| m.error().is_none()) {
            *counts.entry(m.partition()).or_default() += 1;
        }
        let mut out: BTreeMap<i32, Vec<SourceRecord<'s>>> =
            counts.into_iter().map(|(p, n)| (p, Vec::with_capacity(n))).collect();
        // (The consumer subscribes to this one topic: no per-message topic check.)
        // Strays first: a partition's messages reach the consumer's queue only before it is
        // routed, so they are the older ones.
        for m in &self.stray {
            match m {
                Ok(m) => keep(&mut out, &m, topic, with_headers, &accept),
                Err(e) => self.log_error(e),
            }
        }
        for m in self.messages.iter() {
            match m.error() {
                None => keep(&mut out, &m, topic, with_headers, &accept),
                Some(e) => self.log_error(&e),
            }
        }
        out.retain(|_, records| !records.is_empty());
        out
    }
}

/// Adds `m` to its partition's records when `accept` keeps it.
fn keep<'s, M: Consumed<'s>>(
    out: &mut BTreeMap<i32, Vec<SourceRecord<'s>>>,
    m: &M,
    topic: &'s str,
    with_headers: bool,
    accept: &impl Fn(i32, i64) -> bool,
) {
    if accept(m.partition(), m.offset()) {
        out.entry(m.partition()).or_default().push(m.record(topic, with_headers));
    }
}

/// A consumed message, from either queue.
trait Consumed<'s> {
    fn partition(&self) -> i32;
    fn offset(&self) -> i64;
    fn raw_parts(&self) -> (Option<i64>, Option<&'s [u8]>, Option<&'s [u8]>);
    fn header_list(&self) -> Headers<'s>;

    fn record(&self, topic: &'s str, with_headers: bool) -> SourceRecord<'s> {
        let (timestamp_ms, key, payload) = self.raw_parts();
        let raw = RawRecord { topic, partition: self.partition(), offset: self.offset(), timestamp_ms, key, payload };
        SourceRecord { raw, headers: if with_headers { self.header_list() } else { Vec::new() } }
    }
}

impl<'s> Consumed<'s> for &'s BorrowedMessage<'_> {
    fn partition(&self) -> i32 {
        Message::partition(*self)
    }
    fn offset(&self) -> i64 {
        Message::offset(*self)
    }
    fn raw_parts(&self) -> (Option<i64>, Option<&'s [u8]>, Option<&'s [u8]>) {
        (self.timestamp().to_millis(), Message::key(*self), Message::payload(*self))
    }
    fn header_list(&self) -> Headers<'s> {
        Message::headers(*self).map(|h| h.iter().map(|h| (h.key, h.value)).collect()).unwrap_or_default()
    }
}

impl<'s> Consumed<'s> for batch::Message<'s> {
    fn partition(&self) -> i32 {
        batch::Message::partition(self)
    }
    fn offset(&self) -> i64 {
        batch::Message::offset(self)
    }
    fn raw_parts(&self) -> (Option<i64>, Option<&'s [u8]>, Option<&'s [u8]>) {
        (self.timestamp_ms(), self.key(), self.payload())
    }
    fn header_list(&self) -> Headers<'s> {
        self.headers()
    }
}
