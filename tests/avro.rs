//! Avro topics in the Confluent wire format: records encoded by an independent Avro library
//! (Python `fastavro`), writer schemas served by a registry speaking the Confluent REST API
//! (a small server here: no Java registry can be installed from the reachable package
//! registries), ingested into a table created from the first writer schema, a second writer
//! schema evolving it, bad records as dead letters with their reason, a registry outage waited
//! out without losing or dead-lettering anything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::Router;
use deltabus::config::pipeline::PipelineConfig;

const V1: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"long"},
  {"name":"customer","type":"string"},
  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"day","type":{"type":"int","logicalType":"date"}},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"tags","type":{"type":"array","items":"string"}},
  {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["NEW","PAID"]}},
  {"name":"note","type":["null","string"],"default":null}]}"#;

fn v2() -> String {
    V1.replace(
        r#"{"name":"note","type":["null","string"],"default":null}]}"#,
        r#"{"name":"note","type":["null","string"],"default":null},{"name":"email","type":["null","string"],"default":null}]}"#,
    )
}

type RegistryState = (Arc<HashMap<u32, serde_json::Value>>, Arc<AtomicUsize>);

/// Requests the registry answers with 503 before it works (an outage at start).
const OUTAGE: usize = 2;

/// A registry answering `GET /schemas/ids/{id}` with basic authentication, counting requests;
/// the first [`OUTAGE`] requests get 503.
async fn registry(answers: HashMap<u32, serde_json::Value>) -> (String, Arc<AtomicUsize>) {
    registry_with(answers, HashMap::new()).await
}

/// As [`registry`], also answering `GET /subjects/{subject}/versions/{version}` from
/// `subjects` (keyed `"<subject>/<version>"`, `latest` included).
async fn registry_with(
    answers: HashMap<u32, serde_json::Value>,
    subjects: HashMap<String, serde_json::Value>,
) -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let state = (Arc::new(answers), hits.clone());
    let subjects = Arc::new(subjects);
    async fn by_subject(
        State(subjects): State<Arc<HashMap<String, serde_json::Value>>>,
        Path((subject, version)): Path<(String, String)>,
    ) -> (StatusCode, String) {
        match subjects.get(&format!("{subject}/{version}")) {
            Some(answer) => (StatusCode::OK, answer.to_string()),
            None => (StatusCode::NOT_FOUND, r#"{"error_code":40401,"message":"Subject not found"}"#.into()),
        }
    }
    let subject_routes =
        Router::new().route("/subjects/{subject}/versions/{version}", get(by_subject)).with_state(subjects);
    async fn by_id(
        State((schemas, hits)): State<RegistryState>,
        Path(id): Path<u32>,
        headers: HeaderMap,
    ) -> (StatusCode, String) {
        if hits.fetch_add(1, Relaxed) < OUTAGE {
            return (StatusCode::SERVICE_UNAVAILABLE, "{}".into());
        }
        // "svc:secret" in base64.
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Basic c3ZjOnNlY3JldA==") {
            return (StatusCode::UNAUTHORIZED, "{}".into());
        }
        match schemas.get(&id) {
            Some(answer) => (StatusCode::OK, answer.to_string()),
            None => (StatusCode::NOT_FOUND, r#"{"error_code":40403,"message":"Schema not found"}"#.into()),
        }
    }
    let app = Router::new().route("/schemas/ids/{id}", get(by_id)).with_state(state).merge(subject_routes);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hits)
}

/// Produces `records` to a fresh topic of the mock cluster and runs a pipeline into `table`
/// (dead letters into `<table>_dead`; `configure` sets the format and registry) until every
/// record is a row or a dead letter; returns (rows committed, dead letters).
async fn ingest(records: &[Vec<u8>], table: &str, configure: impl FnOnce(&mut PipelineConfig)) -> (u64, u64) {
    let keyed: Vec<Keyed> = records.iter().map(|r| (None, Some(r.clone()))).collect();
    ingest_keyed(&keyed, table, configure).await
}

/// A record's key and payload, either absent.
type Keyed = (Option<Vec<u8>>, Option<Vec<u8>>);

/// As [`ingest`], for records with keys (and payloads that may be null).
async fn ingest_keyed(records: &[Keyed], table: &str, configure: impl FnOnce(&mut PipelineConfig)) -> (u64, u64) {
    let with: Vec<Headed> = records.iter().map(|r| (r.clone(), Vec::new())).collect();
    ingest_with_headers(&with, table, configure).await
}

