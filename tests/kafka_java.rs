//! The Java Kafka client (`kafka-clients` 4.4, what most producers and consumers run) against
//! the Kafka-protocol listener, with the same program against Apache Kafka as the reference
//! (`tools/kafka-broker/src/KafkaProbe.java`, built by scripts/setup.sh):
//! - idempotent producers (`acks=all`) under every compression codec (none, gzip, snappy, lz4,
//!   zstd) land each record once, while 3% of the listener's store calls fail, and Spark reads
//!   the table as deltabus does;
//! - a consumer reads back, message for message, what the same consumer reads from the broker;
//! - a transactional producer fails at `initTransactions` (transactions are not offered), where
//!   the broker commits its transaction;
//! - a consumer committing after each poll, killed with -9 and started again, resumes from its
//!   commit on the listener as on the broker, and the two runs together read every record.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::support::processes::{serve, terminate};
use crate::support::{emulator, ids, kafka_java};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const EACH: i64 = 200;

fn probe(java: &Path) -> Command {
    let mut c = Command::new("java");
    let cp = format!("{0}/classes:{0}/lib/*", java.display());
    c.args(["-Dfile.encoding=UTF-8", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", &cp, "KafkaProbe"]);
    c
}

/// Runs `commands` in one probe JVM: each command's output lines, parsed, in order. Every
/// command must succeed.
fn run_commands(java: &Path, commands: &[String]) -> Vec<Vec<Value>> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("commands");
    std::fs::write(&input, commands.join("\n") + "\n").unwrap();
    let out = probe(java).stdin(std::fs::File::open(&input).unwrap()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Java probe failed: {err}");
    let mut answers = vec![Vec::new()];
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("probe printed {line:?} ({e})\n{err}"));
        if let Some(rc) = v.get("end") {
            let done = answers.len() - 1;
            assert_eq!(rc, 0, "{}: {:?}\n{err}", commands[done], answers[done]);
            answers.push(Vec::new());
        } else {
            answers.last_mut().unwrap().push(v);
        }
    }
    answers.pop();
    assert_eq!(answers.len(), commands.len(), "every command answered\n{err}");
    answers
}

/// The records among a consumer's lines: offset, key and value (parsed; the change feed's own
/// columns, `_change_type` and the commit's version and time, left out).
fn records(lines: &[Value]) -> Vec<(i64, Value, Value)> {
    let record = |l: &Value| {
        let mut value: Value = serde_json::from_str(l["v"].as_str()?).ok()?;
        value.as_object_mut()?.retain(|k, _| !k.starts_with('_'));
        Some((l["o"].as_i64()?, l["k"].clone(), value))
    };
    lines.iter().filter(|l| l.get("o").is_some()).map(|l| record(l).unwrap_or_else(|| panic!("{l}"))).collect()
}

fn values(records: &[(i64, Value, Value)]) -> Vec<Value> {
    records.iter().map(|(_, _, v)| v.clone()).collect()
}

/// `deltabus serve` with table `events` served as a one-partition topic, store calls failing
/// at 3% when `faults`; the server and its Kafka address.
fn serve_events(dir: &Path, faults: bool) -> (Child, String) {
    let cfg = dir.join("deltabus.toml");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\ncommit_window = \"30ms\"\n[server.tables.events]\ntable = {:?}\n\
         create = true\n[server.kafka]\nlisten = \"127.0.0.1:0\"\n[server.kafka.topics.events]\ntable = \"events\"\n",
        dir.join("events")
    );
    std::fs::write(&cfg, text).unwrap();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    eprintln!("fault seed {seed}");
    let mut server = serve(&cfg, &dir.join("serve.log"), faults.then_some(seed));
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let announced: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("serve printed {first:?} ({e})"));
    (server, announced["kafka"].as_str().expect("the Kafka listener's address").to_string())
}

fn expected(range: std::ops::Range<i64>, codec: impl Fn(i64) -> &'static str) -> Vec<Value> {
    range.map(|id| json!({"id": id, "name": format!("ü-名-{id}"), "codec": codec(id)})).collect()
}

