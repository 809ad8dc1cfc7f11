//! The Kafka-protocol listener (`[server.kafka]`): real Kafka clients nobody here wrote
//! (librdkafka through the rdkafka crate and through Python's confluent-kafka, and
//! kafka-python, a second implementation of the protocol) produce into tables and fetch their
//! change feed; exactly once through kill -9 and store faults; consumers resume from their
//! committed offsets; bad input gets a clean error and commits nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deltabus::metrics::Metrics;
use serde_json::Value;

use crate::support::listener::{call, config, start};
use crate::support::processes::terminate;
use crate::support::python::python;
use crate::support::{deltabus, kernel_oracle, Rng};

fn run_py(py: &str, script: &str, args: &[String]) -> Value {
    let out = Command::new(py).arg("-c").arg(script).args(args).output().unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("null")).unwrap_or_else(|_| panic!("python printed {text}"))
}

/// Idempotent producers in one process, one per compression codec listed; each sends `each`
/// records (ids `p * 1_000_000 + i`), keyed when its index is even, pausing `pace` seconds
/// after each round. Prints what was delivered.
const CONFLUENT_PRODUCERS: &str = r#"
import json, sys
from confluent_kafka import Producer
import time
bootstrap, codecs, each, first = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
pace = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
delivered, errors = [0], []
def cb(err, msg):
    if err is None: delivered[0] += 1
    else: errors.append(str(err))
producers = []
for i, codec in enumerate(codecs):
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "compression.type": codec,
            "linger.ms": 5, "message.timeout.ms": 300000, "retry.backoff.ms": 50, "retry.backoff.max.ms": 500,
            "reconnect.backoff.max.ms": 500}
    producers.append(Producer(conf))
for n in range(each):
    for i, p in enumerate(producers):
        pid = first + i
        value = json.dumps({"id": pid * 1000000 + n, "name": "Zürich ☃ %d" % n})
        key = ("k%d" % (n % 13)) if pid % 2 == 0 else None
        while True:
            try:
                p.produce("events", key=key, value=value, on_delivery=cb); break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    if pace: time.sleep(pace)
for p in producers:
    left = p.flush(300)
    if left: errors.append("%d not flushed" % left)
print(json.dumps({"delivered": delivered[0], "errors": errors[:5]}))
"#;

/// kafka-python's idempotent producer, then its consumer reading every partition from the
/// start and committing; prints what it read.
const KAFKA_PYTHON: &str = r#"
import json, sys, time
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
bootstrap, each, pid, partitions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", compression_type="gzip")
futures = [p.send("events", value=json.dumps({"id": pid * 1000000 + n, "name": "ünï %d" % n}).encode()) for n in range(each)]
p.flush()
sent = sum(1 for f in futures if f.get(timeout=30) is not None)
p.close()
c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="kp", enable_auto_commit=False, auto_offset_reset="earliest")
tps = [TopicPartition("events", i) for i in range(partitions)]
c.assign(tps); c.seek_to_beginning(*tps)
ids, changes = [], set()
ends = c.end_offsets(tps)
deadline = time.monotonic() + 300
# Until every partition's position is the end of the feed (the high watermark).
while any(c.position(tp) < ends[tp] for tp in tps):
    if time.monotonic() > deadline: raise SystemExit("the end of the feed was never reached")
    batch = c.poll(timeout_ms=1000)
    for recs in batch.values():
        for r in recs:
            ids.append(json.loads(r.value)["id"]); changes.add(dict(r.headers)["change_type"].decode())
c.commit()
committed = {tp.partition: c.committed(tp) for tp in tps}
c.close()
print(json.dumps({"sent": sent, "ids": sorted(ids), "changes": sorted(changes), "committed": committed}))
"#;

