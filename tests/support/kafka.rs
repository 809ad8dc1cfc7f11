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
