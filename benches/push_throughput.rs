//! Push ingest over HTTP against `deltabus write` of the same records, in the same run.
//!
//! 1. Throughput: 8 concurrent producers over keep-alive HTTP/1.1 connections post batches of
//!    1,000 records of ~250 bytes (exactly once: producer id and sequence) into `deltabus
//!    serve` at commit windows of 100, 20 and 5 ms; rows/s against `deltabus write` of the
//!    same records from a file, and the answer latency p50/p99 (target: p99 within window +
//!    100 ms).
//! 2. Overload: 64 producers post 4 MiB bodies without pause at a server whose
//!    `max_buffered` is 64 MiB, then 256 MiB: 429s counted, the server's peak RSS above its
//!    idle RSS for each bound.
//!
//! Run: `cargo build --release && cargo bench --bench push_throughput`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark driver

#[path = "support/records.rs"]
mod records;

use std::io::{BufRead, Write};

use records::record;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PRODUCERS: usize = 8;
const BATCHES_EACH: usize = 50;
const BATCH: usize = 1000;

fn batch_body(producer: usize, b: usize) -> String {
    let first = (producer * BATCHES_EACH + b) * BATCH;
    (first..first + BATCH).map(|i| record(i) + "\n").collect()
}

/// Starts `deltabus serve` with `args`; returns the child and its address.
fn serve(bin: &Path, args: &[String]) -> (Child, String) {
    let mut child = Command::new(bin)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    (child, v["listening"].as_str().unwrap().to_string())
}

fn peak_rss_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024.0
}

fn stop(mut child: Child) {
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let _ = child.wait();
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/push");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/deltabus");
    assert!(bin.exists(), "build the binary first: cargo build --release");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let rows = PRODUCERS * BATCHES_EACH * BATCH;

    // The baseline: the same records through `deltabus write` from a file.
    let records = root.join("records.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&records).unwrap());
        for p in 0..PRODUCERS {
            for b in 0..BATCHES_EACH {
                f.write_all(batch_body(p, b).as_bytes()).unwrap();
            }
        }
    }
    let bytes = std::fs::metadata(&records).unwrap().len() as f64;
    println!(
        "== push ingest: {PRODUCERS} producers x {BATCHES_EACH} batches x {BATCH} records ({:.0} B/record) ==",
        bytes / rows as f64
    );
    let started = Instant::now();
    let out = Command::new(&bin)
        .arg("write")
        .arg(root.join("written"))
        .stdin(std::fs::File::open(&records).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let write_s = started.elapsed().as_secs_f64();
    println!("deltabus write (one process, from a file) {write_s:>6.2} s  {:>9.0} rows/s", rows as f64 / write_s);

    for window in [100u64, 20, 5] {
        let table = root.join(format!("pushed-{window}ms"));
        let (server, addr) =
            serve(&bin, &[format!("--table=bench={}", table.display()), format!("--commit-window={window}ms")]);
        let url = format!("http://{addr}/v1/tables/bench/records");
        let bodies: Vec<Vec<String>> =
            (0..PRODUCERS).map(|p| (0..BATCHES_EACH).map(|b| batch_body(p, b)).collect()).collect();
        let (push_s, mut latencies, commits) = rt.block_on(async {
            let started = Instant::now();
            let mut tasks = Vec::new();
            for (p, mine) in bodies.into_iter().enumerate() {
                let url = url.clone();
                tasks.push(tokio::spawn(async move {
                    let client = reqwest::Client::new();
                    let mut lat = Vec::new();
                    for (seq, body) in mine.into_iter().enumerate() {
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
            let secs = started.elapsed().as_secs_f64();
            let metrics = reqwest::get(format!("http://{addr}/metrics")).await.unwrap().text().await.unwrap();
            let commits = metrics
                .lines()
                .find(|l| l.starts_with("deltabus_push_commits_total{"))
                .and_then(|l| l.split_whitespace().last())
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
            (secs, lat, commits)
        });
        let rss = peak_rss_mib(server.id(), "VmHWM:");
        stop(server);
        latencies.sort_by(f64::total_cmp);
        let (p50, p99) = (percentile(&latencies, 0.5) * 1000.0, percentile(&latencies, 0.99) * 1000.0);
        println!(
        "deltabus serve, {window:>3} ms window            {push_s:>6.2} s  {:>9.0} rows/s  {commits:.0} commits ({:.1} requests each)  peak RSS {rss:.0} MiB",
        rows as f64 / push_s,
        (PRODUCERS * BATCHES_EACH) as f64 / commits.max(1.0)
    );
        println!("  answer latency p50 {p50:.0} ms, p99 {p99:.0} ms (target p99 <= window + 100 ms)");
        println!("  ratio push / write rows per second: {:.2}x (target >= 0.8x)", write_s / push_s);
        let out = Command::new(&bin).arg("cat").arg(&table).output().unwrap();
        let landed = String::from_utf8_lossy(&out.stdout).lines().count();
        assert_eq!(landed, rows, "every pushed row landed once");
    }

    for bound in [64u64, 256] {
        println!("== overload: 64 producers posting 4 MiB bodies at max_buffered = {bound} MiB for 10 s ==");
        let cfg = root.join(format!("overload-{bound}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[server]\nmax_body = \"8MiB\"\nmax_buffered = \"{bound}MiB\"\n[server.tables.bench]\ntable = {:?}\ncreate = true\n",
                root.join(format!("overload-{bound}")).display().to_string()
            ),
        )
        .unwrap();
        let (server, addr) = serve(&bin, &["--config".into(), cfg.display().to_string()]);
        std::thread::sleep(Duration::from_millis(300));
        let idle = peak_rss_mib(server.id(), "VmRSS:");
        let (ok, refused) = rt.block_on(overload(&addr));
        let peak = peak_rss_mib(server.id(), "VmHWM:");
        stop(server);
        println!(
            "{ok} requests committed, {refused} refused (429); peak RSS {peak:.0} MiB, idle {idle:.0} MiB: {:.0} MiB above idle",
            peak - idle
        );
    }
}

/// 64 producers posting 4 MiB bodies without pause for 10 s: (committed, refused).
async fn overload(addr: &str) -> (u64, u64) {
    let body: String = {
        let mut s = String::new();
        let mut i = 0;
        while s.len() < 4 << 20 {
            s.push_str(&record(i));
            s.push('\n');
            i += 1;
        }
        s
    };
    let url = format!("http://{addr}/v1/tables/bench/records");
    let until = Instant::now() + Duration::from_secs(10);
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (url, body) = (url.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let (mut ok, mut refused) = (0u64, 0u64);
            while Instant::now() < until {
                // A 429 is answered before the body is read: the client may see the
                // connection close under its upload instead of the answer.
                match client.post(&url).body(body.clone()).send().await {
                    Ok(r) if r.status().as_u16() == 200 => ok += 1,
                    Ok(r) if r.status().as_u16() == 429 => refused += 1,
                    Ok(r) => panic!("{}: {}", r.status(), r.text().await.unwrap()),
                    Err(_) => refused += 1,
                }
                if refused > 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            (ok, refused)
        }));
    }
    let mut sum = (0, 0);
    for t in tasks {
        let (a, b) = t.await.unwrap();
        sum = (sum.0 + a, sum.1 + b);
    }
    sum
}
