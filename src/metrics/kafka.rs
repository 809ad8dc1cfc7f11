//! Metrics of the Kafka-protocol listener: requests by API, open connections, connections
//! closed or requests refused by reason, produced records and produce latency per topic,
//! produce errors by topic and error code, fetched records and fetch lag per topic.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

const LATENCY_BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabel {
    api: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabel {
    topic: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    topic: String,
    error: String,
}

/// The listener's families, registered once per registry.
#[derive(Debug)]
pub(crate) struct KafkaMetrics {
    requests: Family<ApiLabel, Counter>,
    refusals: Family<ReasonLabel, Counter>,
    records: Family<TopicLabel, Counter>,
    errors: Family<ErrorLabels, Counter>,
    seconds: Family<TopicLabel, Histogram, fn() -> Histogram>,
    fetched: Family<TopicLabel, Counter>,
    fetch_lag: Family<TopicLabel, Gauge>,
    /// Connections open now.
    pub connections: Gauge,
}

fn latency() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

impl KafkaMetrics {
    pub(super) fn register(r: &mut Registry) -> KafkaMetrics {
        let m = KafkaMetrics {
            requests: Family::default(),
            refusals: Family::default(),
            records: Family::default(),
            errors: Family::default(),
            seconds: Family::new_with_constructor(latency),
            fetched: Family::default(),
            fetch_lag: Family::default(),
            connections: Gauge::default(),
        };
        r.register("deltabus_kafka_requests", "Kafka-protocol requests taken, by API", m.requests.clone());
        r.register(
            "deltabus_kafka_refusals",
            "Kafka-protocol connections closed or requests refused, by reason",
            m.refusals.clone(),
        );
        r.register("deltabus_kafka_produced_records", "Records committed from Produce requests", m.records.clone());
        r.register(
            "deltabus_kafka_produce_errors",
            "Produce batches answered with an error, by code",
            m.errors.clone(),
        );
        r.register("deltabus_kafka_produce_seconds", "Time from a Produce request to its answer", m.seconds.clone());
        r.register("deltabus_kafka_fetched_records", "Change records answered to Fetch requests", m.fetched.clone());
        r.register(
            "deltabus_kafka_fetch_lag_versions",
            "Commits between where the latest Fetch of a topic's partition ended and the end of its feed",
            m.fetch_lag.clone(),
        );
        r.register("deltabus_kafka_connections", "Kafka-protocol connections open", m.connections.clone());
        m
    }

    pub(crate) fn request(&self, api: ApiKey) {
        self.requests.get_or_create(&ApiLabel { api: format!("{api:?}") }).inc();
    }

    /// Counts a refusal: `bad_frame`, `bad_request`, `authentication`, `overloaded`.
    pub(crate) fn refused(&self, reason: &'static str) {
        self.refusals.get_or_create(&ReasonLabel { reason: reason.into() }).inc();
    }

    /// Counts a committed batch of `records` on `topic` (0: a retry already in the table).
    pub(crate) fn produced(&self, topic: &str, records: u64, seconds: f64) {
        let l = TopicLabel { topic: topic.into() };
        self.records.get_or_create(&l).inc_by(records);
        self.seconds.get_or_create(&l).observe(seconds);
    }

    /// Counts a partition's fetch: `records` answered, and `lag` commits left after them.
    pub(crate) fn fetched(&self, topic: &str, records: u64, lag: u64) {
        let l = TopicLabel { topic: topic.into() };
        self.fetched.get_or_create(&l).inc_by(records);
        self.fetch_lag.get_or_create(&l).set(i64::try_from(lag).unwrap_or(i64::MAX));
    }

    pub(crate) fn produce_failed(&self, topic: &str, error: ResponseError) {
        self.errors.get_or_create(&ErrorLabels { topic: topic.into(), error: format!("{error:?}") }).inc();
    }
}
