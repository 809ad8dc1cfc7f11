//! Kafka ingest: throughput against the in-process ceiling and the kafka-delta-ingest-style
//! decode path, and produce → visible latency, all in one run.
//!
//! For JSON records of ~250 bytes and ~1 KB (`BENCH_RECORDS`, default 1,000,000 each):
//! 1. **Decode**: deltabus's path (the raw bytes of a whole poll straight into `arrow_json`'s
//!    decoder, via `PayloadDecoder`) against kafka-delta-ingest's (each payload parsed into a
//!    `serde_json::Value`, then serialized into the same decoder).
//! 2. **Ceiling**: decode + Parquet encode (zstd level 1, as the pipeline writes) of the same
//!    payloads in memory, without Kafka or Delta.
//! 3. **End to end**: records produced (zstd level 1 batches) to librdkafka's in-process mock
//!    cluster (4 partitions) while `deltabus run`'s pipeline consumes, decodes, writes Parquet
//!    and commits every 250,000 rows. The mock keeps only 5 MB per partition, so the producer
//!    runs alongside, at most ~80,000 records ahead (payloads are generated, never held),
//!    and the consumer gets `fetch.wait.max.ms=20` (the mock does not wake a waiting fetch when
//!    data arrives; a real broker does). Records/s, MB/s, CPU seconds, peak RSS of the process.
//! 4. **Latency** (`support::send_to_visible`; `BENCH_ONLY_LATENCY=1` runs it alone, against
//!    `DELTABUS_BENCH_BROKERS` when set): one record every 10 ms for 20 s with a 1 s flush interval; for each record,
//!    the time from its send to the commit whose txn covers its offset (the `lastUpdated` of
//!    that txn): p50 / p99.
//!
//! 5. **Pre-produced on the mock**: 1,000,000 records of ~250 B (`BENCH_PREPRODUCED`) produced
//!    first to 64 partitions of the mock (under its 5 MB per partition), then read by a bare
//!    consumer (the baseline: what librdkafka delivers here) and ingested by the pipeline.
//!
//! 6. With `DELTABUS_BENCH_BROKERS` set (a separate broker such as tansu): 10,000,000 records of
//!    ~250 B (`BENCH_EXTERNAL_RECORDS`) and a tenth as many of ~1 KB pre-produced to a new topic,
//!    then ingested from the beginning: records/s, MB/s, CPU of this process, peak RSS.
//!
//!    In the same run, the baseline: a bare librdkafka consumer reading the same records
//!    without decoding. `BENCH_EXTERNAL_TOPIC_250` / `_1024` reuse a topic produced earlier
//!    (so the process's peak RSS is the pipeline's own), `BENCH_MAX_BYTES` sets
//!    `flush.max_bytes`, `BENCH_EXTERNAL_SIZE=250|1024` runs one record size,
//!    `BENCH_ONLY_EXTERNAL=1` skips the in-process parts, `BENCH_PAYLOAD=text` draws the
//!    padding from words (compressing 3-4x, as text does) instead of repeating patterns
//!    (over 100x: a fetch of 4 MiB inflates to hundreds of MB in librdkafka),
//!    `BENCH_ONLY_PREPRODUCED=1` runs only part 5.
//!
//! The process runs with transparent huge pages off, as the `deltabus` binary does
//! (`BENCH_THP=1` leaves them on), and hands glibc's freed heap back near the memory bound as
//! the binary does (`BENCH_NO_TRIM=1` does not).
//!
//! Run: `cargo bench --bench ingest_throughput` (`BENCH_RECORDS=N` to change the count).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::sync::Arc;
use std::time::{Duration, Instant};

use deltabus::app::service::{run, ServiceOptions};
use deltabus::common::record::RawRecord;
use deltabus::common::units::HumanDuration;
use deltabus::config::pipeline::PipelineConfig;
use deltabus::decode::json::PayloadDecoder;
use deltabus::metrics::Metrics;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};

#[path = "support/mod.rs"]
mod support;

