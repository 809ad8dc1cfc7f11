//! Many workers, one table: per-worker commits against coordinated commits, same run.
//!
//! For N = 1, 2, 4, 8, 16 `deltabus ingest` processes (`BENCH_WORKERS` to change the list) on
//! one 64-partition topic of librdkafka's mock cluster (hosted here, reached over TCP), a
//! producer sending 4,000 records/s (`BENCH_RATE`), a 1 s flush, one local table behind the
//! fault-injecting store set to add 50 ms to every request (`DELTABUS_FAULTS=rate=0,delay=50ms`,
//! an object store's round trip), measured for 20 s (`BENCH_MEASURE_S`) after 10 s of settling
//! (`BENCH_SETTLE_S`). Each mode runs on a fresh topic and table. Per N and mode:
//! - commits landed per second (table versions in the window),
//! - commit attempts per landed commit and store requests per second (every worker's
//!   `deltabus_commit_attempts_total`, `deltabus_commits_landed_total` and
//!   `deltabus_store_requests_total`, scraped at both ends of the window),
//! - produce→visible latency p50 / p99: for each record produced in the window, from its send
//!   to the `lastUpdated` of the first `txn` of its partition that covers its offset,
//! - rows per second committed in the window, against the rate produced.
//!
//! Run: `cargo bench --bench commit_scaling`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};

const PARTITIONS: i32 = 64;

fn env_or<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d)
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// (attempts, landed, store requests) from a worker's /metrics (zeros when it does not answer).
fn scrape(port: u16) -> (u64, u64, u64) {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return (0, 0, 0) };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let value = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(0, |v| v as u64)
    };
    (
        value("deltabus_commit_attempts_total"),
        value("deltabus_commits_landed_total"),
        value("deltabus_store_requests_total"),
    )
}

/// Every commit of a local table: (version, timestamp ms, rows added, partition → (txn version,
/// lastUpdated)).
type Commit = (u64, i64, u64, BTreeMap<i32, (i64, i64)>);

fn commits(table: &std::path::Path) -> Vec<Commit> {
    let Ok(entries) = std::fs::read_dir(table.join("_delta_log")) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries {
        let path = e.unwrap().path();
        let Some(v) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".json")) else { continue };
        let Ok(version) = v.parse::<u64>() else { continue };
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let (mut ts, mut rows, mut txns) = (0, 0, BTreeMap::new());
        for line in text.lines() {
            let Ok(a) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            if let Some(t) = a["commitInfo"]["timestamp"].as_i64() {
                ts = t;
            }
            if let Some(stats) = a["add"]["stats"].as_str() {
                rows += serde_json::from_str::<serde_json::Value>(stats).unwrap()["numRecords"].as_u64().unwrap_or(0);
            }
            if let Some(app) = a["txn"]["appId"].as_str() {
                let p: i32 = app.rsplit('-').next().unwrap().parse().unwrap();
                txns.insert(p, (a["txn"]["version"].as_i64().unwrap(), a["txn"]["lastUpdated"].as_i64().unwrap()));
            }
        }
        out.push((version, ts, rows, txns));
    }
    out.sort_by_key(|c| c.0);
    out
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

struct Figures {
    commits_per_s: f64,
    attempts_per_landed: f64,
    requests_per_s: f64,
    p50: f64,
    p99: f64,
    rows_per_s: f64,
    unseen: usize,
}

