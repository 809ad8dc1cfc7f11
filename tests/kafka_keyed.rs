//! Keyed served tables (`key_columns`): Kafka records upsert by key and tombstones delete,
//! exactly once through a kill -9 of the server and 3% store faults, read alike by deltabus and
//! the reference reader; push requests to the same table upsert too.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::processes::{serve as spawn, terminate, wait_for_client};
use crate::support::python::python;
use crate::support::{deltabus, kernel_oracle, Rng};

/// An idempotent librdkafka producer (Python's confluent-kafka): three rounds of every key,
/// then a tombstone for every fifth key and a new value for every seventh (after its
/// tombstone where both apply).
const KEYED_PRODUCER: &str = r#"
import json, sys
from confluent_kafka import Producer
bootstrap, n = sys.argv[1], int(sys.argv[2])
errors, delivered = [], [0]
def cb(err, msg):
    if err is None: delivered[0] += 1
    else: errors.append(str(err))
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
              "compression.type": "zstd", "message.timeout.ms": 300000, "retry.backoff.ms": 50,
              "retry.backoff.max.ms": 500, "reconnect.backoff.max.ms": 500})
sent = [0]
def send(k, v):
    while True:
        try:
            p.produce("events", key=str(k), value=v, on_delivery=cb); break
        except BufferError:
            p.poll(0.05)
    p.poll(0)
    sent[0] += 1
for r in range(3):
    for i in range(n):
        send(i, json.dumps({"id": i, "v": "ü%d-%d" % (i, r)}))
    p.flush(300)
for i in range(n):
    if i % 5 == 0: send(i, None)
    if i % 7 == 0: send(i, json.dumps({"id": i, "v": "again"}))
left = p.flush(300)
print(json.dumps({"delivered": delivered[0], "sent": sent[0], "errors": errors[:5], "left": left}))
"#;

/// `id → v` of the table's rows; every id once.
fn rows_by_id(jsonl: &[u8]) -> BTreeMap<i64, String> {
    let mut out = BTreeMap::new();
    for line in String::from_utf8_lossy(jsonl).lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let id = v["id"].as_i64().unwrap();
        assert!(out.insert(id, v["v"].as_str().unwrap_or_default().to_string()).is_none(), "id {id} twice");
    }
    out
}

/// The HTTP address the server prints once it listens.
fn http_address(child: &mut Child) -> String {
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    v["listening"].as_str().unwrap().to_string()
}

#[test]
fn keyed_topics_upsert_and_delete_by_key_exactly_once_through_kill_and_faults() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = dir.path().join("serve.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ncommit_window = \"40ms\"\n\
             [server.tables.events]\ntable = {:?}\ncreate = true\nkey_columns = [\"id\"]\n\
             [server.kafka]\nlisten = \"127.0.0.1:{port}\"\n\
             [server.kafka.topics.events]\ntable = \"events\"\npartitions = 3\n",
            events.display().to_string()
        ),
    )
    .unwrap();
    let log = dir.path().join("server.log");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    eprintln!("seed {seed}");
    let mut rng = Rng(seed | 1);
    let mut server = spawn(&cfg, &log, Some(rng.next() % 10_000));
    let n = 2000;
    let mut client = Command::new(&py)
        .arg("-c")
        .arg(KEYED_PRODUCER)
        .args([format!("127.0.0.1:{port}"), n.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The kill comes once the server has committed twice (progress, not time), while the
    // producer still has records to send.
    let version = |v: u64| events.join(format!("_delta_log/{v:020}.json")).exists();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !version(2) {
        assert!(Instant::now() < deadline, "the server never committed version 2");
        assert!(client.try_wait().unwrap().is_none(), "the producer finished before the kill");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A pause about time: the kill's moment is what the test varies.
    std::thread::sleep(Duration::from_millis(rng.next() % 100));
    server.kill().unwrap();
    server.wait().unwrap();
    let server = spawn(&cfg, &log, Some(rng.next() % 10_000));
    let (status, out, err) = wait_for_client(client, "the producer");
    assert!(status.success(), "producer: {err}\nserver log:\n{}", std::fs::read_to_string(&log).unwrap());
    let summary: Value = serde_json::from_str(out.trim().lines().last().unwrap()).unwrap();
    assert_eq!(summary["delivered"], summary["sent"], "{summary}");
    let (status, _) = terminate(server);
    assert!(status.success(), "a stopped server exits 0");

    // Push requests to the same table upsert too.
    let mut server = spawn(&cfg, &log, None);
    let http = http_address(&mut server);
    let body = "{\"id\":1,\"v\":\"pushed\"}\n{\"id\":999999,\"v\":\"新\"}\n";
    let (code, text) = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let answer = reqwest::Client::new()
            .post(format!("http://{http}/v1/tables/events/records"))
            .header("Producer-Id", "pusher")
            .header("Producer-Sequence", "0")
            .body(body)
            .send()
            .await
            .unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    });
    assert_eq!(code, 200, "{text}");
    let (status, _) = terminate(server);
    assert!(status.success());

    let mut expected: BTreeMap<i64, String> = BTreeMap::new();
    for i in 0..n {
        if i % 7 == 0 {
            expected.insert(i, "again".into());
        } else if i % 5 != 0 {
            expected.insert(i, format!("ü{i}-2"));
        }
    }
    expected.insert(1, "pushed".into());
    expected.insert(999_999, "新".into());
    let table = events.to_string_lossy().into_owned();
    let cat = deltabus(&["cat", &table]);
    assert!(cat.status.success(), "{}", String::from_utf8_lossy(&cat.stderr));
    assert_eq!(rows_by_id(&cat.stdout), expected, "every key holds its last value, deleted keys none");
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(rows_by_id(&out.stdout), expected, "as the reference reader reads it");
    }
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(!logs.contains("panicked"), "{logs}");
}