/// Real clients of three implementations produce into one topic of four partitions (every
/// codec, idempotent, `acks=all`) and read its change feed back; the table holds each record
/// once, as deltabus and the reference reader read it, with each producer's position as a
/// `txn`.
#[tokio::test(flavor = "multi_thread")]
#[expect(
    clippy::await_holding_lock,
    reason = "the lock keeps other tests' Python children from starting while librdkafka runs here; no task here takes it"
)]
async fn kafka_clients_produce_into_a_table_and_fetch_its_feed() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let (kafka, _http, _stop, metrics) = start(config(&events, 4), &[]).await;

    // librdkafka through the rdkafka crate.
    {
        use rdkafka::producer::{FutureProducer, FutureRecord};
        let _guard = crate::support::native_clients_lock();
        let producer: FutureProducer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &kafka)
            .set("enable.idempotence", "true")
            .set("compression.type", "lz4")
            .set("linger.ms", "5")
            .create()
            .unwrap();
        let sends: Vec<_> = (0..300)
            .map(|n| {
                let value = serde_json::json!({"id": 9_000_000 + n, "name": format!("rust ✓ {n}")}).to_string();
                let key = format!("r{}", n % 7);
                let producer = producer.clone();
                async move {
                    producer.send(FutureRecord::to("events").key(&key).payload(&value), Duration::from_secs(60)).await
                }
            })
            .collect();
        for r in futures::future::join_all(sends).await {
            r.expect("delivered");
        }
    }
    let args = |codecs: &str, first: i64| vec![kafka.clone(), codecs.into(), "200".into(), first.to_string()];
    let confluent = tokio::task::spawn_blocking({
        let (py, args) = (py.clone(), args("gzip,snappy,lz4,zstd,none", 1));
        move || run_py(&py, CONFLUENT_PRODUCERS, &args)
    })
    .await
    .unwrap();
    assert_eq!(confluent["delivered"], 1000, "{confluent}");
    let kp = tokio::task::spawn_blocking({
        let (py, kafka) = (py.clone(), kafka.clone());
        move || run_py(&py, KAFKA_PYTHON, &[kafka, "150".into(), "7".into(), "4".into()])
    })
    .await
    .unwrap();
    assert_eq!(kp["sent"], 150, "{kp}");

    let mut expected: Vec<i64> = (0..300).map(|n| 9_000_000 + n).collect();
    expected.extend((1..=5).flat_map(|p| (0..200).map(move |n| p * 1_000_000 + n)));
    expected.extend((0..150).map(|n| 7_000_000 + n));
    expected.sort_unstable();
    assert_eq!(crate::support::ids(&events), expected, "every record once");
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&events).output().unwrap();
        assert_eq!(crate::support::ids_in(&out.stdout), expected, "as the reference reader reads it");
    }
    // kafka-python read the whole feed: every record once, all inserts.
    let read: Vec<i64> = kp["ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(read, expected, "the feed holds every change once");
    assert_eq!(kp["changes"], serde_json::json!(["insert"]));
    // Its commit is a follower registration of the table.
    let followers = crate::support::run_json(&["followers", &events]);
    let text = followers.to_string();
    assert!(text.contains("kafka-group.kp.events.0"), "{text}");
    // Each idempotent producer's position is a txn of its partition.
    let described = crate::support::run_json(&["describe", &events]);
    let txns = described["txns"].as_object().unwrap();
    let kafka_txns: Vec<&String> = txns.keys().filter(|k| k.starts_with("deltabus-kafka:")).collect();
    assert!(kafka_txns.len() >= 7, "one txn per producer and partition: {described}");
    let rendered = metrics.render();
    assert!(rendered.contains("deltabus_kafka_produced_records_total{topic=\"events\"} 1450"), "{rendered}");
    // The whole feed was fetched, and the last fetches ended at its end.
    let fetched: u64 = rendered
        .lines()
        .find_map(|l| l.strip_prefix("deltabus_kafka_fetched_records_total{topic=\"events\"} "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{rendered}"));
    assert!(fetched >= 1450, "{fetched}");
    assert!(rendered.contains("deltabus_kafka_fetch_lag_versions{topic=\"events\"} 0"), "{rendered}");
}

/// A server on a table of its own whose commit window is ten minutes: the table, the Kafka
/// address and the metrics (the directory and stop handle are kept alive by the caller).
async fn ten_minute_window(dir: &std::path::Path) -> (String, String, tokio::sync::watch::Sender<bool>, Arc<Metrics>) {
    let events = dir.join("events").to_string_lossy().into_owned();
    let mut cfg = config(&events, 4);
    cfg.commit_window = deltabus::common::units::HumanDuration::from_secs(600);
    let (kafka, _http, stop, metrics) = start(cfg, &[]).await;
    (events, kafka, stop, metrics)
}

/// An idempotent librdkafka producer whose records wait up to `timeout_ms` for delivery.
fn idempotent_producer(kafka: &str, timeout_ms: u32) -> rdkafka::producer::FutureProducer {
    rdkafka::ClientConfig::new()
        .set("bootstrap.servers", kafka)
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", timeout_ms.to_string())
        .create()
        .unwrap()
}

/// The commit groups of table `events` that closed for `closed`, as the metrics render them.
fn groups_closed(rendered: &str, closed: &str) -> u64 {
    let needle = format!("deltabus_push_groups_total{{table=\"events\",closed=\"{closed}\"}} ");
    rendered.lines().find_map(|l| l.strip_prefix(needle.as_str())).map_or(0, |n| n.parse().unwrap())
}

/// A commit group closes as soon as every connection that has been producing waits on it
/// (has as many batches in flight as it ever had), not at the end of its window: with a
/// ten-minute window, an idempotent librdkafka producer that waits for each record's
/// acknowledgement before the next gets every one, and no group ran its window out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::await_holding_lock,
    reason = "the lock keeps other tests' Python children from starting while librdkafka runs here; no task here takes it"
)]
async fn a_commit_group_closes_once_every_producing_connection_waits_on_it() {
    use rdkafka::producer::FutureRecord;
    let dir = tempfile::tempdir().unwrap();
    let (events, kafka, _stop, metrics) = ten_minute_window(dir.path()).await;
    let _guard = crate::support::native_clients_lock();
    let producer = idempotent_producer(&kafka, 300_000);
    for n in 0..40i64 {
        let value = serde_json::json!({"id": n, "name": format!("ü {n}")}).to_string();
        let key = format!("k{}", n % 13);
        producer
            .send(FutureRecord::to("events").key(&key).payload(&value), Duration::from_secs(300))
            .await
            .expect("delivered");
    }
    assert_eq!(crate::support::ids(&events), (0..40).collect::<Vec<_>>(), "every record once");
    let rendered = metrics.render();
    assert_eq!(groups_closed(&rendered, "everyone"), 40, "a group per record: {rendered}");
    assert_eq!(groups_closed(&rendered, "window"), 0, "no group waited out its window: {rendered}");
}