/// A keyed record with its headers.
type Headed = (Keyed, Vec<(&'static str, Vec<u8>)>);

/// As [`ingest_keyed`], each record with headers.
async fn ingest_with_headers(
    records: &[Headed],
    table: &str,
    configure: impl FnOnce(&mut PipelineConfig),
) -> (u64, u64) {
    let cluster = rdkafka::mocking::MockCluster::new(1).unwrap();
    cluster.create_topic("orders", 1, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let producer: rdkafka::producer::FutureProducer =
        rdkafka::config::ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
    for ((key, payload), headers) in records {
        let mut rec = rdkafka::producer::FutureRecord::<[u8], [u8]>::to("orders");
        if let Some(k) = key {
            rec = rec.key(k.as_slice());
        }
        if let Some(p) = payload {
            rec = rec.payload(p.as_slice());
        }
        if !headers.is_empty() {
            let mut h = rdkafka::message::OwnedHeaders::new();
            for (name, value) in headers {
                h = h.insert(rdkafka::message::Header { key: name, value: Some(value.as_slice()) });
            }
            rec = rec.headers(h);
        }
        producer.send(rec, std::time::Duration::from_secs(10)).await.unwrap();
    }
    let mut p = crate::support::pipeline(&brokers, "orders", table);
    p.dead_letter.table = Some(format!("{table}_dead"));
    configure(&mut p);
    let total = records.len() as u64;
    let reports = crate::support::run_until(vec![p], None, move |m| {
        let p = m.pipeline("p0");
        p.rows_committed.get() + p.dead_letters.get() >= total
    })
    .await;
    drop(producer);
    drop(cluster);
    (reports["p0"].rows_committed, reports["p0"].dead_letters)
}

/// Each column's Delta type, as `describe` prints it.
fn column_types(table: &str) -> HashMap<String, serde_json::Value> {
    let describe = crate::support::run_json(&["describe", table]);
    describe["schema"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), f["type"].clone()))
        .collect()
}

/// The test registry's address with its credentials.
fn registry_at(url: String) -> deltabus::decode::registry::RegistryConfig {
    deltabus::decode::registry::RegistryConfig {
        url,
        username: Some("svc".into()),
        password: Some("secret".into()),
        ..Default::default()
    }
}

/// The Python with the test encoders (`fastavro`, `protobuf`, `grpcio-tools`).
fn python() -> Option<String> {
    crate::support::python()
}

/// Runs a Python script and returns what it printed.
fn run_script(py: &str, script: &str) -> String {
    let out = std::process::Command::new(py).arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Keyed ingestion by the `id` column, in `format` (`plain` or `debezium`).
fn upsert_by_id(format: &str) -> deltabus::config::UpsertConfig {
    deltabus::config::UpsertConfig {
        key_columns: vec!["id".into()],
        format: format.parse().unwrap(),
        op_field: None,
        index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
    }
}

/// Bytes from hex text.
fn unhex(h: &str) -> Vec<u8> {
    (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()
}

/// `<key hex> <payload hex or ->` as a keyed record.
fn keyed_line(l: &str) -> Keyed {
    let (k, v) = l.split_once(' ').unwrap();
    (Some(unhex(k)), (v != "-").then(|| unhex(v)))
}

/// What `body` prints: Python that can `import order_pb2, orderkey_pb2` (`ORDER_PROTO`,
/// `KEY_PROTO` compiled in `dir` first).
fn protobuf_script(py: &str, dir: &std::path::Path, body: &str) -> String {
    std::fs::write(dir.join("order.proto"), ORDER_PROTO).unwrap();
    std::fs::write(dir.join("orderkey.proto"), KEY_PROTO).unwrap();
    let prelude = protoc_prelude(&dir.display().to_string(), &["order.proto", "orderkey.proto"]);
    run_script(py, &format!("{prelude}{body}"))
}

/// Python that compiles `files` (`.proto` files in the directory `dir`) with `protoc` from
/// `grpcio-tools` and makes their classes importable; put first in a script.
fn protoc_prelude(dir: &str, files: &[&str]) -> String {
    format!(
        "import sys\nsys.path.insert(0, {dir:?})\nimport os, grpc_tools\nfrom grpc_tools import protoc\n\
         wkt = os.path.join(os.path.dirname(grpc_tools.__file__), \"_proto\")\n\
         for f in {files:?}:\n    \
         assert protoc.main([\"protoc\", \"-I\" + {dir:?}, \"-I\" + wkt, \"--python_out=\" + {dir:?}, {dir:?} + \"/\" + f]) == 0\n"
    )
}

/// Confluent-framed records from fastavro: 60 with schema 1, 40 with schema 2.
fn encoded(py: &str) -> Vec<Vec<u8>> {
    let script = format!(
        r#"
import io, json, struct, datetime, decimal
from fastavro import schemaless_writer, parse_schema
v1 = parse_schema(json.loads('''{V1}'''))
v2 = parse_schema(json.loads('''{v2}'''))
for i in range(100):
    s, sid = (v1, 1) if i < 60 else (v2, 2)
    rec = {{"id": i, "customer": "ünïcode-" + str(i % 7), "amount": decimal.Decimal(i) / 4,
           "day": datetime.date(2026, 11, 1 + i % 28),
           "ts": datetime.datetime(2026, 11, 30, 12, 0, i % 60, tzinfo=datetime.timezone.utc),
           "tags": ["a", str(i)], "kind": "PAID" if i % 2 else "NEW", "note": None if i % 3 else "n"}}
    if sid == 2:
        rec["email"] = "u%d@example.com" % i
    buf = io.BytesIO()
    buf.write(b"\x00" + struct.pack(">I", sid))
    schemaless_writer(buf, s, rec)
    print(buf.getvalue().hex())
"#,
        v2 = v2()
    );
    run_script(py, &script).lines().map(unhex).collect()
}

#[test]
fn confluent_avro_lands_with_its_types_and_evolves() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let hits = rt.block_on(ingest_avro(&py, &table));
    // The outage was waited out (no record became a dead letter for it); then each schema id
    // was asked once (1, 2 and the unknown 99).
    assert_eq!(hits, OUTAGE + 3);
    drop(rt);
    // librdkafka's threads end before the reference reader starts (see `native_clients_lock`).
    drop(guard);
    check_table(&py, &table);
}

/// Produces the records and ingests them; returns the registry's request count.
async fn ingest_avro(py: &str, table: &str) -> usize {
    let mut records = encoded(py);
    assert_eq!(records.len(), 100);
    // Three bad records: an id the registry lacks, a JSON payload, a truncated body.
    records.push([vec![0, 0, 0, 0, 99], records[0][5..].to_vec()].concat());
    records.push(br#"{"id":1}"#.to_vec());
    let mut cut = records[1].clone();
    cut.truncate(12);
    records.push(cut);
    let answers = HashMap::from([(1, serde_json::json!({ "schema": V1 })), (2, serde_json::json!({ "schema": v2() }))]);
    let (url, hits) = registry(answers).await;
    let landed = ingest(&records, table, |p| {
        p.kafka.format = "avro".into();
        p.kafka.max_record_bytes = "1MiB".parse().unwrap();
        p.evolve_schema = true;
        p.schema_registry = Some(registry_at(url));
    })
    .await;
    assert_eq!(landed, (100, 3));
    hits.load(Relaxed)
}

fn check_table(py: &str, table: &str) {
    // The table: Avro's types, the second schema's column added.
    let fields = column_types(table);
    assert_eq!(fields["id"], "long");
    assert_eq!(fields["amount"], "decimal(10,2)");
    assert_eq!(fields["day"], "date");
    assert_eq!(fields["ts"], "timestamp");
    assert_eq!(fields["kind"], "string");
    assert_eq!(fields["tags"]["elementType"], "string");
    assert_eq!(fields["email"], "string", "added by evolution: {fields:?}");
    let out = crate::support::deltabus(&["cat", table]);
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 100);
    let r7 = rows.iter().find(|r| r["id"] == 7).unwrap();
    assert_eq!(r7["customer"], "ünïcode-0");
    assert_eq!(r7["amount"], serde_json::json!(1.75));
    assert_eq!(r7["kind"], "PAID");
    assert!(r7["email"].is_null() && r7["ts"].as_str().unwrap().starts_with("2026-11-30T12:00:07"), "{r7}");
    let r77 = rows.iter().find(|r| r["id"] == 77).unwrap();
    assert_eq!(r77["email"], "u77@example.com");
    // Dead letters say why.
    let out = crate::support::deltabus(&["cat", &format!("{table}_dead")]);
    let reasons = String::from_utf8_lossy(&out.stdout).to_string();
    for why in ["schema id 99 is not in the registry", "not in the Confluent wire format", "Avro body"] {
        assert!(reasons.contains(why), "{why}: {reasons}");
    }
    // The reference reader agrees on the rows and types.
    let script = "import sys\nfrom deltalake import DeltaTable\nt = DeltaTable(sys.argv[1]).to_pyarrow_table()\n\
                  print(t.num_rows, t.schema.field('amount').type, t.schema.field('day').type, t.schema.field('ts').type)";
    let out = crate::support::run_python(py, script, &[std::ffi::OsStr::new(table)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(seen.starts_with("100 decimal128(10, 2) date32[day] timestamp[us, tz=UTC]"), "{seen}");
    kernel_reads_what_deltabus_reads(table);
}

/// kernel-oracle (delta-kernel-rs) reads the table's rows as `deltabus cat` does.
fn kernel_reads_what_deltabus_reads(table: &str) {
    let Some(oracle) = crate::support::kernel_oracle() else { return };
    let out = std::process::Command::new(oracle).arg("rows").arg(table).output().unwrap();
    assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
    let ours = crate::support::deltabus(&["cat", table]);
    assert!(ours.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        String::from_utf8_lossy(&ours.stdout).lines().count()
    );
    if let Err(e) = crate::support::compare_rows(&ours.stdout, &out.stdout) {
        panic!("kernel-oracle reads {table} differently: {e}");
    }
}

const ORDER_JSON_SCHEMA: &str = r#"{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object",
  "required":["id"],
  "properties":{"id":{"type":"integer"},"customer":{"type":["null","string"]},
    "at":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},
    "tags":{"type":"array","items":{"type":"string"}},"amount":{"type":"number"}}}"#;

/// `kafka.format = "json-schema"`: Confluent-framed JSON; the table takes the registry's JSON
/// Schema (types and required columns), not a sample; unframed payloads, unknown ids and
/// records the schema refuses are dead letters carrying their original bytes.
#[test]
fn confluent_json_schema_creates_the_table_from_the_registry_schema() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let answer = serde_json::json!({ "schema": ORDER_JSON_SCHEMA, "schemaType": "JSON" });
        let (url, _hits) = registry(HashMap::from([(7, answer)])).await;
        let frame = |id: u32, json: &str| [vec![0], id.to_be_bytes().to_vec(), json.as_bytes().to_vec()].concat();
        let mut records: Vec<Vec<u8>> = (0..50)
            .map(|i| {
                frame(
                    7,
                    &format!(
                        r#"{{"id":{i},"customer":"c{i}","at":"2026-11-30T10:00:{:02}Z","day":"2026-11-{:02}","tags":["x"],"amount":{i}.5}}"#,
                        i % 60,
                        1 + i % 28
                    ),
                )
            })
            .collect();
        records.push(br#"{"id":99}"#.to_vec()); // unframed
        records.push(frame(8, r#"{"id":98}"#)); // unknown id
        records.push(frame(7, r#"{"customer":"no id"}"#)); // id is required
        let landed = ingest(&records, &table, |p| {
            p.kafka.format = "json-schema".into();
            p.schema_registry = Some(registry_at(url));
        })
        .await;
        assert_eq!(landed, (50, 3));
    });
    drop(rt);
    let describe = crate::support::run_json(&["describe", &table]);
    let fields: HashMap<String, (serde_json::Value, bool)> = describe["schema"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), (f["type"].clone(), f["nullable"].as_bool().unwrap())))
        .collect();
    assert_eq!(fields["id"], (serde_json::json!("long"), false), "required in the JSON Schema");
    assert_eq!(fields["at"].0, "timestamp");
    assert_eq!(fields["day"].0, "date");
    assert_eq!(fields["amount"].0, "double");
    let out = crate::support::deltabus(&["cat", &format!("{table}_dead")]);
    let reasons = String::from_utf8_lossy(&out.stdout).to_string();
    for why in ["not in the Confluent wire format", "schema id 8 is not in the registry"] {
        assert!(reasons.contains(why), "{why}: {reasons}");
    }
    assert_eq!(reasons.lines().count(), 3, "{reasons}");
}

/// Topics without a registry: `kafka.avro_schema` names the one writer schema, and every
/// payload is a plain Avro datum of it (fastavro's schemaless encoding).
#[test]
fn plain_avro_datums_with_a_configured_schema() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    // The first 60 records are schema 1: without their 5-byte frame they are plain datums.
    let mut records: Vec<Vec<u8>> = encoded(&py).into_iter().take(60).map(|r| r[5..].to_vec()).collect();
    records.push(vec![0x02]); // a datum cut short
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let landed = rt.block_on(ingest(&records, &table, |p| {
        p.kafka.format = "avro".into();
        p.kafka.avro_schema = Some(V1.to_string());
    }));
    assert_eq!(landed, (60, 1));
    drop(rt);
    let describe = crate::support::run_json(&["describe", &table]);
    let types: Vec<String> =
        describe["schema"]["fields"].as_array().unwrap().iter().map(|f| f["type"].to_string()).collect();
    assert!(types.contains(&"\"decimal(10,2)\"".to_string()) && types.contains(&"\"date\"".to_string()), "{types:?}");
}

/// `variant_columns` on an Avro topic: the named writer fields land as `variant` whatever
/// their Avro type (an array, a decimal, a timestamp, an optional string), printed as the
/// values sent; the other fields keep their types.
#[test]
fn avro_fields_land_in_variant_columns() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let records: Vec<Vec<u8>> = encoded(&py).into_iter().take(60).map(|r| r[5..].to_vec()).collect();
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let landed = rt.block_on(ingest(&records, &table, |p| {
        p.kafka.format = "avro".into();
        p.kafka.avro_schema = Some(V1.to_string());
        p.variant_columns = vec!["tags".into(), "amount".into(), "ts".into(), "note".into()];
    }));
    assert_eq!(landed, (60, 0));
    drop(rt);
    let types = column_types(&table);
    for name in ["tags", "amount", "ts", "note"] {
        assert_eq!(types[name], "variant", "{types:?}");
    }
    assert_eq!(types["id"], "long", "{types:?}");
    let describe = crate::support::run_json(&["describe", &table]);
    assert!(describe["protocol"]["readerFeatures"].as_array().unwrap().contains(&serde_json::json!("variantType")));
    let rows = crate::support::tables::rows_by_id(&table);
    assert_eq!(rows.len(), 60);
    let r = &rows[5];
    assert_eq!(r["tags"], serde_json::json!(["a", "5"]), "{r}");
    assert_eq!(r["amount"], serde_json::json!(1.25), "{r}");
    assert_eq!(r["ts"], "2026-11-30T12:00:05.000000Z", "{r}");
    assert_eq!(r["note"], serde_json::Value::Null, "{r}");
    assert_eq!(rows[3]["note"], "n");
}

