//! The consumer-group client of a pipeline.
//!
//! Contract: librdkafka's callbacks (rebalance, statistics, errors) send a [`ConsumerEvent`]
//! over an unbounded channel: no locks, no I/O, no spawned tasks, nothing that can panic.
//! The rebalance callback does not assign: librdkafka waits for the application's assign call
//! (its `WAIT_ASSIGN_CALL` state), which the pipeline task makes with [`assign`] once it has
//! read each partition's position from the table, so fetching starts exactly there. (Seeking
//! after a default in-callback assignment races with the group's committed-offset lookup,
//! which can win and move the position back.) Revocations are completed in the callback
//! (unassigning needs no I/O, and must also work while the consumer closes); the task drops
//! the partitions' data when it reads the event, which it does after every poll and before
//! any flush, so nothing is committed for a revoked partition. Both eager (`range`,
//! `roundrobin`) and incremental (`cooperative-sticky`) protocols are handled.
//!
//! Offsets are never auto-committed: the Delta log is the source of truth, and the group's
//! committed offsets are written after each Delta commit only as a courtesy for lag tools.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaError;
use rdkafka::statistics::Statistics;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tokio::sync::mpsc::UnboundedSender;

use crate::error::{Error, Result};

/// What a callback reports to the pipeline task.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConsumerEvent {
    /// Partitions given to this member; the task must call [`assign`] with their positions.
    Assigned(Vec<i32>),
    /// Partitions taken from this member; the task must drop their data and call [`unassign`].
    Revoked(Vec<i32>),
    /// The rebalance failed; the task must drop everything and call [`unassign`].
    RebalanceFailed(String),
    /// Partition high watermarks from librdkafka's statistics, for lag metrics.
    HighWatermarks(BTreeMap<i32, i64>),
    /// A client-level error (logged; librdkafka retries on its own).
    ClientError(String),
    /// The brokers refused the client's credentials or permissions: the pipeline stops.
    Refused(String),
}

/// The consumer context: forwards callbacks as [`ConsumerEvent`]s.
pub(crate) struct EventContext {
    topic: String,
    events: UnboundedSender<ConsumerEvent>,
    /// Repeated failures (a broker down) are logged once, then at a backoff.
    throttle: std::sync::Arc<crate::common::throttle::LogThrottle>,
}

fn partitions_of(topic: &str, tpl: &TopicPartitionList) -> Vec<i32> {
    tpl.elements().iter().filter(|e| e.topic() == topic).map(|e| e.partition()).collect()
}

impl ClientContext for EventContext {
    /// librdkafka's own log lines, into `tracing` under the target `librdkafka` (enable with
    /// `DELTABUS_LOG=librdkafka=debug` and the `debug` client property, e.g. `cgrp`). Errors
    /// and warnings repeat while a broker is down: once per kind, then at a backoff.
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        use rdkafka::config::RDKafkaLogLevel as L;
        let held = match level {
            L::Emerg | L::Alert | L::Critical | L::Error | L::Warning => {
                match self.throttle.allow(&format!("librdkafka {fac}")) {
                    Some(held) => Some(held),
                    None => return,
                }
            }
            _ => None,
        };
        crate::common::kafka_log::log_line(level, fac, message, held);
    }

    fn stats(&self, statistics: Statistics) {
        if let Some(t) = statistics.topics.get(&self.topic) {
            let marks = t.partitions.iter().filter(|(p, _)| **p >= 0).map(|(p, s)| (*p, s.hi_offset)).collect();
            let _ = self.events.send(ConsumerEvent::HighWatermarks(marks));
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if crate::common::kafka_log::is_end_of_partition(&error) {
            return;
        }
        let reason = &crate::common::kafka_log::redact(reason);
        // librdkafka has usually logged the same failure already: logged here only when its
        // kind is new or its backoff passed; always counted (by the pipeline).
        let kind = error.rdkafka_error_code().map_or_else(|| "client".to_string(), |c| format!("{c:?}"));
        if let Some(held) = self.throttle.allow(&kind) {
            tracing::warn!(target: "deltabus::kafka", error = %error, reason, held, "kafka.client_error: librdkafka retries on its own");
        }
        let event = if crate::common::kafka_log::is_refusal(&error) {
            ConsumerEvent::Refused(format!("{error}: {reason}"))
        } else {
            ConsumerEvent::ClientError(format!("{error}: {reason}"))
        };
        let _ = self.events.send(event);
    }
}

