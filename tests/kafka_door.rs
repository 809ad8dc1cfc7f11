//! What the Kafka-protocol listener promises a client, tried with librdkafka (the rdkafka
//! crate) and Python's clients: tombstones delete by the key columns' types, or are refused;
//! a transactional producer is refused at once, not left retrying; SASL users listed in an
//! environment variable, one `user:password` line each, can all log in; committed offsets are
//! positions of the feed, and expire.

use std::time::Duration;

use deltabus::config::kafka::KafkaTopic;
use deltabus::config::server::ServerTable;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use serde_json::Value;

use crate::support::deltabus;
use crate::support::listener::{call, config, start};
use crate::support::python::python;

/// A librdkafka producer; idempotent unless a refusal is expected (an idempotent producer
/// takes a batch refused for good as a fatal loss of its sequence).
fn producer(kafka: &str, idempotent: bool) -> FutureProducer {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", kafka).set("message.timeout.ms", "60000").set("linger.ms", "0");
    if idempotent {
        c.set("enable.idempotence", "true");
    } else {
        c.set("retries", "0");
    }
    c.create().unwrap()
}

/// Sends `(key, value)` records to `topic` one at a time; each one's delivery result.
async fn send(p: &FutureProducer, topic: &str, records: &[(&str, Option<String>)]) -> Vec<Result<(), String>> {
    let mut out = Vec::new();
    for (key, value) in records {
        let mut r: FutureRecord<'_, str, String> = FutureRecord::to(topic).key(*key);
        if let Some(v) = value {
            r = r.payload(v);
        }
        out.push(p.send(r, Duration::from_secs(60)).await.map(|_| ()).map_err(|(e, _)| e.to_string()));
    }
    out
}