// The allocator of the `deltabus` binary, so that memory figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const POLL: usize = 4096;
const SCHEMA: &str = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},
    {"name":"user","type":"string","nullable":true,"metadata":{}},{"name":"country","type":"string","nullable":true,"metadata":{}},
    {"name":"amount","type":"double","nullable":true,"metadata":{}},{"name":"ok","type":"boolean","nullable":true,"metadata":{}},
    {"name":"note","type":"string","nullable":true,"metadata":{}},{"name":"ts","type":"long","nullable":true,"metadata":{}}]}"#;

fn records() -> usize {
    std::env::var("BENCH_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

/// A record of about `size` bytes (the `note` field pads it).
fn payload(i: usize, size: usize) -> String {
    let head = format!(
        r#"{{"id":{i},"user":"user-{}","country":"{}","amount":{}.{:02},"ok":{},"ts":{},"note":""#,
        i % 9973,
        ["DE", "FR", "NL", "US"][i % 4],
        i % 1000,
        i % 100,
        i.is_multiple_of(3),
        1_700_000_000_000u64 + i as u64
    );
    let pad = size.saturating_sub(head.len() + 2).max(1);
    let note = if text_payload() { words(i, pad) } else { periodic(i, pad) };
    format!("{head}{note}\"}}")
}

/// `BENCH_PAYLOAD=text`: notes of words drawn at random, which compress about as log text
/// does (zstd(1) 3-4x), instead of the default's 36 repeating patterns (over 100x).
fn text_payload() -> bool {
    static TEXT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TEXT.get_or_init(|| std::env::var("BENCH_PAYLOAD").is_ok_and(|v| v == "text"))
}

/// One of 36 patterns of letters and digits, repeated.
fn periodic(i: usize, pad: usize) -> String {
    let letters = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..pad).map(|k| letters[(i * 7 + k * 13) % letters.len()] as char).collect()
}

/// Words of a 4,096-word vocabulary (made-up syllable pairs and a number), each drawn from a
/// generator seeded by the record index.
fn words(i: usize, pad: usize) -> String {
    const SYLLABLES: [&str; 16] =
        ["ka", "lo", "mi", "re", "su", "ta", "ven", "dor", "pix", "qua", "bel", "zu", "nor", "fi", "gra", "ost"];
    let mut state = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut note = String::with_capacity(pad + 16);
    while note.len() < pad {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let w = (state >> 20) as usize;
        note.push_str(SYLLABLES[w % 16]);
        note.push_str(SYLLABLES[(w >> 4) % 16]);
        note.push_str(&((w >> 8) % 16).to_string());
        note.push(' ');
    }
    note.truncate(pad);
    note
}

/// How many times zstd(1) shrinks 1,000 consecutive payloads (what a producer's batch gets).
fn compression_ratio(size: usize) -> f64 {
    let raw: Vec<u8> = (0..1000).flat_map(|i| payload(i, size).into_bytes()).collect();
    let packed = zstd::bulk::compress(&raw, 1).unwrap();
    raw.len() as f64 / packed.len() as f64
}

fn raw(chunk: &[String]) -> Vec<RawRecord<'_>> {
    chunk
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
        .collect()
}

/// (deltabus decode s, serde_json::Value decode s, decode + Parquet encode s, the value rules
/// plus `arrow_json` s) over `n` records.
fn in_memory(n: usize, size: usize) -> (f64, f64, f64, f64) {
    let schema = support::record_schema();
    let decoder = PayloadDecoder::new(schema.clone(), 1 << 20);
    let reference = decoder.clone().reference();
    let (mut ours, mut baseline, mut ceiling, mut checked) = (0.0, 0.0, 0.0, 0.0);
    let props = WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap())).build();
    let mut writer = ArrowWriter::try_new(std::io::sink(), schema.clone(), Some(props)).unwrap();
    for start in (0..n).step_by(POLL) {
        let chunk: Vec<String> = (start..(start + POLL).min(n)).map(|i| payload(i, size)).collect();
        let t = Instant::now();
        let batch = decoder.decode(&raw(&chunk)).batch.unwrap();
        ours += t.elapsed().as_secs_f64();
        let t = Instant::now();
        assert_eq!(reference.decode(&raw(&chunk)).batch.unwrap(), batch);
        checked += t.elapsed().as_secs_f64();
        let t = Instant::now();
        writer.write(&batch).unwrap();
        ceiling += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let values: Vec<serde_json::Value> = chunk.iter().map(|p| serde_json::from_str(p).unwrap()).collect();
        let mut d = arrow_json::ReaderBuilder::new(schema.clone()).with_batch_size(POLL).build_decoder().unwrap();
        d.serialize(&values).unwrap();
        assert_eq!(d.flush().unwrap().unwrap().num_rows(), chunk.len());
        baseline += t.elapsed().as_secs_f64();
    }
    let t = Instant::now();
    writer.close().unwrap();
    ceiling += t.elapsed().as_secs_f64();
    (ours, baseline, ours + ceiling, checked)
}

