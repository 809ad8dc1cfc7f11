//! Kafka groundwork against a real Kafka protocol peer (librdkafka's in-process mock
//! cluster): messages produced to a topic are consumed through a consumer group and decoded by
//! the payload decoder, good records into Arrow rows and bad ones into dead letters with their
//! coordinates.

use std::sync::Arc;
use std::time::Duration;

use arrow::datatypes::{DataType, Field, Schema};
use deltabus::common::record::RawRecord;
use deltabus::decode::json::PayloadDecoder;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;

#[test]
fn consumes_and_decodes_from_the_mock_cluster() {
    // Held until the runtime and the clients in `run` are gone (see `native_clients_lock`).
    let _guard = crate::support::native_clients_lock();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("events", 2, 1).expect("topic");
    let producer: FutureProducer =
        ClientConfig::new().set("bootstrap.servers", cluster.bootstrap_servers()).create().expect("producer");
    for i in 0..100 {
        let payload = if i % 25 == 7 { "{broken".to_string() } else { format!(r#"{{"id":{i},"name":"n{i}"}}"#) };
        let key = format!("k{i}");
        producer
            .send(FutureRecord::to("events").key(&key).payload(&payload).partition(i % 2), Duration::from_secs(5))
            .await
            .expect("produce");
    }
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", cluster.bootstrap_servers())
        .set("group.id", "deltabus-test")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    consumer.subscribe(&["events"]).expect("subscribe");
    let mut owned = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while owned.len() < 100 {
        let msg =
            tokio::time::timeout_at(deadline, consumer.recv()).await.expect("messages within 30 s").expect("message");
        owned.push((msg.partition(), msg.offset(), msg.key().map(<[u8]>::to_vec), msg.payload().map(<[u8]>::to_vec)));
    }
    let records: Vec<RawRecord<'_>> = owned
        .iter()
        .map(|(p, o, k, v)| RawRecord {
            topic: "events",
            partition: *p,
            offset: *o,
            timestamp_ms: None,
            key: k.as_deref(),
            payload: v.as_deref(),
        })
        .collect();
    let schema =
        Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), Field::new("name", DataType::Utf8, true)]));
    let decoded = PayloadDecoder::new(schema, 1 << 20).decode(&records);
    assert_eq!(decoded.batch.expect("rows").num_rows(), 96);
    assert_eq!(decoded.dead_letters.len(), 4);
    for letter in &decoded.dead_letters {
        assert_eq!(letter.payload.as_deref(), Some(&b"{broken"[..]));
        assert!(letter.key.as_deref().is_some_and(|k| k.starts_with(b"k")));
    }
}