/// A producer that stopped sending (its connection open, nothing in flight) holds no group to
/// the window: at a 10-minute window, a second producer's records are each acknowledged once
/// the first has been quiet for a second, and no group waits out its window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::await_holding_lock,
    reason = "the lock keeps other tests' Python children from starting while librdkafka runs here; no task here takes it"
)]
async fn a_producer_gone_quiet_holds_no_commit_group() {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let dir = tempfile::tempdir().unwrap();
    let (events, kafka, _stop, metrics) = ten_minute_window(dir.path()).await;
    let _guard = crate::support::native_clients_lock();
    let send = |p: &FutureProducer, n: i64| {
        let value = serde_json::json!({"id": n, "name": format!("ø {n}")}).to_string();
        let p = p.clone();
        async move {
            p.send(FutureRecord::<(), _>::to("events").payload(&value), Duration::from_secs(120))
                .await
                .expect("delivered");
        }
    };
    let (quiet, busy) = (idempotent_producer(&kafka, 120_000), idempotent_producer(&kafka, 120_000));
    // Both send once together (the first group learns both), then only one goes on.
    futures::join!(send(&quiet, 1000), send(&busy, 0));
    for n in 1..20i64 {
        send(&busy, n).await;
    }
    let mut expected: Vec<i64> = (0..20).collect();
    expected.push(1000);
    assert_eq!(crate::support::ids(&events), expected, "every record once");
    let rendered = metrics.render();
    assert_eq!(groups_closed(&rendered, "window"), 0, "no group waited out its window: {rendered}");
    assert!(groups_closed(&rendered, "everyone") >= 20, "{rendered}");
    drop(quiet);
}