const ORDER_PROTO: &str = r#"syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string customer = 2;
  repeated string tags = 3;
  google.protobuf.Timestamp at = 4;
  Kind kind = 5;
  Line line = 6;
  enum Kind { NEW = 0; PAID = 1; }
  message Line { double amount = 1; int32 qty = 2; }
}
"#;

/// Ingests Confluent-framed `shop.Order` messages (schema id 3 in a test registry) into
/// `table` with the pipeline `configure` sets: (rows, dead letters).
fn ingest_orders(records: &[Vec<u8>], table: &str, configure: impl FnOnce(&mut PipelineConfig)) -> (u64, u64) {
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let answer = serde_json::json!({ "schema": ORDER_PROTO, "schemaType": "PROTOBUF" });
        let (url, _hits) = registry(HashMap::from([(3, answer)])).await;
        ingest(records, table, |p| {
            p.kafka.format = "protobuf".into();
            p.schema_registry = Some(registry_at(url));
            configure(p);
        })
        .await
    })
}

/// `variant_columns` on a Protobuf topic: a nested message and a repeated field land as
/// `variant` values (the message's proto3 JSON), the other fields keep the descriptor's types.
#[test]
fn protobuf_fields_land_in_variant_columns() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import order_pb2
for i in range(20):
    m = order_pb2.Order(id=i, customer="ç%d" % i, tags=["x", str(i)], kind=i % 2)
    m.line.amount = i + 0.5
    m.line.qty = i
    print((b"\x00" + (3).to_bytes(4, "big") + b"\x00" + m.SerializeToString()).hex())