/// Avro decode (Confluent-framed, `AvroDecoder`) against the JSON decoder on the same records:
/// (records, Avro s, JSON s, Avro bytes, JSON bytes).
fn avro_against_json(n: usize, size: usize, rt: &tokio::runtime::Runtime) -> (usize, f64, f64, usize, usize) {
    use arrow_avro::schema::{AvroSchema, FingerprintStrategy};
    use arrow_avro::writer::format::AvroSoeFormat;
    use arrow_avro::writer::WriterBuilder;
    use deltabus::decode::avro::AvroDecoder;
    use deltabus::decode::registry::{RegisteredSchema, RegistryClient, RegistryConfig, SchemaType};
    let n = n.min(1_000_000);
    let schema = support::record_schema();
    let avro = AvroSchema::try_from(schema.as_ref()).unwrap();
    let config = RegistryConfig { url: "http://127.0.0.1:1".into(), ..Default::default() };
    let known = RegisteredSchema::new(1, SchemaType::Avro, avro.json_string.clone());
    let mut decoder = AvroDecoder::new(Arc::new(RegistryClient::preloaded(config, vec![known]).unwrap()));
    let json = PayloadDecoder::new(schema.clone(), 1 << 20);
    let (mut avro_s, mut json_s, mut avro_bytes, mut json_bytes) = (0.0, 0.0, 0, 0);
    for start in (0..n).step_by(POLL) {
        let chunk: Vec<String> = (start..(start + POLL).min(n)).map(|i| payload(i, size)).collect();
        let t = Instant::now();
        let batch = json.decode(&raw(&chunk)).batch.unwrap();
        json_s += t.elapsed().as_secs_f64();
        json_bytes += chunk.iter().map(String::len).sum::<usize>();
        // The same rows as Confluent-framed Avro datums, one per record (not timed).
        let frames: Vec<Vec<u8>> = (0..batch.num_rows())
            .map(|r| {
                let mut w = WriterBuilder::new(schema.as_ref().clone())
                    .with_fingerprint_strategy(FingerprintStrategy::Id(1))
                    .build::<_, AvroSoeFormat>(Vec::new())
                    .unwrap();
                w.write(&batch.slice(r, 1)).unwrap();
                w.finish().unwrap();
                w.into_inner()
            })
            .collect();
        avro_bytes += frames.iter().map(Vec::len).sum::<usize>();
        let records: Vec<RawRecord<'_>> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| RawRecord {
                topic: "t",
                partition: 0,
                offset: i as i64,
                timestamp_ms: None,
                key: None,
                payload: Some(f),
            })
            .collect();
        let t = Instant::now();
        let decoded = rt.block_on(decoder.decode(&records));
        avro_s += t.elapsed().as_secs_f64();
        assert!(
            decoded.dead_letters.is_empty()
                && decoded.runs.iter().map(|r| r.batch.num_rows()).sum::<usize>() == chunk.len()
        );
    }
    (n, avro_s, json_s, avro_bytes, json_bytes)
}

