//! The control topic of coordinated commits: one partition carrying workers' commit requests
//! and the committer's answers, as opaque bytes (what they mean is the pipeline's).
//!
//! - [`ControlProducer`]: sends a record and waits for the broker's acknowledgement.
//! - [`ControlTail`]: reads every record appended after it was opened (a worker waiting for
//!   answers); positioned at the partition's end when opened, so nothing sent afterwards is
//!   missed.
//! - [`ControlGroup`]: a member of the committer group, subscribed to the control topic. The
//!   member that owns the partition is the committer ([`ControlGroup::leads`]); it reads from
//!   the group's committed offset, so a new committer re-reads every request its predecessor
//!   had not finished.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

use super::client::{client_config, Role};
use crate::common::kafka_log::LoggedContext;
use crate::error::{Error, Result};

/// The client settings of `brokers` with the pipeline's `properties`; `consumer` keeps the
/// consumer-only ones (a producer refuses them).
fn client(brokers: &str, properties: &BTreeMap<String, String>, consumer: bool) -> ClientConfig {
    let role = if consumer { Role::Consumer } else { Role::Producer };
    client_config(brokers, properties, role)
}

/// Creates the control topic (one partition) when missing.
///
/// # Errors
/// [`Error::Kafka`] naming the topic and how to create it.
pub(crate) async fn ensure_topic(brokers: &str, properties: &BTreeMap<String, String>, topic: &str) -> Result<()> {
    let (cfg, t) = (client(brokers, properties, false), topic.to_string());
    let how = format!("create it with one partition, or name another with commit.control_topic ({t})");
    let created = tokio::task::spawn_blocking(move || super::topics::ensure_one_partition(&cfg, &t, &[], &how))
        .await
        .map_err(|e| Error::Internal(format!("control topic creation: {e}")))??;
    if created {
        tracing::info!(topic, "commit control topic created (one partition)");
    }
    Ok(())
}

fn kafka(what: &'static str) -> impl Fn(rdkafka::error::KafkaError) -> Error {
    move |e| Error::Kafka(format!("control topic {what}: {e}"))
}

/// Sends records to the control topic.
pub(crate) struct ControlProducer {
    producer: FutureProducer<LoggedContext>,
    /// The producer's context: what the brokers refused, if they did.
    context: LoggedContext,
    topic: String,
}

impl ControlProducer {
    /// # Errors
    /// [`Error::Kafka`] when librdkafka refuses the configuration.
    pub(crate) fn create(brokers: &str, properties: &BTreeMap<String, String>, topic: &str) -> Result<ControlProducer> {
        let mut cfg = client(brokers, properties, false);
        cfg.set("enable.idempotence", "true").set("linger.ms", "0");
        let context = LoggedContext::default();
        let producer = cfg.create_with_context(context.clone()).map_err(kafka("producer"))?;
        Ok(ControlProducer { producer, context, topic: topic.to_string() })
    }

    /// Sends one record to partition 0 and waits for its acknowledgement.
    ///
    /// # Errors
    /// [`Error::Kafka`] when the broker does not acknowledge it within `timeout`.
    pub(crate) async fn send(&self, payload: &[u8], timeout: Duration) -> Result<()> {
        let record = FutureRecord::<[u8], [u8]>::to(&self.topic).partition(0).payload(payload);
        self.producer
            .send(record, timeout)
            .await
            .map(|_| ())
            .map_err(|(e, _)| self.context.failure(&format!("control topic {}: send", self.topic), e))
    }
}

/// Reads the control topic from its end at opening.
pub(crate) struct ControlTail {
    consumer: StreamConsumer<LoggedContext>,
}

impl ControlTail {
    /// # Errors
    /// [`Error::Kafka`] when the client cannot be created or the partition's end not read.
    pub(crate) async fn open(brokers: &str, properties: &BTreeMap<String, String>, topic: &str) -> Result<ControlTail> {
        let mut cfg = client(brokers, properties, true);
        cfg.set("group.id", format!("deltabus-control-tail-{}", uuid::Uuid::new_v4().simple()))
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "false")
            .set("fetch.wait.max.ms", "20");
        let consumer: StreamConsumer<LoggedContext> =
            cfg.create_with_context(LoggedContext::default()).map_err(kafka("reader"))?;
        let t = topic.to_string();
        let (consumer, end) = tokio::task::spawn_blocking(move || {
            let (_, high) = consumer
                .fetch_watermarks(&t, 0, Duration::from_secs(10))
                .map_err(|e| consumer.context().failure(&format!("control topic {t}: end"), e))?;
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(&t, 0, Offset::Offset(high)).map_err(kafka("assign"))?;
            consumer.assign(&tpl).map_err(kafka("assign"))?;
            Ok::<_, Error>((consumer, high))
        })
        .await
        .map_err(|e| Error::Internal(format!("control reader: {e}")))??;
        tracing::debug!(topic, end, "control topic reader opened");
        Ok(ControlTail { consumer })
    }

    /// The next record's payload.
    ///
    /// # Errors
    /// [`Error::Kafka`] for a consumer error.
    pub(crate) async fn next(&self) -> Result<Vec<u8>> {
        let m = self.consumer.recv().await.map_err(kafka("read"))?;
        Ok(m.payload().unwrap_or_default().to_vec())
    }
}

/// A member of the committer group.
pub(crate) struct ControlGroup {
    consumer: StreamConsumer<LoggedContext>,
    topic: String,
}

impl ControlGroup {
    /// Joins `group` on the control topic.
    ///
    /// # Errors
    /// [`Error::Kafka`] when the client cannot be created or subscribed.
    pub(crate) fn join(
        brokers: &str,
        properties: &BTreeMap<String, String>,
        topic: &str,
        group: &str,
    ) -> Result<ControlGroup> {
        let mut cfg = client(brokers, properties, true);
        // Sticky: a member joining or leaving does not move the committer role.
        cfg.set("group.id", group)
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("enable.partition.eof", "false")
            .set("fetch.wait.max.ms", "20");
        let consumer: StreamConsumer<LoggedContext> =
            cfg.create_with_context(LoggedContext::default()).map_err(kafka("committer group"))?;
        consumer.subscribe(&[topic]).map_err(kafka("subscribe"))?;
        Ok(ControlGroup { consumer, topic: topic.to_string() })
    }

    /// The next record (offset, payload) within `wait`.
    ///
    /// # Errors
    /// [`Error::Kafka`] for a consumer error.
    pub(crate) async fn next(&self, wait: Duration) -> Result<Option<(i64, Vec<u8>)>> {
        match tokio::time::timeout(wait, self.consumer.recv()).await {
            Err(_) => Ok(None),
            Ok(Err(e)) => Err(kafka("read")(e)),
            Ok(Ok(m)) => Ok(Some((m.offset(), m.payload().unwrap_or_default().to_vec()))),
        }
    }

    /// Whether this member owns the control partition (is the committer).
    pub(crate) fn leads(&self) -> bool {
        self.consumer.assignment().is_ok_and(|a| a.elements_for_topic(&self.topic).iter().any(|e| e.partition() == 0))
    }

    /// Records that every request before `next` is done (a courtesy: the table decides).
    pub(crate) fn commit(&self, next: i64) {
        let mut tpl = TopicPartitionList::new();
        if tpl.add_partition_offset(&self.topic, 0, Offset::Offset(next)).is_ok() {
            if let Err(e) = self.consumer.commit(&tpl, rdkafka::consumer::CommitMode::Async) {
                tracing::debug!(error = %e, "control offset commit failed; the next committer re-reads more");
            }
        }
    }
}
