//! Kafka ingest throughput, with the kafka-delta-ingest-style baseline in the same run.
//!
//! 1. Decoding 1,000,000 JSON payloads of ~200 bytes into Arrow: deltabus's path (raw bytes
//!    of a whole poll straight into `arrow_json`'s decoder, via `PayloadDecoder`) against the
//!    path kafka-delta-ingest takes (each payload parsed into a `serde_json::Value`, then the
//!    values serialized into the same Arrow decoder). Records/s for both and the ratio.
//! 2. End to end: 1,000,000 records produced to librdkafka's in-process mock cluster
//!    (4 partitions; the mock keeps only 5 MB per partition, so the producer runs alongside,
//!    at most 80,000 records ahead) while `deltabus run`'s pipeline (the library service, in
//!    the same process) consumes, decodes, writes Parquet and commits until all are in the table.
//!    Records/s and MB/s measured from the first assignment to the last commit, the time
//!    including the group join, commits, and peak RSS of the process.
//!
//! Run: `cargo bench --bench ingest_throughput`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::datatypes::{DataType, Field, Schema};
use deltabus::config::pipeline::{DeadLetterConfig, FlushConfig, KafkaConfig, PipelineConfig, RecordColumns};
use deltabus::metrics::Metrics;
use deltabus::pipeline::service::{run, ServiceOptions};
use deltabus::source::kafka::payload::{PayloadDecoder, RawRecord};
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};

fn records() -> usize {
    std::env::var("BENCH_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}
const POLL: usize = 4096;

fn payload(i: usize) -> String {
    format!(
        r#"{{"id":{i},"user":"user-{}","country":"{}","amount":{}.{:02},"ok":{},"note":"{}","ts":{}}}"#,
        i % 9973,
        ["DE", "FR", "NL", "US"][i % 4],
        i % 1000,
        i % 100,
        i % 3 == 0,
        "n".repeat(60 + i % 40),
        1_700_000_000_000u64 + i as u64
    )
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("user", DataType::Utf8, true),
        Field::new("country", DataType::Utf8, true),
        Field::new("amount", DataType::Float64, true),
        Field::new("ok", DataType::Boolean, true),
        Field::new("note", DataType::Utf8, true),
        Field::new("ts", DataType::Int64, true),
    ]))
}

