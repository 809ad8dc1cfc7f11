//! `deltabus` processes for the tests: workers killed and terminated, producers running
//! beside them, and the exactly-once check of what they wrote.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

pub const TOTAL: i64 = 12_000;

/// `deltabus ingest <topic> <table> --brokers <brokers> --until-end` with `args` (app id,
/// create or evolve, ...): once dying right after its first commit lands, then to the end.
pub fn ingest_through_a_crash(brokers: &str, topic: &str, table: &str, args: &[&str]) {
    let ingest = |crash: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_deltabus"));
        cmd.args(["ingest", topic, table, "--brokers", brokers, "--until-end"]).args(args);
        if let Some(point) = crash {
            cmd.env("DELTABUS_CRASH_AT", point);
        }
        cmd.output().unwrap()
    };
    let crashed = ingest(Some("commit.after_put:1"));
    assert!(!crashed.status.success(), "died at the crash point: {}", String::from_utf8_lossy(&crashed.stderr));
    let out = ingest(None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `deltabus serve --config <cfg>` with stdout piped (its first line names the addresses), its
/// log appended to `log`, and 3% store faults seeded with `fault_seed` when given.
pub fn serve(cfg: &std::path::Path, log: &std::path::Path, fault_seed: Option<u64>) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deltabus"));
    cmd.args(["serve", "--config"]).arg(cfg).stdout(std::process::Stdio::piped()).stderr(log);
    if let Some(seed) = fault_seed {
        cmd.env("DELTABUS_FAULTS", format!("rate=0.03,seed={seed}"));
    }
    cmd.spawn().unwrap()
}

/// Waits (up to 300 s) for a client process to exit: its status, stdout and stderr.
pub fn wait_for_client(mut client: Child, what: &str) -> (std::process::ExitStatus, String, String) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = client.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "{what} did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    let (mut out, mut err) = (String::new(), String::new());
    std::io::Read::read_to_string(&mut client.stdout.take().unwrap(), &mut out).unwrap();
    std::io::Read::read_to_string(&mut client.stderr.take().unwrap(), &mut err).unwrap();
    (status, out, err)
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
                // A pause about time: the records are spread over the workers' lives.
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

/// How often `needle` stands in the log file at `log`.
pub fn log_count(log: &std::path::Path, needle: &str) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().matches(needle).count()
}

/// Waits until `needle` stands at least `n` times in the log file at `log` (90 s at most).
pub fn wait_for_log(log: &std::path::Path, needle: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while log_count(log, needle) < n {
        assert!(
            Instant::now() < deadline,
            "{needle:?} stands {} of {n} times after 90 s; log:\n{}",
            log_count(log, needle),
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn assert_exactly_once(table: &str) {
    let out = crate::support::deltabus(&["cat", table]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ids_once(&out.stdout, "deltabus cat");
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = std::process::Command::new(oracle).arg("rows").arg(table).output().unwrap();
        assert!(out.status.success(), "reference reader: {}", String::from_utf8_lossy(&out.stderr));
        assert_ids_once(&out.stdout, "the reference reader");
    }
}

/// Every id of 0..TOTAL exactly once among the JSON lines `rows`, as read by `reader`.
fn assert_ids_once(rows: &[u8], reader: &str) {
    let mut ids: Vec<i64> = String::from_utf8_lossy(rows)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    let dups = ids.windows(2).filter(|w| w[0] == w[1]).count();
    ids.dedup();
    assert_eq!(dups, 0, "duplicated rows read by {reader}");
    assert_eq!(ids.len() as i64, TOTAL, "missing rows read by {reader}");
    assert_eq!((ids[0], ids[ids.len() - 1]), (0, TOTAL - 1), "ids out of range read by {reader}");
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
        // A pause about time: the kill's moment is what the test varies.
        std::thread::sleep(Duration::from_millis(3500 + rnd % 2500));
        worker.kill().unwrap(); // SIGKILL: no flush, no commit, no goodbye to the group
        worker.wait().unwrap();
    }
}

/// The `/metrics` text a process serves at `addr`; `None` while it does not answer.
pub fn scrape(addr: &str) -> Option<String> {
    use std::io::{Read as _, Write as _};
    let mut conn = std::net::TcpStream::connect(addr).ok()?;
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    conn.read_to_string(&mut text).ok()?;
    Some(text)
}

/// Scrapes `addr` until the text holds `line` (waiting for what it needs, with a generous
/// deadline for a loaded machine); the last text either way.
pub fn scrape_until(addr: &str, line: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let text = scrape(addr).unwrap_or_default();
        if text.contains(line) || std::time::Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A free port on 127.0.0.1, as `127.0.0.1:<port>`.
pub fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.1:{port}")
}

/// Sends `sig` (`-STOP`, `-CONT`, `-9`, ...) to a child process.
pub fn signal(child: &Child, sig: &str) {
    assert!(std::process::Command::new("kill").arg(sig).arg(child.id().to_string()).status().unwrap().success());
}
