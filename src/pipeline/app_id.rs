//! The `txn` appId of a source position, built from typed values and never parsed back:
//! Kafka topic names may contain `-`, so `<app>-<topic>-<partition>` is only ever computed
//! from a [`TxnAppId`] and looked up by that exact string.

use std::fmt;

/// Whose progress a `txn` action records.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnAppId {
    /// One Kafka partition of one topic consumed by one ingest application.
    KafkaPartition { app: String, topic: String, partition: i32 },
    /// One follower of one source Delta table (its version is the source version).
    Follower { follower: String, source_table_id: String },
}

impl fmt::Display for TxnAppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnAppId::KafkaPartition { app, topic, partition } => write!(f, "{app}-{topic}-{partition}"),
            TxnAppId::Follower { follower, source_table_id } => write!(f, "{follower}-{source_table_id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_distinct() {
        let a = TxnAppId::KafkaPartition { app: "ingest".into(), topic: "orders-eu".into(), partition: 3 };
        assert_eq!(a.to_string(), "ingest-orders-eu-3");
        let b = TxnAppId::KafkaPartition { app: "ingest".into(), topic: "orders-eu".into(), partition: 30 };
        assert_ne!(a.to_string(), b.to_string());
        let f = TxnAppId::Follower { follower: "replica".into(), source_table_id: "abc".into() };
        assert_eq!(f.to_string(), "replica-abc");
    }
}