/// Protobuf decode (Confluent-framed, `ProtoDecoder`: from the wire format straight into Arrow
/// columns, and the dynamic-message path it falls back to) against the JSON decoder on the
/// same records: (records, Protobuf s, dynamic s, JSON s, Protobuf bytes).
fn protobuf_against_json(n: usize, size: usize, rt: &tokio::runtime::Runtime) -> (usize, f64, f64, f64, usize) {
    use deltabus::decode::json::Decoded;
    use deltabus::decode::protobuf::ProtoDecoder;
    use deltabus::decode::registry::{RegisteredSchema, RegistryClient, RegistryConfig, SchemaType};
    use prost::Message as _;
    const PROTO: &str = "syntax = \"proto3\"; message R { int64 id = 1; string user = 2; string country = 3; \
        double amount = 4; bool ok = 5; string note = 6; int64 ts = 7; }";
    let n = n.min(1_000_000);
    let config = RegistryConfig { url: "http://127.0.0.1:1".into(), ..Default::default() };
    let known = RegisteredSchema::new(1, SchemaType::Protobuf, PROTO);
    let mut decoder = ProtoDecoder::new(Arc::new(RegistryClient::preloaded(config, vec![known]).unwrap()));
    let pool = {
        // The same schema as a descriptor, to encode the messages (not timed).
        let mut files = protox::file::ChainFileResolver::new();
        struct One;
        impl protox::file::FileResolver for One {
            fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
                protox::file::File::from_source(name, PROTO)
            }
        }
        files.add(One);
        let mut c = protox::Compiler::with_file_resolver(files);
        c.open_file("r.proto").unwrap();
        c.descriptor_pool()
    };
    let desc = pool.get_message_by_name("R").unwrap();
    let json = PayloadDecoder::new(support::record_schema(), 1 << 20);
    let (mut proto_s, mut dynamic_s, mut json_s, mut proto_bytes) = (0.0, 0.0, 0.0, 0);
    for start in (0..n).step_by(POLL) {
        let chunk: Vec<String> = (start..(start + POLL).min(n)).map(|i| payload(i, size)).collect();
        let t = Instant::now();
        let Decoded { batch, .. } = json.decode(&raw(&chunk));
        json_s += t.elapsed().as_secs_f64();
        assert_eq!(batch.map(|b| b.num_rows()), Some(chunk.len()));
        let frames: Vec<Vec<u8>> = chunk
            .iter()
            .map(|j| {
                let mut de = serde_json::Deserializer::from_str(j);
                let m = prost_reflect::DynamicMessage::deserialize(desc.clone(), &mut de).unwrap();
                [vec![0, 0, 0, 0, 1, 0], m.encode_to_vec()].concat()
            })
            .collect();
        proto_bytes += frames.iter().map(Vec::len).sum::<usize>();
        let payloads: Vec<Option<&[u8]>> = frames.iter().map(|f| Some(f.as_slice())).collect();
        // As the pipeline does: the wire format straight into the table's columns.
        let t = Instant::now();
        let batch = rt.block_on(decoder.columns(&payloads, json.schema()));
        proto_s += t.elapsed().as_secs_f64();
        assert_eq!(batch.map(|b| b.num_rows()), Some(chunk.len()));
        // The fallback: dynamic messages serialized into Arrow (no JSON text).
        let t = Instant::now();
        let messages = rt.block_on(decoder.messages(&payloads));
        let options = deltabus::decode::protobuf::proto3_options();
        let rows: Vec<_> =
            messages.iter().map(|m| deltabus::decode::protobuf::Proto3(&m.as_ref().unwrap().1, &options)).collect();
        let batch = json.decode_serialized(&rows);
        dynamic_s += t.elapsed().as_secs_f64();
        assert_eq!(batch.map(|b| b.num_rows()), Some(chunk.len()));
    }
    (n, proto_s, dynamic_s, json_s, proto_bytes)
}

/// What a pipeline run measured.
struct Ingested {
    seconds: f64,
    commits: u64,
    /// CPU seconds of this process during the run.
    cpu: f64,
    /// RSS of the process when the pipeline started, and its peak during the run (MiB).
    rss_before: f64,
    rss_peak: f64,
}

impl Ingested {
    /// Commits, CPU and memory, as the report lines print them.
    fn costs(&self) -> String {
        format!(
            "{} commits, CPU {:.1} s, peak RSS {:.0} MiB ({:.0} MiB above the {:.0} MiB before the run)",
            self.commits,
            self.cpu,
            self.rss_peak,
            self.rss_peak - self.rss_before,
            self.rss_before
        )
    }
}

