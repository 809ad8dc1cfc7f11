//! Avro and Protobuf topics of the Kafka-protocol listener: records serialized by
//! `confluent-kafka`'s own `AvroSerializer` and `ProtobufSerializer` (schemas registered with a
//! registry speaking the Confluent REST API), produced by librdkafka into `deltabus serve`,
//! land with their writer schema's types; a second writer schema evolves the table; records
//! the registry cannot explain are dead letters (or refuse their batch, as the topic says);
//! keyed Protobuf topics upsert and delete by key through 3% store faults.

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::process::{Child, Command};

use serde_json::Value;

use crate::support::processes::terminate;
use crate::support::python::python;
use crate::support::{deltabus, kernel_oracle, run_json};

const V1: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"long"},
  {"name":"customer","type":"string"},
  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"day","type":{"type":"int","logicalType":"date"}},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"tags","type":{"type":"array","items":"string"}}]}"#;

fn v2() -> String {
    V1.replace(
        r#"{"name":"tags","type":{"type":"array","items":"string"}}]}"#,
        r#"{"name":"tags","type":{"type":"array","items":"string"}},{"name":"email","type":["null","string"],"default":null}]}"#,
    )
}

/// Idempotent Avro producer: 60 records of `V1`, 40 of `V2`, then a record framed with an id
/// the registry lacks and a plain JSON record; then, through a plain producer, a JSON record
/// and a good one to the strict topic. Prints what was delivered and the strict topic's
/// outcomes.
const AVRO_PRODUCER: &str = r#"
import json, sys, decimal, datetime
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import SerializationContext, MessageField
bootstrap, registry, v1, v2 = sys.argv[1:5]
sr = SchemaRegistryClient({"url": registry})
s1, s2 = AvroSerializer(sr, v1), AvroSerializer(sr, v2)
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
              "compression.type": "lz4"})
delivered, errors = [0], []
def cb(err, msg):
    if err is None: delivered[0] += 1
    else: errors.append(err.name())
ctx = SerializationContext("orders", MessageField.VALUE)
def order(i):
    return {"id": i, "customer": "ünïcode-%d" % (i % 7), "amount": decimal.Decimal(i) / 4,
            "day": datetime.date(2026, 11, 1 + i % 28),
            "ts": datetime.datetime(2026, 11, 30, 12, 0, i % 60, tzinfo=datetime.timezone.utc),
            "tags": ["t%d" % i, "ß"]}
for i in range(100):
    rec = order(i)
    if i >= 60:
        rec["email"] = "u%d@example.com" % i if i % 2 else None
    p.produce("orders", key=str(i), value=(s1 if i < 60 else s2)(rec, ctx), on_delivery=cb)
    p.poll(0)
p.produce("orders", value=b"\x00\x00\x00\x00\x63\x02", on_delivery=cb)
p.produce("orders", value=b'{"id": 1}', on_delivery=cb)
left = p.flush(120)
q = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0})
strict = []
def cb2(err, msg): strict.append(err.name() if err else "OK")
q.produce("strict", value=b'{"id": 1}', on_delivery=cb2); q.flush(60)
q.produce("strict", value=s1(order(7), SerializationContext("strict", MessageField.VALUE)), on_delivery=cb2)
q.flush(60)
print(json.dumps({"delivered": delivered[0], "errors": errors[:5], "left": left, "strict": strict}))
"#;

const ORDER_PROTO: &str =
    "syntax = \"proto3\";\npackage shop;\nmessage Order {\n  int64 id = 1;\n  string v = 2;\n  double amount = 3;\n}\n";

/// Idempotent Protobuf producer (`order_pb2` compiled from `ORDER_PROTO`): three rounds of every
/// key, then a tombstone (text key) for every fifth and a new value for every seventh.
const PROTO_PRODUCER: &str = r#"
import json, sys
sys.path.insert(0, sys.argv[4])
import os, grpc_tools
from grpc_tools import protoc
wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
assert protoc.main(["protoc", "-I" + sys.argv[4], "-I" + wkt, "--python_out=" + sys.argv[4], sys.argv[4] + "/order.proto"]) == 0
import order_pb2
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import SerializationContext, MessageField
bootstrap, registry, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ser = ProtobufSerializer(order_pb2.Order, SchemaRegistryClient({"url": registry}), {"use.deprecated.format": False})
ctx = SerializationContext("events", MessageField.VALUE)
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
              "compression.type": "zstd", "message.timeout.ms": 300000, "retry.backoff.ms": 50,
              "retry.backoff.max.ms": 500})
