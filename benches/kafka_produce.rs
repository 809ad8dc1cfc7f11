//! Kafka clients straight into a table (`deltabus serve` with its Kafka-protocol listener)
//! against push ingest over HTTP and against a broker plus `deltabus ingest`, in the same run,
//! with the same records.
//!
//! 1. Produce: 8 librdkafka producers (idempotent, `acks=all`, lz4) send 50,000 records each
//!    of ~250 bytes (400,000 rows) as fast as they can into a served topic of 8 partitions at
//!    a 100 ms commit window: rows/s until every record is acknowledged (target: at least 0.8×
//!    push's rows/s) and the server's CPU per row; then at 40,000 records/s (below
//!    saturation, so that latency is the server's, not the producers' queues) produce →
//!    acknowledged p50/p99 per record (target: p99 within the window + 100 ms).
//! 2. Push baseline: 8 HTTP producers post the same records in batches of 1,000 (exactly
//!    once: producer id and sequence) at the same window.
//! 3. Broker baseline (when a broker is given, `DELTABUS_BENCH_BROKERS`, e.g. tansu): the
//!    same producers into a topic of 8 partitions while `deltabus ingest` reads it into a
//!    table; rows/s until the table holds every row, and produce → acknowledged by the broker.
//! 4. Fetch: a librdkafka consumer reads the served topic's change feed (every partition from
//!    the start) against `deltabus changes` printing the same feed to stdout.
//! 5. Overload: 16 producers send 1 MiB batches without pause at a server whose
//!    `max_buffered` is 64 MiB: the server's peak RSS above its idle RSS.
//!
//! Run: `cargo build --release && cargo bench --bench kafka_produce` (`BENCH_SERVER_LOG=path`
//! keeps the servers' logs, `BENCH_METRICS=1` prints the server's produce-answer histogram
//! after the 20 ms run, `BENCH_ONLY_OVERLOAD=1` runs the fifth part alone,
//! `BENCH_OVERLOAD_BUFFERED=48MiB` sets its bound, `BENCH_SERVER_BIN`
//! names another server binary or a wrapper of it, e.g. a profiler's,
//! `BENCH_PRODUCER_PROPS=key=value,...` overrides the producers' properties; add
//! `DELTABUS_BENCH_BROKERS=127.0.0.1:9092` with a broker running for the third).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

#[path = "support/records.rs"]
mod records;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use records::record;

const PRODUCERS: usize = 8;
const EACH: usize = 50_000;
const BATCH: usize = 1000;
const PARTITIONS: usize = 8;

/// Starts `deltabus serve --config <file>`; returns the child, its HTTP and Kafka addresses.
fn serve(bin: &Path, config: &Path) -> (Child, String, String) {
    let mut child = Command::new(bin)
        .args(["serve", "--config"])
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(server_log())
        .spawn()
        .unwrap();
    // The first JSON line (a wrapper such as a profiler may print lines of its own first).
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let v: serde_json::Value = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the server ended before listening");
        if let Ok(v) = serde_json::from_str(&line) {
            break v;
        }
    };
    (child, v["listening"].as_str().unwrap().to_string(), v["kafka"].as_str().unwrap_or_default().to_string())
}

/// The servers' log: appended to `BENCH_SERVER_LOG` when set, else dropped.
fn server_log() -> Stdio {
    match std::env::var("BENCH_SERVER_LOG") {
        Ok(path) => std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().into(),
        Err(_) => Stdio::null(),
    }
}

fn server_config(root: &Path, name: &str, table: &Path, max_buffered: &str) -> PathBuf {
    windowed_config(root, name, table, max_buffered, "100ms")
}

fn windowed_config(root: &Path, name: &str, table: &Path, max_buffered: &str, window: &str) -> PathBuf {
    let path = root.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ncommit_window = \"{window}\"\nmax_buffered = \"{max_buffered}\"\nmax_body = \"8MiB\"\n\
             [server.tables.events]\ntable = {:?}\ncreate = true\n\
             [server.kafka]\nlisten = \"127.0.0.1:0\"\nmax_request = \"8MiB\"\n\
             [server.kafka.topics.events]\ntable = \"events\"\npartitions = {PARTITIONS}\n",
            table.display().to_string()
        ),
    )
    .unwrap();
    path
}

fn rss_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024.0
}