/// Resets the process's peak RSS (VmHWM) to its current RSS, and returns that (MiB), so that a
/// later peak is the run's alone (what was produced or read before does not count).
fn reset_peak_rss() -> f64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn proc_stat() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0);
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    (hwm, (ticks(11) + ticks(12)) / 100.0)
}

fn pipeline(brokers: &str, topic: &str, table: &str, latency_ms: u64, max_rows: u64) -> PipelineConfig {
    let mut p = PipelineConfig::new(table, brokers, topic);
    p.app_id = Some("bench".into());
    p.create = true;
    p.schema = Some(SCHEMA.into());
    p.kafka.properties.insert("fetch.wait.max.ms".into(), "20".into());
    p.flush.max_latency = HumanDuration::from_millis(latency_ms);
    p.flush.max_rows = max_rows;
    p
}

/// (seconds from first record to last commit, commits).
async fn end_to_end(n: usize, size: usize) -> (f64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    support::ingest_alongside(
        n as u64,
        |brokers| pipeline(brokers, "bench", &table, 2000, 250_000),
        move |i| (None, payload(i as usize, size), (i % 4) as i32),
    )
    .await
}

/// Against a separate broker (`DELTABUS_BENCH_BROKERS`, e.g. tansu): `n` records pre-produced
/// to a new 4-partition topic, then ingested from the beginning. (seconds from first record to
/// last commit, commits, CPU seconds of this process while ingesting).
async fn external(brokers: &str, n: usize, size: usize) -> Ingested {
    // An already produced topic (BENCH_EXTERNAL_TOPIC_<size>) skips production, so that the
    // peak RSS of this process is the pipeline's alone.
    let topic = match std::env::var(format!("BENCH_EXTERNAL_TOPIC_{size}")) {
        Ok(t) => t,
        Err(_) => produce_external(brokers, n, size).await,
    };
    // BENCH_NO_BARE=1 skips the baseline, so that the peak RSS is the pipeline's alone.
    if std::env::var("BENCH_NO_BARE").is_err() {
        let (_, cpu0) = proc_stat();
        let raw = bare_consume(brokers, &topic, n).await;
        let (_, cpu1) = proc_stat();
        println!(
            "external baseline: a bare librdkafka consumer reads the {n} records (no decoding) in {raw:.2} s = {:.0} records/s, CPU {:.1} s ({:.2} µs a record)",
            n as f64 / raw,
            cpu1 - cpu0,
            (cpu1 - cpu0) * 1e6 / n as f64
        );
        if std::env::var("BENCH_ONLY_BARE").is_ok() {
            let (rss_peak, _) = proc_stat();
            return Ingested { seconds: raw, commits: 0, cpu: 0.0, rss_before: 0.0, rss_peak };
        }
    }
    external_pipeline(brokers, &topic, n).await
}

async fn produce_external(brokers: &str, n: usize, size: usize) -> String {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let topic = format!("bench-{}", uuid::Uuid::new_v4().simple());
    let admin: AdminClient<_> = ClientConfig::new().set("bootstrap.servers", brokers).create().unwrap();
    let r = admin.create_topics([&NewTopic::new(&topic, 4, TopicReplication::Fixed(1))], &AdminOptions::new()).await;
    assert!(r.unwrap().iter().all(Result::is_ok));
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "20")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.kbytes", "65536")
        .set("compression.type", "zstd")
        .set("compression.level", "1")
        .create()
        .unwrap();
    let t = Instant::now();
    for start in (0..n).step_by(20_000) {
        let mut pending = Vec::new();
        for i in start..(start + 20_000).min(n) {
            let p = payload(i, size);
            loop {
                let r = FutureRecord::<(), String>::to(&topic).payload(&p).partition((i % 4) as i32);
                match producer.send_result(r) {
                    Ok(d) => {
                        pending.push(d);
                        break;
                    }
                    Err((_, _)) => tokio::time::sleep(Duration::from_millis(5)).await,
                }
            }
        }
        for d in futures::future::join_all(pending).await {
            d.unwrap().unwrap();
        }
    }
    drop(producer);
    println!("external pre-produced {n} records to topic {topic} in {:.1} s", t.elapsed().as_secs_f64());
    topic
}

