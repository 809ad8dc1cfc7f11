//! Kafka for the tests: pipelines against librdkafka's in-process mock cluster, a producer,
//! and a service run until its metrics say it is done.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use deltabus::app::service::{run, ServiceOptions};
use deltabus::config::pipeline::PipelineConfig;
use deltabus::ingest::runner::RunReport;
use deltabus::metrics::Metrics;
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
/// the end of all `partitions` within 60 s. Fails when the broker dropped records (the mock
/// cluster keeps about 5 MiB per partition).
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
    for p in 0..i32::try_from(partitions).unwrap() {
        let (low, _) = consumer.fetch_watermarks(topic, p, std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(low, 0, "the broker dropped records of {topic}/{p}");
    }
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

/// Compares rows read from a topic with the rows expected on it, where librdkafka's mock cluster
/// cannot abort a killed producer's transaction: its Fetch answers list no aborted transactions
/// and its last stable offset is the end of the log, so the records of a transaction a kill -9
/// interrupted stay visible to read_committed readers, and the restarted producer sends them
/// again. A real broker aborts them when the restart fences the old producer.
///
/// Rows are grouped into the units one transaction carries whole (`unit_of`, such as the commit
/// version, or version and slice). Each unit must arrive whole, with no row missing and no row
/// that is not expected. Without a kill it arrives exactly once. After a kill, a transaction
/// interrupted part way leaves the rows it had sent before the committed copy, so a row may
/// arrive more often than expected (never less). Returns how many units arrived with extra
/// copies; panics naming the first difference.
pub fn assert_once_but_repeats_after_kills<T: Ord + Clone + std::fmt::Debug, U: Ord + std::fmt::Debug>(
    got: &[T],
    expected: &[T],
    unit_of: impl Fn(&T) -> U,
    killed: bool,
) -> usize {
    type Counts<T> = BTreeMap<T, u32>;
    let mut units: BTreeMap<U, (Counts<T>, Counts<T>)> = BTreeMap::new();
    for r in got {
        *units.entry(unit_of(r)).or_default().0.entry(r.clone()).or_default() += 1;
    }
    for r in expected {
        *units.entry(unit_of(r)).or_default().1.entry(r.clone()).or_default() += 1;
    }
    let mut repeated = 0;
    for (unit, (g, e)) in &units {
        let foreign = g.keys().any(|r| !e.contains_key(r));
        let complete = e.iter().all(|(r, n)| g.get(r).is_some_and(|m| m >= n));
        assert!(!foreign && complete, "unit {unit:?} differs: got {g:?}, expected {e:?}");
        let extra = e.iter().any(|(r, n)| g.get(r) != Some(n));
        assert!(!extra || killed, "unit {unit:?} arrived more than once though no producer was killed: got {g:?}");
        repeated += usize::from(extra);
    }
    repeated
}

/// Keyed change streams for the keyed-ingestion tests: every id in `0..keys` gets upserts
/// `{"id", "v"}` for `v` in `0..versions` in order (keyed by id, so one key stays on one
/// partition), then every tenth id a tombstone; `extra` ids get only `v = 0`, with the first
/// chunk. Spread over about `seconds` in ten chunks per round.
pub fn start_keyed_producer(
    brokers: String,
    topic: impl Into<String>,
    keys: i64,
    versions: i64,
    extra: std::ops::Range<i64>,
    seconds: u64,
) -> std::thread::JoinHandle<()> {
    let topic: String = topic.into();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let producer: FutureProducer =
                ClientConfig::new().set("bootstrap.servers", &brokers).set("linger.ms", "5").create().unwrap();
            let rounds = versions + 1;
            for v in 0..rounds {
                for chunk in 0..10 {
                    let mut ids: Vec<i64> = ((chunk * keys / 10)..((chunk + 1) * keys / 10)).collect();
                    if v == 0 && chunk == 0 {
                        ids.extend(extra.clone());
                    }
                    let mut pending = Vec::new();
                    for id in ids {
                        let key = id.to_string();
                        let payload = format!(r#"{{"id":{id},"v":{v}}}"#);
                        let record = FutureRecord::<String, String>::to(&topic).key(&key);
                        let record = match v {
                            v if v < versions => record.payload(&payload),
                            _ if id % 10 == 0 => record, // tombstone
                            _ => continue,
                        };
                        pending.push(producer.send_result(record).unwrap());
                    }
                    for d in futures::future::join_all(pending).await {
                        d.unwrap().unwrap();
                    }
                    // A pause about time: the records are spread over `seconds`.
                    tokio::time::sleep(Duration::from_millis(seconds * 1000 / (rounds as u64 * 10))).await;
                }
            }
        });
    })
}

/// What [`start_keyed_producer`] leaves live: every id not a multiple of ten at its last version.
pub fn keyed_final_state(keys: i64, versions: i64) -> BTreeMap<i64, i64> {
    (0..keys).filter(|id| id % 10 != 0).map(|id| (id, versions - 1)).collect()
}

/// id → v of the rows a `cat` (or kernel-oracle `rows`) printed; `None` when it failed (the
/// table not readable yet). A key twice fails the test.
pub fn keyed_rows(out: &std::process::Output) -> Option<BTreeMap<i64, i64>> {
    if !out.status.success() {
        return None;
    }
    let mut m = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        let id = r["id"].as_i64().unwrap();
        assert!(m.insert(id, r["v"].as_i64().unwrap()).is_none(), "key {id} appears twice");
    }
    Some(m)
}

/// Apache Kafka's address (started by scripts/test.sh) and a fresh topic of `partitions` on it
/// (the broker outlives the test), or `None` (with a note) when the suite runs without the
/// broker; a failure when emulators are required.
pub fn apache_topic(prefix: &str, partitions: i32) -> Option<(String, String)> {
    let brokers = crate::support::emulator("DELTABUS_TEST_KAFKA_BROKERS")?;
    let topic = format!("{prefix}-{}", uuid::Uuid::new_v4().simple());
    create_topic(&brokers, &topic, partitions);
    Some((brokers, topic))
}

/// Creates `topic` with `partitions` on the broker at `brokers`.
pub fn create_topic(brokers: &str, topic: &str, partitions: i32) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let admin: AdminClient<_> = ClientConfig::new().set("bootstrap.servers", brokers).create().unwrap();
        let t = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
        let r = admin.create_topics([&t], &AdminOptions::new()).await.expect("create topic");
        assert!(r.iter().all(Result::is_ok), "{r:?}");
    });
}