"#;
    let records: Vec<Vec<u8>> = protobuf_script(&py, dir.path(), script).lines().map(unhex).collect();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let landed = ingest_orders(&records, &table, |p| p.variant_columns = vec!["line".into(), "tags".into()]);
    assert_eq!(landed, (20, 0));
    let fields = column_types(&table);
    assert_eq!(
        (&fields["line"], &fields["tags"], &fields["id"]),
        (&serde_json::json!("variant"), &serde_json::json!("variant"), &serde_json::json!("long"))
    );
    let rows = crate::support::tables::rows_by_id(&table);
    assert_eq!(rows.len(), 20);
    assert_eq!(rows[3]["line"], serde_json::json!({"amount": 3.5, "qty": 3}), "{}", rows[3]);
    assert_eq!(rows[3]["tags"], serde_json::json!(["x", "3"]));
    assert_eq!(rows[3]["customer"], "ç3");
}

/// `kafka.format = "protobuf"`: Confluent-framed messages encoded by Google's Python protobuf
/// (classes generated by `protoc`), the `.proto` schema from the registry; the table takes
/// the descriptor's columns (timestamp, enum → string, nested message → struct, repeated →
/// array); an unknown id and a damaged body are dead letters.
#[test]
fn confluent_protobuf_lands_with_the_descriptor_types() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import order_pb2
from google.protobuf.timestamp_pb2 import Timestamp
for i in range(30):
    m = order_pb2.Order(id=i, customer="c%d" % i, tags=["x", str(i)], kind=i % 2)
    m.at.FromSeconds(1796040000 + i)
    m.line.amount = i + 0.5
    m.line.qty = i
    print((b"\x00" + (3).to_bytes(4, "big") + b"\x00" + m.SerializeToString()).hex())
