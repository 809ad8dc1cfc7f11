//! `deltabus ingest` processes against librdkafka's mock cluster (hosted by this test
//! process, reached over TCP on 127.0.0.1), while a producer keeps writing zstd-compressed
//! batches: workers killed with -9 at random moments (three times) and restarted, two and
//! three workers joining and leaving under eager (`range`) and incremental
//! (`cooperative-sticky`) rebalancing, and graceful SIGTERM. In every case each produced id
//! lands in the table exactly once.

use crate::support::*;
use std::process::{Child, Command, Stdio};

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;

fn spawn_worker(brokers: &str, table: &str, assignment: &str, log: &std::path::Path) -> Child {
    spawn_worker_on(brokers, "orders", table, assignment, log)
}

fn spawn_worker_on(brokers: &str, topic: &str, table: &str, assignment: &str, log: &std::path::Path) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    // The classic protocol's session is the client's to set; KIP-848's is the broker's
    // (`group.consumer.session.timeout.ms`, 6 s in scripts/test.sh's broker).
    let classic: &[&str] = if assignment == "consumer" {
        &[]
    } else {
        &["--kafka-property", "session.timeout.ms=6000", "--kafka-property", "heartbeat.interval.ms=500"]
    };
    Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["ingest", topic, table, "--brokers", brokers, "--app-id", "eo", "--create"])
        .args(["--flush-interval", "300ms", "--max-rows", "500", "--assignment", assignment])
        .args(classic)
        .env("DELTABUS_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn deltabus ingest")
}

/// Produces ids 0..TOTAL over about `seconds`, in bursts, from a thread with its own runtime.
fn start_producer(brokers: String, seconds: u64) -> std::thread::JoinHandle<()> {
    start_producer_to(brokers, "orders".into(), seconds)
}

fn cluster() -> MockCluster<'static, rdkafka::producer::DefaultProducerContext> {
    let c = MockCluster::new(1).unwrap();
    c.create_topic("orders", 4, 1).unwrap();
    c
}

#[test]
fn kill_dash_nine_and_restart_is_exactly_once() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let log = dir.path().join("workers.log");
    let cluster = cluster();
    let brokers = cluster.bootstrap_servers();
    let producer = start_producer(brokers.clone(), 15);
    kill_at_random_moments(3, || spawn_worker(&brokers, &table, "cooperative-sticky", &log));
    assert!(table_rows(&table) > 0, "the killed workers committed something");
    let last = spawn_worker(&brokers, &table, "cooperative-sticky", &log);
    producer.join().unwrap();
    wait_for_rows(&table, TOTAL, &log);
    let (status, out) = terminate(last);
    assert!(status.success(), "graceful exit: {status}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    assert!(out.contains("\"pipeline\":\"eo\""), "the pipeline is named by its app id: {out}");
    assert_exactly_once(&table);
    drop(cluster);
}

fn rebalance(assignment: &str, workers: usize) {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let log = dir.path().join("workers.log");
    let cluster = cluster();
    let brokers = cluster.bootstrap_servers();
    let producer = start_producer(brokers.clone(), 24);
    let a = spawn_worker(&brokers, &table, assignment, &log);
    // Others join once the first worker committed something.
    crate::support::wait_for_rows(&table, 1, &log);
    // Others join mid-stream: partitions move to them.
    let mut others = Vec::new();
    for _ in 1..workers {
        // The newcomer's assignment is the sign that the rebalance went through.
        let assigned = log_count(&log, "partitions assigned");
        others.push(spawn_worker(&brokers, &table, assignment, &log));
        wait_for_log(&log, "partitions assigned", assigned + 1);
    }
    // A leaves gracefully while the others keep going: A's partitions move to them.
    let (status_a, out_a) = terminate(a);
    assert!(status_a.success(), "A: {status_a}");
    producer.join().unwrap();
    wait_for_rows(&table, TOTAL, &log);
    let commits = |out: &str| -> u64 {
        serde_json::from_str::<serde_json::Value>(out.trim()).map(|v| v["commits"].as_u64().unwrap_or(0)).unwrap_or(0)
    };
    assert!(commits(&out_a) > 0, "A committed: {out_a}");
    let mut committed_by_others = 0;
    for w in others {
        let (status, out) = terminate(w);
        assert!(status.success(), "worker: {status}");
        committed_by_others += commits(&out);
    }
    assert!(committed_by_others > 0, "the joining workers committed");
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(logs.matches("partitions assigned").count() > workers, "rebalances happened:\n{logs}");
    assert_exactly_once(&table);
    drop(cluster);
}

#[test]
fn two_workers_joining_and_leaving_under_eager_rebalancing_are_exactly_once() {
    rebalance("range", 2);
}

#[test]
fn three_workers_joining_and_leaving_under_cooperative_rebalancing_are_exactly_once() {
    rebalance("cooperative-sticky", 3);
}

/// The same exactly-once check against Apache Kafka (started by scripts/test.sh): a worker
/// killed with -9 mid-stream, two more joining, then every id once; classic cooperative
/// rebalancing.
#[test]
fn exactly_once_against_a_real_broker() {
    against_a_real_broker("cooperative-sticky");
}

/// The same under classic eager rebalancing (`range`): every partition revoked at each join.
#[test]
fn exactly_once_against_a_real_broker_with_eager_rebalancing() {
    against_a_real_broker("range");
}

/// The same under KIP-848's consumer group protocol (`group.protocol=consumer`), where the
/// broker assigns partitions.
#[test]
fn exactly_once_against_a_real_broker_with_the_consumer_protocol() {
    against_a_real_broker("consumer");
}

fn against_a_real_broker(assignment: &str) {
    let Some(brokers) = crate::support::emulator("DELTABUS_TEST_KAFKA_BROKERS") else { return };
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let log = dir.path().join("workers.log");
    // A fresh topic per run: the broker outlives the test.
    let topic = format!("orders-{}", uuid::Uuid::new_v4().simple());
    {
        use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let admin: AdminClient<_> = ClientConfig::new().set("bootstrap.servers", &brokers).create().unwrap();
            let t = NewTopic::new(&topic, 4, TopicReplication::Fixed(1));
            let r = admin.create_topics([&t], &AdminOptions::new()).await.expect("create topic");
            assert!(r.iter().all(Result::is_ok), "{r:?}");
        });
    }
    let producer = start_producer_to(brokers.clone(), topic.clone(), 15);
    let spawn = |log: &std::path::Path| spawn_worker_on(&brokers, &topic, &table, assignment, log);
    // A dies with -9 after its first commit; B takes over, and C joins once B holds
    // partitions.
    let mut a = spawn(&log);
    wait_for_rows(&table, 1, &log);
    a.kill().unwrap();
    a.wait().unwrap();
    let assigned = log_count(&log, "partitions assigned");
    let b = spawn(&log);
    wait_for_log(&log, "partitions assigned", assigned + 1);
    let c = spawn(&log);
    producer.join().unwrap();
    wait_for_rows(&table, TOTAL, &log);
    for w in [b, c] {
        let (status, _) = terminate(w);
        assert!(status.success(), "worker: {status}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
    assert_exactly_once(&table);
}
