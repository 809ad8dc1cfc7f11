//! The one place librdkafka client settings are built: every consumer, producer and admin
//! client of the process (pipelines, the control topic, dead-letter topics, the change feed's
//! Kafka sinks, topic listing) starts from [`client_config`], so a setting that must hold for
//! every client is set here once.

use std::collections::BTreeMap;

use rdkafka::config::ClientConfig;

/// What the client is: a producer refuses consumer-only settings, so those are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Consumer,
    Producer,
}

/// Whether `key` is a setting only consumers take.
fn consumer_only(key: &str) -> bool {
    key.starts_with("fetch.")
        || key.starts_with("auto.")
        || key.starts_with("session.")
        || key.starts_with("queued.")
        || key == "max.partition.fetch.bytes"
}

/// The settings of a client of `brokers` with the user's `properties` (for a producer, the
/// consumer-only ones left out).
pub(crate) fn client_config(brokers: &str, properties: &BTreeMap<String, String>, role: Role) -> ClientConfig {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", brokers);
    for (k, v) in properties {
        if role == Role::Consumer || !consumer_only(k) {
            cfg.set(k, v);
        }
    }
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producers_leave_consumer_only_settings_out() {
        let props: BTreeMap<String, String> = [
            ("fetch.min.bytes", "1"),
            ("linger.ms", "5"),
            ("session.timeout.ms", "9"),
            ("max.partition.fetch.bytes", "7"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let p = client_config("b:1", &props, Role::Producer);
        assert_eq!(p.get("bootstrap.servers"), Some("b:1"));
        assert_eq!(
            (p.get("linger.ms"), p.get("fetch.min.bytes"), p.get("session.timeout.ms")),
            (Some("5"), None, None)
        );
        assert_eq!(p.get("max.partition.fetch.bytes"), None);
        let c = client_config("b:1", &props, Role::Consumer);
        assert_eq!(c.get("fetch.min.bytes"), Some("1"));
    }
}