"#;
    let mut records: Vec<Vec<u8>> = protobuf_script(&py, dir.path(), script).lines().map(unhex).collect();
    records.push([vec![0, 0, 0, 0, 4, 0], records[0][6..].to_vec()].concat()); // unknown id
    records.push(vec![0, 0, 0, 0, 3, 0, 0x0a, 0xff]); // damaged body
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    assert_eq!(ingest_orders(&records, &table, |_| {}), (30, 2));
    let fields = column_types(&table);
    assert_eq!(fields["id"], "long");
    assert_eq!(fields["at"], "timestamp");
    assert_eq!(fields["kind"], "string");
    assert_eq!(fields["line"]["fields"][0]["name"], "amount");
    let out = crate::support::deltabus(&["cat", &table]);
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 30);
    let r3 = rows.iter().find(|r| r["id"] == 3).unwrap();
    assert_eq!(r3["kind"], "PAID");
    // proto3 leaves zeros and first enum values off the wire: they read as values, not nulls.
    let r0 = rows.iter().find(|r| r["id"] == 0).expect("the message with id 0 (a default) has its id");
    assert_eq!((&r0["kind"], &r0["line"]["qty"]), (&serde_json::json!("NEW"), &serde_json::json!(0)), "{r0}");
    assert_eq!(r3["line"]["qty"], 3);
    assert_eq!(r3["tags"], serde_json::json!(["x", "3"]));
    assert!(r3["at"].as_str().unwrap().starts_with("2026-11-30T"), "{r3}");
    let dead = crate::support::deltabus(&["cat", &format!("{table}_dead")]);
    let reasons = String::from_utf8_lossy(&dead.stdout).to_string();
    assert!(reasons.contains("schema id 4 is not in the registry") && reasons.contains("Protobuf body"), "{reasons}");
    kernel_reads_what_deltabus_reads(&table);
}

/// Debezium's Avro envelope with Avro record keys (both Confluent-framed, encoded by
/// `fastavro`), as `upsert.format = "debezium"`: creates, updates, deletes, Debezium's
/// tombstones after deletes, a key deleted then created again, and an unknown op → the rows
/// each key ends at; kernel-oracle reads the same rows.
#[test]
fn debezium_avro_envelopes_with_avro_keys_upsert_by_key() {
    let Some(py) = python() else { return };
    let script = format!(
        r#"
import io, json, struct, decimal
from fastavro import schemaless_writer, parse_schema
env = parse_schema(json.loads('''{envelope}'''))
key = parse_schema(json.loads('''{key}'''))
def framed(sid, schema, rec):
    buf = io.BytesIO(); buf.write(b"\x00" + struct.pack(">I", sid)); schemaless_writer(buf, schema, rec)
    return buf.getvalue().hex()
def image(i, status): return {{"id": i, "status": status, "amount": decimal.Decimal(i) / 4}}
def change(i, op, before, after):
    print(framed(6, key, {{"id": i}}), framed(5, env, {{"before": before, "after": after, "op": op, "ts_ms": 1}}))
for i in range(40): change(i, "c", None, image(i, "new"))
for i in range(0, 40, 2): change(i, "u", image(i, "new"), image(i, "shipped"))
for i in range(0, 40, 5):
    change(i, "d", image(i, "new"), None)
    print(framed(6, key, {{"id": i}}), "-")  # Debezium's tombstone
change(10, "c", None, image(10, "again"))
change(99, "x", None, image(99, "?"))
"#,
        envelope = DEBEZIUM_ENVELOPE,
        key = DEBEZIUM_KEY
    );
    let records: Vec<Keyed> = run_script(&py, &script).lines().map(keyed_line).collect();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let envelope = serde_json::json!({ "schema": DEBEZIUM_ENVELOPE });
        let key = serde_json::json!({ "schema": DEBEZIUM_KEY });
        let (url, _hits) = registry(HashMap::from([(5, envelope), (6, key)])).await;
        let landed = ingest_keyed(&records, &table, |p| {
            p.kafka.format = "avro".into();
            p.schema_registry = Some(registry_at(url));
            p.upsert = Some(upsert_by_id("debezium"));
        })
        .await;
        assert_eq!(landed.1, 1, "the unknown op is the one dead letter: {landed:?}");
    });
    drop(rt);
    let fields = column_types(&table);
    assert_eq!((fields["id"].as_str(), fields["amount"].as_str()), (Some("long"), Some("decimal(10,2)")), "{fields:?}");
    let mut got: Vec<(i64, String)> = crate::support::rows(&table)
        .into_iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["status"].as_str().unwrap().to_string()))
        .collect();
    got.sort();
    let want: Vec<(i64, String)> = (0..40)
        .filter(|i| i % 5 != 0 || *i == 10)
        .map(|i| {
            (
                i,
                if i == 10 {
                    "again"
                } else if i % 2 == 0 {
                    "shipped"
                } else {
                    "new"
                }
                .to_string(),
            )
        })
        .collect();
    assert_eq!(got, want);
    kernel_reads_what_deltabus_reads(&table);
}

