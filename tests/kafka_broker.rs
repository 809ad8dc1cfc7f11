//! Against Apache Kafka (the broker users run, started by scripts/test.sh): records the broker
//! really deletes before a pipeline ingested them. With `fail_on_data_loss` (the default) the
//! pipeline stops naming the partition and the offsets lost, and the table keeps what it had;
//! with `fail_on_data_loss = false` it skips to the broker's earliest offset and goes on,
//! each record it could still read landing once.

use std::process::Output;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

use crate::support::{deltabus, ids};

fn ingest(brokers: &str, topic: &str, table: &str) -> Output {
    let flags = ["--app-id", "lossy", "--create", "--until-end", "--flush-interval", "200ms"];
    deltabus(&[&["ingest", topic, table, "--brokers", brokers][..], &flags[..]].concat())
}

async fn produce(p: &FutureProducer, topic: &str, ids: std::ops::Range<i64>) {
    for id in ids {
        let value = serde_json::json!({"id": id, "name": "ü"}).to_string();
        p.send(FutureRecord::<str, String>::to(topic).payload(&value), Duration::from_secs(30)).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn records_the_broker_deleted_before_ingestion_stop_or_are_skipped_as_configured() {
    let Some(brokers) = crate::support::emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events").to_string_lossy().into_owned();
    let topic = format!("lossy-{}", uuid::Uuid::new_v4().simple());
    let admin: AdminClient<_> = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    let created =
        admin.create_topics([&NewTopic::new(&topic, 1, TopicReplication::Fixed(1))], &AdminOptions::new()).await;
    assert!(created.unwrap().iter().all(Result::is_ok));
    let p: FutureProducer =
        ClientConfig::new().set("bootstrap.servers", &brokers).set("enable.idempotence", "true").create().unwrap();
    produce(&p, &topic, 0..10).await;
    let (b, t) = (brokers.clone(), topic.clone());
    let tab = table.clone();
    let first = tokio::task::spawn_blocking(move || ingest(&b, &t, &tab)).await.unwrap();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(ids(&table), (0..10).collect::<Vec<_>>());
    // Ten more, of which the broker deletes the first five before anyone read them.
    produce(&p, &topic, 10..20).await;
    let mut before = TopicPartitionList::new();
    before.add_partition_offset(&topic, 0, Offset::Offset(15)).unwrap();
    let deleted = admin.delete_records(&before, &AdminOptions::new()).await.unwrap();
    assert_eq!(deleted.elements()[0].offset(), Offset::Offset(15), "the broker's new earliest offset");

    let (b, t, tab) = (brokers.clone(), topic.clone(), table.clone());
    let stopped = tokio::task::spawn_blocking(move || ingest(&b, &t, &tab)).await.unwrap();
    assert!(!stopped.status.success(), "data loss must stop the pipeline by default");
    let err = String::from_utf8_lossy(&stopped.stderr);
    assert!(
        err.contains(&format!("{topic}/0")) && err.contains("5 records") && err.contains("fail_on_data_loss"),
        "{err}"
    );
    assert_eq!(ids(&table), (0..10).collect::<Vec<_>>(), "nothing committed");

    // The same pipeline from a configuration file, told to skip what was lost.
    let config = dir.path().join("skip.toml");
    let toml = format!(
        "[pipelines.lossy]\ntable = {table:?}\napp_id = \"lossy\"\n[pipelines.lossy.kafka]\nbrokers = {brokers:?}\n\
         topic = {topic:?}\nstop_at_end = true\nfail_on_data_loss = false\n"
    );
    std::fs::write(&config, toml).unwrap();
    let c = config.to_string_lossy().into_owned();
    let skipped = tokio::task::spawn_blocking(move || deltabus(&["run", "--config", &c])).await.unwrap();
    assert!(skipped.status.success(), "{}", String::from_utf8_lossy(&skipped.stderr));
    assert!(String::from_utf8_lossy(&skipped.stderr).contains("data loss"), "the skip is logged");
    let want: Vec<i64> = (0..10).chain(15..20).collect();
    assert_eq!(ids(&table), want);
}