impl ConsumerContext for EventContext {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        let parts = partitions_of(&self.topic, tpl);
        let cooperative = matches!(consumer.rebalance_protocol(), RebalanceProtocol::Cooperative);
        let done = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                // Completed by the task with `assign`, at the positions the table records.
                let _ = self.events.send(ConsumerEvent::Assigned(parts));
                return;
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                let _ = self.events.send(ConsumerEvent::Revoked(parts));
                if cooperative {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                }
            }
            other => {
                let _ = self.events.send(ConsumerEvent::RebalanceFailed(format!("{other:?}")));
                consumer.unassign()
            }
        };
        if let Err(e) = done {
            let _ = self.events.send(ConsumerEvent::ClientError(format!("unassign: {e}")));
        }
    }
}

fn tpl_of(topic: &str, positions: &BTreeMap<i32, Offset>) -> Result<TopicPartitionList> {
    let mut tpl = TopicPartitionList::new();
    for (p, o) in positions {
        tpl.add_partition_offset(topic, *p, *o).map_err(|e| Error::Kafka(format!("partition list: {e}")))?;
    }
    Ok(tpl)
}

/// Checks client properties against librdkafka's own list (no client is created, nothing
/// connects): a misspelt or unknown property is named, its value never.
///
/// # Errors
/// librdkafka's complaint about the first property it refuses.
pub(crate) fn check_properties(properties: &BTreeMap<String, String>) -> std::result::Result<(), String> {
    let mut cfg = ClientConfig::new();
    for (k, v) in properties {
        cfg.set(k, v);
    }
    use crate::config::redact::without_values;
    // Values are never shown, secret or not: a misplaced secret may sit under any key.
    cfg.create_native_config().map(|_| ()).map_err(|e| match e {
        KafkaError::ClientConfig(_, description, key, _) => format!("{key}: {}", without_values(&description)),
        other => without_values(&other.to_string()),
    })
}

/// Completes an assignment: fetching of each partition starts at its given position.
///
/// # Errors
/// [`Error::Kafka`] when librdkafka refuses the assignment.
pub(crate) fn assign(consumer: &PipelineConsumer, topic: &str, positions: &BTreeMap<i32, Offset>) -> Result<()> {
    let tpl = tpl_of(topic, positions)?;
    match consumer.rebalance_protocol() {
        RebalanceProtocol::Cooperative => consumer.incremental_assign(&tpl),
        _ => consumer.assign(&tpl),
    }
    .map_err(|e| Error::Kafka(format!("assign {topic} {:?}: {e}", positions.keys().collect::<Vec<_>>())))
}

/// The pipeline's consumer: its own queue serves events (its messages go to a
/// [`super::batch::MessageQueue`]).
pub(crate) type PipelineConsumer = BaseConsumer<EventContext>;

/// Settings for [`create_consumer`].
#[derive(Debug, Clone)]
pub(crate) struct ConsumerSettings<'a> {
    pub brokers: &'a str,
    pub topic: &'a str,
    pub group_id: &'a str,
    /// `cooperative-sticky`, `range` or `roundrobin`.
    pub assignment: crate::config::pipeline::Assignment,
    /// Passed through to librdkafka (security settings and tuning).
    pub properties: &'a BTreeMap<String, String>,
    /// What librdkafka may prefetch (`queued.max.messages.kbytes`) unless `properties` say.
    pub prefetch_kbytes: u64,
}