/// Eight idempotent producers (keyed and unkeyed, every codec) send while the server is
/// killed with -9 twice and restarted, its store failing 3% of calls: afterwards the table
/// holds every record exactly once.
#[test]
fn producers_through_kill_dash_nine_and_store_faults_land_every_record_once() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = dir.path().join("serve.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ncommit_window = \"40ms\"\n\
             [server.tables.events]\ntable = {:?}\ncreate = true\n\
             [server.kafka]\nlisten = \"127.0.0.1:{port}\"\n\
             [server.kafka.topics.events]\ntable = \"events\"\npartitions = 4\n",
            events.display().to_string()
        ),
    )
    .unwrap();
    let log = dir.path().join("server.log");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    eprintln!("seed {seed}");
    let mut rng = Rng(seed | 1);
    let spawn = |faults: u64| -> Child {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["serve", "--config"])
            .arg(&cfg)
            .env("DELTABUS_FAULTS", format!("rate=0.03,seed={faults}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let mut server = spawn(rng.next() % 10_000);
    let each = 1500;
    let mut client = Command::new(&py)
        .arg("-c")
        .arg(CONFLUENT_PRODUCERS)
        .args([
            format!("127.0.0.1:{port}"),
            "gzip,snappy,lz4,zstd,none,gzip,zstd,lz4".into(),
            each.to_string(),
            "1".into(),
            "0.004".into(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let version = |v: u64| events.join(format!("_delta_log/{v:020}.json")).exists();
    // Each kill comes once the running server has committed since it started (progress, not
    // time), while the producers still have records to send.
    let mut next = 2;
    for _ in 0..2 {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !version(next) {
            assert!(Instant::now() < deadline, "the server never committed version {next}");
            if let Some(status) = client.try_wait().unwrap() {
                let (mut out, mut err) = (String::new(), String::new());
                client.stdout.take().unwrap().read_to_string(&mut out).unwrap();
                client.stderr.take().unwrap().read_to_string(&mut err).unwrap();
                panic!("the producers finished ({status}) before the kill: {out}\n{err}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // A pause about time: the kill's moment is what the test varies.
        std::thread::sleep(Duration::from_millis(rng.next() % 200));
        server.kill().unwrap();
        server.wait().unwrap();
        while version(next) {
            next += 1;
        }
        next += 2;
        server = spawn(rng.next() % 10_000);
    }
    let (status, out, err) = crate::support::processes::wait_for_client(client, "producers");
    assert!(status.success(), "producers: {err}\nserver log:\n{}", std::fs::read_to_string(&log).unwrap());
    let (status, _) = terminate(server);
    assert!(status.success(), "a stopped server exits 0");
    let summary: Value = serde_json::from_str(out.trim().lines().last().unwrap()).unwrap();
    assert_eq!(summary["delivered"], 8 * each, "{summary}");
    let expected: Vec<i64> =
        (1..=8).flat_map(|p| (0..each).map(move |n| p * 1_000_000 + n)).collect::<BTreeSet<_>>().into_iter().collect();
    let table = events.to_string_lossy().into_owned();
    assert_eq!(crate::support::ids(&table), expected, "every record once");
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert_eq!(crate::support::ids_in(&out.stdout), expected, "as the reference reader reads it");
    }
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(!logs.contains("panicked"), "{logs}");
    assert_eq!(logs.matches("kafka.listening").count(), 3, "two kills, three servers");
}

/// A feed consumer (confluent-kafka and kafka-python in turn) reads a few records, commits,
/// and is killed; restarted, it resumes from its committed offset: every change once, in
/// order per partition.
const FEED_CONSUMER: &str = r#"
import json, sys, os, time
impl, bootstrap, out_path, partitions, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
deadline = time.monotonic() + 300
out = open(out_path, "a")
def emit(p, offset, value, first):
    v = json.loads(value)
    out.write(json.dumps({"p": p, "offset": offset, "id": v["id"], "change": v["_change_type"], "version": v["_commit_version"], "first": first}) + "\n")
seen, firsts = 0, set()
if impl == "confluent":
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka import KafkaError
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "feed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "enable.partition.eof": True})
    tps = [TopicPartition("events", i) for i in range(partitions)]
    committed = c.committed(tps, timeout=10)
    c.assign([TopicPartition("events", t.partition, t.offset if t.offset >= 0 else -2) for t in committed])
    # Until every partition reached the end of the feed (the high watermark).
    at_end = set()
    while len(at_end) < partitions:
        m = c.poll(1.0)
        if time.monotonic() > deadline: raise SystemExit("the end of the feed was never reached")
        if m is None: continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF: at_end.add(m.partition()); continue
            raise SystemExit(str(m.error()))
        at_end.discard(m.partition())
        first = m.partition() not in firsts; firsts.add(m.partition())
        emit(m.partition(), m.offset(), m.value(), first); out.flush()
        c.commit(message=m, asynchronous=False)
        seen += 1
        if seen == limit: os._exit(9)
else:
    from kafka import KafkaConsumer, TopicPartition, OffsetAndMetadata
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="feed", enable_auto_commit=False, auto_offset_reset="earliest")
    tps = [TopicPartition("events", i) for i in range(partitions)]
    c.assign(tps)
    ends = c.end_offsets(tps)
    # Until every partition's position is the end of the feed (the high watermark).
    while any(c.position(tp) < ends[tp] for tp in tps):
        if time.monotonic() > deadline: raise SystemExit("the end of the feed was never reached")
        batch = c.poll(timeout_ms=1000, max_records=1)
        for tp, recs in batch.items():
            for r in recs:
                first = tp.partition not in firsts; firsts.add(tp.partition)
                emit(tp.partition, r.offset, r.value, first); out.flush()
                c.commit({tp: OffsetAndMetadata(r.offset + 1, "", -1)})
                seen += 1
                if seen == limit: os._exit(9)
print(json.dumps({"seen": seen}))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn feed_consumers_resume_from_their_committed_offsets() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    for (i, (lines, more)) in [(120, 40), (60, 30)].into_iter().enumerate() {
        let table = format!("{events}-{i}");
        // Rows in several commits, then an update and a delete: changes of every type.
        for c in 0..3 {
            let body: String =
                (0..lines / 3).map(|n| format!("{{\"id\":{},\"v\":\"ä{n}\"}}\n", c * 1000 + n)).collect();
            crate::support::tables::write_lines(&table, &body);
        }
        let out = deltabus(&["delete", &table, "--where", "id < 5"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let (kafka, _http, _stop, _) = start(config(&table, 2), &[]).await;
        let impl_name = if i == 0 { "confluent" } else { "kafka-python" };
        let out_path = dir.path().join(format!("consumed-{i}.jsonl"));
        let run = |limit: usize| {
            let out = Command::new(&py)
                .arg("-c")
                .arg(FEED_CONSUMER)
                .args([impl_name, &kafka, out_path.to_str().unwrap(), "2", &limit.to_string()])
                .output()
                .unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
        };
        let limit = more;
        let first = tokio::task::block_in_place(|| run(limit));
        assert_eq!(first.0, Some(9), "killed after {limit} records: {}", first.1);
        let second = tokio::task::block_in_place(|| run(limit));
        assert_eq!(second.0, Some(9), "{}", second.1);
        let last = tokio::task::block_in_place(|| run(usize::MAX));
        assert_eq!(last.0, Some(0), "{}", last.1);
        let text = std::fs::read_to_string(&out_path).unwrap();
        let rows: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        // Every change once: the feed as `deltabus changes` prints it (a copy-on-write delete
        // is the old file's rows deleted and the new file's inserted).
        let key = |v: &Value, change: &str, version: &str| {
            (v["id"].as_i64().unwrap(), v[change].as_str().unwrap().to_string(), v[version].as_i64().unwrap())
        };
        let mut got: Vec<_> = rows.iter().map(|r| key(r, "change", "version")).collect();
        got.sort();
        let printed = deltabus(&["changes", &table]);
        assert!(printed.status.success());
        let mut expected: Vec<_> = String::from_utf8_lossy(&printed.stdout)
            .lines()
            .map(|l| key(&serde_json::from_str(l).unwrap(), "_change_type", "_commit_version"))
            .collect();
        expected.sort();
        assert!(expected.iter().any(|(_, c, _)| c == "delete"), "{expected:?}");
        assert_eq!(got, expected, "{impl_name}: every change once across kills");
        // In order per partition, each restart continuing where the last commit left off.
        let mut last_offset: BTreeMap<i64, i64> = BTreeMap::new();
        for r in &rows {
            let (p, o) = (r["p"].as_i64().unwrap(), r["offset"].as_i64().unwrap());
            if let Some(prev) = last_offset.get(&p) {
                assert!(o > *prev, "{impl_name}: partition {p} went from {prev} to {o}");
            }
            last_offset.insert(p, o);
        }
    }
}

/// Frames that break the protocol are answered or cut off cleanly, a producer whose
/// sequences jump gets OUT_OF_ORDER_SEQUENCE_NUMBER, wrong SASL credentials fail the client,
/// and nothing of it is committed.
#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_a_clean_error_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut cfg = config(&events, 1);
    cfg.kafka.as_mut().unwrap().users = vec!["env:KAFKA_USERS".into()];
    cfg.kafka.as_mut().unwrap().plain_without_tls = true;
    cfg.kafka.as_mut().unwrap().max_request = deltabus::common::units::ByteSize(64 << 10);
    let (kafka, _http, _stop, metrics) = start(cfg, &[("KAFKA_USERS", "alice:s3cr3t ☃")]).await;
    let send = |frame: Vec<u8>| {
        let kafka = kafka.clone();
        async move {
            let mut s = tokio::net::TcpStream::connect(&kafka).await.unwrap();
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            s.write_all(&frame).await.unwrap();
            let mut answer = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut answer)).await;
            (read.is_ok(), answer)
        }
    };
    let frame = |body: &[u8]| {
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        f
    };
    // An oversize frame, a negative size, a short frame, an unknown API key: closed, unanswered.
    for bad in [
        (1i32 << 20).to_be_bytes().to_vec(),
        (-5i32).to_be_bytes().to_vec(),
        frame(&[0, 3]),
        frame(&[0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0xff, 0xff]),
    ] {
        let (closed, answer) = send(bad).await;
        assert!(closed && answer.is_empty(), "closed without an answer: {answer:?}");
    }
    // ApiVersions at a version not spoken: answered at v0 with UNSUPPORTED_VERSION (35).
    let (_, answer) = send(frame(&[0, 18, 0, 99, 0, 0, 0, 7, 0, 0])).await;
    assert!(answer.len() > 10, "{answer:?}");
    assert_eq!(&answer[4..8], &7i32.to_be_bytes(), "the correlation id");
    assert_eq!(&answer[8..10], &35i16.to_be_bytes(), "UNSUPPORTED_VERSION");
    // Metadata before authenticating: closed.
    let (closed, answer) = send(frame(&[0, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0])).await;
    assert!(closed && answer.is_empty());
    // Wrong and right SASL credentials, through librdkafka.
    let py = python();
    if let Some(py) = &py {
        let script = r#"
import json, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.username": "alice", "sasl.password": sys.argv[2], "enable.idempotence": True, "message.timeout.ms": 8000})
errors = []
p.produce("events", value=json.dumps({"id": int(sys.argv[3])}), on_delivery=lambda e, m: errors.append(str(e)) if e else None)
p.flush(10)
print(json.dumps({"errors": errors}))
"#;
        let wrong = run_py(py, script, &[kafka.clone(), "guess".into(), "1".into()]);
        assert_eq!(wrong["errors"].as_array().unwrap().len(), 1, "{wrong}");
        let right = run_py(py, script, &[kafka.clone(), "s3cr3t ☃".into(), "2".into()]);
        assert_eq!(right["errors"], serde_json::json!([]), "{right}");
        assert_eq!(crate::support::ids(&events), vec![2], "only the authenticated record");
    }
    let rendered = metrics.render();
    assert!(rendered.contains("reason=\"bad_frame\""), "{rendered}");
    assert!(!rendered.contains("s3cr3t"));
}

fn batch(pid: i64, epoch: i16, base: i32, ids: std::ops::Range<i64>) -> bytes::Bytes {
    batch_in(pid, epoch, base, ids, kafka_protocol::records::Compression::Zstd)
}

fn batch_in(
    pid: i64,
    epoch: i16,
    base: i32,
    ids: std::ops::Range<i64>,
    compression: kafka_protocol::records::Compression,
) -> bytes::Bytes {
    use kafka_protocol::records::{Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    let records: Vec<Record> = ids
        .enumerate()
        .map(|(i, id)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: base + i as i32,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(bytes::Bytes::from(format!("{{\"id\":{id}}}"))),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, &records, &RecordEncodeOptions { version: 2, compression }).unwrap();
    buf.freeze()
}

/// A raw idempotent producer: the next batch lands, a retried one is answered as a success
/// without landing twice, a jump past the next sequence is OUT_OF_ORDER_SEQUENCE_NUMBER, a
/// bumped epoch starts over at 0 and fences the old one, a transactional producer is refused.
#[tokio::test(flavor = "multi_thread")]
async fn sequences_decide_what_lands() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let (kafka, _http, _stop, _) = start(config(&events, 2), &[]).await;
    let mut s = tokio::net::TcpStream::connect(&kafka).await.unwrap();
    let init: InitProducerIdResponse =
        call(&mut s, ApiKey::InitProducerId, 1, &InitProducerIdRequest::default().with_transaction_timeout_ms(60_000))
            .await;
    assert_eq!(init.error_code, 0);
    let pid = init.producer_id.0;
    let produce = |partition: i32, records: bytes::Bytes| {
        ProduceRequest::default().with_acks(-1).with_timeout_ms(30_000).with_topic_data(vec![
            TopicProduceData::default().with_name(TopicName(StrBytes::from_static_str("events"))).with_partition_data(
                vec![PartitionProduceData::default().with_index(partition).with_records(Some(records))],
            ),
        ])
    };
    let answer = |r: ProduceResponse| {
        let p = &r.responses[0].partition_responses[0];
        (p.error_code, p.error_message.as_ref().map(ToString::to_string))
    };
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(0, batch(pid, 0, 0, 0..3))).await;
    assert_eq!(answer(r).0, 0);
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(0, batch(pid, 0, 0, 0..3))).await;
    assert_eq!(answer(r).0, 0, "a retry is a success");
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(0, batch(pid, 0, 10, 100..102))).await;
    let (code, message) = answer(r);
    assert_eq!(code, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    assert!(message.unwrap().contains("the next sequence is 3"));
    // Another partition has its own sequences.
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(1, batch(pid, 0, 0, 3..5))).await;
    assert_eq!(answer(r).0, 0);
    // A bumped epoch starts at 0; the old epoch is fenced.
    let bump = InitProducerIdRequest::default().with_producer_id(ProducerId(pid)).with_producer_epoch(0);
    let init: InitProducerIdResponse = call(&mut s, ApiKey::InitProducerId, 3, &bump).await;
    assert_eq!((init.producer_id.0, init.producer_epoch), (pid, 1));
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(0, batch(pid, 1, 0, 5..6))).await;
    assert_eq!(answer(r).0, 0);
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(0, batch(pid, 0, 3, 200..201))).await;
    assert_eq!(answer(r).0, 47, "INVALID_PRODUCER_EPOCH");
    // Records that are not JSON objects: INVALID_RECORD naming them, nothing lands.
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(0, not_json(pid, 1, 1))).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 87, "INVALID_RECORD");
    assert_eq!(p.record_errors.len(), 1);
    // An unknown topic, a partition past the topic's.
    let mut unknown = produce(0, batch(pid, 1, 1, 7..8));
    unknown.topic_data[0].name = TopicName(StrBytes::from_static_str("nope"));
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &unknown).await;
    assert_eq!(answer(r).0, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(5, batch(pid, 1, 1, 7..8))).await;
    assert_eq!(answer(r).0, 3);
    // Transactional producers are refused at InitProducerId.
    let tx =
        InitProducerIdRequest::default().with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("tx"))));
    let init: InitProducerIdResponse = call(&mut s, ApiKey::InitProducerId, 1, &tx).await;
    assert_eq!(init.error_code, 53);
    assert_eq!(
        crate::support::ids(&events),
        vec![0, 1, 2, 3, 4, 5],
        "each accepted batch once, nothing of the refused ones"
    );
    let described = crate::support::run_json(&["describe", &events]);
    assert_eq!(described["txns"][format!("deltabus-kafka:{pid}:0:events")], 1i64 << 32, "{described}");
    assert_eq!(described["txns"][format!("deltabus-kafka:{pid}:1:events")], 1, "{described}");
}