/// CPU seconds (user and system) a process has used.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn stop(mut child: Child) {
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let _ = child.wait();
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn rows_in(bin: &Path, table: &Path) -> usize {
    let out = Command::new(bin).arg("cat").arg(table).output().unwrap();
    out.stdout.iter().filter(|b| **b == b'\n').count()
}

/// Counts a producer's acknowledgements in librdkafka's delivery callback: the cheapest way
/// to learn them (no future, channel or task per record).
#[derive(Default)]
struct Acks {
    ok: std::sync::atomic::AtomicUsize,
    failed: std::sync::atomic::AtomicUsize,
}

impl rdkafka::ClientContext for Acks {}

impl rdkafka::producer::ProducerContext for Acks {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        let counter = if result.is_ok() { &self.ok } else { &self.failed };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The producers' configuration: idempotent, `acks=all`, lz4, `linger.ms=5`;
/// `BENCH_PRODUCER_PROPS=key=value,...` overrides these (e.g. compression.type=none).
fn producer_config(brokers: &str) -> ClientConfig {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", brokers)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("compression.type", "lz4")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "300000");
    for pair in std::env::var("BENCH_PRODUCER_PROPS").unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').expect("BENCH_PRODUCER_PROPS: key=value,...");
        cfg.set(k, v);
    }
    cfg
}