delivered, errors, sent = [0], [], [0]
def cb(err, msg):
    if err is None: delivered[0] += 1
    else: errors.append(err.str())
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
        send(i, ser(order_pb2.Order(id=i, v="ü%d-%d" % (i, r), amount=i / 4), ctx))
    p.flush(300)
for i in range(n):
    if i % 5 == 0: send(i, None)
    if i % 7 == 0: send(i, ser(order_pb2.Order(id=i, v="again", amount=0.5), ctx))
left = p.flush(300)
print(json.dumps({"delivered": delivered[0], "sent": sent[0], "errors": errors[:5], "left": left}))
"#;

fn spawn(cfg: &std::path::Path, log: &std::path::Path, faults: Option<u64>) -> Child {
    let mut child = crate::support::processes::serve(cfg, log, faults);
    // The server prints its HTTP address once it listens (the Kafka listener is up by then).
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "{line:?}");
    child
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn run_client(py: &str, script: &str, args: &[String], log: &std::path::Path) -> Value {
    let out = Command::new(py).arg("-c").arg(script).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "client: {}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(log).unwrap_or_default()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("null")).unwrap_or_else(|_| panic!("client printed {text}"))
}

fn rows(table: &str) -> Vec<Value> {
    let out = deltabus(&["cat", table]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn avro_topics_land_with_their_writer_types_evolve_and_dead_letter_what_the_registry_cannot_explain() {
    let Some(py) = python() else { return };
    let registry = crate::support::registry::start();
    let dir = tempfile::tempdir().unwrap();
    let (orders, strict) = (dir.path().join("orders"), dir.path().join("strict"));
    let port = free_port();
    let cfg = dir.path().join("serve.toml");
    std::fs::write(
        &cfg,
        format!(
            "[schema_registry]\nurl = {url:?}\n\
             [server]\nlisten = \"127.0.0.1:0\"\ncommit_window = \"20ms\"\n\
             [server.tables.orders]\ntable = {orders:?}\ncreate = true\nevolve_schema = true\ndead_letters = {dead:?}\n\
             [server.tables.strict]\ntable = {strict:?}\ncreate = true\n\
             [server.kafka]\nlisten = \"127.0.0.1:{port}\"\n\
             [server.kafka.topics.orders]\ntable = \"orders\"\nformat = \"avro\"\npartitions = 2\nbad_records = \"dead_letter\"\n\
             [server.kafka.topics.strict]\ntable = \"strict\"\nformat = \"avro\"\n",
            url = registry.url,
            orders = orders.display().to_string(),
            dead = dir.path().join("orders_dead").display().to_string(),
            strict = strict.display().to_string(),
        ),
    )
    .unwrap();
    let log = dir.path().join("server.log");
    let server = spawn(&cfg, &log, None);
    let args = [format!("127.0.0.1:{port}"), registry.url.clone(), V1.to_string(), v2()];
    let summary = run_client(&py, AVRO_PRODUCER, &args, &log);
    let (status, _) = terminate(server);
    assert!(status.success(), "{}", std::fs::read_to_string(&log).unwrap());
    assert_eq!(summary["delivered"], 102, "{summary}");
    assert_eq!(summary["strict"], serde_json::json!(["INVALID_RECORD", "OK"]), "{summary}");

    // The table has Avro's types, the second writer schema's column added.
    let orders = orders.to_string_lossy().into_owned();
    let describe = run_json(&["describe", &orders]);
    let types: BTreeMap<String, Value> = describe["schema"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), f["type"].clone()))
        .collect();
    assert_eq!(types["id"], "long");
    assert_eq!(types["amount"], "decimal(10,2)");
    assert_eq!(types["day"], "date");
    assert_eq!(types["ts"], "timestamp");
    assert_eq!(types["tags"]["elementType"], "string");
    assert_eq!(types["email"], "string", "added by the second writer schema: {types:?}");
    let got = rows(&orders);
    assert_eq!(got.len(), 100, "every good record once");
    let ids: std::collections::BTreeSet<i64> = got.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids.len(), 100);
    let r7 = got.iter().find(|r| r["id"] == 7).unwrap();
    assert_eq!(r7["customer"], "ünïcode-0");
    assert_eq!(r7["amount"], serde_json::json!(1.75));
    assert_eq!(r7["day"], "2026-11-08");
    assert!(r7["email"].is_null() && r7["ts"].as_str().unwrap().starts_with("2026-11-30T12:00:07"), "{r7}");
    assert_eq!(got.iter().find(|r| r["id"] == 77).unwrap()["email"], "u77@example.com");
    // The two records the registry cannot explain are dead letters saying why.
    let dead = rows(&dir.path().join("orders_dead").to_string_lossy());
    assert_eq!(dead.len(), 2, "{dead:?}");
    let reasons = serde_json::to_string(&dead).unwrap();
    for why in ["schema id 99 is not in the registry", "not in the Confluent wire format", "producer "] {
        assert!(reasons.contains(why), "{why}: {reasons}");
    }
    // The strict topic refused its bad record's batch and took the good one.
    let strict_rows = rows(&strict.to_string_lossy());
    assert_eq!(strict_rows.len(), 1);
    assert_eq!(strict_rows[0]["id"], 7);
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&orders).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ours = deltabus(&["cat", &orders]);
        crate::support::compare_rows(&ours.stdout, &out.stdout).unwrap();
    }
}