/// The prefetch of each partition for a pipeline buffering `max_bytes` per batch from a topic
/// of `partitions` partitions: a quarter of `max_bytes` shared by them, between 1 and 64 MiB a
/// partition (`queued.max.messages.kbytes`, which librdkafka applies to each partition's queue
/// when partitions have fetch queues of their own, as here). The consumer must ask for the next
/// fetch response while it still has records to decode, and the whole prefetch must stay
/// within the process's memory bound: against Apache Kafka 4.4 (3 M × 250 B, 8 partitions,
/// `--until-end`), 64 MiB a partition took 4.6 s at a 725 MiB peak RSS, 8 MiB a partition
/// 4.2 s at 431 MiB (`kafka.properties` can set it).
pub(crate) fn prefetch_kbytes(max_bytes: u64, partitions: usize) -> u64 {
    (max_bytes / 4 / 1024 / partitions.max(1) as u64).clamp(1024, 64 * 1024)
}

/// The prefetch in messages (`queued.min.messages`) beside `prefetch_kbytes`: one message per
/// 256 bytes of it, between librdkafka's default of 100,000 and its maximum of 10,000,000.
/// librdkafka stops fetching at either limit, so with its default the count, not the bytes,
/// bounded the prefetch of small records (100,000 × 250 B is 25 MB); 256 bytes a message
/// covers small payloads with librdkafka's own per-message structures.
pub(crate) fn prefetch_messages(prefetch_kbytes: u64) -> u64 {
    (prefetch_kbytes.saturating_mul(1024) / 256).clamp(100_000, 10_000_000)
}

/// The prefetch in kbytes the consumer gets: `queued.max.messages.kbytes` from `properties`
/// when given there (the message count and the fetch cap then follow it), else the derived one.
fn effective_prefetch_kbytes(s: &ConsumerSettings<'_>) -> u64 {
    s.properties.get("queued.max.messages.kbytes").and_then(|v| v.trim().parse().ok()).unwrap_or(s.prefetch_kbytes)
}

/// What one fetch response may hold (`fetch.max.bytes`) for a prefetch of `prefetch_kbytes`: a
/// quarter of it, between 1 and 4 MiB, and never below `message.max.bytes` (librdkafka's own
/// rule). librdkafka holds a response whole until its messages are queued, and brokers that
/// answer past the limits (tansu) send several times this, so this bounds the consumer's
/// memory beside the queue; reading tansu, 4 MiB was also faster than larger responses.
pub(crate) fn fetch_max_bytes(prefetch_kbytes: u64, properties: &BTreeMap<String, String>) -> u64 {
    let floor = properties.get("message.max.bytes").and_then(|v| v.parse::<u64>().ok()).unwrap_or(1_000_000);
    (prefetch_kbytes.saturating_mul(1024) / 4).clamp(1 << 20, 4 << 20).max(floor + 512)
}

