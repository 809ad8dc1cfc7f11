//! Finding the topics of a `topic_pattern`: the cluster's topic names from a metadata request,
//! filtered by the pattern (internal `__` topics excluded).

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::error::{Error, Result};

/// The topics on the cluster whose whole name matches `pattern`, sorted.
///
/// # Errors
/// [`Error::Kafka`] when the client cannot be created or the metadata request fails.
pub async fn matching(
    brokers: &str,
    properties: &BTreeMap<String, String>,
    pattern: &regex::Regex,
) -> Result<Vec<String>> {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", brokers);
    for (k, v) in properties {
        cfg.set(k, v);
    }
    let pattern = pattern.clone();
    tokio::task::spawn_blocking(move || {
        let client: BaseConsumer<crate::common::kafka_log::LoggedContext> = cfg
            .create_with_context(crate::common::kafka_log::LoggedContext)
            .map_err(|e| Error::Kafka(format!("cannot create the metadata client: {e}")))?;
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
