//! Kafka for the tests: pipelines against librdkafka's in-process mock cluster, a producer,
//! and a service run until its metrics say it is done.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use deltabus::config::pipeline::PipelineConfig;
use deltabus::metrics::Metrics;
use deltabus::pipeline::runner::RunReport;
use deltabus::pipeline::service::{run, ServiceOptions};
use deltabus::storage::StorageOptions;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

pub fn pipeline(brokers: &str, topic: &str, table: &str) -> PipelineConfig {
    let mut p = PipelineConfig::new(table, brokers, topic);
    p.app_id = Some("ingest".into());
    p.create = true;
    p.kafka.max_record_bytes = "1kb".parse().unwrap();
    // The mock cluster makes a member joining right after another left wait for the leaver's
    // session timeout (LeaveGroup is sent and answered; seen with librdkafka=debug): keep it
    // short.
    p.kafka.properties = BTreeMap::from([
        ("session.timeout.ms".to_string(), "6000".to_string()),
        ("heartbeat.interval.ms".to_string(), "500".to_string()),
    ]);
    p.flush.max_latency = "300ms".parse().unwrap();
    p.flush.max_rows = 700;
    p
}

pub async fn produce(brokers: &str, topic: &str, records: &[(i32, Option<String>, Option<String>)]) {
    let producer: FutureProducer = ClientConfig::new().set("bootstrap.servers", brokers).create().expect("producer");
    let mut pending = Vec::new();
    for (p, key, payload) in records {
        let mut r = FutureRecord::<String, String>::to(topic).partition(*p).headers(
            rdkafka::message::OwnedHeaders::new()
                .insert(rdkafka::message::Header { key: "source", value: Some("test") }),
        );
        if let Some(k) = key {
            r = r.key(k);
        }
        if let Some(v) = payload {
            r = r.payload(v);
        }
        pending.push(producer.send(r, Duration::from_secs(10)));
    }
    for d in futures::future::join_all(pending).await {
        d.expect("delivered");
    }
}

/// Runs the pipelines until `done(metrics)` holds (or 90 s), then shuts them down gracefully.
pub async fn run_until(
    pipelines: Vec<PipelineConfig>,
    metrics_addr: Option<String>,
    done: impl Fn(&Metrics) -> bool + Send + 'static,
) -> BTreeMap<String, RunReport> {
    let resolved = pipelines.iter().enumerate().map(|(i, p)| p.validate(&format!("p{i}")).unwrap()).collect();
    let metrics = Arc::new(Metrics::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let opts = ServiceOptions {
        pipelines: resolved,
        storage: StorageOptions::default(),
        metrics_addr,
        shutdown_timeout: Duration::from_secs(30),
    };
    let m = metrics.clone();
    let watcher = tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
        while !done(&m) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = stop_tx.send(true);
    });
    let started = std::time::Instant::now();
    let reports = run(opts, metrics, stop_rx).await.expect("pipelines run");
    watcher.abort();
    eprintln!("run_until: {:?}, {reports:?}", started.elapsed());
    reports
}

pub fn committed(m: &Metrics, name: &str) -> u64 {
    let p = m.pipeline(name);
    p.rows_committed.get() + p.dead_letters.get()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Every record of `topic` as (key, payload) as a `read_committed` consumer sees it, read to
/// the end of all `partitions` within 60 s.
pub fn read_committed(brokers: &str, topic: &str, partitions: usize) -> Vec<(Option<String>, String)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::error::KafkaError;
    use rdkafka::Message;
    let consumer: BaseConsumer = rdkafka::config::ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "check")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let (mut got, mut eof) = (Vec::new(), std::collections::BTreeSet::new());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while eof.len() < partitions {
        assert!(std::time::Instant::now() < deadline, "the topic was read to its end within 60 s");
        match consumer.poll(std::time::Duration::from_millis(100)) {
            Some(Ok(m)) => got.push((
                m.key().map(|k| String::from_utf8_lossy(k).to_string()),
                String::from_utf8_lossy(m.payload().unwrap()).to_string(),
            )),
            Some(Err(KafkaError::PartitionEOF(p))) => {
                eof.insert(p);
            }
            Some(Err(e)) => panic!("{e}"),
            None => {}
        }
    }
    got
}
