//! Finding the topics of a `topic_pattern`: the cluster's topic names from a metadata request,
//! filtered by the pattern (internal `__` topics excluded); and creating the one-partition
//! topics deltabus keeps its own records in ([`ensure_one_partition`]).

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::error::{Error, Result};

/// The topics on the cluster whose whole name matches `pattern`, sorted.
///
/// # Errors
/// [`Error::Kafka`] when the client cannot be created or the metadata request fails.
pub(crate) async fn matching(
    brokers: &str,
    properties: &BTreeMap<String, String>,
    pattern: &regex::Regex,
) -> Result<Vec<String>> {
    let cfg = super::client::client_config(brokers, properties, super::client::Role::Consumer);
    let pattern = pattern.clone();
    tokio::task::spawn_blocking(move || {
        let client = metadata_client(&cfg)?;
        let md = client
            .fetch_metadata(None, Duration::from_secs(10))
            .map_err(|e| Error::Kafka(format!("listing topics: {e}")))?;
        let mut names: Vec<String> = md
            .topics()
            .iter()
            .map(|t| t.name().to_string())
            .filter(|n| !n.starts_with("__") && pattern.is_match(n))
            .collect();
        names.sort();
        Ok(names)
    })
    .await
    .map_err(|e| Error::Internal(format!("metadata task: {e}")))?
}

/// The number of partitions of `topic`, from a metadata request (at most 5 s); `None` when it
/// fails or the topic is missing.
pub(crate) async fn partition_count(
    brokers: &str,
    properties: &BTreeMap<String, String>,
    topic: &str,
) -> Option<usize> {
    let cfg = super::client::client_config(brokers, properties, super::client::Role::Consumer);
    let topic = topic.to_string();
    let counted = tokio::task::spawn_blocking(move || {
        let client = metadata_client(&cfg).ok()?;
        let md = client.fetch_metadata(Some(&topic), Duration::from_secs(5)).ok()?;
        let t = md.topics().iter().find(|t| t.name() == topic)?;
        (t.error().is_none() && !t.partitions().is_empty()).then(|| t.partitions().len())
    });
    counted.await.ok().flatten()
}

/// A client for metadata requests (blocking: call from a blocking task).
fn metadata_client(cfg: &ClientConfig) -> Result<BaseConsumer<crate::common::kafka_log::LoggedContext>> {
    cfg.create_with_context(crate::common::kafka_log::LoggedContext::default())
        .map_err(|e| Error::Kafka(format!("cannot create the metadata client: {e}")))
}

/// How long creating a topic may take (a cluster that does not answer admin requests fails in
/// this time, with the way to create the topic by hand).
const CREATE_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes sure `topic` exists, creating it with one partition and `configs` when missing
/// (blocking: call from a blocking task). `true` when it was created.
///
/// # Errors
/// [`Error::Kafka`] naming the topic, why, and `how` to create it by hand.
pub(crate) fn ensure_one_partition(
    client: &ClientConfig,
    topic: &str,
    configs: &[(&str, &str)],
    how: &str,
) -> Result<bool> {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::producer::{FutureProducer, Producer};
    use rdkafka::types::RDKafkaErrorCode;
    let ctx = crate::common::kafka_log::LoggedContext::default();
    let kafka = |what: &str, e: rdkafka::error::KafkaError| Error::Kafka(format!("{what} of {topic}: {e}"));
    // A producer's client: its own thread serves librdkafka's errors as they come, so a refused
    // authentication is known when the lookup fails. Producers let the broker create a topic
    // a metadata request names (with the broker's defaults, not `configs`): not this one.
    let lookup: FutureProducer<_> = client
        .clone()
        .set("allow.auto.create.topics", "false")
        .create_with_context(ctx.clone())
        .map_err(|e| kafka("lookup", e))?;
    let md = lookup
        .client()
        .fetch_metadata(Some(topic), CREATE_TIMEOUT)
        .map_err(|e| ctx.failure(&format!("lookup of {topic}"), e))?;
    if md.topics().iter().any(|t| t.name() == topic && t.error().is_none() && !t.partitions().is_empty()) {
        return Ok(false);
    }
    let admin: AdminClient<_> = client.create_with_context(ctx.clone()).map_err(|e| kafka("creation", e))?;
    let opts = AdminOptions::new().operation_timeout(Some(CREATE_TIMEOUT)).request_timeout(Some(CREATE_TIMEOUT));
    let refused =
        |why: String| Error::Kafka(format!("the topic {topic} does not exist and could not be created ({why}): {how}"));
    // The broker's default replication first; a cluster that cannot take "default" gets one.
    for replication in [-1, 1] {
        let mut new = NewTopic::new(topic, 1, TopicReplication::Fixed(replication));
        for (k, v) in configs {
            new = new.set(k, v);
        }
        let results =
            futures::executor::block_on(admin.create_topics([&new], &opts)).map_err(|e| refused(e.to_string()))?;
        match results.into_iter().next() {
            Some(Ok(_)) => return Ok(true),
            Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => return Ok(false),
            Some(Err((_, code)))
                if replication == -1
                    && matches!(
                        code,
                        RDKafkaErrorCode::InvalidReplicationFactor
                            | RDKafkaErrorCode::InvalidRequest
                            | RDKafkaErrorCode::UnsupportedVersion
                    ) => {}
            Some(Err((_, code))) => return Err(refused(code.to_string())),
            None => return Err(refused("no answer".into())),
        }
    }
    Err(refused("no replication factor was accepted".into()))
}
