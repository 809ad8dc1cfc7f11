//! Against Apache Kafka (the broker users run, started by scripts/test.sh), what no stand-in
//! shows:
//! - records the broker really deletes before a pipeline ingested them, by DeleteRecords or by
//!   retention (`retention.ms`, the broker's retention check): with `fail_on_data_loss` (the
//!   default) the pipeline stops naming the partition and the offsets lost and the table keeps
//!   what it had; with `fail_on_data_loss = false` it skips to the broker's earliest offset and
//!   goes on, each record it could still read landing once;
//! - a compacted topic with tombstones into a keyed table, compacted by the broker's log
//!   cleaner between two runs (older values gone, gaps in the offsets): the table ends with
//!   each key's last value and without the deleted keys, as a pipeline reading the compacted
//!   topic from its start does, and Spark reads it (deletion vectors) as deltabus does;
//! - a SASL_SSL listener (SCRAM-SHA-512, a certificate from a test CA): a pipeline configured
//!   with its password from the environment reads it; a wrong password fails in one line, and
//!   so does the change feed into Kafka.

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, AlterConfig, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

use crate::support::{deltabus, emulator, ids, rows};

fn ingest(brokers: &str, topic: &str, table: &str, more: &[&str]) -> Output {
    let flags = ["--app-id", "lossy", "--create", "--until-end", "--flush-interval", "200ms"];
    deltabus(&[&["ingest", topic, table, "--brokers", brokers][..], &flags[..], more].concat())
}

async fn ingest_async(brokers: &str, topic: &str, table: &str, more: &[&str]) -> Output {
    let (b, t, tab) = (brokers.to_string(), topic.to_string(), table.to_string());
    let more: Vec<String> = more.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let more: Vec<&str> = more.iter().map(String::as_str).collect();
        ingest(&b, &t, &tab, &more)
    })
    .await
    .unwrap()
}

fn producer(config: &ClientConfig) -> FutureProducer {
    config.clone().set("enable.idempotence", "true").create().unwrap()
}

async fn produce(p: &FutureProducer, topic: &str, ids: std::ops::Range<i64>) {
    for id in ids {
        let value = serde_json::json!({"id": id, "name": "ü"}).to_string();
        p.send(FutureRecord::<str, String>::to(topic).payload(&value), Duration::from_secs(30)).await.unwrap();
    }
}

async fn create_topic(admin: &AdminClient<DefaultClientContext>, topic: &str, config: &[(&str, &str)]) {
    let mut t = NewTopic::new(topic, 1, TopicReplication::Fixed(1));
    for (k, v) in config {
        t = t.set(k, v);
    }
    let created = admin.create_topics([&t], &AdminOptions::new()).await.unwrap();
    assert!(created.iter().all(Result::is_ok), "{created:?}");
}

/// Waits (up to 60 s) until the broker's earliest offset of `topic`/0 is `want`.
fn wait_for_earliest(brokers: &str, topic: &str, want: i64) {
    let c: BaseConsumer = ClientConfig::new().set("bootstrap.servers", brokers).create().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (low, _) = c.fetch_watermarks(topic, 0, Duration::from_secs(10)).unwrap();
        if low == want {
            return;
        }
        assert!(Instant::now() < deadline, "the earliest offset of {topic} is {low}, not {want}, after 60 s");
        // The broker announces no retention run: its state is polled, at its check interval's pace.
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[derive(Clone, Copy, Debug)]
enum Loss {
    DeleteRecords,
    Retention,
}

/// Ten records ingested, five more the broker deletes before anyone read them (`how`), five
/// more after those.
async fn lost_records_stop_or_are_skipped(how: Loss) {
    let Some(brokers) = emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events").to_string_lossy().into_owned();
    let topic = format!("lossy-{}", uuid::Uuid::new_v4().simple());
    let client = ClientConfig::new().set("bootstrap.servers", &brokers).clone();
    let admin: AdminClient<_> = client.create().unwrap();
    create_topic(&admin, &topic, &[]).await;
    let p = producer(&client);
    produce(&p, &topic, 0..10).await;
    let first = ingest_async(&brokers, &topic, &table, &[]).await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(ids(&table), (0..10).collect::<Vec<_>>());
    produce(&p, &topic, 10..15).await;
    match how {
        Loss::DeleteRecords => {
            let mut before = TopicPartitionList::new();
            before.add_partition_offset(&topic, 0, Offset::Offset(15)).unwrap();
            let deleted = admin.delete_records(&before, &AdminOptions::new()).await.unwrap();
            assert_eq!(deleted.elements()[0].offset(), Offset::Offset(15), "the broker's new earliest offset");
        }
        Loss::Retention => {
            // Everything older than 300 ms goes at the broker's next retention check (every
            // second in scripts/test.sh's broker); then records are kept again.
            let set = |ms: &'static str| AlterConfig::new(ResourceSpecifier::Topic(&topic)).set("retention.ms", ms);
            admin.alter_configs([&set("300")], &AdminOptions::new()).await.unwrap();
            let (b, t) = (brokers.clone(), topic.clone());
            tokio::task::spawn_blocking(move || wait_for_earliest(&b, &t, 15)).await.unwrap();
            admin.alter_configs([&set("-1")], &AdminOptions::new()).await.unwrap();
        }
    }
    produce(&p, &topic, 15..20).await;

    let stopped = ingest_async(&brokers, &topic, &table, &[]).await;
    assert!(!stopped.status.success(), "data loss must stop the pipeline by default ({how:?})");
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

#[tokio::test(flavor = "multi_thread")]
async fn records_the_broker_deleted_before_ingestion_stop_or_are_skipped_as_configured() {
    lost_records_stop_or_are_skipped(Loss::DeleteRecords).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn records_retention_deleted_before_ingestion_stop_or_are_skipped_as_configured() {
    lost_records_stop_or_are_skipped(Loss::Retention).await;
}

const KEYS: i64 = 40;

/// Every record of `topic`/0 from its start: offset and key.
fn offsets_and_keys(brokers: &str, topic: &str) -> Vec<(i64, Option<String>)> {
    use rdkafka::Message;
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "compaction-check")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning).unwrap();
    c.assign(&tpl).unwrap();
    let (mut got, deadline) = (Vec::new(), Instant::now() + Duration::from_secs(60));
    loop {
        assert!(Instant::now() < deadline, "{topic} read to its end within 60 s");
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => got.push((m.offset(), m.key().map(|k| String::from_utf8_lossy(k).into_owned()))),
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => return got,
            Some(Err(e)) => panic!("{e}"),
            None => {}
        }
    }
}