/// Creates the consumer and subscribes it to the topic.
///
/// # Errors
/// [`Error::Kafka`] when librdkafka refuses the configuration.
pub(crate) fn create_consumer(
    s: &ConsumerSettings<'_>,
    events: UnboundedSender<ConsumerEvent>,
    throttle: std::sync::Arc<crate::common::throttle::LogThrottle>,
) -> Result<PipelineConsumer> {
    let prefetch = effective_prefetch_kbytes(s);
    let mut cfg = super::client::client_config(s.brokers, &BTreeMap::new(), super::client::Role::Consumer);
    cfg.set("group.id", s.group_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("statistics.interval.ms", "1000")
        // Bounds what librdkafka prefetches, in bytes and in messages.
        .set("queued.max.messages.kbytes", prefetch.to_string())
        .set("queued.min.messages", prefetch_messages(prefetch).to_string())
        // When that queue is full, fetching resumes 20 ms after it drains below the limit
        // instead of librdkafka's default 1 s: with the default, a pipeline that consumes in
        // bursts (decode, then the next poll) stalled for up to a second at a time and ran at
        // 0.5x the rate a bare consumer reads (1.08x its time with 20 ms; see BENCHMARKS.md).
        .set("fetch.queue.backoff.ms", "20")
        .set("fetch.max.bytes", fetch_max_bytes(prefetch, s.properties).to_string());
    match s.assignment {
        // KIP-848: the broker assigns; the classic protocol's strategy must not be set.
        crate::config::pipeline::Assignment::Consumer => cfg.set("group.protocol", "consumer"),
        other => cfg.set("partition.assignment.strategy", other.as_str()),
    };
    for (k, v) in s.properties {
        cfg.set(k, v);
    }
    let ctx = EventContext { topic: s.topic.to_string(), events, throttle };
    let consumer: PipelineConsumer = cfg
        .create_with_context(ctx)
        .map_err(|e| Error::Kafka(format!("cannot create the consumer for topic {}: {e}", s.topic)))?;
    consumer.subscribe(&[s.topic]).map_err(|e| Error::Kafka(format!("cannot subscribe to {}: {e}", s.topic)))?;
    Ok(consumer)
}

/// Moves the fetch position of a partition that is being fetched (after another worker moved
/// its position in the table). A failure is retried by the caller.
///
/// # Errors
/// [`Error::Kafka`].
pub(crate) fn seek(consumer: &PipelineConsumer, topic: &str, partition: i32, offset: Offset) -> Result<()> {
    consumer
        .seek(topic, partition, offset, Duration::from_secs(2))
        .map_err(|e| Error::Kafka(format!("seek {topic}/{partition} to {offset:?}: {e}")))
}

/// Resolves a start timestamp to an offset per partition.
///
/// # Errors
/// [`Error::Kafka`] when the brokers do not answer.
pub(crate) fn offsets_for_timestamp(
    consumer: &PipelineConsumer,
    topic: &str,
    partitions: &[i32],
    timestamp_ms: i64,
) -> Result<BTreeMap<i32, Offset>> {
    let mut tpl = TopicPartitionList::new();
    for p in partitions {
        tpl.add_partition_offset(topic, *p, Offset::Offset(timestamp_ms))
            .map_err(|e| Error::Kafka(format!("offsets for timestamp: {e}")))?;
    }
    let found = consumer
        .offsets_for_times(tpl, Duration::from_secs(10))
        .map_err(|e| Error::Kafka(format!("offsets for timestamp {timestamp_ms} on {topic}: {e}")))?;
    Ok(found.elements().iter().map(|e| (e.partition(), e.offset())).collect())
}

/// The low and high watermarks (earliest offset held, offset after the last) per partition.
///
/// # Errors
/// [`Error::Kafka`] when the broker does not answer.
pub(crate) fn watermarks(
    consumer: &PipelineConsumer,
    topic: &str,
    partitions: &[i32],
) -> Result<BTreeMap<i32, (i64, i64)>> {
    partitions
        .iter()
        .map(|p| {
            consumer
                .fetch_watermarks(topic, *p, Duration::from_secs(10))
                .map(|w| (*p, w))
                .map_err(|e| Error::Kafka(format!("watermarks of {topic}/{p}: {e}")))
        })
        .collect()
}

/// Commits `next offset` per partition to the group, asynchronously (courtesy for lag tools).
pub(crate) fn commit_courtesy(consumer: &PipelineConsumer, topic: &str, next: &BTreeMap<i32, i64>) {
    let mut tpl = TopicPartitionList::new();
    for (p, o) in next {
        if tpl.add_partition_offset(topic, *p, Offset::Offset(*o)).is_err() {
            return;
        }
    }
    if let Err(e) = consumer.commit(&tpl, rdkafka::consumer::CommitMode::Async) {
        tracing::debug!(error = %e, "courtesy offset commit failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_follows_the_batch_size_within_limits() {
        assert_eq!(prefetch_kbytes(16 << 20, 1), 4096);
        assert_eq!(prefetch_kbytes(1 << 20, 1), 1024);
        assert_eq!(prefetch_kbytes(256 << 20, 1), 64 << 10);
        assert_eq!(prefetch_kbytes(4 << 30, 1), 64 << 10);
        // Shared by the partitions, each at least 1 MiB.
        assert_eq!(prefetch_kbytes(256 << 20, 8), 8 << 10);
        assert_eq!(prefetch_kbytes(256 << 20, 0), 64 << 10);
        assert_eq!(prefetch_kbytes(256 << 20, 1000), 1024);
        assert_eq!(prefetch_messages(64 << 10), 262_144);
        assert_eq!(prefetch_messages(1024), 100_000, "never below librdkafka's default");
        assert_eq!(prefetch_messages(u64::MAX / 2048), 10_000_000, "never above librdkafka's maximum");
    }

    #[tokio::test]
    async fn a_given_byte_prefetch_sets_the_message_count_too() {
        let none = BTreeMap::new();
        assert_eq!(effective_prefetch_kbytes(&settings(&none)), 16384);
        let given: BTreeMap<String, String> =
            [("queued.max.messages.kbytes".to_string(), " 131072 ".to_string())].into();
        let prefetch = effective_prefetch_kbytes(&settings(&given));
        assert_eq!((prefetch, prefetch_messages(prefetch)), (131_072, 524_288));
        let bad: BTreeMap<String, String> = [("queued.max.messages.kbytes".to_string(), "lots".to_string())].into();
        assert_eq!(effective_prefetch_kbytes(&settings(&bad)), 16384);
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let err = create_consumer(&settings(&bad), tx, Default::default()).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("queued.max.messages.kbytes")), "librdkafka refuses it by name");
    }

    fn settings(properties: &BTreeMap<String, String>) -> ConsumerSettings<'_> {
        ConsumerSettings {
            brokers: "127.0.0.1:1",
            topic: "t",
            group_id: "g",
            assignment: crate::config::pipeline::Assignment::CooperativeSticky,
            properties,
            prefetch_kbytes: 16384,
        }
    }

    #[tokio::test]
    async fn fetch_responses_are_capped_and_librdkafka_takes_the_cap() {
        let none = BTreeMap::new();
        assert_eq!(fetch_max_bytes(16384, &none), 4 << 20);
        assert_eq!(fetch_max_bytes(1024, &none), 1 << 20);
        let big: BTreeMap<String, String> = [("message.max.bytes".to_string(), "10000000".to_string())].into();
        assert_eq!(fetch_max_bytes(16384, &big), 10_000_512, "never below message.max.bytes");
        for props in [none, big] {
            // librdkafka takes the prefetch at its smallest and largest too.
            for prefetch in [prefetch_kbytes(0, 1), prefetch_kbytes(u64::MAX, 1)] {
                let s = ConsumerSettings { prefetch_kbytes: prefetch, ..settings(&props) };
                let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
                assert!(create_consumer(&s, tx, Default::default()).is_ok(), "{props:?} {prefetch}");
            }
        }
    }

    #[tokio::test]
    async fn security_settings_are_accepted() {
        let props: BTreeMap<String, String> = [
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.username", "user"),
            ("sasl.password", "secret"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let s = settings(&props);
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let created = create_consumer(&s, tx, Default::default());
        assert!(created.is_ok(), "TLS and SCRAM are compiled in: {:?}", created.err());
        let bad: BTreeMap<String, String> = [("no.such.property".to_string(), "1".to_string())].into();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let err = create_consumer(&ConsumerSettings { properties: &bad, ..s }, tx, Default::default())
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("no.such.property")));
    }
}