/// 8 librdkafka producers, each on a thread of its own, send `each` records apiece as fast as
/// they can, acknowledgements counted in the delivery callback: seconds until the last
/// acknowledgement. Records `0..` of the benchmark's sequence, producer p taking its share.
fn produce_flat_out(brokers: &str, topic: &str, each: usize) -> f64 {
    use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
    use std::sync::atomic::Ordering;
    let started = Instant::now();
    let threads: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let producer: ThreadedProducer<Acks> =
                producer_config(brokers).create_with_context(Acks::default()).unwrap();
            let topic = topic.to_string();
            std::thread::spawn(move || {
                let mut key = String::new();
                for n in 0..each {
                    let i = p * each + n;
                    let value = record(i);
                    key.clear();
                    std::fmt::Write::write_fmt(&mut key, format_args!("user-{}", i % 100_000)).unwrap();
                    let mut rec = BaseRecord::to(&topic).key(&key).payload(&value);
                    loop {
                        match producer.send(rec) {
                            Ok(()) => break,
                            Err((
                                rdkafka::error::KafkaError::MessageProduction(
                                    rdkafka::types::RDKafkaErrorCode::QueueFull,
                                ),
                                back,
                            )) => {
                                rec = back;
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            Err((e, _)) => panic!("{e}"),
                        }
                    }
                }
                producer.flush(Duration::from_secs(300)).unwrap();
                let ctx = producer.context();
                assert_eq!(ctx.failed.load(Ordering::Relaxed), 0, "a record was not acknowledged");
                assert_eq!(ctx.ok.load(Ordering::Relaxed), each, "every record acknowledged");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    started.elapsed().as_secs_f64()
}

/// 8 librdkafka producers send `each` records apiece at `rate` records per second each:
/// sorted per-record latencies (send → acknowledged) in seconds. Records `first..` of the
/// benchmark's sequence, producer p taking its share.
async fn produce_paced(brokers: &str, topic: &str, first: usize, each: usize, rate: f64) -> Vec<f64> {
    let mut tasks = Vec::new();
    for p in 0..PRODUCERS {
        let producer: FutureProducer = producer_config(brokers).create().unwrap();
        let topic = topic.to_string();
        tasks.push(tokio::spawn(async move {
            let mut pending = Vec::with_capacity(each);
            // The first record is sent and acknowledged before the clock starts, so that
            // connecting, reading metadata and getting a producer id are not counted as the
            // latency of the records that would wait for them.
            let (value, key) = (record(first + p * each), format!("user-{}", (first + p * each) % 100_000));
            producer.send(FutureRecord::to(&topic).key(&key).payload(&value), Duration::from_secs(300)).await.unwrap();
            let began = Instant::now();
            for n in 1..each {
                let due = began + Duration::from_secs_f64((n - 1) as f64 / rate);
                if due > Instant::now() {
                    tokio::time::sleep_until(due.into()).await;
                }
                let i = first + p * each + n;
                let value = record(i);
                let key = format!("user-{}", i % 100_000);
                let sent = Instant::now();
                loop {
                    match producer.send_result(FutureRecord::to(&topic).key(&key).payload(&value)) {
                        Ok(d) => {
                            // A task per record, so that its acknowledgement is timed when it
                            // arrives.
                            pending.push(tokio::spawn(async move {
                                d.await.unwrap().unwrap();
                                sent.elapsed().as_secs_f64()
                            }));
                            break;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                    }
                }
            }
            let mut lat = Vec::with_capacity(pending.len());
            for t in pending {
                lat.push(t.await.unwrap());
            }
            lat
        }));
    }
    let mut latencies = Vec::with_capacity(PRODUCERS * each);
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    latencies.sort_by(f64::total_cmp);
    latencies
}

async fn push(addr: &str) -> (f64, Vec<f64>) {
    let url = format!("http://{addr}/v1/tables/events/records");
    let started = Instant::now();
    let mut tasks = Vec::new();
    for p in 0..PRODUCERS {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut lat = Vec::new();
            for (seq, first) in (0..EACH).step_by(BATCH).enumerate() {
                let body: String = (first..first + BATCH).map(|n| record(p * EACH + n) + "\n").collect();
                let t = Instant::now();
                let r = client
                    .post(&url)
                    .header("Content-Type", "application/x-ndjson")
                    .header("Producer-Id", format!("bench-{p}"))
                    .header("Producer-Sequence", seq.to_string())
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
                lat.push(t.elapsed().as_secs_f64());
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    let seconds = started.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    (seconds, lat)
}

/// A consumer reads every partition of `topic` from the start to its end: (seconds, records).
fn consume_all(brokers: &str, topic: &str) -> (f64, usize) {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{Message, Offset, TopicPartitionList};
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "bench-fetch")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        list.add_partition_offset(topic, p as i32, Offset::Beginning).unwrap();
    }
    consumer.assign(&list).unwrap();
    let started = Instant::now();
    let (mut records, mut ended) = (0, std::collections::BTreeSet::new());
    while ended.len() < PARTITIONS {
        match consumer.poll(Duration::from_secs(5)) {
            Some(Ok(m)) => {
                records += 1;
                ended.remove(&m.partition());
            }
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                ended.insert(p);
            }
            Some(Err(e)) => panic!("{e}"),
            None => {}
        }
    }
    (started.elapsed().as_secs_f64(), records)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/kafka_produce");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let bin = std::env::var_os("BENCH_SERVER_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/deltabus"), PathBuf::from);
    assert!(bin.exists(), "build the binary first: cargo build --release");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    if std::env::var("BENCH_ONLY_OVERLOAD").is_ok() {
        overload(&bin, &root, &rt);
        return;
    }
    let rows = PRODUCERS * EACH;
    let ms = |s: f64| s * 1000.0;
    println!("== Kafka clients into a table: {PRODUCERS} producers x {EACH} records (~250 B), 100 ms commit window ==");

    // Push over HTTP: the baseline.
    let pushed = root.join("pushed");
    let (server, http, _) = serve(&bin, &server_config(&root, "push", &pushed, "512MiB"));
    let (cpu, clients) = (cpu_seconds(server.id()), cpu_seconds(std::process::id()));
    let (push_s, push_lat) = rt.block_on(push(&http));
    let push_cpu = cpu_seconds(server.id()) - cpu;
    let push_clients = cpu_seconds(std::process::id()) - clients;
    stop(server);
    assert_eq!(rows_in(&bin, &pushed), rows);
    let push_rate = rows as f64 / push_s;
    println!(
        "push over HTTP (batches of {BATCH})          {push_s:>6.2} s  {push_rate:>9.0} rows/s  answer p50 {:.0} ms  p99 {:.0} ms  server CPU {:.2} us/row",
        ms(percentile(&push_lat, 0.5)),
        ms(percentile(&push_lat, 0.99)),
        push_cpu * 1e6 / rows as f64
    );

    // Kafka producers into the served topic.
    let produced = root.join("produced");
    let (server, kafka_http, kafka) = serve(&bin, &server_config(&root, "kafka", &produced, "512MiB"));
    let groups = |http: &str| {
        if std::env::var("BENCH_METRICS").is_ok() {
            let m = rt.block_on(async {
                reqwest::get(format!("http://{http}/metrics")).await.unwrap().text().await.unwrap()
            });
            for l in m.lines().filter(|l| l.starts_with("deltabus_push_groups_total")) {
                println!("{l}");
            }
        }
    };
    let (cpu, clients) = (cpu_seconds(server.id()), cpu_seconds(std::process::id()));
    let kafka_s = produce_flat_out(&kafka, "events", EACH);
    let kafka_cpu = cpu_seconds(server.id()) - cpu;
    let kafka_clients = cpu_seconds(std::process::id()) - clients;
    let rss = rss_mib(server.id(), "VmHWM:");
    let kafka_rate = rows as f64 / kafka_s;
    println!(
        "librdkafka producers into deltabus         {kafka_s:>6.2} s  {kafka_rate:>9.0} rows/s  ({:.2}x push)  server CPU {:.2} us/row ({:.2}x push)  peak RSS {rss:.0} MiB",
        kafka_rate / push_rate,
        kafka_cpu * 1e6 / rows as f64,
        kafka_cpu / push_cpu,
    );
    // The clients share the two cores with the server: the rate each path would reach with
    // the server's CPU alone, one core of it.
    println!(
        "  clients' CPU: push {:.2} us/row, librdkafka {:.2} us/row; rows per server CPU-second: push {:.0}, librdkafka {:.0} ({:.2}x)",
        push_clients * 1e6 / rows as f64,
        kafka_clients * 1e6 / rows as f64,
        rows as f64 / push_cpu,
        rows as f64 / kafka_cpu,
        push_cpu / kafka_cpu
    );
    // Latency below saturation: 8 producers at 5,000 records/s each for 5 s, at this window
    // and (on a table of its own) at 20 ms.
    groups(&kafka_http);
    let lat = rt.block_on(produce_paced(&kafka, "events", rows, 25_000, 5_000.0));
    groups(&kafka_http);
    println!(
        "  paced at 40,000 records/s, 100 ms window              acked p50 {:.0} ms  p99 {:.0} ms",
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.99)),
    );
    {
        let paced = root.join("paced");
        let (server, http, kafka) = serve(&bin, &windowed_config(&root, "paced", &paced, "512MiB", "20ms"));
        let lat = rt.block_on(produce_paced(&kafka, "events", 0, 25_000, 5_000.0));
        if std::env::var("BENCH_METRICS").is_ok() {
            let m = rt.block_on(async {
                reqwest::get(format!("http://{http}/metrics")).await.unwrap().text().await.unwrap()
            });
            for l in m.lines().filter(|l| l.contains("kafka_produce") && l.contains("seconds")) {
                println!("{l}");
            }
        }
        stop(server);
        println!(
            "  paced at 40,000 records/s,  20 ms window              acked p50 {:.0} ms  p99 {:.0} ms",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99)),
        );
    }
    // The change feed by Fetch, against `deltabus changes` to stdout.
    let (fetch_s, fetched) = consume_all(&kafka, "events");
    stop(server);
    let all = rows + PRODUCERS * 25_000;
    assert_eq!(fetched, all, "the feed holds every row once");
    assert_eq!(rows_in(&bin, &produced), all, "every record once");
    let started = Instant::now();
    let out = Command::new(&bin).arg("changes").arg(&produced).stdout(Stdio::piped()).output().unwrap();
    let changes_s = started.elapsed().as_secs_f64();
    assert_eq!(out.stdout.iter().filter(|b| **b == b'\n').count(), all);
    println!(
        "fetch: librdkafka consumer reads the feed   {fetch_s:>6.2} s  {:>9.0} rows/s  ({:.2}x `deltabus changes` to stdout: {changes_s:.2} s, {:.0} rows/s)",
        all as f64 / fetch_s,
        changes_s / fetch_s,
        all as f64 / changes_s
    );

    // A broker plus `deltabus ingest`.
    if let Ok(brokers) = std::env::var("DELTABUS_BENCH_BROKERS") {
        let topic = format!("bench-{}", uuid::Uuid::new_v4().simple());
        rt.block_on(async {
            use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
            let admin: AdminClient<_> = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
            let new = NewTopic::new(&topic, PARTITIONS as i32, TopicReplication::Fixed(1));
            assert!(admin.create_topics([&new], &AdminOptions::new()).await.unwrap().iter().all(Result::is_ok));
        });
        let ingested = root.join("ingested");
        let ingest = Command::new(&bin)
            .arg("ingest")
            .arg(&topic)
            .arg(&ingested)
            .args(["--brokers", &brokers, "--app-id", "bench", "--create", "--flush-interval", "100ms"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let broker_s = produce_flat_out(&brokers, &topic, EACH);
        while rows_in(&bin, &ingested) < rows {
            std::thread::sleep(Duration::from_millis(200));
        }
        let landed_s = started.elapsed().as_secs_f64();
        stop(ingest);
        // The same paced producers against the broker: the latency floor of the clients and
        // the shared cores.
        let lat = rt.block_on(produce_paced(&brokers, &topic, rows, 25_000, 5_000.0));
        println!(
            "  paced at 40,000 records/s into the broker            acked p50 {:.0} ms  p99 {:.0} ms",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99)),
        );
        println!(
            "librdkafka producers into the broker       {broker_s:>6.2} s  {:>9.0} rows/s acknowledged; with `deltabus ingest` every row in the table after {landed_s:.2} s = {:>9.0} rows/s (deltabus direct: {:.2}x)",
            rows as f64 / broker_s,
            rows as f64 / landed_s,
            landed_s / kafka_s
        );
    }

    overload(&bin, &root, &rt);
}