const DEBEZIUM_KEY: &str =
    r#"{"type":"record","name":"Key","namespace":"db.shop.orders","fields":[{"name":"id","type":"long"}]}"#;

const DEBEZIUM_ENVELOPE: &str = r#"{"type":"record","name":"Envelope","namespace":"db.shop.orders","fields":[
  {"name":"before","type":["null",{"type":"record","name":"Value","fields":[
     {"name":"id","type":"long"},{"name":"status","type":"string"},
     {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}}]}],"default":null},
  {"name":"after","type":["null","Value"],"default":null},
  {"name":"op","type":"string"},
  {"name":"ts_ms","type":["null","long"],"default":null}]}"#;

const ADDRESS: &str = r#"{"type":"record","name":"Address","namespace":"com.acme","fields":[
  {"name":"city","type":"string"},{"name":"zip","type":["null","string"],"default":null}]}"#;

const ORDER_WITH_REFERENCE: &str = r#"{"type":"record","name":"Order","namespace":"com.acme","fields":[
  {"name":"id","type":"long"},{"name":"ship","type":"Address"},{"name":"bill","type":["null","com.acme.Address"],"default":null}]}"#;

/// A writer schema that references a type registered under another subject (Confluent
/// `references`), and `schema_registry.subject`: the table is created at start from the
/// subject's latest version, before any record, with the referenced record as a struct; then
/// records encoded by `fastavro` against the same named types land.
#[test]
fn schema_references_and_a_subject_create_the_table_before_records() {
    let Some(py) = python() else { return };
    let script = format!(
        r#"
import io, json, struct
from fastavro import schemaless_writer, parse_schema
named = {{}}
parse_schema(json.loads('''{ADDRESS}'''), named_schemas=named)
order = parse_schema(json.loads('''{ORDER_WITH_REFERENCE}'''), named_schemas=named)
for i in range(20):
    buf = io.BytesIO(); buf.write(b"\x00" + struct.pack(">I", 8))
    rec = {{"id": i, "ship": {{"city": "Zürich-%d" % i, "zip": None}}, "bill": None if i % 2 else {{"city": "Köln", "zip": "50667"}}}}
    schemaless_writer(buf, order, rec)
    print(buf.getvalue().hex())
"#
    );
    let records: Vec<Vec<u8>> = run_script(&py, &script).lines().map(unhex).collect();
    let reference = serde_json::json!([{"name": "com.acme.Address", "subject": "com.acme.Address", "version": 1}]);
    let by_id = serde_json::json!({ "schema": ORDER_WITH_REFERENCE, "references": reference });
    let latest = serde_json::json!({ "subject": "orders-value", "version": 3, "id": 8, "schema": ORDER_WITH_REFERENCE, "references": reference });
    let address = serde_json::json!({ "subject": "com.acme.Address", "version": 1, "id": 2, "schema": ADDRESS });
    let subjects =
        HashMap::from([("orders-value/latest".to_string(), latest), ("com.acme.Address/1".to_string(), address)]);
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (url, _hits) = registry_with(HashMap::from([(8, by_id)]), subjects).await;
        let configure = |p: &mut PipelineConfig| {
            p.kafka.format = "avro".into();
            let mut r = registry_at(url.clone());
            r.subject = Some("orders-value".into());
            p.schema_registry = Some(r);
        };
        // No records yet: the table is there, from the subject.
        assert_eq!(ingest(&[], &table, configure).await, (0, 0));
        let fields = column_types(&table);
        assert_eq!(fields["id"], "long");
        assert_eq!(fields["ship"]["fields"][0]["name"], "city", "{fields:?}");
        assert_eq!(fields["bill"]["fields"][1]["name"], "zip", "{fields:?}");
        assert_eq!(ingest(&records, &table, configure).await, (20, 0));
    });
    drop(rt);
    let out = crate::support::deltabus(&["cat", &table]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 20);
    assert!(text.contains("Zürich-7") && text.contains("50667"), "{text}");
    kernel_reads_what_deltabus_reads(&table);
}

