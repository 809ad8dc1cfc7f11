//! The `txn` appId of a source position, built from typed values and never parsed back.
//!
//! A Kafka partition's id is `<app>-<topic>-<partition>` with `%` and `-` in the app escaped
//! (`%25`, `%2D`): topic names cannot hold `%`, so the first raw `-` ends the app and the last
//! one starts the partition, and two (app, topic) pairs never share an id (`ingest` +
//! `orders-eu` is `ingest-orders-eu-3`; `ingest-orders` + `eu` is `ingest%2Dorders-eu-3`).
//! Apps without `-` or `%` keep the id earlier versions wrote; for the others, positions
//! recorded under the earlier, unescaped id are still read ([`TxnAppId::legacy`]) until the
//! first commit under the new one.

use std::fmt;

use crate::delta::snapshot::Snapshot;

/// Whose progress a `txn` action records.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnAppId {
    /// One Kafka partition of one topic consumed by one ingest application.
    KafkaPartition { app: String, topic: String, partition: i32 },
    /// One follower of one source Delta table (its version is the source version).
    Follower { follower: String, source_table_id: String },
}

fn escape_app(app: &str) -> String {
    app.replace('%', "%25").replace('-', "%2D")
}

impl TxnAppId {
    /// The id earlier versions wrote for this position, when it differs from today's.
    pub fn legacy(&self) -> Option<String> {
        match self {
            TxnAppId::KafkaPartition { app, topic, partition } if app.contains(['-', '%']) => {
                Some(format!("{app}-{topic}-{partition}"))
            }
            _ => None,
        }
    }

    /// The position recorded in `snapshot`: under today's id, else under the legacy one.
    pub fn version_in(&self, snapshot: &Snapshot) -> Option<i64> {
        snapshot.txn_version(&self.to_string()).or_else(|| self.legacy().and_then(|l| snapshot.txn_version(&l)))
    }
}

impl fmt::Display for TxnAppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnAppId::KafkaPartition { app, topic, partition } => {
                write!(f, "{}-{topic}-{partition}", escape_app(app))
            }
            TxnAppId::Follower { follower, source_table_id } => write!(f, "{follower}-{source_table_id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kafka(app: &str, topic: &str, partition: i32) -> TxnAppId {
        TxnAppId::KafkaPartition { app: app.into(), topic: topic.into(), partition }
    }

    #[test]
    fn names_are_stable_and_distinct() {
        let a = kafka("ingest", "orders-eu", 3);
        assert_eq!(a.to_string(), "ingest-orders-eu-3", "apps without '-' keep their ids");
        assert_eq!(a.legacy(), None);
        assert_ne!(a.to_string(), kafka("ingest", "orders-eu", 30).to_string());
        let f = TxnAppId::Follower { follower: "replica".into(), source_table_id: "abc".into() };
        assert_eq!(f.to_string(), "replica-abc");
    }

    #[test]
    fn app_and_topic_boundaries_never_collide() {
        let a = kafka("ingest", "orders-eu", 3);
        let b = kafka("ingest-orders", "eu", 3);
        assert_ne!(a.to_string(), b.to_string());
        assert_eq!(b.to_string(), "ingest%2Dorders-eu-3");
        assert_eq!(b.legacy().as_deref(), Some("ingest-orders-eu-3"));
        // An app that looks like an escape is escaped itself.
        assert_ne!(kafka("a%2Db", "t", 0).to_string(), kafka("a-b", "t", 0).to_string());
        // Exhaustively over small names: distinct (app, topic, partition) → distinct ids.
        let parts = ["", "a", "-", "a-", "-a", "a-b", "%", "%2D", "b"];
        let mut seen = std::collections::HashMap::new();
        for app in parts {
            for topic in parts.iter().filter(|t| !t.contains('%')) {
                for p in [0, 1, 12] {
                    let id = kafka(app, topic, p).to_string();
                    if let Some(prev) = seen.insert(id.clone(), (app, *topic, p)) {
                        panic!("{id} from both {prev:?} and {:?}", (app, topic, p));
                    }
                }
            }
        }
    }
}
