//! Who may do what at the Kafka door [sync]: Kafka's model of per-principal permissions on
//! topics and consumer groups, denied by default once any is configured.
//!
//! A principal is the SASL user a client logged in as, the common name of the TLS client
//! certificate it presented, or `ANONYMOUS`. Each entry of `[server.kafka.acls.<principal>]`
//! lists topics (`produce`, `fetch`, `describe`) and groups (`groups`) by name, by prefix
//! (`events-*`) or all (`*`). As in Kafka, producing or fetching a topic implies describing it
//! (seeing it in Metadata); committing and fetching a group's offsets needs the group and
//! fetching the topic (describing it, for OffsetFetch). Without any entry every client may do
//! everything (the listener's users, if any, still have to log in).

use std::collections::BTreeMap;

use crate::config::kafka::KafkaAcl;

/// The principal of a client that did not authenticate.
pub(crate) const ANONYMOUS: &str = "ANONYMOUS";

/// What is done to a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum TopicOp {
    /// Produce (Kafka's Write).
    Produce,
    /// Fetch and ListOffsets (Kafka's Read).
    Fetch,
    /// Metadata and OffsetFetch (Kafka's Describe).
    Describe,
}

impl TopicOp {
    pub(crate) fn name(self) -> &'static str {
        match self {
            TopicOp::Produce => "produce",
            TopicOp::Fetch => "fetch",
            TopicOp::Describe => "describe",
        }
    }
}

/// The configured permissions.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Acls {
    rules: BTreeMap<String, KafkaAcl>,
}

fn matches(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => p == name,
    })
}

impl Acls {
    pub(crate) fn new(rules: BTreeMap<String, KafkaAcl>) -> Acls {
        Acls { rules }
    }

    /// Whether any permission is configured (then everything else is denied).
    pub(crate) fn enforced(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Whether `principal` may do `op` to `topic`.
    pub(crate) fn topic(&self, principal: &str, op: TopicOp, topic: &str) -> bool {
        if !self.enforced() {
            return true;
        }
        let Some(acl) = self.rules.get(principal) else { return false };
        match op {
            TopicOp::Produce => matches(&acl.produce, topic),
            TopicOp::Fetch => matches(&acl.fetch, topic),
            TopicOp::Describe => [&acl.describe, &acl.produce, &acl.fetch].iter().any(|p| matches(p, topic)),
        }
    }

    /// Whether `principal` may commit and fetch the offsets of `group`.
    pub(crate) fn group(&self, principal: &str, group: &str) -> bool {
        !self.enforced() || self.rules.get(principal).is_some_and(|acl| matches(&acl.groups, group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn denied_by_default_once_any_is_configured() {
        assert!(Acls::default().topic("anyone", TopicOp::Produce, "t"));
        assert!(Acls::default().group(ANONYMOUS, "g"));
        let acls = Acls::new(BTreeMap::from([
            (
                "alice".to_string(),
                KafkaAcl {
                    produce: list(&["orders", "ev-*"]),
                    fetch: list(&["feed"]),
                    groups: list(&["billing"]),
                    ..KafkaAcl::default()
                },
            ),
            ("Zürich ops".to_string(), KafkaAcl { describe: list(&["*"]), ..KafkaAcl::default() }),
        ]));
        assert!(acls.topic("alice", TopicOp::Produce, "orders"));
        assert!(acls.topic("alice", TopicOp::Produce, "ev-1"));
        assert!(!acls.topic("alice", TopicOp::Produce, "ev"));
        assert!(!acls.topic("alice", TopicOp::Fetch, "orders"));
        assert!(acls.topic("alice", TopicOp::Describe, "orders"), "produce implies describe");
        assert!(acls.topic("alice", TopicOp::Describe, "feed"), "fetch implies describe");
        assert!(!acls.topic("alice", TopicOp::Describe, "secret"));
        assert!(acls.group("alice", "billing") && !acls.group("alice", "billing2"));
        assert!(acls.topic("Zürich ops", TopicOp::Describe, "anything"));
        assert!(!acls.topic("Zürich ops", TopicOp::Produce, "anything"));
        assert!(!acls.topic(ANONYMOUS, TopicOp::Describe, "orders"));
        assert!(!acls.group("bob", "billing"));
    }
}
