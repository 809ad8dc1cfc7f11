//! End-to-end ingest of Confluent-framed Avro against JSON on the same rows: `n` records
//! (`BENCH_RECORDS`, default 1,000,000; ~130 B as JSON, ~75 B as Avro) pre-produced to two 64-partition topics
//! of the in-process mock cluster (under its 5 MB per partition), one as JSON, one as Avro
//! (schema id 1, encoded by `arrow-avro`'s writer), each then ingested by a pipeline into a
//! new table; the Avro pipeline fetches its writer schema from a registry served in the same
//! process (Confluent's `GET /schemas/ids/{id}`). Prints records/s, MB/s of payload, and the
//! Avro time as a ratio of the JSON time; then the JSON topic routed by `country` into four
//! tables (`route_by`) against the unrouted JSON time.
//!
//! Run: `cargo bench --bench avro_ingest`.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use arrow::array::RecordBatch;
use deltabus::common::record::RawRecord;
use deltabus::config::pipeline::PipelineConfig;
use deltabus::decode::json::PayloadDecoder;
use deltabus::decode::registry::RegistryConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::FutureRecord;

#[path = "support/mod.rs"]
mod support;

const PARTITIONS: i32 = 64;

fn payload(i: usize) -> String {
    format!(
        r#"{{"id":{i},"user":"user-{}","country":"{}","amount":{}.{:02},"ok":{},"ts":{},"note":"{}"}}"#,
        i % 9973,
        ["DE", "FR", "NL", "US"][i % 4],
        i % 1000,
        i % 100,
        i.is_multiple_of(3),
        1_700_000_000_000u64 + i as u64,
        "abcdefghijklmnopqrstuvwxyz0123456789".repeat(3).get(i % 30..i % 30 + 100).unwrap_or("x")
    )
}

/// The JSON payloads and the same rows as Confluent-framed Avro datums.
fn records(n: usize) -> (Vec<String>, Vec<Vec<u8>>) {
    use arrow_avro::schema::FingerprintStrategy;
    use arrow_avro::writer::format::AvroSoeFormat;
    use arrow_avro::writer::WriterBuilder;
    let json: Vec<String> = (0..n).map(payload).collect();
    let decoder = PayloadDecoder::new(support::record_schema(), 1 << 20);
    let mut avro = Vec::with_capacity(n);
    for chunk in json.chunks(10_000) {
        let raw: Vec<RawRecord<'_>> = chunk
            .iter()
            .map(|p| RawRecord {
                topic: "t",
                partition: 0,
                offset: 0,
                timestamp_ms: None,
                key: None,
                payload: Some(p.as_bytes()),
            })
            .collect();
        let batch: RecordBatch = decoder.decode(&raw).batch.unwrap();
        for r in 0..batch.num_rows() {
            let mut w = WriterBuilder::new(support::record_schema().as_ref().clone())
                .with_fingerprint_strategy(FingerprintStrategy::Id(1))
                .build::<_, AvroSoeFormat>(Vec::new())
                .unwrap();
            w.write(&batch.slice(r, 1)).unwrap();
            w.finish().unwrap();
            avro.push(w.into_inner());
        }
    }
    (json, avro)
}

async fn produce(brokers: &str, topic: &str, payloads: &[&[u8]]) {
    let producer = support::producer(brokers);
    for (c, chunk) in payloads.chunks(20_000).enumerate() {
        let mut pending = Vec::new();
        for (k, p) in chunk.iter().enumerate() {
            let i = c * 20_000 + k;
            let r = FutureRecord::<(), [u8]>::to(topic).payload(*p).partition((i % PARTITIONS as usize) as i32);
            pending.push(producer.send_result(r).unwrap());
        }
        for d in futures::future::join_all(pending).await {
            d.unwrap().unwrap();
        }
    }
}

/// A registry answering id 1 with the Avro form of [`schema`].
async fn registry() -> String {
    use axum::routing::get;
    let text = arrow_avro::schema::AvroSchema::try_from(support::record_schema().as_ref()).unwrap().json_string;
    let answer = serde_json::json!({ "schema": text }).to_string();
    let app = axum::Router::new().route("/schemas/ids/{id}", get(move || async move { answer.clone() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Ingests `topic` into a new table; (seconds from the first record to the last commit,
/// commits).
async fn ingest(brokers: &str, topic: &str, n: usize, registry: Option<&str>) -> (f64, u64) {
    ingest_with(brokers, topic, n, registry, None).await
}

/// As [`ingest`]; with `route_by`, into a table per value of that field.
async fn ingest_with(
    brokers: &str,
    topic: &str,
    n: usize,
    registry: Option<&str>,
    route_by: Option<&str>,
) -> (f64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let table = match route_by {
        Some(f) => format!("{}/t_{{{f}}}", dir.path().display()),
        None => dir.path().join("t").to_string_lossy().into_owned(),
    };
    let mut p = PipelineConfig::new(table, brokers, topic);
    p.route_by = route_by.map(str::to_string);
    p.create = true;
    p.flush.max_latency = "2s".parse().unwrap();
    p.flush.max_rows = 250_000;
    if let Some(url) = registry {
        p.kafka.format = "avro".into();
        p.schema_registry = Some(RegistryConfig { url: url.into(), ..Default::default() });
    }
    let (report, seconds) = support::run_until_committed(p, n as u64).await;
    (seconds, report.commits)
}

fn main() {
    let n: usize = std::env::var("BENCH_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (json, avro) = records(n);
    let json_mb = json.iter().map(String::len).sum::<usize>() as f64 / 1e6;
    let avro_mb = avro.iter().map(Vec::len).sum::<usize>() as f64 / 1e6;
    rt.block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("json", PARTITIONS, 1).unwrap();
        cluster.create_topic("avro", PARTITIONS, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        produce(&brokers, "json", &json.iter().map(|s| s.as_bytes()).collect::<Vec<_>>()).await;
        produce(&brokers, "avro", &avro.iter().map(Vec::as_slice).collect::<Vec<_>>()).await;
        drop((json, avro));
        let url = registry().await;
        let (js, jc) = ingest(&brokers, "json", n, None).await;
        let (a, ac) = ingest(&brokers, "avro", n, Some(&url)).await;
        let (r, rc) = ingest_with(&brokers, "json", n, None, Some("country")).await;
        println!(
            "end to end, {n} pre-produced records on the in-process mock ({PARTITIONS} partitions): JSON {js:.2} s = {:.0} records/s, {:.0} MB/s of payload ({json_mb:.0} MB), {jc} commits | Avro {a:.2} s = {:.0} records/s, {:.0} MB/s of payload ({avro_mb:.0} MB), {ac} commits | Avro takes {:.2}x the JSON time",
            n as f64 / js,
            json_mb / js,
            n as f64 / a,
            avro_mb / a,
            a / js
        );
        println!(
            "routed   the JSON topic by `country` into 4 tables: {r:.2} s = {:.0} records/s, {rc} commits | {:.2}x the unrouted JSON time",
            n as f64 / r,
            r / js
        );
    });
}