fn rows(table: &str) -> Vec<Value> {
    let out = deltabus(&["cat", table]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    rows.sort_by_key(|r| r["id"].to_string());
    rows
}

/// Record keys spelled like numbers, booleans or quoted JSON delete the rows whose key has
/// that value in the key column's type: on a string key the key's text, on a long key the
/// integer it names (`"1"`, `2.0`, `1e3`). A key that does not convert is refused
/// (INVALID_RECORD), never acknowledged as a delete of nothing.
#[tokio::test(flavor = "multi_thread")]
async fn tombstones_delete_by_the_key_columns_types() {
    let dir = tempfile::tempdir().unwrap();
    let texts = dir.path().join("texts").to_string_lossy().into_owned();
    let longs = dir.path().join("longs").to_string_lossy().into_owned();
    let mut cfg = config(&texts, 1);
    for (name, url) in [("events", &texts), ("longs", &longs)] {
        let t =
            ServerTable { table: url.clone(), create: true, key_columns: vec!["id".into()], ..ServerTable::default() };
        cfg.tables.insert(name.into(), t);
    }
    let kafka_cfg = cfg.kafka.as_mut().unwrap();
    kafka_cfg
        .topics
        .insert("longs".into(), KafkaTopic { table: "longs".into(), partitions: 1, ..KafkaTopic::default() });
    let (kafka, _http, _stop, _metrics) = start(cfg, &[]).await;
    let p = producer(&kafka, true);

    let keys = ["12345", "true", "1e3", "1.50", "-0", "null", "ünï ☃", "keep"];
    let upserts: Vec<(&str, Option<String>)> =
        keys.iter().map(|k| (*k, Some(serde_json::json!({"id": k, "v": 1}).to_string()))).collect();
    assert!(send(&p, "events", &upserts).await.iter().all(Result::is_ok));
    let tombstones: Vec<(&str, Option<String>)> = keys[..7].iter().map(|k| (*k, None)).collect();
    let sent = send(&p, "events", &tombstones).await;
    assert!(sent.iter().all(Result::is_ok), "{sent:?}");
    // A JSON string key names its text.
    let quoted = send(&p, "events", &[("\"keep\"", None)]).await;
    assert!(quoted[0].is_ok());
    assert_eq!(rows(&texts), Vec::<Value>::new(), "every string key deleted");
    // A keyed table the server creates takes deletion vectors, as keyed pipelines' tables do.
    let described = crate::support::run_json(&["describe", &texts]);
    assert_eq!(described["properties"]["delta.enableDeletionVectors"], "true", "{described}");

    let upserts: Vec<(&str, Option<String>)> =
        (1..=4).map(|i| ("x", Some(serde_json::json!({"id": i, "v": i}).to_string()))).collect();
    assert!(send(&p, "longs", &upserts).await.iter().all(Result::is_ok));
    let sent = send(&p, "longs", &[("\"1\"", None), ("2.0", None), ("{\"id\": 3}", None)]).await;
    assert!(sent.iter().all(Result::is_ok), "{sent:?}");
    for bad in ["2.5", "four", "99999999999999999999"] {
        let refused = send(&producer(&kafka, false), "longs", &[(bad, None)]).await;
        let why = refused[0].as_ref().expect_err(bad);
        assert!(why.contains("InvalidRecord") || why.contains("INVALID_RECORD"), "{bad}: {why}");
    }
    let left: Vec<i64> = rows(&longs).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(left, vec![4]);
}

/// A transactional producer gets the fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED at its first
/// step (finding its coordinator), from librdkafka and from kafka-python, instead of a
/// retriable answer that leaves `init_transactions` waiting for its timeout; the refusal is
/// counted.
#[tokio::test(flavor = "multi_thread")]
async fn transactional_producers_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let (kafka, _http, _stop, metrics) = start(config(&events, 1), &[]).await;
    let p: FutureProducer =
        ClientConfig::new().set("bootstrap.servers", &kafka).set("transactional.id", "orders-tx ☃").create().unwrap();
    let refused =
        tokio::task::spawn_blocking(move || p.init_transactions(Duration::from_secs(120)).unwrap_err()).await.unwrap();
    let code = refused.rdkafka_error_code();
    assert_eq!(code, Some(rdkafka::types::RDKafkaErrorCode::TransactionalIdAuthorizationFailed), "{refused}");
    if let Some(py) = python() {
        let script = r#"
import json, sys
from kafka import KafkaProducer
try:
    p = KafkaProducer(bootstrap_servers=sys.argv[1], transactional_id="tx-py", max_block_ms=120000)
    p.init_transactions()
    print(json.dumps({"error": None}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
"#;
        let out = std::process::Command::new(&py).arg("-c").arg(script).arg(&kafka).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(text.lines().last().unwrap_or("null")).unwrap_or(Value::Null);
        let why = v["error"]
            .as_str()
            .unwrap_or_else(|| panic!("kafka-python: {text} {}", String::from_utf8_lossy(&out.stderr)));
        assert!(why.contains("TransactionalIdAuthorizationFailed"), "{why}");
    }
    assert!(metrics.render().contains("reason=\"transactions\""));
    let log = std::path::Path::new(&events).join("_delta_log");
    assert!(std::fs::read_dir(&log).map_or(true, |mut d| d.next().is_none()), "nothing committed");
}

/// `users = ["env:VAR"]` whose variable holds several `user:password` lines (as the docs show)
/// lets each of those users log in, and nobody else.
#[tokio::test(flavor = "multi_thread")]
async fn every_user_of_an_environment_list_logs_in() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut cfg = config(&events, 1);
    cfg.kafka.as_mut().unwrap().users = vec!["env:KAFKA_USERS".into()];
    cfg.kafka.as_mut().unwrap().plain_without_tls = true;
    let users = "# producers\nalice:pw-1\n\n  bob:pâss:wörd  \n";
    let (kafka, _http, _stop, _metrics) = start(cfg, &[("KAFKA_USERS", users)]).await;
    let script = r#"
import json, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.username": sys.argv[2], "sasl.password": sys.argv[3], "enable.idempotence": True,
              "message.timeout.ms": 8000})
errors = []
p.produce("events", value=json.dumps({"id": int(sys.argv[4])}), on_delivery=lambda e, m: errors.append(str(e)) if e else None)
p.flush(10)
print(json.dumps({"errors": errors}))
"#;
    let run = |user: &str, password: &str, id: i64| {
        let out = std::process::Command::new(&py)
            .arg("-c")
            .arg(script)
            .args([kafka.as_str(), user, password, &id.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["errors"].as_array().unwrap().len()
    };
    assert_eq!(run("alice", "pw-1", 1), 0);
    assert_eq!(run("bob", "pâss:wörd", 2), 0);
    assert_eq!(run("bob", "pw-1", 3), 1, "another user's password");
    assert_eq!(run("carol", "x", 4), 1);
    let ids: Vec<i64> = rows(&events).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, vec![1, 2]);
}