/// A batch whose records inflate past `server.kafka.max_request` (though its compressed bytes
/// fit) is refused MESSAGE_TOO_LARGE naming the setting, which clients do not retry (not
/// CORRUPT_MESSAGE, which they do); nothing of it lands, and the producer's next batch at the
/// same sequence does.
#[tokio::test(flavor = "multi_thread")]
async fn records_inflating_past_the_request_bound_are_too_large() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut cfg = config(&events, 1);
    cfg.max_body = deltabus::common::units::ByteSize(128 << 10);
    cfg.max_buffered = deltabus::common::units::ByteSize(1 << 20);
    cfg.kafka.as_mut().unwrap().max_request = deltabus::common::units::ByteSize(160 << 10);
    let (kafka, _http, _stop, _) = start(cfg, &[]).await;
    let mut s = tokio::net::TcpStream::connect(&kafka).await.unwrap();
    let init: InitProducerIdResponse =
        call(&mut s, ApiKey::InitProducerId, 1, &InitProducerIdRequest::default().with_transaction_timeout_ms(60_000))
            .await;
    let pid = init.producer_id.0;
    let produce = |records: bytes::Bytes| {
        ProduceRequest::default().with_acks(-1).with_timeout_ms(30_000).with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("events")))
                .with_partition_data(vec![PartitionProduceData::default().with_index(0).with_records(Some(records))]),
        ])
    };
    // About 400 KB of records, zstd-compressed under the 160 KiB bound.
    let big = batch(pid, 0, 0, 1_000_000..1_025_000);
    assert!(big.len() < 150 << 10, "sent, it fits: {} bytes", big.len());
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(big)).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 10, "MESSAGE_TOO_LARGE: {:?}", p.error_message);
    assert!(p.error_message.as_ref().unwrap().contains("server.kafka.max_request"), "{:?}", p.error_message);
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &produce(batch(pid, 0, 0, 0..3))).await;
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    assert_eq!(crate::support::ids(&events), vec![0, 1, 2], "nothing of the refused batch");
}

