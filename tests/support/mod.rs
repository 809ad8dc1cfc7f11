//! Everything the integration tests share, in one place (test modules never import from each
//! other): the `deltabus` binary and its JSON answers, the conformance corpus, the reference
//! reader and Python runners (here); Kafka pipelines and the mock cluster ([`kafka`]);
//! `deltabus` processes and their exactly-once check ([`processes`]); the Python `deltalake`
//! reader ([`python`]); object-store emulators ([`stores`]); tables and an in-process table
//! builder ([`tables`]).

pub mod kafka;
pub mod listener;
pub mod processes;
pub mod python;
pub mod racing;
pub mod registry;
pub mod spark;
pub mod stores;
pub mod tables;
pub mod uniform;

pub use kafka::*;
pub use processes::*;
pub use python::*;
pub use stores::*;
pub use tables::*;

use std::path::PathBuf;
use std::process::{Command, Output};

/// The conformance corpus: `tests/data/conformance` (`DELTABUS_CONFORMANCE_DIR` overrides),
/// with `tables/` and the reference answers in `expected/`.
pub fn conformance_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("DELTABUS_CONFORMANCE_DIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/conformance")
}

/// Runs the deltabus binary.
pub fn deltabus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deltabus")).args(args).output().expect("run deltabus")
}

/// Runs the deltabus binary, failing the test (and killing the process) if it runs longer
/// than `limit`: for inputs that once made a decoder spin.
pub fn deltabus_within(args: &[&str], limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run deltabus");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait for deltabus").is_none() {
        if started.elapsed() > limit {
            child.kill().ok();
            panic!("deltabus {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("deltabus output")
}

/// Asserts that a failed run failed cleanly: non-zero exit, a message, no panic.
pub fn assert_clean_failure(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{what}: expected failure, got success");
    assert!(stderr.starts_with("error: "), "{what}: stderr lacks an error line: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{what}: panicked: {stderr}");
}

/// Runs `deltabus write <table> <args>` with `input` on stdin.
pub fn write_jsonl(table: &std::path::Path, args: &[&str], input: &str) -> Output {
    write_jsonl_with_env(table, args, input, &[])
}

/// [`write_jsonl`] with `env` set for the process (`DELTABUS_FAULTS`, for instance).
pub fn write_jsonl_with_env(table: &std::path::Path, args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .arg("write")
        .arg(table)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn deltabus write");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait for deltabus write")
}

/// Runs deltabus, requires success, and parses its JSON output.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let out = deltabus(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// A writable copy of a corpus table under `into`.
pub fn copy_corpus_table(name: &str, into: &std::path::Path) -> PathBuf {
    let dest = into.join(name);
    assert!(Command::new("cp")
        .arg("-r")
        .arg(conformance_dir().join("tables").join(name))
        .arg(&dest)
        .status()
        .expect("cp")
        .success());
    assert!(Command::new("chmod").args(["-R", "u+w"]).arg(&dest).status().expect("chmod").success());
    dest
}

/// The one required-tools switch every test goes through when a tool or service may be
/// missing: `true` when it is there; when it is not, a failure naming `how` to get it under
/// `DELTABUS_REQUIRE_EMULATORS` (as `scripts/test.sh` and CI run), else a "skipped" note and
/// `false` (a test run by hand without the services).
pub fn required(present: bool, missing: &str, how: &str) -> bool {
    if present {
        return true;
    }
    assert!(std::env::var("DELTABUS_REQUIRE_EMULATORS").is_err(), "{missing}: {how}");
    eprintln!("skipped: {missing} ({how})");
    false
}

/// The reference reader built by `scripts/setup.sh` (`DELTABUS_KERNEL_ORACLE` overrides);
/// `None` (with a note) when it is not built, a failure when emulators are required.
pub fn kernel_oracle() -> Option<PathBuf> {
    let path = std::env::var("DELTABUS_KERNEL_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/bin/kernel-oracle"));
    let missing = format!("kernel-oracle not built at {}", path.display());
    required(path.exists(), &missing, "scripts/setup.sh builds it").then_some(path)
}

/// Java Iceberg's jars and the scan-planning probe set up by `scripts/setup.sh`
/// (`DELTABUS_ICEBERG_PROBE` overrides); `None` (with a note) when missing, a failure when
/// emulators are required.
pub fn iceberg_probe() -> Option<PathBuf> {
    let path = std::env::var("DELTABUS_ICEBERG_PROBE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/iceberg-probe"));
    let missing = format!("Java Iceberg not set up at {}", path.display());
    required(path.join("classes/IcebergProbe.class").exists(), &missing, "scripts/setup.sh resolves it with Maven")
        .then_some(path)
}