/// Extra consumer properties for both the baseline and the pipeline, from
/// `BENCH_CONSUMER_PROPS=key=value,key=value` (for comparing fetch settings).
fn consumer_properties() -> impl Iterator<Item = (String, String)> {
    let spec = std::env::var("BENCH_CONSUMER_PROPS").unwrap_or_default();
    let pairs: Vec<(String, String)> = spec
        .split(',')
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
        .collect();
    pairs.into_iter()
}

/// Seconds a plain consumer takes to read `n` records of `topic` from the beginning.
async fn bare_consume(brokers: &str, topic: &str, n: usize) -> f64 {
    bare_consume_partitions(brokers, topic, n, 4).await
}

async fn bare_consume_partitions(brokers: &str, topic: &str, n: usize, partitions: i32) -> f64 {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let topic = topic.to_string();
    let brokers = brokers.to_string();
    tokio::task::spawn_blocking(move || {
        let mut cfg = ClientConfig::new();
        cfg.set("bootstrap.servers", &brokers)
            .set("group.id", format!("bare-{}", uuid::Uuid::new_v4().simple()))
            .set("enable.auto.commit", "false")
            // The pipeline's prefetch settings at the default `max_bytes`, so that both read alike.
            .set("queued.max.messages.kbytes", "65536")
            .set("queued.min.messages", "262144")
            .set("fetch.queue.backoff.ms", "20");
        cfg.extend(consumer_properties());
        let consumer: BaseConsumer = cfg.create().unwrap();
        let mut tpl = rdkafka::TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition_offset(&topic, p, rdkafka::Offset::Beginning).unwrap();
        }
        consumer.assign(&tpl).unwrap();
        let t = Instant::now();
        let (mut got, mut bytes) = (0usize, 0usize);
        while got < n {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                bytes += m.payload_len();
                got += 1;
            }
        }
        assert!(bytes > 0);
        t.elapsed().as_secs_f64()
    })
    .await
    .unwrap()
}

async fn external_pipeline(brokers: &str, topic: &str, n: usize) -> Ingested {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let metrics = Arc::new(Metrics::default());
    let m = metrics.pipeline("bench");
    let (tx, rx) = tokio::sync::watch::channel(false);
    let watcher = tokio::spawn(support::time_to_commit(m, n as u64, tx));
    let mut p = pipeline(brokers, topic, &table, 2000, 250_000);
    p.kafka.properties = consumer_properties().collect();
    // BENCH_MAX_BYTES: batches end at that many buffered bytes (not at 250,000 rows).
    if let Ok(b) = std::env::var("BENCH_MAX_BYTES") {
        p.flush.max_bytes = b.parse().expect("BENCH_MAX_BYTES: a size");
        p.flush.max_rows = u64::MAX;
    }
    let opts = ServiceOptions {
        pipelines: vec![p.validate("bench").unwrap()],
        storage: Default::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(60),
    };
    let rss_before = reset_peak_rss();
    let (_, cpu0) = proc_stat();
    let reports = run(opts, metrics, rx).await.unwrap();
    let (rss_peak, cpu1) = proc_stat();
    let seconds = watcher.await.unwrap().unwrap();
    assert_eq!(reports["bench"].rows_committed, n as u64);
    Ingested { seconds, commits: reports["bench"].commits, cpu: cpu1 - cpu0, rss_before, rss_peak }
}