fn run(
    mode: &str,
    workers: usize,
    brokers: &str,
    cluster: &MockCluster<'static, rdkafka::producer::DefaultProducerContext>,
) -> Figures {
    let (rate, settle, measure) =
        (env_or("BENCH_RATE", 4000u64), env_or("BENCH_SETTLE_S", 10u64), env_or("BENCH_MEASURE_S", 20u64));
    let topic = format!("events-{mode}-{workers}");
    cluster.create_topic(&topic, PARTITIONS, 1).unwrap();
    cluster.create_topic(&format!("deltabus-commits.bench.{topic}"), 1, 1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let ports: Vec<u16> = (0..workers).map(|_| free_port()).collect();
    let mut children: Vec<Child> = ports
        .iter()
        .map(|port| {
            Command::new(env!("CARGO_BIN_EXE_deltabus"))
                .args([
                    "ingest",
                    &topic,
                    table.to_str().unwrap(),
                    "--brokers",
                    brokers,
                    "--app-id",
                    "bench",
                    "--create",
                ])
                .args(["--flush-interval", "1s", "--max-rows", "1000000", "--commit-mode", mode])
                .args(["--commit-interval", "1s", "--metrics-addr", &format!("127.0.0.1:{port}")])
                .args(["--kafka-property", "session.timeout.ms=6000", "--kafka-property", "heartbeat.interval.ms=500"])
                .args(["--kafka-property", "fetch.wait.max.ms=20"])
                .env("DELTABUS_FAULTS", "rate=0,delay=50ms")
                .env("DELTABUS_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // The producer: `rate` records/s in 10 bursts a second; sends within the window recorded.
    let sent: Arc<Mutex<Vec<(i32, i64, i64)>>> = Arc::default();
    let start = Instant::now();
    let window = (Duration::from_secs(settle), Duration::from_secs(settle + measure));
    let producing = {
        let (brokers, topic, sent) = (brokers.to_string(), topic.clone(), sent.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let producer: FutureProducer =
                    ClientConfig::new().set("bootstrap.servers", &brokers).set("linger.ms", "5").create().unwrap();
                let per_burst = rate / 10;
                let mut i = 0u64;
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                while start.elapsed() < window.1 + Duration::from_secs(1) {
                    tick.tick().await;
                    let t = now_ms();
                    let in_window = (window.0..window.1).contains(&start.elapsed());
                    let mut pending = Vec::new();
                    for _ in 0..per_burst {
                        let p = (i % PARTITIONS as u64) as i32;
                        let payload = format!(r#"{{"id":{i},"ts":{t},"note":"{}"}}"#, "x".repeat(60));
                        pending.push(
                            producer
                                .send_result(FutureRecord::<(), _>::to(&topic).payload(&payload).partition(p))
                                .unwrap(),
                        );
                        i += 1;
                    }
                    for d in futures::future::join_all(pending).await {
                        let d = d.unwrap().unwrap();
                        let (p, o) = (d.partition, d.offset);
                        if in_window {
                            sent.lock().unwrap().push((p, o, t));
                        }
                    }
                }
            });
        })
    };
    std::thread::sleep(window.0.saturating_sub(start.elapsed()));
    let before: Vec<_> = ports.iter().map(|p| scrape(*p)).collect();
    let (t0, c0) = (now_ms(), commits(&table));
    std::thread::sleep(window.1.saturating_sub(start.elapsed()));
    let after: Vec<_> = ports.iter().map(|p| scrape(*p)).collect();
    let t1 = now_ms();
    producing.join().unwrap();
    // Let the window's last records become visible before reading latencies.
    std::thread::sleep(Duration::from_secs(5));
    let all = commits(&table);
    for c in &mut children {
        let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
    }
    for c in &mut children {
        let _ = c.wait();
    }
    let secs = (t1 - t0) as f64 / 1000.0;
    let in_window: Vec<&Commit> = all.iter().filter(|c| c.1 >= t0 && c.1 < t1).collect();
    let sum = |f: fn(&(u64, u64, u64)) -> u64, v: &[(u64, u64, u64)]| v.iter().map(f).sum::<u64>() as f64;
    let attempts = sum(|x| x.0, &after) - sum(|x| x.0, &before);
    let landed = sum(|x| x.1, &after) - sum(|x| x.1, &before);
    let requests = sum(|x| x.2, &after) - sum(|x| x.2, &before);
    // Latency: the first txn of the record's partition at or past its offset.
    let mut covers: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for c in &all {
        for (p, (v, at)) in &c.3 {
            covers.entry(*p).or_default().push((*v, *at));
        }
    }
    let mut lat = Vec::new();
    let mut unseen = 0;
    for (p, o, t) in sent.lock().unwrap().iter() {
        match covers.get(p).and_then(|c| c.iter().find(|(v, _)| v >= o)) {
            Some((_, at)) => lat.push((at - t) as f64 / 1000.0),
            None => unseen += 1,
        }
    }
    lat.sort_by(f64::total_cmp);
    let _ = c0;
    Figures {
        commits_per_s: in_window.len() as f64 / secs,
        attempts_per_landed: if landed > 0.0 { attempts / landed } else { f64::NAN },
        requests_per_s: requests / secs,
        p50: pct(&lat, 0.5),
        p99: pct(&lat, 0.99),
        rows_per_s: in_window.iter().map(|c| c.2).sum::<u64>() as f64 / secs,
        unseen,
    }
}

fn main() {
    let list: Vec<usize> = std::env::var("BENCH_WORKERS")
        .unwrap_or_else(|_| "1,2,4,8,16".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let cluster = MockCluster::new(1).unwrap();
    let brokers = cluster.bootstrap_servers();
    println!(
        "rate {} records/s, {PARTITIONS} partitions, 1 s flush, 50 ms per store request",
        env_or("BENCH_RATE", 4000u64)
    );
    println!("| workers | mode | commits landed/s | attempts per landed | store requests/s | produce→visible p50 / p99 | rows/s | not visible |");
    println!("|---|---|---|---|---|---|---|---|");
    for n in list {
        for mode in ["worker", "coordinated"] {
            let f = run(mode, n, &brokers, &cluster);
            println!(
                "| {n} | {mode} | {:.2} | {:.2} | {:.0} | {:.2} s / {:.2} s | {:.0} | {} |",
                f.commits_per_s, f.attempts_per_landed, f.requests_per_s, f.p50, f.p99, f.rows_per_s, f.unseen
            );
        }
    }
}