const KEY_PROTO: &str = "syntax = \"proto3\";\npackage shop;\nmessage OrderKey { int64 id = 1; }\n";

/// Keyed ingestion of a Protobuf topic: values are `Order` messages (the row), keys are
/// Confluent-framed `OrderKey` messages; tombstones delete by the Protobuf key (id 0, which
/// proto3 leaves off the wire, included).
#[test]
fn protobuf_keys_delete_rows_of_a_keyed_protobuf_topic() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import order_pb2, orderkey_pb2
def framed(sid, m): return (b"\x00" + sid.to_bytes(4, "big") + b"\x00" + m.SerializeToString()).hex()
def upsert(i, customer): print(framed(4, orderkey_pb2.OrderKey(id=i)), framed(3, order_pb2.Order(id=i, customer=customer)))
for i in range(30): upsert(i, "new")
for i in range(0, 30, 2): upsert(i, "shipped")
for i in range(0, 30, 5): print(framed(4, orderkey_pb2.OrderKey(id=i)), "-")
"#;
    let records: Vec<Keyed> = protobuf_script(&py, dir.path(), script).lines().map(keyed_line).collect();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let order = serde_json::json!({ "schema": ORDER_PROTO, "schemaType": "PROTOBUF" });
        let key = serde_json::json!({ "schema": KEY_PROTO, "schemaType": "PROTOBUF" });
        let (url, _hits) = registry(HashMap::from([(3, order), (4, key)])).await;
        let landed = ingest_keyed(&records, &table, |p| {
            p.kafka.format = "protobuf".into();
            p.schema_registry = Some(registry_at(url));
            p.upsert = Some(upsert_by_id("plain"));
        })
        .await;
        assert_eq!(landed.1, 0, "{landed:?}");
    });
    drop(rt);
    let mut got: Vec<(i64, String)> = crate::support::rows(&table)
        .into_iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["customer"].as_str().unwrap().to_string()))
        .collect();
    got.sort();
    let want: Vec<(i64, String)> =
        (0..30).filter(|i| i % 5 != 0).map(|i| (i, if i % 2 == 0 { "shipped" } else { "new" }.to_string())).collect();
    assert_eq!(got, want);
}

/// Apicurio's own serdes (`schema_registry.api = "apicurio"`): records framed with an 8-byte
/// global id (here above 2^32), the schema served as text by
/// `/apis/registry/v2/ids/globalIds/{id}` with its type in `X-Registry-ArtifactType`; a record
/// with an unknown global id is a dead letter; with Apicurio's `headers.enabled`, bare datums
/// whose id is in the `apicurio.value.globalId` header.
#[test]
fn apicurio_framing_with_eight_byte_global_ids() {
    let Some(py) = python() else { return };
    const GLOBAL_ID: u64 = (1 << 33) + 5;
    let script = format!(
        r#"
import io, json, struct
from fastavro import schemaless_writer, parse_schema
s = parse_schema(json.loads('''{ADDRESS}'''))
for i in range(25):
    buf = io.BytesIO(); buf.write(b"\x00" + struct.pack(">Q", {GLOBAL_ID} if i < 24 else 77))
    schemaless_writer(buf, s, {{"city": "Genève-%d" % i, "zip": None}})
    print(buf.getvalue().hex())
"#
    );
    let records: Vec<Vec<u8>> = run_script(&py, &script).lines().map(unhex).collect();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("addresses").to_string_lossy().into_owned();
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        async fn by_global_id(Path(id): Path<u64>) -> (StatusCode, HeaderMap, String) {
            let mut headers = HeaderMap::new();
            if id != GLOBAL_ID {
                return (StatusCode::NOT_FOUND, headers, r#"{"error_code":40403}"#.into());
            }
            headers.insert("X-Registry-ArtifactType", "AVRO".parse().unwrap());
            (StatusCode::OK, headers, ADDRESS.into())
        }
        let app = Router::new().route("/apis/registry/v2/ids/globalIds/{id}", get(by_global_id));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let apicurio = |p: &mut PipelineConfig| {
            p.kafka.format = "avro".into();
            p.schema_registry = Some(deltabus::decode::registry::RegistryConfig {
                url: url.clone(),
                api: deltabus::decode::registry::RegistryApi::Apicurio,
                ..Default::default()
            });
        };
        let landed = ingest(&records, &table, apicurio).await;
        assert_eq!(landed, (24, 1));
        // `headers.enabled`: the bare datum, its global id in `apicurio.value.globalId`.
        let headed: Vec<Headed> = records[..24]
            .iter()
            .map(|r| ((None, Some(r[9..].to_vec())), vec![("apicurio.value.globalId", r[1..9].to_vec())]))
            .collect();
        let landed = ingest_with_headers(&headed, &format!("{table}_headers"), apicurio).await;
        assert_eq!(landed, (24, 0));
    });
    let out = crate::support::deltabus(&["cat", &format!("{table}_headers")]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Genève-23"));
    drop(rt);
    let out = crate::support::deltabus(&["cat", &table]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Genève-23"));
    let dead = crate::support::deltabus(&["cat", &format!("{table}_dead")]);
    assert!(String::from_utf8_lossy(&dead.stdout).contains("schema id 77 is not in the registry"));
}

/// `route_by` on Avro topics: the route field (an enum, read by name) comes from the records
/// decoded with their writer schemas; each table is created from the writer schema and evolves
/// with the second schema id.
#[test]
fn avro_records_route_by_an_enum_field() {
    let Some(py) = python() else { return };
    let records = encoded(&py);
    let dir = tempfile::tempdir().unwrap();
    let template = format!("{}/orders_{{kind}}", dir.path().display());
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let answers =
            HashMap::from([(1, serde_json::json!({ "schema": V1 })), (2, serde_json::json!({ "schema": v2() }))]);
        let (url, hits) = registry(answers).await;
        let landed = ingest(&records, &template, |p| {
            p.kafka.format = "avro".into();
            p.schema_registry = Some(registry_at(url));
            p.route_by = Some("kind".into());
            p.evolve_schema = true;
            p.dead_letter.table = Some(format!("{}/dead", dir.path().display()));
        })
        .await;
        assert_eq!(landed, (100, 0));
        // One registry client for the route field and both tables: each id is fetched once
        // (after the outage's refused requests).
        assert_eq!(hits.load(Relaxed), OUTAGE + 2, "schema ids fetched again");
    });
    drop(rt);
    for (kind, parity) in [("PAID", 1), ("NEW", 0)] {
        let table = format!("{}/orders_{kind}", dir.path().display());
        let out = crate::support::deltabus(&["cat", &table]);
        let rows: Vec<serde_json::Value> =
            String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(rows.len(), 50, "{kind}");
        assert!(rows.iter().all(|r| r["kind"] == kind && r["id"].as_i64().unwrap() % 2 == parity), "{kind}");
        assert_eq!(column_types(&table)["amount"], "decimal(10,2)");
    }
}