/// A partition whose inflated records need more room in `server.max_buffered` than is free
/// waits for it until the request's timeout, then is answered REQUEST_TIMED_OUT (which the
/// client retries with the same sequences) and nothing of it lands: here an anonymous push
/// request holds most of the budget in a group that runs its ten-minute window.
#[tokio::test(flavor = "multi_thread")]
async fn a_partition_without_room_in_the_budget_times_out() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut cfg = config(&events, 1);
    cfg.commit_window = deltabus::common::units::HumanDuration::from_secs(600);
    cfg.max_body = deltabus::common::units::ByteSize(160 << 10);
    cfg.max_buffered = deltabus::common::units::ByteSize(1 << 20);
    cfg.kafka.as_mut().unwrap().max_request = deltabus::common::units::ByteSize(160 << 10);
    let (kafka, http, _stop, metrics) = start(cfg, &[]).await;
    // About 140 KB of lines without a producer id: it holds six times that until its group
    // commits, ten minutes from now.
    let body: String = (0..3500).map(|n| format!("{{\"id\":{},\"name\":\"püsh {n:08}\"}}\n", 2_000_000 + n)).collect();
    let pushed =
        tokio::spawn(reqwest::Client::new().post(format!("{http}/v1/tables/events/records")).body(body).send());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !metrics.render().lines().any(|l| l.starts_with("deltabus_push_buffered_bytes") && !l.ends_with(" 0")) {
        assert!(
            Instant::now() < deadline,
            "the push request never took its room: {:?}",
            metrics.render().lines().filter(|l| l.contains("buffered")).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut s = tokio::net::TcpStream::connect(&kafka).await.unwrap();
    let init: InitProducerIdResponse =
        call(&mut s, ApiKey::InitProducerId, 1, &InitProducerIdRequest::default().with_transaction_timeout_ms(60_000))
            .await;
    let pid = init.producer_id.0;
    // 6,000 records: their bytes as sent fit in what is left, five times their inflated
    // bytes do not.
    let request = ProduceRequest::default().with_acks(-1).with_timeout_ms(1_000).with_topic_data(vec![
        TopicProduceData::default().with_name(TopicName(StrBytes::from_static_str("events"))).with_partition_data(
            vec![PartitionProduceData::default().with_index(0).with_records(Some(batch(pid, 0, 0, 0..6000)))],
        ),
    ]);
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 8, &request).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 7, "REQUEST_TIMED_OUT: {:?}", p.error_message);
    assert!(metrics.render().contains("overloaded"), "counted as refused for overload");
    // The same records uncompressed: six times the frame does not fit either, so it waits
    // unread for its timeout, then is read and answered the same.
    let plain = batch_in(pid, 0, 0, 0..6000, kafka_protocol::records::Compression::None);
    assert!(plain.len() > 60_000, "{} bytes", plain.len());
    let request = ProduceRequest::default().with_acks(-1).with_timeout_ms(1_000).with_topic_data(vec![
        TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("events")))
            .with_partition_data(vec![PartitionProduceData::default().with_index(0).with_records(Some(plain))]),
    ]);
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 9, &request).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 7, "REQUEST_TIMED_OUT: {:?}", p.error_message);
    assert!(p.error_message.as_ref().is_some_and(|m| m.contains("over capacity")), "{:?}", p.error_message);
    pushed.abort();
    assert!(!std::path::Path::new(&events).join("_delta_log").exists(), "nothing committed");
}

fn not_json(pid: i64, epoch: i16, base: i32) -> bytes::Bytes {
    use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: pid,
        producer_epoch: epoch,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: base,
        timestamp: 1_700_000_000_000,
        key: None,
        value: Some(bytes::Bytes::from_static(b"[1, 2]")),
        headers: Default::default(),
    };
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        [&record],
        &RecordEncodeOptions { version: 2, compression: Compression::None },
    )
    .unwrap();
    buf.freeze()
}
