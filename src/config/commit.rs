//! `[pipelines.<name>.commit]`: who commits a pipeline's flushes.
//!
//! - `mode = "worker"` (the default): every process commits its own flushes. Right for one
//!   process, or a few: each flush is one conditional PUT, and workers race for versions.
//! - `mode = "coordinated"`: workers write their Parquet files and send a commit request
//!   through a one-partition Kafka control topic; the member of the pipeline's committer group
//!   that owns that partition combines the requests of each `interval` into one commit with a
//!   `txn` per partition. The table refuses any batch that does not continue its partition's
//!   `txn` version, so neither a stale worker nor a zombie committer can duplicate a row. The
//!   background compactor runs in the committer only. Kafka sources without upsert or routing.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::common::units::HumanDuration;

/// Who commits (`commit.mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum CommitMode {
    /// Each process commits its own flushes.
    #[default]
    Worker,
    /// One committer per table, chosen through Kafka, commits every worker's flushes.
    Coordinated,
}

setting_values!(CommitMode { "worker" => Worker, "coordinated" => Coordinated });

/// `[pipelines.<name>.commit]` as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommitConfig {
    pub mode: CommitMode,
    /// Coordinated: the committer commits at most once per interval.
    pub interval: HumanDuration,
    /// Coordinated: the one-partition control topic (created when missing); default
    /// `deltabus-commits.<app_id>.<topic>`.
    pub control_topic: Option<String>,
    /// Coordinated: a worker with no answer for this long checks the table and sends its
    /// request again.
    pub request_timeout: HumanDuration,
}

impl Default for CommitConfig {
    fn default() -> Self {
        CommitConfig {
            mode: CommitMode::Worker,
            interval: HumanDuration::from_secs(1),
            control_topic: None,
            request_timeout: HumanDuration::from_secs(30),
        }
    }
}

/// Coordinated commits, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coordination {
    /// The control topic as configured (`{topic}` is replaced by the pipeline's topic).
    pub control_topic: Option<String>,
    pub interval: Duration,
    pub request_timeout: Duration,
}

impl Coordination {
    /// The control topic (one partition) of the pipeline consuming `topic`.
    pub fn control_topic(&self, app_id: &str, topic: &str) -> String {
        match &self.control_topic {
            Some(t) => t.replace("{topic}", topic),
            None => default_control_topic(app_id, topic),
        }
    }

    /// The consumer group whose owner of the control partition is the committer.
    pub fn committer_group(group_id: &str, topic: &str) -> String {
        format!("{group_id}.deltabus-committer.{topic}")
    }
}

/// The default control topic of a pipeline: `deltabus-commits.<app_id>.<topic>`, with
/// characters Kafka does not allow in topic names replaced by `_`.
pub fn default_control_topic(app_id: &str, topic: &str) -> String {
    let name: String = format!("deltabus-commits.{app_id}.{topic}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect();
    name.chars().take(249).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_topics_are_valid_kafka_names() {
        assert_eq!(default_control_topic("orders", "in"), "deltabus-commits.orders.in");
        assert_eq!(default_control_topic("ü ber/x", "t"), "deltabus-commits.__ber_x.t");
        assert!(default_control_topic(&"a".repeat(400), "t").len() <= 249);
    }

    #[test]
    fn modes_parse_in_lower_case_only() {
        let c: CommitConfig = toml::from_str("mode = \"coordinated\"\ninterval = \"500ms\"").unwrap();
        assert_eq!((c.mode, c.interval.get()), (CommitMode::Coordinated, Duration::from_millis(500)));
        assert!(toml::from_str::<CommitConfig>("mode = \"leader\"").is_err());
    }
}
