//! A Kafka topic for dead letters: the raw payload with the original key and timestamp, and
//! the record's coordinates and reason in `deltabus.*` headers. Every send is acknowledged
//! before [`DeadLetterTopic::send`] returns.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::common::record::DeadLetter;
use crate::error::{Error, Result};

/// An idempotent producer to one dead-letter topic.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DeadLetterTopic {
    producer: FutureProducer<crate::common::kafka_log::LoggedContext>,
    /// The producer's context: what the brokers refused, if they did.
    context: crate::common::kafka_log::LoggedContext,
    topic: String,
}

impl DeadLetterTopic {
    /// A producer on `brokers` with the pipeline's client `properties` (consumer-only ones
    /// left out).
    ///
    /// # Errors
    /// [`Error::Kafka`] when librdkafka refuses the configuration.
    pub(crate) fn create(brokers: &str, properties: &BTreeMap<String, String>, topic: &str) -> Result<DeadLetterTopic> {
        let mut cfg = super::client::client_config(brokers, properties, super::client::Role::Producer);
        cfg.set("enable.idempotence", "true");
        let context = crate::common::kafka_log::LoggedContext::default();
        let producer =
            cfg.create_with_context(context.clone()).map_err(|e| Error::Kafka(format!("dead-letter producer: {e}")))?;
        Ok(DeadLetterTopic { producer, context, topic: topic.to_string() })
    }

    /// Sends every letter and waits for all acknowledgements.
    ///
    /// # Errors
    /// [`Error::Kafka`] for the first send the broker did not acknowledge.
    pub(crate) async fn send<'a>(&self, letters: impl Iterator<Item = &'a DeadLetter>) -> Result<()> {
        let mut pending = Vec::new();
        for l in letters {
            let headers = OwnedHeaders::new()
                .insert(Header { key: "deltabus.reason", value: Some(l.reason.as_bytes()) })
                .insert(Header { key: "deltabus.topic", value: Some(l.topic.as_bytes()) })
                .insert(Header { key: "deltabus.partition", value: Some(l.partition.to_string().as_bytes()) })
                .insert(Header { key: "deltabus.offset", value: Some(l.offset.to_string().as_bytes()) });
            let mut record = FutureRecord::<[u8], [u8]>::to(&self.topic).headers(headers);
            if let Some(k) = &l.key {
                record = record.key(k.as_slice());
            }
            if let Some(p) = &l.payload {
                record = record.payload(p.as_slice());
            }
            if let Some(ts) = l.timestamp_ms {
                record = record.timestamp(ts);
            }
            pending.push(self.producer.send(record, Duration::from_secs(30)));
        }
        for r in futures::future::join_all(pending).await {
            r.map_err(|(e, _)| self.context.failure(&format!("dead-letter topic {}", self.topic), e))?;
        }
        Ok(())
    }
}
