//! `deltabus ingest` processes against librdkafka's mock cluster (hosted by this test
//! process, reached over TCP on 127.0.0.1), while a producer keeps writing zstd-compressed
//! batches: workers killed with -9 at random moments (three times) and restarted, two and
//! three workers joining and leaving under eager (`range`) and incremental
//! (`cooperative-sticky`) rebalancing, and graceful SIGTERM. In every case each produced id
//! lands in the table exactly once.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};

pub const TOTAL: i64 = 12_000;

fn spawn_worker(brokers: &str, table: &str, assignment: &str, log: &std::path::Path) -> Child {
    spawn_worker_on(brokers, "orders", table, assignment, log)
}

fn spawn_worker_on(brokers: &str, topic: &str, table: &str, assignment: &str, log: &std::path::Path) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["ingest", topic, table, "--brokers", brokers, "--app-id", "eo", "--create"])
        .args(["--flush-interval", "300ms", "--max-rows", "500", "--assignment", assignment])
        .args(["--kafka-property", "session.timeout.ms=6000", "--kafka-property", "heartbeat.interval.ms=500"])
        .env("DELTABUS_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn deltabus ingest")
}

/// SIGTERM, then the exit status and stdout within 40 s.
pub fn terminate(mut child: Child) -> (std::process::ExitStatus, String) {
    let ok = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap().success();
    assert!(ok, "kill -TERM");
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            if let Some(mut s) = child.stdout.take() {
                std::io::Read::read_to_string(&mut s, &mut out).unwrap();
            }
            return (status, out);
        }
        assert!(Instant::now() < deadline, "worker did not exit within 40 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Produces ids 0..TOTAL over about `seconds`, in bursts, from a thread with its own runtime.
fn start_producer(brokers: String, seconds: u64) -> std::thread::JoinHandle<()> {
    start_producer_to(brokers, "orders".into(), seconds)
}

pub fn start_producer_to(brokers: String, topic: String, seconds: u64) -> std::thread::JoinHandle<()> {
    start_producer_with(brokers, topic, seconds, |id| {
        format!(r#"{{"id":{id},"payload":"{}"}}"#, "x".repeat((id % 50) as usize))
    })
}

/// Produces ids 0..TOTAL over `seconds`, each as `payload(id)`.
pub fn start_producer_with(
    brokers: String,
    topic: String,
    seconds: u64,
    payload: fn(i64) -> String,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let producer: FutureProducer = ClientConfig::new()
                .set("bootstrap.servers", &brokers)
                .set("linger.ms", "5")
                .set("compression.type", "zstd")
                .create()
                .unwrap();
            let bursts = (seconds * 10) as i64;
            let per = TOTAL / bursts;
            for b in 0..bursts {
                let mut pending = Vec::new();
                let end = if b == bursts - 1 { TOTAL } else { (b + 1) * per };
                for id in b * per..end {
                    let payload = payload(id);
                    let key = format!("{}", id % 101);
                    pending.push(producer.send_result(FutureRecord::to(&topic).key(&key).payload(&payload)).unwrap());
                }
                for d in futures::future::join_all(pending).await {
                    d.unwrap().unwrap();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    })
}

pub fn table_rows(table: &str) -> i64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let Ok(t) = deltabus::storage::Table::open(table, Default::default()) else { return 0 };
        let Ok(s) = t.snapshot(None).await else { return 0 };
        s.files()
            .iter()
            .filter_map(|f| f.stats.as_deref())
            .filter_map(|s| serde_json::from_str::<serde_json::Value>(s).ok())
            .filter_map(|v| v["numRecords"].as_i64())
            .sum()
    })
}

pub fn wait_for_rows(table: &str, n: i64, log: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while table_rows(table) < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} rows after 90 s; worker log:\n{}",
            table_rows(table),
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn assert_exactly_once(table: &str) {
    let out = crate::common::deltabus(&["cat", table]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut ids: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    let dups = ids.windows(2).filter(|w| w[0] == w[1]).count();
    ids.dedup();
    assert_eq!(dups, 0, "duplicated rows");
    assert_eq!(ids.len() as i64, TOTAL, "missing rows");
}

fn cluster() -> MockCluster<'static, rdkafka::producer::DefaultProducerContext> {
    let c = MockCluster::new(1).unwrap();
    c.create_topic("orders", 4, 1).unwrap();
    c
}

/// Starts a worker `rounds` times and kills it with -9 past the ~3.5 s group join, anywhere
/// within the next 2.5 s. The moments vary from run to run (the seed is printed, to replay a
/// failure).
pub fn kill_at_random_moments(rounds: usize, spawn: impl Fn() -> Child) {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    eprintln!("kill -9 seed {seed}");
    let mut rnd = seed | 1;
    for _round in 0..rounds {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        let mut worker = spawn();
        std::thread::sleep(Duration::from_millis(3500 + rnd % 2500));
        worker.kill().unwrap(); // SIGKILL: no flush, no commit, no goodbye to the group
        worker.wait().unwrap();
    }
}

#[test]
fn kill_dash_nine_and_restart_is_exactly_once() {
    let _guard = crate::common::native_clients_lock();
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
    let _guard = crate::common::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("orders").to_string_lossy().into_owned();
    let log = dir.path().join("workers.log");
    let cluster = cluster();
    let brokers = cluster.bootstrap_servers();
    let producer = start_producer(brokers.clone(), 24);
    let a = spawn_worker(&brokers, &table, assignment, &log);
    std::thread::sleep(Duration::from_secs(5));
    // Others join mid-stream: partitions move to them.
    let mut others = Vec::new();
    for _ in 1..workers {
        others.push(spawn_worker(&brokers, &table, assignment, &log));
        // The mock's rebalance takes a few seconds (its 3 s join delay included).
        std::thread::sleep(Duration::from_secs(7));
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

/// The same exactly-once check against a real, separate Kafka-protocol broker (tansu, started
/// by scripts/test.sh): workers killed with -9 and joining mid-stream, then every id once.
#[test]
fn exactly_once_against_a_real_broker() {
    let Ok(brokers) = std::env::var("DELTABUS_TEST_KAFKA_BROKERS") else {
        assert!(std::env::var("DELTABUS_REQUIRE_EMULATORS").is_err(), "DELTABUS_TEST_KAFKA_BROKERS is not set");
        eprintln!("skipped: no broker (scripts/test.sh starts tansu)");
        return;
    };
    let _guard = crate::common::native_clients_lock();
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
    let spawn = |log: &std::path::Path| spawn_worker_on(&brokers, &topic, &table, "cooperative-sticky", log);
    let mut a = spawn(&log);
    std::thread::sleep(Duration::from_secs(6));
    a.kill().unwrap();
    a.wait().unwrap();
    let b = spawn(&log);
    std::thread::sleep(Duration::from_secs(4));
    let c = spawn(&log);
    producer.join().unwrap();
    wait_for_rows(&table, TOTAL, &log);
    for w in [b, c] {
        let (status, _) = terminate(w);
        assert!(status.success(), "worker: {status}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
    assert_exactly_once(&table);
}
