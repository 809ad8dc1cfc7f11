//! JSON ingest into a variant column against the same records into typed columns: `n`
//! records (`BENCH_RECORDS`, default 500,000; ~134 B each, a nested `properties` object of
//! four keys) pre-produced to one 32-partition topic of the in-process mock cluster, then
//! ingested three times into new tables: `properties` inferred as a struct (typed), the same
//! field as `variant_columns = ["properties"]`, and the whole record as one variant column
//! (`record_variant`). Prints records/s, CPU per record (user + system time of the process
//! over the run) and bytes on disk (the data files), each against the typed run.
//!
//! Run: `cargo bench --bench variant_ingest`.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

use deltabus::config::pipeline::PipelineConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::FutureRecord;

#[path = "support/mod.rs"]
mod support;

const PARTITIONS: i32 = 32;

fn payload(i: usize) -> String {
    format!(
        r#"{{"id":{i},"user":"user-{}","country":"{}","properties":{{"page":"/p/{}","ms":{},"ok":{},"tags":["{}","t{}"]}},"ts":{}}}"#,
        i % 9973,
        ["DE", "FR", "NL", "US"][i % 4],
        i % 541,
        i % 1000,
        i.is_multiple_of(3),
        ["a", "b", "c"][i % 3],
        i % 17,
        1_700_000_000_000u64 + i as u64,
    )
}

/// Seconds of CPU (user + system, every thread) this process has used, from `/proc/self/stat`
/// (clock ticks of 1/100 s, as Linux counts them).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command's closing parenthesis; utime and stime are 14th and 15th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

/// Bytes of the Parquet files under `dir`.
fn data_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            total += data_bytes(&p);
        } else if p.extension().is_some_and(|x| x == "parquet") && !p.to_string_lossy().contains("_delta_log") {
            total += e.metadata().unwrap().len();
        }
    }
    total
}

struct Run {
    seconds: f64,
    cpu: f64,
    bytes: u64,
}

/// Ingests the topic into a new table, `shape` setting how `properties` lands.
async fn ingest(brokers: &str, n: usize, shape: impl FnOnce(&mut PipelineConfig)) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut p = PipelineConfig::new(dir.path().join("t").to_string_lossy(), brokers, "events");
    p.create = true;
    p.flush.max_latency = "2s".parse().unwrap();
    p.flush.max_rows = 250_000;
    shape(&mut p);
    let cpu = cpu_seconds();
    let (_, seconds) = support::run_until_committed(p, n as u64).await;
    let cpu = cpu_seconds() - cpu;
    Run { seconds, cpu, bytes: data_bytes(dir.path()) }
}

fn main() {
    let n: usize = std::env::var("BENCH_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(500_000);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("events", PARTITIONS, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let producer = support::producer(&brokers);
        let mut bytes = 0;
        for start in (0..n).step_by(20_000) {
            let payloads: Vec<String> = (start..(start + 20_000).min(n)).map(payload).collect();
            bytes += payloads.iter().map(String::len).sum::<usize>();
            let mut pending = Vec::new();
            for (k, p) in payloads.iter().enumerate() {
                let partition = ((start + k) % PARTITIONS as usize) as i32;
                let r = FutureRecord::<(), str>::to("events").payload(p.as_str()).partition(partition);
                pending.push(producer.send_result(r).unwrap());
            }
            for d in futures::future::join_all(pending).await {
                d.unwrap().unwrap();
            }
        }
        let typed = ingest(&brokers, n, |_| {}).await;
        let field = ingest(&brokers, n, |p| p.variant_columns = vec!["properties".into()]).await;
        let whole = ingest(&brokers, n, |p| p.record_variant = Some("record".into())).await;
        println!("{n} pre-produced records ({:.0} MB of JSON) on the in-process mock ({PARTITIONS} partitions):", bytes as f64 / 1e6);
        for (name, r) in [("typed columns", &typed), ("variant column", &field), ("whole-record variant", &whole)] {
            println!(
                "  {name:<21} {:>6.2} s = {:>8.0} records/s ({:.2}x typed) | CPU {:>5.2} us/record ({:.2}x) | {:>6.1} MB on disk ({:.2}x)",
                r.seconds,
                n as f64 / r.seconds,
                typed.seconds / r.seconds,
                r.cpu / n as f64 * 1e6,
                r.cpu / typed.cpu,
                r.bytes as f64 / 1e6,
                r.bytes as f64 / typed.bytes as f64,
            );
        }
    });
}