#[test]
fn keyed_protobuf_topics_upsert_and_delete_by_key_through_store_faults() {
    let Some(py) = python() else { return };
    let registry = crate::support::registry::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("order.proto"), ORDER_PROTO).unwrap();
    let events = dir.path().join("events");
    let port = free_port();
    let cfg = dir.path().join("serve.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ncommit_window = \"40ms\"\n\
             [server.tables.events]\ntable = {:?}\ncreate = true\nkey_columns = [\"id\"]\n\
             [server.kafka]\nlisten = \"127.0.0.1:{port}\"\n\
             [server.kafka.topics.events]\ntable = \"events\"\nformat = \"protobuf\"\npartitions = 3\n\
             schema_registry = {{ url = {:?} }}\n",
            events.display().to_string(),
            registry.url
        ),
    )
    .unwrap();
    let log = dir.path().join("server.log");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() % 10_000;
    eprintln!("fault seed {seed}");
    let server = spawn(&cfg, &log, Some(u64::from(seed)));
    let n = 1000;
    let args = [format!("127.0.0.1:{port}"), registry.url.clone(), n.to_string(), dir.path().display().to_string()];
    let summary = run_client(&py, PROTO_PRODUCER, &args, &log);
    let server_log = || std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(summary["delivered"], summary["sent"], "{summary}\nserver log:\n{}", server_log());
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
    let table = events.to_string_lossy().into_owned();
    let by_id = |jsonl: &[u8]| -> BTreeMap<i64, String> {
        let mut out = BTreeMap::new();
        for line in String::from_utf8_lossy(jsonl).lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).unwrap();
            let id = v["id"].as_i64().unwrap();
            assert!(out.insert(id, v["v"].as_str().unwrap_or_default().to_string()).is_none(), "id {id} twice");
        }
        out
    };
    let types = run_json(&["describe", &table]);
    assert!(types["schema"].to_string().contains(r#""name":"amount","type":"double""#), "{types}");
    let cat = deltabus(&["cat", &table]);
    assert_eq!(by_id(&cat.stdout), expected, "every key holds its last value, deleted keys none");
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(by_id(&out.stdout), expected, "as the reference reader reads it");
    }
    let mut logs = String::new();
    std::fs::File::open(&log).unwrap().read_to_string(&mut logs).unwrap();
    assert!(!logs.contains("panicked"), "{logs}");
}