/// OffsetCommit takes only positions of the feed: a partition the topic does not have is
/// UNKNOWN_TOPIC_OR_PARTITION and an offset past the feed's end (or negative)
/// OFFSET_OUT_OF_RANGE, and neither is registered; a group's registration expires
/// `offsets_retention` after its last commit, and then holds VACUUM back no more.
#[tokio::test(flavor = "multi_thread")]
async fn offset_commits_are_positions_of_the_feed_and_expire() {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    use kafka_protocol::messages::{
        ApiKey, BrokerId, GroupId, ListOffsetsRequest, ListOffsetsResponse, OffsetCommitRequest, OffsetCommitResponse,
        TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut cfg = config(&events, 3);
    cfg.kafka.as_mut().unwrap().offsets_retention = deltabus::common::units::HumanDuration(Duration::from_millis(300));
    let (kafka, _http, _stop, _metrics) = start(cfg, &[]).await;
    let p = producer(&kafka, true);
    let sent = send(&p, "events", &[("k", Some("{\"id\":1}".into())), ("k", Some("{\"id\":2}".into()))]).await;
    assert!(sent.iter().all(Result::is_ok));
    let mut s = tokio::net::TcpStream::connect(&kafka).await.unwrap();
    let commit = |partition: i32, offset: i64| {
        OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("billing ☃")))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("events")))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(partition)
                    .with_committed_offset(offset)])])
    };
    let code = |r: OffsetCommitResponse| r.topics[0].partitions[0].error_code;
    // The feed's end: the first row of the next commit (a position is version << 24 | row).
    let latest = crate::support::run_json(&["describe", &events])["version"].as_i64().unwrap();
    let end = (latest + 1) << 24;
    for (partition, offset, want) in [(9, 0, 3), (-1, 0, 3), (0, end + (1 << 24), 1), (0, end + 1, 1), (0, -5, 1)] {
        let r: OffsetCommitResponse = call(&mut s, ApiKey::OffsetCommit, 8, &commit(partition, offset)).await;
        assert_eq!(code(r), want, "partition {partition} offset {offset}");
    }
    // ListOffsets by time answers the found commit's own time, not the time asked for.
    let asked =
        ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("events")))
            .with_partitions(vec![ListOffsetsPartition::default().with_partition_index(0).with_timestamp(1)])]);
    let r: ListOffsetsResponse = call(&mut s, ApiKey::ListOffsets, 4, &asked).await;
    let found = &r.topics[0].partitions[0];
    assert_eq!((found.error_code, found.offset), (0, 0), "{found:?}");
    assert!(found.timestamp > 1_000_000_000_000, "the commit's time, not 1: {found:?}");
    let followers = || crate::support::run_json(&["followers", &events]);
    assert_eq!(followers()["followers"], serde_json::json!([]), "nothing refused is registered");
    // The offset after the last row a partition has in the latest commit (what a consumer at
    // the end commits): the group is nothing behind, and holds no commit back.
    let past_last_row = (latest << 24) + 1000;
    let r: OffsetCommitResponse = call(&mut s, ApiKey::OffsetCommit, 8, &commit(1, past_last_row)).await;
    assert_eq!(code(r), 0, "end {end} latest {latest}");
    let listed = followers();
    let group = &listed["followers"][0];
    assert_eq!(group["kind"], "kafka-group", "{listed}");
    assert_eq!(group["versionsBehind"], 0, "{listed}");
    assert!(group["expiresAt"].as_i64().unwrap() > group["updatedAt"].as_i64().unwrap(), "{listed}");
    // Once expired, the registration holds nothing back (waits for the clock, not a sleep).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while followers()["followers"][0]["expired"] != true {
        assert!(std::time::Instant::now() < deadline, "never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let vacuum = crate::support::run_json(&["vacuum", &events, "--dry-run"]);
    assert_eq!(vacuum["followers"], serde_json::json!([]), "{vacuum}");
}

/// A record larger than `max_request` gets MESSAGE_TOO_LARGE, which librdkafka does not
/// retry, instead of a closed connection it retries until its timeout; nothing of it lands,
/// and the producer's next record does.
#[tokio::test(flavor = "multi_thread")]
async fn a_record_over_the_request_bound_is_too_large_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut cfg = config(&events, 1);
    cfg.kafka.as_mut().unwrap().max_request = deltabus::common::units::ByteSize(64 << 10);
    let (kafka, _http, _stop, metrics) = start(cfg, &[]).await;
    for idempotent in [false, true] {
        let p: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", &kafka)
            .set("enable.idempotence", idempotent.to_string())
            .set("compression.type", "none")
            .set("message.max.bytes", "1000000")
            .set("message.timeout.ms", "300000")
            .create()
            .unwrap();
        let big = serde_json::json!({"id": 1, "pad": "ü".repeat(60_000)}).to_string();
        let refused = p.send(FutureRecord::<str, String>::to("events").payload(&big), Duration::from_secs(300)).await;
        let (e, _) = refused.expect_err("too large");
        assert_eq!(e.rdkafka_error_code(), Some(rdkafka::types::RDKafkaErrorCode::MessageSizeTooLarge), "{e}");
        if !idempotent {
            let small = serde_json::json!({"id": 2}).to_string();
            p.send(FutureRecord::<str, String>::to("events").payload(&small), Duration::from_secs(60)).await.unwrap();
        }
    }
    let ids: Vec<i64> = rows(&events).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, vec![2]);
    assert!(metrics.render().contains("reason=\"too_large\""));
}