fn decode_bench(payloads: &[String]) -> (f64, f64) {
    let schema = schema();
    // deltabus: bytes of each poll straight into Arrow.
    let decoder = PayloadDecoder::new(schema.clone(), 1 << 20);
    let start = Instant::now();
    let mut rows = 0;
    for chunk in payloads.chunks(POLL) {
        let records: Vec<RawRecord<'_>> = chunk
            .iter()
            .enumerate()
            .map(|(i, p)| RawRecord {
                topic: "t",
                partition: 0,
                offset: i as i64,
                timestamp_ms: None,
                key: None,
                payload: Some(p.as_bytes()),
            })
            .collect();
        rows += decoder.decode(&records).batch.map_or(0, |b| b.num_rows());
    }
    assert_eq!(rows, payloads.len());
    let ours = start.elapsed().as_secs_f64();
    // kafka-delta-ingest style: serde_json::Value per message, then into Arrow.
    let start = Instant::now();
    let mut rows = 0;
    for chunk in payloads.chunks(POLL) {
        let values: Vec<serde_json::Value> = chunk.iter().map(|p| serde_json::from_str(p).unwrap()).collect();
        let mut d = arrow_json::ReaderBuilder::new(schema.clone()).with_batch_size(POLL).build_decoder().unwrap();
        d.serialize(&values).unwrap();
        rows += d.flush().unwrap().map_or(0, |b| b.num_rows());
    }
    assert_eq!(rows, payloads.len());
    (ours, start.elapsed().as_secs_f64())
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

async fn end_to_end(payloads: &[String]) -> (f64, f64, u64) {
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("bench", 4, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let schema = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},
        {"name":"user","type":"string","nullable":true,"metadata":{}},{"name":"country","type":"string","nullable":true,"metadata":{}},
        {"name":"amount","type":"double","nullable":true,"metadata":{}},{"name":"ok","type":"boolean","nullable":true,"metadata":{}},
        {"name":"note","type":"string","nullable":true,"metadata":{}},{"name":"ts","type":"long","nullable":true,"metadata":{}}]}"#;
    let p = PipelineConfig {
        table: table.clone(),
        app_id: Some("bench".into()),
        create: true,
        schema: Some(schema.into()),
        partition_by: vec![],
        properties: HashMap::new(),
        evolve_schema: false,
        kafka: KafkaConfig {
            brokers: brokers.clone(),
            topic: "bench".into(),
            group_id: None,
            start: "earliest".into(),
            assignment: "cooperative-sticky".into(),
            max_record_bytes: "1mb".into(),
            // The mock broker does not wake a waiting fetch when data arrives (a real broker
            // does); without this the consumer idles up to 500 ms per catch-up.
            properties: BTreeMap::from([("fetch.wait.max.ms".to_string(), "20".to_string())]),
        },
        flush: FlushConfig { max_latency_ms: 1000, max_rows: 100_000, ..FlushConfig::default() },
        columns: RecordColumns::default(),
        dead_letter: DeadLetterConfig::default(),
        compaction: Default::default(),
    };
    let metrics = Arc::new(Metrics::default());
    let (tx, rx) = tokio::sync::watch::channel(false);
    let m = metrics.pipeline("bench");
    // The mock broker keeps only 5 MB per partition, so the producer runs alongside and stays
    // at most 80,000 records ahead of the pipeline.
    let producing = {
        let (payloads, m, brokers) = (payloads.to_vec(), m.clone(), brokers.clone());
        tokio::spawn(async move {
            let producer: FutureProducer = ClientConfig::new()
                .set("bootstrap.servers", &brokers)
                .set("linger.ms", "5")
                .set("batch.num.messages", "10000")
                .create()
                .unwrap();
            for (c, chunk) in payloads.chunks(10_000).enumerate() {
                while (c * 10_000) as u64 > m.records_in.load(Relaxed) + 70_000 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let mut pending = Vec::new();
                for (i, p) in chunk.iter().enumerate() {
                    let r = FutureRecord::<(), String>::to("bench").payload(p).partition((i % 4) as i32);
                    pending.push(producer.send_result(r).unwrap());
                }
                for d in futures::future::join_all(pending).await {
                    d.unwrap().unwrap();
                }
            }
        })
    };
    let total = payloads.len() as u64;
    let watcher = tokio::spawn(async move {
        let mut first: Option<Instant> = None;
        loop {
            if first.is_none() && m.records_in.load(Relaxed) > 0 {
                first = Some(Instant::now());
            }
            if m.rows_committed.load(Relaxed) >= total {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let _ = tx.send(true);
        first.map(|f| f.elapsed().as_secs_f64())
    });
    let opts = ServiceOptions {
        pipelines: vec![p.validate("bench").unwrap()],
        storage: Default::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(60),
    };
    let start = Instant::now();
    let reports = run(opts, metrics, rx).await.unwrap();
    let wall = start.elapsed().as_secs_f64();
    let consume = watcher.await.unwrap().unwrap_or(wall);
    producing.await.unwrap();
    assert_eq!(reports["bench"].rows_committed, total);
    (consume, wall, reports["bench"].commits)
}

fn main() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("DELTABUS_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .try_init();
    #[allow(non_snake_case)]
    let RECORDS = records();
    let payloads: Vec<String> = (0..RECORDS).map(payload).collect();
    let bytes: usize = payloads.iter().map(String::len).sum();
    println!("records: {RECORDS}, payload bytes: {:.1} MB ({} B avg)", bytes as f64 / 1e6, bytes / RECORDS);
    let (ours, baseline) = decode_bench(&payloads);
    println!(
        "decode   deltabus (raw bytes → Arrow): {ours:.3} s, {:.0} records/s, {:.1} MB/s",
        RECORDS as f64 / ours,
        bytes as f64 / 1e6 / ours
    );
    println!(
        "decode   baseline (serde_json::Value → Arrow, kafka-delta-ingest style): {baseline:.3} s, {:.0} records/s",
        RECORDS as f64 / baseline
    );
    println!("decode   ratio deltabus/baseline time: {:.2}x  (speed-up {:.1}x)", ours / baseline, baseline / ours);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (consume, wall, commits) = rt.block_on(end_to_end(&payloads));
    println!(
        "ingest   mock cluster → table: {consume:.2} s from first record to last commit, {:.0} records/s, {:.1} MB/s; {commits} commits; {wall:.2} s with group join and shutdown",
        RECORDS as f64 / consume,
        bytes as f64 / 1e6 / consume
    );
    println!(
        "peak RSS: {:.0} MB (includes the 1M payloads held by the driver and the mock broker's log)",
        peak_rss_mb()
    );
}