/// Apache Kafka's jars and the Java client's probe (`tools/kafka-broker/src/KafkaProbe.java`)
/// set up by `scripts/setup.sh` (`DELTABUS_KAFKA_JAVA` overrides); `None` (with a note) when
/// missing, a failure when emulators are required.
pub fn kafka_java() -> Option<PathBuf> {
    let path = std::env::var("DELTABUS_KAFKA_JAVA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/kafka-broker"));
    let missing = format!("the Java Kafka client's probe not set up at {}", path.display());
    required(path.join("classes/KafkaProbe.class").exists(), &missing, "scripts/setup.sh resolves it with Maven")
        .then_some(path)
}

/// Runs a Python snippet (the `deltalake` reference package) and returns its output. Arrow's
/// C++ thread pools can abort the interpreter's shutdown after the work is done ("terminate
/// called without an active exception", apache/arrow#34314, delta-rs#2184), so a snippet that
/// ran to its end flushes its output and leaves at once (`os._exit(0)`), skipping the
/// destructors; an exception still exits non-zero with its traceback. Crashes before that
/// point (death by a signal) are retried up to five times with a growing pause; any other
/// failure is returned as is for the caller to report.
pub fn run_python(python: &str, script: &str, args: &[&std::ffi::OsStr]) -> Output {
    use std::os::unix::process::ExitStatusExt;
    let _guard = NATIVE_CLIENTS.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    let script =
        format!("{script}\nimport os as _os, sys as _sys\n_sys.stdout.flush()\n_sys.stderr.flush()\n_os._exit(0)\n");
    let script = script.as_str();
    let mut last = None;
    for attempt in 0..5u64 {
        if attempt > 0 {
            // A backoff between attempts, not a synchronisation.
            std::thread::sleep(std::time::Duration::from_millis(500 * attempt));
        }
        let out = Command::new(python).arg("-c").arg(script).args(args).output().expect("run python");
        let crashed =
            out.status.signal().is_some() || String::from_utf8_lossy(&out.stderr).contains("terminate called");
        if !crashed {
            return out;
        }
        eprintln!("reference reader crashed, retrying: {}", String::from_utf8_lossy(&out.stderr).trim());
        last = Some(out);
    }
    last.expect("at least one attempt")
}

/// Keeps the Python reference reader apart from tests that run librdkafka in this process: a
/// `deltalake` child spawned while librdkafka's threads are alive here aborts in its native
/// code ("terminate called without an active exception"), reproducibly. Tests with Kafka
/// clients share this lock (they run side by side) and hold it until their clients are
/// destroyed; [`run_python`] takes it alone.
pub fn native_clients_lock() -> std::sync::RwLockReadGuard<'static, ()> {
    NATIVE_CLIENTS.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

static NATIVE_CLIENTS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A tiny seeded xorshift for tests that vary their inputs or kill moments per run (the seed
/// is printed so a failure can be replayed).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The fenced code blocks of Markdown `text` as (language, text), in order.
pub fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let (mut blocks, mut current) = (Vec::new(), None::<(String, String)>);
    for line in text.lines() {
        match (line.trim_start().strip_prefix("```"), current.take()) {
            (Some(lang), None) => current = Some((lang.trim().to_string(), String::new())),
            (Some(_), Some(block)) => blocks.push(block),
            (None, Some((lang, mut body))) => {
                body.push_str(line);
                body.push('\n');
                current = Some((lang, body));
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The fenced code blocks of the README's section headed `## heading`.
pub fn readme_blocks(heading: &str) -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme.find(&format!("\n## {heading}\n")).unwrap_or_else(|| panic!("README has no section {heading}"));
    let section = &readme[start + 1..];
    fenced_blocks(&section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)])
}

/// Polls `probe` until it gives a value (every 100 ms, up to `limit`): the value; a failure
/// naming `what` and the last state `probe` reported when the limit passes. The one wait on a
/// condition the tests share (a test never sleeps a fixed time to synchronise).
pub fn wait_until<T>(what: &str, limit: std::time::Duration, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = std::time::Instant::now() + limit;
    loop {
        match probe() {
            Ok(value) => return value,
            Err(state) if std::time::Instant::now() >= deadline => panic!("never {what} within {limit:?}: {state}"),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}