/// Overload: 16 producers of 1 MiB batches at a 64 MiB bound; prints the server's peak RSS
/// above idle.
fn overload(bin: &Path, root: &Path, rt: &tokio::runtime::Runtime) {
    // Overload: 16 producers of 1 MiB batches at a 64 MiB bound.
    let overloaded = root.join("overloaded");
    // `BENCH_OVERLOAD_BUFFERED` sets another bound (at least 48MiB: six times `max_body`).
    let bound = std::env::var("BENCH_OVERLOAD_BUFFERED").unwrap_or_else(|_| "64MiB".into());
    let (server, _, kafka) = serve(bin, &server_config(root, "overload", &overloaded, &bound));
    std::thread::sleep(Duration::from_millis(500));
    let idle = rss_mib(server.id(), "VmRSS:");
    let idle_file = rss_mib(server.id(), "RssFile:");
    let idle_anon = rss_mib(server.id(), "RssAnon:");
    // The peak of anonymous memory (heap, stacks: what buffers take; VmHWM also counts code
    // paged in), sampled every 10 ms while the producers run.
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (sampling, pid) = (sampling.clone(), server.id());
        std::thread::spawn(move || {
            let mut peak: f64 = 0.0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid, "RssAnon:"));
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    let sent = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut tasks = Vec::new();
        for p in 0..16 {
            let kafka = kafka.clone();
            tasks.push(tokio::spawn(async move {
                let producer: FutureProducer = ClientConfig::new()
                    .set("bootstrap.servers", &kafka)
                    .set("enable.idempotence", "true")
                    .set("batch.size", "1048576")
                    .set("linger.ms", "50")
                    .set("message.timeout.ms", "60000")
                    .create()
                    .unwrap();
                let mut sent = 0usize;
                let mut pending = Vec::new();
                while Instant::now() < deadline {
                    let value = record(p * 10_000_000 + sent);
                    match producer.send_result(FutureRecord::<(), String>::to("events").payload(&value)) {
                        Ok(d) => {
                            pending.push(d);
                            sent += 1;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                    }
                }
                let acked =
                    futures::future::join_all(pending).await.into_iter().filter(|r| matches!(r, Ok(Ok(_)))).count();
                (sent, acked)
            }));
        }
        let mut total = (0, 0);
        for t in tasks {
            let (s, a) = t.await.unwrap();
            total = (total.0 + s, total.1 + a);
        }
        total
    });
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak_anon = sampler.join().unwrap();
    let peak = rss_mib(server.id(), "VmHWM:");
    let (anon, file) = (rss_mib(server.id(), "RssAnon:"), rss_mib(server.id(), "RssFile:"));
    let threads = rss_mib(server.id(), "Threads:") * 1024.0;
    println!(
        "  anonymous RSS: idle {idle_anon:.0} MiB, peak (sampled) {peak_anon:.0} MiB = {:.0} MiB above idle, after {anon:.0} MiB; file-backed (code) idle {idle_file:.0} MiB, after {file:.0} MiB; {threads:.0} threads",
        peak_anon - idle_anon
    );
    stop(server);
    println!(
        "overload: 16 producers, 1 MiB batches, max_buffered {bound}: {} records sent, {} acknowledged; peak RSS {peak:.0} MiB, {:.0} MiB above idle ({idle:.0} MiB)",
        sent.0,
        sent.1,
        peak - idle
    );
}