/// `route_by` on Protobuf topics: the route field read from the decoded messages (an enum,
/// by name; the default value included).
#[test]
fn protobuf_messages_route_by_an_enum_field() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import order_pb2
for i in range(40):
    m = order_pb2.Order(id=i, customer="c%d" % i, kind=i % 2)
    print((b"\x00" + (3).to_bytes(4, "big") + b"\x00" + m.SerializeToString()).hex())
"#;
    let records: Vec<Vec<u8>> = protobuf_script(&py, dir.path(), script).lines().map(unhex).collect();
    let template = format!("{}/orders_{{kind}}", dir.path().display());
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let answer = serde_json::json!({ "schema": ORDER_PROTO, "schemaType": "PROTOBUF" });
        let (url, _hits) = registry(HashMap::from([(3, answer)])).await;
        let landed = ingest(&records, &template, |p| {
            p.kafka.format = "protobuf".into();
            p.schema_registry = Some(registry_at(url));
            p.route_by = Some("kind".into());
            p.dead_letter.table = Some(format!("{}/dead", dir.path().display()));
        })
        .await;
        assert_eq!(landed, (40, 0));
    });
    drop(rt);
    for (kind, parity) in [("PAID", 1), ("NEW", 0)] {
        let out = crate::support::deltabus(&["cat", &format!("{}/orders_{kind}", dir.path().display())]);
        let rows: Vec<serde_json::Value> =
            String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(rows.len(), 20, "{kind}");
        assert!(rows.iter().all(|r| r["kind"] == kind && r["id"].as_i64().unwrap() % 2 == parity), "{kind}");
    }
}

/// A TLS listener for axum: `rustls` over the TCP listener.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;
    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else { continue };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }
    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// The registry over TLS with a private CA: records decode once `schema_registry.ca_file`
/// names the CA; without it the certificate is refused and consumption waits (no record is
/// lost or dead-lettered); a `ca_file` that holds no certificate is a one-line error.
#[test]
fn a_registry_behind_a_private_ca_is_reached_over_tls() {
    let Some(py) = python() else { return };
    let records = encoded(&py);
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let _guard = crate::support::native_clients_lock();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        let answers = Arc::new(HashMap::from([(1u32, V1.to_string()), (2, v2())]));
        let app = Router::new().route(
            "/schemas/ids/{id}",
            get(move |Path(id): Path<u32>| {
                let answers = answers.clone();
                async move { serde_json::json!({ "schema": answers[&id] }).to_string() }
            }),
        );
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://localhost:{}", tcp.local_addr().unwrap().port());
        let listener = TlsListener { tcp, acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)) };
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        // Without the CA: refused, and no record is dead-lettered while it is.
        let client = deltabus::decode::registry::RegistryClient::new(deltabus::decode::registry::RegistryConfig {
            url: url.clone(),
            ..Default::default()
        })
        .unwrap();
        assert!(tokio::time::timeout(std::time::Duration::from_secs(3), client.schema(1)).await.is_err(), "waits");
        // A CA file without a certificate is named.
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = deltabus::decode::registry::RegistryClient::new(deltabus::decode::registry::RegistryConfig {
            url: url.clone(),
            ca_file: Some(empty.to_string_lossy().into_owned()),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("schema_registry.ca_file") && e.contains("no PEM certificate"), "{e}");
        // With it: every record lands.
        let landed = ingest(&records, &table, |p| {
            p.kafka.format = "avro".into();
            p.evolve_schema = true;
            p.schema_registry = Some(deltabus::decode::registry::RegistryConfig {
                url,
                ca_file: Some(ca.to_string_lossy().into_owned()),
                ..Default::default()
            });
        })
        .await;
        assert_eq!(landed, (100, 0));
    });
}
