//! The `txn` appId of every kind of deltabus writer, built from typed values and never parsed
//! back. Each kind renders the id that tables already hold, so positions written by earlier
//! versions are found again:
//!
//! | writer | appId |
//! | --- | --- |
//! | a Kafka partition of an ingest app | `<app>-<topic>-<partition>` (app escaped, below) |
//! | its dead letters | `<app>.dead_letters-<topic>-<partition>` (in the dead-letter table) |
//! | a push producer (rows and dead letters) | `deltabus-push:<producer id>` |
//! | a Kafka-protocol producer on one partition of a topic | `deltabus-kafka:<producer id>:<partition>:<topic>` |
//! | a follower, a mirror | `<follower>-<source table id>` |
//! | a slice of a consumer group | `<group>.<slice>-<source table id>` |
//! | `deltabus write --app-id` | the id as given |
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
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum TxnAppId {
    /// One Kafka partition of one topic consumed by one ingest application.
    KafkaPartition { app: String, topic: String, partition: i32 },
    /// The dead letters of one Kafka partition, in the app's dead-letter table.
    DeadLetters { app: String, topic: String, partition: i32 },
    /// One push producer (its version is the producer's sequence number).
    PushProducer { producer: String },
    /// One idempotent producer of the Kafka-protocol listener on one partition of a topic (its
    /// version is the producer's epoch and last sequence, `epoch << 32 | sequence`).
    KafkaProducer { producer_id: i64, topic: String, partition: i32 },
    /// One follower of one source Delta table, mirrors included (its version is the source
    /// version).
    Follower { follower: String, source_table_id: String },
    /// One slice of a consumer group over a source Delta table.
    GroupSlice { group: String, slice: u32, source_table_id: String },
    /// An id a user names (`deltabus write --app-id`), used as it is.
    Named(String),
}

/// The prefix of every push producer's appId. A Kafka position's id is
/// `<app>-<topic>-<partition>` with the app's own `-` escaped, so its first raw `-` starts a
/// topic name, which cannot hold `:`; no Kafka position can be spelled `deltabus-push:...`.
pub(crate) const PRODUCER_PREFIX: &str = "deltabus-push:";
/// The prefix of every Kafka-protocol producer's appId. Producer id and partition are numbers
/// and the topic comes last, so no two (producer, partition, topic) share an id.
pub(crate) const KAFKA_PRODUCER_PREFIX: &str = "deltabus-kafka:";

fn escape_app(app: &str) -> String {
    app.replace('%', "%25").replace('-', "%2D")
}

impl TxnAppId {
    /// The id earlier versions wrote for this position, when it differs from today's.
    pub(crate) fn legacy(&self) -> Option<String> {
        match self {
            TxnAppId::KafkaPartition { app, topic, partition } if app.contains(['-', '%']) => {
                Some(format!("{app}-{topic}-{partition}"))
            }
            TxnAppId::DeadLetters { app, topic, partition } if app.contains(['-', '%']) => {
                Some(format!("{app}.dead_letters-{topic}-{partition}"))
            }
            _ => None,
        }
    }

    /// The position recorded in `snapshot`: under today's id, else under the legacy one. A
    /// stream's own position never expires (see [`Snapshot::txn_version`]).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn version_in(&self, snapshot: &Snapshot) -> Option<i64> {
        snapshot.txn_version(&self.to_string()).or_else(|| self.legacy().and_then(|l| snapshot.txn_version(&l)))
    }
}

impl fmt::Display for TxnAppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnAppId::KafkaPartition { app, topic, partition } => {
                write!(f, "{}-{topic}-{partition}", escape_app(app))
            }
            TxnAppId::DeadLetters { app, topic, partition } => {
                write!(f, "{}-{topic}-{partition}", escape_app(&format!("{app}.dead_letters")))
            }
            TxnAppId::PushProducer { producer } => write!(f, "{PRODUCER_PREFIX}{producer}"),
            TxnAppId::KafkaProducer { producer_id, topic, partition } => {
                write!(f, "{KAFKA_PRODUCER_PREFIX}{producer_id}:{partition}:{topic}")
            }
            TxnAppId::Follower { follower, source_table_id } => write!(f, "{follower}-{source_table_id}"),
            TxnAppId::GroupSlice { group, slice, source_table_id } => write!(f, "{group}.{slice}-{source_table_id}"),
            TxnAppId::Named(id) => f.write_str(id),
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
    fn every_kind_keeps_the_id_tables_already_hold() {
        let dl = TxnAppId::DeadLetters { app: "ingest".into(), topic: "orders".into(), partition: 2 };
        assert_eq!(dl.to_string(), "ingest.dead_letters-orders-2");
        let dl = TxnAppId::DeadLetters { app: "in-gest".into(), topic: "orders".into(), partition: 2 };
        assert_eq!(dl.to_string(), "in%2Dgest.dead_letters-orders-2");
        assert_eq!(dl.legacy().as_deref(), Some("in-gest.dead_letters-orders-2"));
        let push = TxnAppId::PushProducer { producer: "sensor-7 ✓".into() };
        assert_eq!(push.to_string(), "deltabus-push:sensor-7 ✓");
        let slice = TxnAppId::GroupSlice { group: "g".into(), slice: 3, source_table_id: "abc".into() };
        assert_eq!(slice.to_string(), "g.3-abc");
        assert_eq!(TxnAppId::Named("my-app".into()).to_string(), "my-app");
        let kafka_producer = TxnAppId::KafkaProducer { producer_id: 4096, topic: "orders.eu".into(), partition: 2 };
        assert_eq!(kafka_producer.to_string(), "deltabus-kafka:4096:2:orders.eu");
        // A partition's dead letters never share the partition's own id.
        assert_ne!(dl.to_string(), kafka("in-gest", "orders", 2).to_string());
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