/// The broker out of the way: `n` records pre-produced to a 64-partition topic of the
/// in-process mock cluster (under its 5 MB per partition), then read by a bare consumer and
/// ingested by the pipeline. (bare seconds, pipeline seconds, commits, pipeline CPU seconds).
async fn mock_preproduced(n: usize, size: usize) -> (f64, Ingested) {
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("pre", 64, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let producer = support::producer(&brokers);
    for start in (0..n).step_by(20_000) {
        let mut pending = Vec::new();
        for i in start..(start + 20_000).min(n) {
            let p = payload(i, size);
            let r = FutureRecord::<(), String>::to("pre").payload(&p).partition((i % 64) as i32);
            pending.push(producer.send_result(r).unwrap());
        }
        for d in futures::future::join_all(pending).await {
            d.unwrap().unwrap();
        }
    }
    drop(producer);
    let before = reset_peak_rss();
    let bare = bare_consume_partitions(&brokers, "pre", n, 64).await;
    let (peak, _) = proc_stat();
    println!(
        "preproduced: the bare consumer's peak RSS {peak:.0} MiB ({:.0} MiB above the {before:.0} MiB before)",
        peak - before
    );
    (bare, external_pipeline(&brokers, "pre", n).await)
}

/// Send → visible latencies (ms) at a 1 s flush, one record every 10 ms for 20 s.
async fn latency() -> Vec<f64> {
    support::send_to_visible(
        |brokers, topic, table| {
            let mut p = pipeline(brokers, topic, table, 1000, 1_000_000);
            p.app_id = Some("lat".into());
            p
        },
        |i| payload(i, 250),
        false,
    )
    .await
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// glibc's and mimalloc's freed memory handed back near the memory bound, as the `deltabus`
/// binary does (`BENCH_NO_TRIM=1` leaves both with the process, `BENCH_NO_MI_COLLECT=1`
/// mimalloc's).
#[allow(unsafe_code)]
fn trim_c_heap() {
    // SAFETY: `malloc_trim` takes no pointer and may be called from any thread at any time.
    unsafe { libc::malloc_trim(0) };
    if std::env::var_os("BENCH_NO_MI_COLLECT").is_none() {
        // SAFETY: takes no pointer; from any thread it purges mimalloc's arenas program-wide.
        unsafe { libmimalloc_sys::mi_collect(true) };
    }
}

fn main() {
    // Small pages, as the deltabus binary runs (BENCH_THP=1 leaves transparent huge pages on).
    if std::env::var_os("BENCH_THP").is_none() {
        nix::sys::prctl::set_thp_disable(true).unwrap();
    }
    if std::env::var_os("BENCH_NO_TRIM").is_none() {
        deltabus::set_heap_trimmer(trim_c_heap);
    }
    // DELTABUS_LOG=info shows the pipeline's flushes (timestamps, durations) on stderr.
    if let Ok(filter) = std::env::var("DELTABUS_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let n = records();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    // BENCH_ONLY_LATENCY=1: the latency part alone (against DELTABUS_BENCH_BROKERS when set).
    if std::env::var_os("BENCH_ONLY_LATENCY").is_some() {
        return print_latency(&rt);
    }
    let only_external = std::env::var("BENCH_ONLY_EXTERNAL").is_ok();
    let only_pre = std::env::var("BENCH_ONLY_PREPRODUCED").is_ok();
    for size in [250usize, 1024].into_iter().filter(|_| !only_external && !only_pre) {
        let bytes: usize = (0..1000).map(|i| payload(i, size).len()).sum::<usize>() * n / 1000;
        let mb = bytes as f64 / 1e6;
        println!("== {n} records of ~{size} B ({mb:.0} MB of payload)");
        let (ours, baseline, ceiling, checked) = in_memory(n, size);
        let rate = |s: f64| n as f64 / s;
        println!("decode   deltabus: {ours:.2} s, {:.0} records/s | serde_json::Value path: {baseline:.2} s, {:.0} records/s | ratio {:.2}x the time", rate(ours), rate(baseline), ours / baseline);
        println!("decode   the value rules + arrow_json (tables the one scan does not cover): {checked:.2} s, {:.0} records/s, {:.2}x the serde_json::Value path's time", rate(checked), checked / baseline);
        let (an, avro_s, json_s, avro_b, json_b) = avro_against_json(n, size, &rt);
        println!(
            "avro     decode of {an} Confluent-framed records: {avro_s:.2} s, {:.0} records/s, {:.0} MB/s ({:.0} MB) | JSON of the same rows: {json_s:.2} s, {:.0} records/s ({:.0} MB) | ratio {:.2}x the time",
            an as f64 / avro_s,
            avro_b as f64 / 1e6 / avro_s,
            avro_b as f64 / 1e6,
            an as f64 / json_s,
            json_b as f64 / 1e6,
            avro_s / json_s
        );
        let (pn, proto_s, dynamic_s, pjson_s, proto_b) = protobuf_against_json(n, size, &rt);
        println!(
            "protobuf decode of {pn} Confluent-framed messages (wire format into columns): {proto_s:.2} s, {:.0} records/s ({:.0} MB) | dynamic messages: {dynamic_s:.2} s | JSON of the same rows: {pjson_s:.2} s, {:.0} records/s | ratio {:.2}x JSON's time (dynamic {:.2}x)",
            pn as f64 / proto_s,
            proto_b as f64 / 1e6,
            pn as f64 / pjson_s,
            proto_s / pjson_s,
            dynamic_s / pjson_s
        );
        println!(
            "ceiling  decode + Parquet zstd(1) encode in memory: {ceiling:.2} s, {:.0} records/s, {:.0} MB/s",
            rate(ceiling),
            mb / ceiling
        );
        // BENCH_ONLY_DECODE=1: the in-memory lines alone.
        if std::env::var("BENCH_ONLY_DECODE").is_ok() {
            continue;
        }
        let (_, cpu0) = proc_stat();
        let (seconds, commits) = rt.block_on(end_to_end(n, size));
        let (rss, cpu1) = proc_stat();
        println!(
            "ingest   end to end: {seconds:.2} s, {:.0} records/s, {:.0} MB/s ({:.2}x the ceiling's rate), {commits} commits, CPU {:.1} s (producer and mock broker included), peak RSS {rss:.0} MiB",
            rate(seconds),
            mb / seconds,
            ceiling / seconds,
            cpu1 - cpu0
        );
    }
    if let Some(brokers) = std::env::var("DELTABUS_BENCH_BROKERS").ok().filter(|_| !only_pre) {
        let big: usize =
            std::env::var("BENCH_EXTERNAL_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000);
        // BENCH_EXTERNAL_SIZE=250 or 1024 runs one record size (a clean peak RSS for each).
        let only_size: Option<usize> = std::env::var("BENCH_EXTERNAL_SIZE").ok().and_then(|v| v.parse().ok());
        for (count, size) in [(big, 250usize), (big / 10, 1024)] {
            if only_size.is_some_and(|s| s != size) {
                continue;
            }
            let mb = (0..1000).map(|i| payload(i, size).len()).sum::<usize>() as f64 * count as f64 / 1000.0 / 1e6;
            let r = rt.block_on(external(&brokers, count, size));
            println!(
                "external {count} pre-produced records of ~{size} B from {brokers} (zstd(1) shrinks them {:.1}x): {:.2} s, {:.0} records/s, {:.0} MB/s, {:.2} µs of CPU a record, {}",
                compression_ratio(size),
                r.seconds,
                count as f64 / r.seconds,
                mb / r.seconds,
                r.cpu * 1e6 / count as f64,
                r.costs()
            );
        }
    }
    if only_external {
        return;
    }
    let pre: usize = std::env::var("BENCH_PREPRODUCED").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let (bare, r) = rt.block_on(mock_preproduced(pre, 250));
    println!(
        "preproduced {pre} records of ~250 B on the in-process mock (64 partitions): bare consumer {bare:.2} s = {:.0} records/s; pipeline {:.2} s = {:.0} records/s ({:.2}x the bare consumer's time), {} (the RSS before holds the mock's topic)",
        pre as f64 / bare,
        r.seconds,
        pre as f64 / r.seconds,
        r.seconds / bare,
        r.costs()
    );
    if only_pre {
        return;
    }
    print_latency(&rt);
}

fn print_latency(rt: &tokio::runtime::Runtime) {
    let mut lat = rt.block_on(latency());
    lat.sort_by(f64::total_cmp);
    println!(
        "latency  send → visible at a 1 s flush ({} records, 1 per 10 ms): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat[lat.len() - 1]
    );
}