/// Round `round` of every key (`id`, `v`), keyed by the id as text; `None` values are tombstones.
async fn produce_keyed(p: &FutureProducer, topic: &str, records: &[(i64, Option<String>)]) {
    for (id, value) in records {
        let key = id.to_string();
        let mut r = FutureRecord::<String, String>::to(topic).key(&key);
        if let Some(v) = value {
            r = r.payload(v);
        }
        p.send(r, Duration::from_secs(30)).await.unwrap();
    }
}

fn row(id: i64, v: &str) -> Option<String> {
    Some(serde_json::json!({"id": id, "v": v}).to_string())
}

/// `id → v` of a keyed table; each id once.
fn keyed(table: &str) -> BTreeMap<i64, String> {
    let mut out = BTreeMap::new();
    for r in rows(table) {
        let id = r["id"].as_i64().unwrap();
        assert!(out.insert(id, r["v"].as_str().unwrap().to_string()).is_none(), "id {id} twice in {table}");
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_topic_with_tombstones_lands_in_a_keyed_table_as_its_last_values() {
    let Some(brokers) = emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("keyed").to_string_lossy().into_owned();
    let fresh = dir.path().join("fresh").to_string_lossy().into_owned();
    let topic = format!("compacted-{}", uuid::Uuid::new_v4().simple());
    let client = ClientConfig::new().set("bootstrap.servers", &brokers).clone();
    let admin: AdminClient<_> = client.create().unwrap();
    // Segments roll every 100 ms (at the next record) and are cleaned as soon as the cleaner
    // looks (every second in scripts/test.sh's broker); tombstones stay for a day.
    let compacted = [
        ("cleanup.policy", "compact"),
        ("segment.ms", "100"),
        ("min.cleanable.dirty.ratio", "0.001"),
        ("min.compaction.lag.ms", "0"),
    ];
    create_topic(&admin, &topic, &compacted).await;
    let p = producer(&client);
    let round = |r: i64| (0..KEYS).map(move |id| (id, row(id, &format!("ü{id}-{r}")))).collect::<Vec<_>>();
    produce_keyed(&p, &topic, &round(0)).await;
    let keyed_flags = ["--upsert-keys", "id"];
    let first = ingest_async(&brokers, &topic, &table, &keyed_flags).await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(keyed(&table).len() as i64, KEYS);

    // Two more rounds, then a tombstone for every fifth key and a new value for every seventh
    // (after its tombstone where both apply).
    produce_keyed(&p, &topic, &round(1)).await;
    produce_keyed(&p, &topic, &round(2)).await;
    let mut last: Vec<(i64, Option<String>)> = Vec::new();
    for id in 0..KEYS {
        if id % 5 == 0 {
            last.push((id, None));
        }
        if id % 7 == 0 {
            last.push((id, row(id, "again")));
        }
    }
    produce_keyed(&p, &topic, &last).await;
    // A marker record at a time rolls the segment until the cleaner has compacted rounds 0-2:
    // key 1 (never deleted nor rewritten) is left once.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut markers = 0;
    loop {
        produce_keyed(&p, &topic, &[(1_000, row(1_000, &format!("marker {markers}")))]).await;
        markers += 1;
        let (b, t) = (brokers.clone(), topic.clone());
        let read = tokio::task::spawn_blocking(move || offsets_and_keys(&b, &t)).await.unwrap();
        if read.iter().filter(|(_, k)| k.as_deref() == Some("1")).count() == 1 {
            let end = read.last().unwrap().0 + 1;
            assert!((read.len() as i64) < end, "compaction leaves gaps in the offsets: {read:?}");
            break;
        }
        // No pause: producing the next marker and reading the topic again paces the loop.
        assert!(Instant::now() < deadline, "the broker did not compact {topic} within 90 s");
    }

    let mut want: BTreeMap<i64, String> = (0..KEYS).map(|id| (id, format!("ü{id}-2"))).collect();
    for (id, v) in &last {
        match v {
            None => want.remove(id),
            Some(_) => want.insert(*id, "again".into()),
        };
    }
    want.insert(1_000, format!("marker {}", markers - 1));
    // The first pipeline goes on from its position in the table, over the compacted offsets.
    let second = ingest_async(&brokers, &topic, &table, &keyed_flags).await;
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    assert_eq!(keyed(&table), want, "resumed over the compacted log");
    // A new pipeline reads the compacted topic from its start.
    let other = ingest_async(&brokers, &topic, &fresh, &keyed_flags).await;
    assert!(other.status.success(), "{}", String::from_utf8_lossy(&other.stderr));
    assert_eq!(keyed(&fresh), want, "read from the compacted start");
    // Spark reads the upserted table (deletion vectors) as deltabus does.
    crate::support::spark::spark_reads_as_deltabus(&table);
}

/// A pipeline over the broker's SASL_SSL listener (`scripts/test.sh` sets its address and the
/// test CA), its password from the environment.
fn secure_pipeline(dir: &std::path::Path, secure: &str, ca: &str, topic: &str, password: &str) -> Output {
    let table = dir.join("secure");
    let config = dir.join("secure.toml");
    let toml = format!(
        "[pipelines.secure]\ntable = {table:?}\napp_id = \"secure\"\ncreate = true\n\
         [pipelines.secure.kafka]\nbrokers = {secure:?}\ntopic = {topic:?}\nstop_at_end = true\nstall_timeout = \"20s\"\n\
         [pipelines.secure.kafka.properties]\n\"security.protocol\" = \"SASL_SSL\"\n\"sasl.mechanism\" = \"SCRAM-SHA-512\"\n\
         \"sasl.username\" = \"ingest\"\n\"sasl.password\" = \"${{KAFKA_PASSWORD}}\"\n\"ssl.ca.location\" = {ca:?}\n"
    );
    std::fs::write(&config, toml).unwrap();
    Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["run", "--config"])
        .arg(&config)
        .env("KAFKA_PASSWORD", password)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pipeline_reads_a_sasl_ssl_listener_and_a_wrong_password_fails_in_one_line() {
    let Some(secure) = emulator("DELTABUS_TEST_KAFKA_SECURE") else { return };
    let Some(ca) = emulator("DELTABUS_TEST_KAFKA_CA") else { return };
    let dir = tempfile::tempdir().unwrap();
    let topic = format!("secure-{}", uuid::Uuid::new_v4().simple());
    let client = ClientConfig::new()
        .set("bootstrap.servers", &secure)
        .set("security.protocol", "SASL_SSL")
        .set("sasl.mechanism", "SCRAM-SHA-256")
        .set("sasl.username", "tail")
        .set("sasl.password", "tail-secret")
        .set("ssl.ca.location", &ca)
        .clone();
    let admin: AdminClient<_> = client.create().unwrap();
    create_topic(&admin, &topic, &[]).await;
    produce(&producer(&client), &topic, 0..25).await;

    let (d, s, c, t) = (dir.path().to_owned(), secure.clone(), ca.clone(), topic.clone());
    let wrong = tokio::task::spawn_blocking(move || secure_pipeline(&d, &s, &c, &t, "not-the-password")).await.unwrap();
    assert!(!wrong.status.success(), "a wrong password fails the run");
    let err = String::from_utf8_lossy(&wrong.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.to_lowercase().contains("authentication"), "one line naming the cause: {err}");
    assert!(!err.contains("not-the-password"), "the password is never printed: {err}");

    let (d, t, s, c) = (dir.path().to_owned(), topic.clone(), secure.clone(), ca.clone());
    let ok = tokio::task::spawn_blocking(move || secure_pipeline(&d, &s, &c, &t, "ingest-secret")).await.unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let table = dir.path().join("secure").to_string_lossy().into_owned();
    assert_eq!(ids(&table), (0..25).collect::<Vec<_>>());

    // The change feed into Kafka with a wrong password: the same one line, not a transport error.
    let tail = tokio::task::spawn_blocking(move || {
        let security = [
            "security.protocol=SASL_SSL".to_string(),
            "sasl.mechanism=SCRAM-SHA-256".into(),
            "sasl.username=tail".into(),
            "sasl.password=not-the-password".into(),
            format!("ssl.ca.location={ca}"),
        ];
        let mut args = vec!["tail", &table, "--from", "0", "--to-topic", "changes", "--brokers", &secure];
        args.extend(["--follower-id", "secure"]);
        for p in &security {
            args.extend(["--kafka-property", p]);
        }
        deltabus(&args)
    })
    .await
    .unwrap();
    assert!(!tail.status.success());
    let err = String::from_utf8_lossy(&tail.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("refused") && last.to_lowercase().contains("authentication"), "{err}");
    assert!(!err.contains("not-the-password"), "the password is never printed: {err}");
}