#[test]
fn java_producers_under_every_codec_land_once_and_read_back_as_from_apache_kafka() {
    let Some(java) = kafka_java() else { return };
    let Some(brokers) = emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (server, door) = serve_events(dir.path(), true);
    let topic = format!("java-{}", uuid::Uuid::new_v4().simple());
    let group = format!("etl-{}", uuid::Uuid::new_v4().simple());
    let mut commands = Vec::new();
    for (i, codec) in CODECS.iter().enumerate() {
        for target in [format!("{door} events"), format!("{brokers} {topic}")] {
            commands.push(format!("produce {target} {} {EACH} {codec}", i as i64 * EACH));
        }
    }
    commands.push(format!("consume {door} events {group} 500"));
    commands.push(format!("consume {brokers} {topic} {group} 500"));
    // A transactional producer: refused at once by the listener, committed by the broker.
    commands.push(format!("transact {door} events"));
    commands.push(format!("transact {brokers} {topic}-tx"));
    let answers = run_commands(&java, &commands);
    let refused = answers[12][0]["error"].as_str().unwrap();
    assert!(refused.starts_with("TransactionalIdAuthorizationException"), "{refused}");
    assert_eq!(answers[13], [json!({"error": ""})], "the broker's transaction");
    for (command, answer) in commands.iter().zip(&answers).take(2 * CODECS.len()) {
        assert_eq!(answer, &[json!({"acked": EACH, "failed": 0, "error": ""})], "{command}");
    }
    let (from_door, from_broker) = (records(&answers[10]), records(&answers[11]));
    let all = 0..EACH * CODECS.len() as i64;
    assert_eq!(values(&from_broker), expected(all.clone(), |id| CODECS[(id / EACH) as usize]), "the reference");
    assert_eq!(values(&from_door), values(&from_broker), "the listener's feed, message for message");
    let log = || std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
    let (status, _) = terminate(server);
    assert!(status.success(), "serve stops cleanly\n{}", log());
    let table = dir.path().join("events").to_string_lossy().into_owned();
    assert_eq!(ids(&table), all.collect::<Vec<_>>(), "each record once");
    // Spark reads the table the producers wrote through the listener as deltabus does.
    crate::support::spark::spark_reads_as_deltabus(&table);
}

/// Consumes `topic` with a consumer committing after each poll of 37 records, kills it with
/// -9 once it printed a commit, and starts it again: the records the two runs read together,
/// each once, after checking that the second run began at the first one's commit.
fn killed_and_resumed(java: &Path, bootstrap: &str, topic: &str, group: &str) -> Vec<(i64, Value, Value)> {
    let mut first = probe(java)
        .args(["consume", bootstrap, topic, group, "37"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(first.stdout.take().unwrap()).lines();
    let mut lines = Vec::new();
    for line in out.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let committed = v.get("committed").is_some();
        lines.push(v);
        if committed {
            break;
        }
    }
    first.kill().unwrap();
    first.wait().unwrap();
    // What it printed before it died.
    lines.extend(out.map_while(Result::ok).filter_map(|l| serde_json::from_str(&l).ok()));
    let committed = lines.iter().rev().find_map(|l| l["committed"]["0"].as_i64()).expect("a commit before the kill");
    let before = records(&lines);

    let second = probe(java).args(["consume", bootstrap, topic, group, "37"]).output().unwrap();
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    let lines: Vec<Value> =
        String::from_utf8(second.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.last(), Some(&json!({"done": true})));
    let after = records(&lines);
    let last_read = before.last().map(|r| r.0).unwrap_or(-1);
    let resumed_at = after.first().map_or(i64::MAX, |r| r.0);
    assert!(
        after.is_empty() || (committed <= resumed_at && resumed_at <= last_read + 1),
        "resumed at {resumed_at}: committed {committed}, read up to {last_read}"
    );
    before.into_iter().filter(|r| r.0 < resumed_at).chain(after).collect()
}

#[test]
fn a_java_consumer_killed_with_9_resumes_from_its_commit_on_the_listener_as_on_apache_kafka() {
    let Some(java) = kafka_java() else { return };
    let Some(brokers) = emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (server, door) = serve_events(dir.path(), false);
    let topic = format!("resume-{}", uuid::Uuid::new_v4().simple());
    let group = format!("etl-{}", uuid::Uuid::new_v4().simple());
    const N: i64 = 1_000;
    run_commands(&java, &[format!("produce {door} events 0 {N} lz4"), format!("produce {brokers} {topic} 0 {N} lz4")]);
    let from_door = killed_and_resumed(&java, &door, "events", &group);
    let from_broker = killed_and_resumed(&java, &brokers, &topic, &group);
    assert_eq!(values(&from_broker), expected(0..N, |_| "lz4"), "the reference");
    assert_eq!(values(&from_door), values(&from_broker), "the listener's feed, message for message");
    let (status, _) = terminate(server);
    assert!(status.success());
}
