//! Push ingest over HTTP (`deltabus serve`): real HTTP clients (Python `requests`, reqwest)
//! against the server, every answer of the API, HTTP/2 and TLS, overload and slow clients, and
//! exactly once per producer through kill -9, a crash point and store faults.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deltabus::config::server::{ResolvedServer, ServerConfig, ServerTable};
use deltabus::metrics::Metrics;
use serde_json::Value;

use crate::support::processes::terminate;
use crate::support::python::python;
use crate::support::{deltabus, kernel_oracle, Rng};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn table_config(url: &str) -> ServerTable {
    ServerTable { table: url.into(), create: true, ..ServerTable::default() }
}

fn resolved(cfg: ServerConfig) -> ResolvedServer {
    cfg.resolve(&|_| None).unwrap()
}

/// An in-process server; dropping the sender stops it.
async fn start(cfg: ServerConfig) -> (String, tokio::sync::watch::Sender<bool>, Arc<Metrics>) {
    let tls = cfg.tls_cert.is_some();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let metrics = Arc::new(Metrics::default());
    let storage = deltabus::storage::StorageOptions::default();
    let server =
        deltabus::serve::start(resolved(cfg), storage, metrics.clone(), stopped, Duration::from_secs(5)).await.unwrap();
    let url = format!("{}://{}", if tls { "https" } else { "http" }, server.local_addr);
    tokio::spawn(server.stopped());
    // Ready once every table is open (over TLS, asked without checking the test certificate).
    let client = reqwest::Client::builder().danger_accept_invalid_certs(true).build().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while client.get(format!("{url}/ready")).send().await.map(|r| r.status().as_u16()).ok() != Some(200) {
        assert!(Instant::now() < deadline, "server not ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (url, stop, metrics)
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut req = client.post(url).body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)), headers)
}

/// Every answer of the records endpoint, each for its reason, and the table afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn every_answer_of_the_records_endpoint_names_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let letters = dir.path().join("letters").to_string_lossy().into_owned();
    let fixed = dir.path().join("fixed").to_string_lossy().into_owned();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "events-token\n").unwrap();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.commit_window = deltabus::common::units::HumanDuration::from_millis(20);
    cfg.max_line = deltabus::common::units::ByteSize(200);
    cfg.max_body = deltabus::common::units::ByteSize(4096);
    cfg.max_buffered = deltabus::common::units::ByteSize(1 << 20);
    let mut t = table_config(&events);
    t.dead_letters = Some(letters.clone());
    t.tokens = vec![format!("file:{}", tokens.display())];
    cfg.tables.insert("events".into(), t);
    let mut f = table_config(&fixed);
    f.create = false;
    cfg.tables.insert("fixed".into(), f);
    let (url, _stop, _) = start(cfg).await;
    let c = reqwest::Client::new();
    let rec = format!("{url}/v1/tables/events/records");
    let auth = ("Authorization", "Bearer events-token");
    let json = ("Content-Type", "application/x-ndjson");

    // Tokens: none, unknown, and the table's own.
    let (s, b, h) = post(&c, &rec, &[json], "{\"id\":1}\n").await;
    assert_eq!((s, h.get("www-authenticate").map(|v| v.to_str().unwrap())), (401, Some("Bearer")), "{b}");
    assert_eq!(post(&c, &rec, &[json, ("Authorization", "Bearer nope")], "{\"id\":1}\n").await.0, 401);
    let (s, b, _) = post(&c, &format!("{url}/v1/tables/fixed/records"), &[json, auth], "{\"id\":1}\n").await;
    assert_eq!(s, 403, "a token of another table: {b}");
    // Unknown table, content type, headers.
    let (s, b, _) = post(&c, &format!("{url}/v1/tables/nope/records"), &[json, auth], "{}").await;
    assert_eq!(s, 404, "{b}");
    assert_eq!(post(&c, &rec, &[("Content-Type", "application/xml"), auth], "<a/>").await.0, 415);
    let (s, b, _) = post(&c, &rec, &[json, auth, ("Producer-Id", "p")], "{\"id\":1}\n").await;
    assert!(s == 400 && b["error"].as_str().unwrap().contains("Producer-Sequence"), "{b}");

    // The first request creates the table; a retry of its sequence writes nothing.
    let p = |seq: &'static str| [json, auth, ("Producer-Id", "Zürich-1"), ("Producer-Sequence", seq)];
    let body = "{\"id\":1,\"name\":\"ünï ☃\"}\n\n{\"id\":2,\"name\":null}\r\n";
    let (s, b, _) = post(&c, &rec, &p("0"), body).await;
    assert_eq!((s, b["outcome"].as_str(), b["rows"].as_u64()), (200, Some("committed"), Some(2)), "{b}");
    assert_eq!(b["delivery"], "exactly_once");
    let (s, b, _) = post(&c, &rec, &p("0"), body).await;
    assert_eq!((s, b["outcome"].as_str(), b["committed_sequence"].as_i64()), (200, Some("already_committed"), Some(0)));
    // A gap names the next sequence; a bad line is named and writes nothing.
    let (s, b, _) = post(&c, &rec, &p("5"), "{\"id\":9}\n").await;
    assert_eq!((s, b["expected_sequence"].as_i64()), (409, Some(1)), "{b}");
    let (s, b, _) = post(&c, &rec, &p("1"), "{\"id\":3}\n{\"id\":\"four\"}\n").await;
    assert!(s == 400 && b["error"].as_str().unwrap().starts_with("line 2:"), "{b}");
    let (s, b, _) = post(&c, &rec, &p("1"), format!("{{\"id\":3,\"name\":\"{}\"}}\n", "x".repeat(300))).await;
    assert!(s == 413 && b["error"].as_str().unwrap().starts_with("line 1:"), "{b}");
    assert_eq!(post(&c, &rec, &p("1"), "{\"id\":3}\n".repeat(600)).await.0, 413, "body over max_body");
    // Bad lines to the dead-letter table, the rest committed, once.
    let dl = format!("{rec}?bad_lines=dead_letter");
    let (s, b, _) = post(&c, &dl, &p("1"), "{\"id\":3}\n{not json\n{\"id\":4}\n").await;
    assert_eq!((s, b["rows"].as_u64(), b["bad_lines"][0]["line"].as_i64()), (200, Some(2), Some(2)), "{b}");
    assert_eq!(post(&c, &dl, &p("1"), "{\"id\":3}\n{not json\n{\"id\":4}\n").await.1["outcome"], "already_committed");
    let (s, b, _) = post(&c, &format!("{rec}?bad_lines=maybe"), &p("2"), "{\"id\":5}\n").await;
    assert_eq!(s, 400, "{b}");
    // Without producer headers: at least once, and said so.
    let (s, b, _) = post(&c, &rec, &[json, auth], "{\"id\":5}\n").await;
    assert_eq!((s, b["delivery"].as_str()), (200, Some("at_least_once")), "{b}");
    assert!(b["note"].as_str().unwrap().contains("writes its rows again"));
    // A producer that lost count asks.
    let r: Value = c
        .get(format!("{url}/v1/tables/events/producers/Zürich-1"))
        .header(auth.0, auth.1)
        .send()
        .await
        .unwrap()
        .json_value()
        .await;
    assert_eq!((r["committed_sequence"].as_i64(), r["next_sequence"].as_i64()), (Some(1), Some(2)), "{r}");

    assert_eq!(crate::support::ids(&events), vec![1, 2, 3, 4, 5]);
    let out = deltabus(&["cat", &letters]);
    let letters: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(letters.len(), 1, "one dead letter, written once: {letters:?}");
    assert_eq!((letters[0]["offset"].as_i64(), letters[0]["topic"].as_str()), (Some(2), Some("events")));
    let described = crate::support::run_json(&["describe", &events]);
    assert_eq!(described["txns"]["deltabus-push:Zürich-1"], 1, "{described}");

    // Operations endpoints.
    let doc: Value = c.get(format!("{url}/v1/openapi.json")).send().await.unwrap().json_value().await;
    assert!(doc["paths"]["/v1/tables/{name}/records"]["post"]["responses"]["409"].is_object());
    let metrics = c.get(format!("{url}/metrics")).send().await.unwrap().text().await.unwrap();
    for needle in [
        "deltabus_push_requests_total{table=\"events\",producer=\"Zürich-1\",outcome=\"committed\"} 2",
        "deltabus_push_rows_total{table=\"events\",producer=\"Zürich-1\"} 4",
        "deltabus_push_rejections_total{table=\"events\",reason=\"sequence_gap\"} 1",
        "deltabus_push_rejections_total{table=\"events\",reason=\"unauthorized\"} 2",
        "deltabus_push_request_seconds_bucket",
    ] {
        assert!(metrics.contains(needle), "{needle} missing from\n{metrics}");
    }
    assert_eq!(c.get(format!("{url}/health")).send().await.unwrap().status(), 200);
}

trait JsonValue {
    async fn json_value(self) -> Value;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Value {
        serde_json::from_str(&self.text().await.unwrap()).unwrap()
    }
}

/// Arrow IPC bodies, schema evolution when the table allows it, and the same endpoint over
/// HTTP/2 (cleartext by prior knowledge, and by ALPN over TLS with a private CA).
#[tokio::test(flavor = "multi_thread")]
async fn arrow_streams_http2_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, cert.cert.pem()).unwrap();
    std::fs::write(&key_file, cert.signing_key.serialize_pem()).unwrap();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    let mut t = table_config(&events);
    t.evolve_schema = true;
    cfg.tables.insert("events".into(), t);
    let (plain, _stop, _) = start(cfg.clone()).await;
    cfg.tls_cert = Some(cert_file.to_string_lossy().into_owned());
    cfg.tls_key = Some(key_file.to_string_lossy().into_owned());
    let (tls, _stop_tls, _) = start(cfg).await;

    let h2c = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let json = ("Content-Type", "application/x-ndjson");
    let r = h2c
        .post(format!("{plain}/v1/tables/events/records"))
        .header(json.0, json.1)
        .body("{\"id\":1}\n")
        .send()
        .await
        .unwrap();
    assert_eq!((r.version(), r.status().as_u16()), (reqwest::Version::HTTP_2, 200));
    // An Arrow stream with a column the table lacks: the table evolves.
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("id", arrow::datatypes::DataType::Int32, false),
        arrow::datatypes::Field::new("tag", arrow::datatypes::DataType::Utf8, true),
    ]));
    let batch = arrow::array::RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(arrow::array::Int32Array::from(vec![2, 3])),
            Arc::new(arrow::array::StringArray::from(vec![Some("é"), None])),
        ],
    )
    .unwrap();
    let mut ipc = Vec::new();
    let mut w = arrow::ipc::writer::StreamWriter::try_new(&mut ipc, &schema).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    drop(w);
    let arrow_type = ("Content-Type", "application/vnd.apache.arrow.stream");
    let (s, b, _) = post(&h2c, &format!("{plain}/v1/tables/events/records"), &[arrow_type], ipc).await;
    assert_eq!((s, b["rows"].as_u64()), (200, Some(2)), "{b}");

    let ca = reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).unwrap();
    let client = reqwest::Client::builder().add_root_certificate(ca).build().unwrap();
    let port = tls.rsplit(':').next().unwrap();
    let r = client
        .post(format!("https://localhost:{port}/v1/tables/events/records"))
        .header(json.0, json.1)
        .body("{\"id\":4,\"tag\":\"tls\"}\n")
        .send()
        .await
        .unwrap();
    assert_eq!((r.version(), r.status().as_u16()), (reqwest::Version::HTTP_2, 200), "ALPN picks HTTP/2");
    // A client that does not trust the certificate gets no answer.
    assert!(reqwest::Client::new().get(format!("https://localhost:{port}/health")).send().await.is_err());
    assert_eq!(crate::support::ids(&events), vec![1, 2, 3, 4]);
    if let Some(oracle) = kernel_oracle() {
        let out = Command::new(oracle).arg("rows").arg(&events).output().unwrap();
        assert_eq!(crate::support::ids_in(&out.stdout), vec![1, 2, 3, 4], "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A server on a table of its own with a 3 s commit window: the table, the server's URL and
/// its stop handle.
async fn three_second_window(dir: &std::path::Path) -> (String, String, tokio::sync::watch::Sender<bool>) {
    let events = dir.join("events").to_string_lossy().into_owned();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.commit_window = deltabus::common::units::HumanDuration::from_secs(3);
    cfg.tables.insert("events".into(), table_config(&events));
    let (url, stop, _) = start(cfg).await;
    (events, url, stop)
}

/// The commit groups of table `events` that closed for `closed`, as the metrics render them.
fn groups_closed(metrics: &str, closed: &str) -> u64 {
    let needle = format!("deltabus_push_groups_total{{table=\"events\",closed=\"{closed}\"}} ");
    metrics.lines().find_map(|l| l.strip_prefix(needle.as_str())?.parse().ok()).unwrap_or(0)
}

/// A group closes as soon as every producer that has been sending is in it: three producers
/// that wait for each answer, at a 3 s window, commit their first round after the window (no
/// one was known yet) and every later round as soon as all three have arrived. Counted by what
/// closed each group.
#[tokio::test(flavor = "multi_thread")]
async fn a_group_closes_once_every_recent_producer_is_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let (events, url, _stop) = three_second_window(dir.path()).await;
    let c = reqwest::Client::new();
    let records = format!("{url}/v1/tables/events/records");
    let round = |producers: Vec<&'static str>, seq: usize| {
        let (c, records) = (c.clone(), records.clone());
        async move {
            let posts = producers.into_iter().enumerate().map(|(i, p)| {
                let (c, records) = (c.clone(), records.clone());
                async move {
                    let body = format!("{{\"id\":{}}}\n", seq * 10 + i);
                    let seq = seq.to_string();
                    let headers = [("Producer-Id", p), ("Producer-Sequence", seq.as_str())];
                    let (status, answer, _) = post(&c, &records, &headers, body).await;
                    assert_eq!((status, answer["outcome"].as_str()), (200, Some("committed")), "{answer}");
                }
            });
            futures::future::join_all(posts).await;
        }
    };
    for seq in 0..4 {
        round(vec!["p1", "p2", "p3"], seq).await;
    }
    let metrics = c.get(format!("{url}/metrics")).send().await.unwrap().text().await.unwrap();
    let groups = |closed: &str| groups_closed(&metrics, closed);
    assert_eq!((groups("window"), groups("everyone")), (1, 3), "{metrics}");
    let out = crate::support::deltabus(&["cat", &events]);
    assert_eq!(crate::support::ids_in(&out.stdout), vec![0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]);
}

/// A producer that stopped holds no group to the window: at a 3 s window, once the producer
/// that sent only the first round has been quiet for a quarter of the window, every group of
/// the one that goes on closes as soon as it arrives.
#[tokio::test(flavor = "multi_thread")]
async fn a_producer_gone_quiet_holds_no_group() {
    let dir = tempfile::tempdir().unwrap();
    let (events, url, _stop) = three_second_window(dir.path()).await;
    let c = reqwest::Client::new();
    let records = format!("{url}/v1/tables/events/records");
    let send = |p: &'static str, seq: usize, id: usize| {
        let (c, records) = (c.clone(), records.clone());
        async move {
            let seq = seq.to_string();
            let headers = [("Producer-Id", p), ("Producer-Sequence", seq.as_str())];
            let (status, answer, _) = post(&c, &records, &headers, format!("{{\"id\":{id}}}\n")).await;
            assert_eq!((status, answer["outcome"].as_str()), (200, Some("committed")), "{answer}");
        }
    };
    futures::join!(send("stops", 0, 100), send("goes-on", 0, 0));
    for seq in 1..6 {
        send("goes-on", seq, seq).await;
    }
    let metrics = c.get(format!("{url}/metrics")).send().await.unwrap().text().await.unwrap();
    let groups = |closed: &str| groups_closed(&metrics, closed);
    assert_eq!((groups("window"), groups("everyone")), (1, 5), "{metrics}");
    let out = crate::support::deltabus(&["cat", &events]);
    assert_eq!(crate::support::ids_in(&out.stdout), vec![0, 1, 2, 3, 4, 5, 100]);
}

/// Memory stays within `max_buffered`: a slow client holding the budget makes the next
/// request 429 with Retry-After; the slow one is cut off with 408 after `read_timeout`, and
/// the budget is free again.
#[tokio::test(flavor = "multi_thread")]
async fn overload_is_429_and_slow_clients_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.max_body = deltabus::common::units::ByteSize(1000);
    cfg.max_buffered = deltabus::common::units::ByteSize(deltabus::config::server::HOLD_FACTOR * 1000);
    cfg.read_timeout = deltabus::common::units::HumanDuration::from_secs(1);
    cfg.tables.insert("events".into(), table_config(&events));
    let (url, _stop, metrics) = start(cfg).await;
    let addr = url.trim_start_matches("http://").to_string();
    let slow = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "POST /v1/tables/events/records HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{{\"id\":1}}")
            .unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let started = Instant::now();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        (answer, started.elapsed())
    });
    // Once the slow request holds its room, the budget is full.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !metrics.render().lines().any(|l| l.starts_with("deltabus_push_buffered_bytes") && !l.ends_with(" 0")) {
        assert!(Instant::now() < deadline, "the slow request never took its room");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let c = reqwest::Client::new();
    let (s, b, h) = post(&c, &format!("{url}/v1/tables/events/records"), &[], "{\"id\":2}\n").await;
    assert_eq!((s, h.get("retry-after").map(|v| v.to_str().unwrap())), (429, Some("1")), "{b}");
    let (answer, took) = tokio::task::spawn_blocking(move || slow.join().unwrap()).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(5), "cut off after read_timeout, not later: {took:?}");
    let (s, b, _) = post(&c, &format!("{url}/v1/tables/events/records"), &[], "{\"id\":2}\n").await;
    assert_eq!(s, 200, "the budget is free again: {b}");
    assert_eq!(crate::support::ids(&events), vec![2]);
}

const PRODUCER: &str = r#"
import json, random, sys, threading, time
import requests

base, producers, requests_each, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seed = int(sys.argv[5])
summary = {"committed": 0, "already_committed": 0, "dropped": 0, "retried": 0}
lock = threading.Lock()

def count(key):
    with lock:
        summary[key] += 1

def produce(p):
    rnd = random.Random(seed * 100 + p)
    table = "events" if p % 2 == 0 else "audit"
    session = requests.Session()
    for seq in range(requests_each):
        body = "".join(json.dumps({"id": p * 1_000_000 + seq * 1000 + i, "producer": f"p{p}-ü", "n": "x" * (i % 40)}) + "\n"
                       for i in range(lines))
        deadline = time.time() + 120
        while True:
            assert time.time() < deadline, f"producer {p} sequence {seq} never committed"
            # Now and then give up on the answer: the connection drops while the server commits.
            timeout = 0.01 if rnd.random() < 0.15 else 30
            try:
                r = session.post(f"{base}/v1/tables/{table}/records", data=body.encode(), timeout=timeout,
                                 headers={"Content-Type": "application/x-ndjson", "Producer-Id": f"producer-{p}",
                                          "Producer-Sequence": str(seq)})
            except requests.RequestException:
                count("dropped")
                session = requests.Session()
                time.sleep(0.05)
                continue
            if r.status_code in (429, 503):
                count("retried")
                time.sleep(float(r.headers.get("Retry-After", "1")) / 10)
                continue
            assert r.status_code == 200, f"{r.status_code} {r.text}"
            count(r.json()["outcome"])
            break

threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(summary))
"#;

fn spawn_server(config: &std::path::Path, log: &std::path::Path, faults_seed: u64, crash_at: Option<&str>) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deltabus"));
    cmd.args(["serve", "--config"]).arg(config).env("DELTABUS_FAULTS", format!("rate=0.03,seed={faults_seed}"));
    if let Some(point) = crash_at {
        cmd.env("DELTABUS_CRASH_AT", point);
    }
    cmd.stdout(Stdio::null()).stderr(log).spawn().unwrap()
}

/// Four producers (Python `requests`, keep-alive, answers dropped on purpose) push into two
/// tables while the server is killed with -9 at random moments, dies at a crash point after a
/// commit nobody was told about, and its store fails now and then: every row lands once, and
/// each producer's `txn` is its last sequence.
#[test]
fn producers_through_kill_dash_nine_and_store_faults_write_every_row_once() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (events, audit) = (dir.path().join("events"), dir.path().join("audit"));
    let port = free_port();
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ncommit_window = \"50ms\"\n\
             [server.tables.events]\ntable = {:?}\ncreate = true\n\
             [server.tables.audit]\ntable = {:?}\ncreate = true\n",
            events.display().to_string(),
            audit.display().to_string()
        ),
    )
    .unwrap();
    let log = dir.path().join("server.log");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    eprintln!("seed {seed}");
    let mut rng = Rng(seed | 1);
    let (producers, each, lines) = (4usize, 80usize, 25usize);
    let mut client = Command::new(&py)
        .arg("-c")
        .arg(PRODUCER)
        .args([format!("http://127.0.0.1:{port}"), producers.to_string(), each.to_string(), lines.to_string()])
        .arg(seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = spawn_server(&config, &log, rng.next() % 10_000, None);
    // The first kill comes once the first server has committed (progress, not time: the
    // producers still have most of their requests to send, so the next server's first commit,
    // where it dies by itself, is sure to come); later kills at random moments.
    let committed_once = || [&events, &audit].iter().any(|t| t.join("_delta_log/00000000000000000001.json").exists());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !committed_once() {
        assert!(Instant::now() < deadline, "the first server never committed");
        std::thread::sleep(Duration::from_millis(10));
    }
    for round in 0..5 {
        if round > 0 {
            // A pause about time: the kill's moment is what the test varies.
            std::thread::sleep(Duration::from_millis(700 + rng.next() % 1500));
            if client.try_wait().unwrap().is_some() {
                break;
            }
        }
        if round == 0 {
            // The next server dies by itself right after its first commit.
            server.kill().unwrap();
            server.wait().unwrap();
            server = spawn_server(&config, &log, rng.next() % 10_000, Some("push.committed"));
            let deadline = Instant::now() + Duration::from_secs(60);
            while server.try_wait().unwrap().is_none() {
                assert!(Instant::now() < deadline, "the crash point was never reached");
                std::thread::sleep(Duration::from_millis(50));
            }
        } else {
            server.kill().unwrap(); // SIGKILL: mid-commit, mid-request, whatever it was doing
            server.wait().unwrap();
        }
        server = spawn_server(&config, &log, rng.next() % 10_000, None);
    }
    let deadline = Instant::now() + Duration::from_secs(240);
    let status = loop {
        if let Some(s) = client.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "producers did not finish");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut out = String::new();
    client.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    client.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "producers: {err}\nserver log:\n{}", std::fs::read_to_string(&log).unwrap());
    let (status, _) = terminate(server);
    assert!(status.success(), "a stopped server exits 0");
    let summary: Value = serde_json::from_str(out.trim()).unwrap();
    eprintln!("producers: {summary}");
    assert!(summary["dropped"].as_u64().unwrap() > 0, "answers were dropped on purpose: {summary}");
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(logs.contains("crash point push.committed reached"), "{logs}");

    for (table, ps) in [(&events, [0usize, 2]), (&audit, [1, 3])] {
        let table = table.to_string_lossy().into_owned();
        let expected: Vec<i64> = ps
            .iter()
            .flat_map(|p| (0..each).flat_map(move |s| (0..lines).map(move |i| (p * 1_000_000 + s * 1000 + i) as i64)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(crate::support::ids(&table), expected, "{table}: every row once");
        if let Some(oracle) = kernel_oracle() {
            let out = Command::new(oracle).arg("rows").arg(&table).output().unwrap();
            assert_eq!(crate::support::ids_in(&out.stdout), expected, "{table} as the reference reader reads it");
        }
        crate::support::spark::spark_reads_as_deltabus(&table);
        let described = crate::support::run_json(&["describe", &table]);
        for p in ps {
            assert_eq!(described["txns"][format!("deltabus-push:producer-{p}")], each as i64 - 1, "{described}");
        }
    }
}

/// `deltabus run` with `[server.tables]` and no pipeline serves the tables, says where it
/// listens, and stops cleanly on SIGTERM.
#[test]
fn run_serves_the_configured_tables() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events");
    let config = dir.path().join("run.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[server.tables.events]\ntable = {:?}\ncreate = true\n",
            table.display().to_string()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().unwrap()), &mut line).unwrap();
    let listening: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(listening["tables"], serde_json::json!(["events"]), "{line}");
    let addr = listening["listening"].as_str().unwrap().to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (status, body, _) = rt.block_on(async {
        let c = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while c.get(format!("http://{addr}/ready")).send().await.map(|r| r.status().as_u16()).ok() != Some(200) {
            assert!(Instant::now() < deadline, "not ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let headers = [("Producer-Id", "run"), ("Producer-Sequence", "0")];
        post(&c, &format!("http://{addr}/v1/tables/events/records"), &headers, "{\"id\":7}\n").await
    });
    assert_eq!(status, 200, "{body}");
    let (status, _) = terminate(child);
    assert!(status.success(), "SIGTERM: {status}");
    assert_eq!(crate::support::ids(&table.to_string_lossy()), vec![7]);
}

/// Two servers on one table `events` (holding id -1, so neither creates it), 10 ms windows:
/// the table's path, both base URLs and their stop senders.
async fn two_servers(dir: &std::path::Path) -> (String, String, String, [tokio::sync::watch::Sender<bool>; 2]) {
    let events = dir.join("events").to_string_lossy().into_owned();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.commit_window = deltabus::common::units::HumanDuration::from_millis(10);
    cfg.tables.insert("events".into(), table_config(&events));
    let out = crate::support::write_jsonl(std::path::Path::new(&events), &[], "{\"id\":-1}\n");
    assert!(out.status.success());
    let (a, stop_a, _) = start(cfg.clone()).await;
    let (b, stop_b, _) = start(cfg).await;
    (events, a, b, [stop_a, stop_b])
}

/// Two servers on one table, each request sent to both at once (a producer retrying against
/// another server): the conflict rules and the producers' `txn` make each sequence land once,
/// answered `committed` by one server and `committed` or `already_committed` by the other.
#[tokio::test(flavor = "multi_thread")]
async fn two_servers_on_one_table_take_each_sequence_once() {
    let dir = tempfile::tempdir().unwrap();
    let (events, a, b, _stops) = two_servers(dir.path()).await;
    let mut tasks = Vec::new();
    for p in 0..4i64 {
        let (a, b) = (a.clone(), b.clone());
        tasks.push(tokio::spawn(async move {
            let c = reqwest::Client::new();
            let mut outcomes = Vec::new();
            for seq in 0..15i64 {
                let body = format!("{{\"id\":{}}}\n", p * 1000 + seq);
                let (id, s) = (format!("p{p}"), seq.to_string());
                let headers = [("Producer-Id", id.as_str()), ("Producer-Sequence", s.as_str())];
                let (to_a, to_b) = (format!("{a}/v1/tables/events/records"), format!("{b}/v1/tables/events/records"));
                let (ra, rb) =
                    tokio::join!(post(&c, &to_a, &headers, body.clone()), post(&c, &to_b, &headers, body.clone()));
                for (status, answer, _) in [ra, rb] {
                    assert_eq!(status, 200, "{answer}");
                    outcomes.push(answer["outcome"].as_str().unwrap().to_string());
                }
            }
            outcomes
        }));
    }
    let mut committed = 0;
    for t in tasks {
        committed += t.await.unwrap().iter().filter(|o| *o == "committed").count();
    }
    assert_eq!(committed, 60, "each sequence answered committed by exactly one server");
    let mut expected: Vec<i64> = (0..4).flat_map(|p| (0..15).map(move |s| p * 1000 + s)).collect();
    expected.push(-1);
    expected.sort_unstable();
    assert_eq!(crate::support::ids(&events), expected, "every sequence once");
}

async fn get_json(c: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = c.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json_value().await)
}

/// Every answer about a position comes from the table as committed (by this server or another),
/// a schema another writer evolved is taken at once, and a table whose log vanished is not
/// written on from memory.
#[tokio::test(flavor = "multi_thread")]
async fn positions_and_schemas_are_read_from_the_table_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (events, a, b, _stops) = two_servers(dir.path()).await;
    let c = reqwest::Client::new();
    let json = ("Content-Type", "application/x-ndjson");
    let send = |server: &str, seq: i64, body: String| {
        let (c, url) = (c.clone(), format!("{server}/v1/tables/events/records"));
        async move {
            let s = seq.to_string();
            post(&c, &url, &[json, ("Producer-Id", "sensor-ü"), ("Producer-Sequence", s.as_str())], body).await
        }
    };
    let position = |server: &str| {
        let (c, url) = (c.clone(), format!("{server}/v1/tables/events/producers/sensor-ü"));
        async move { get_json(&c, &url).await.1 }
    };

    let (s, r, _) = send(&a, 0, "{\"id\":0}\n".into()).await;
    assert_eq!((s, r["outcome"].as_str()), (200, Some("committed")), "{r}");
    // Right after its commit, on the server that made it and on one that never committed.
    for server in [&a, &b] {
        let p = position(server).await;
        assert_eq!((p["committed_sequence"].as_i64(), p["next_sequence"].as_i64()), (Some(0), Some(1)), "{p}");
    }
    for seq in 1..=5 {
        assert_eq!(send(&a, seq, format!("{{\"id\":{seq}}}\n")).await.0, 200);
    }
    // A resend of 3 is answered with the sequence the table holds now, on either server.
    for server in [&a, &b] {
        let (s, r, _) = send(server, 3, "{\"id\":3}\n".into()).await;
        assert_eq!(
            (s, r["outcome"].as_str(), r["committed_sequence"].as_i64()),
            (200, Some("already_committed"), Some(5)),
            "{r}"
        );
    }
    assert_eq!(position(&b).await["next_sequence"], 6);

    // Another writer adds a column: the next request that carries it lands at once.
    let out = crate::support::write_jsonl(
        std::path::Path::new(&events),
        &["--evolve-schema"],
        "{\"id\":100,\"extra\":\"x\"}\n",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (s, r, _) = send(&b, 6, "{\"id\":6,\"extra\":\"ü\"}\n".into()).await;
    assert_eq!((s, r["outcome"].as_str()), (200, Some("committed")), "{r}");

    // Typed input follows the value rules: a fraction never lands in a long column.
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new(
        "id",
        arrow::datatypes::DataType::Float64,
        true,
    )]));
    let batch = arrow::array::RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(arrow::array::Float64Array::from(vec![7.0, -2.9]))],
    )
    .unwrap();
    let mut ipc = Vec::new();
    let mut w = arrow::ipc::writer::StreamWriter::try_new(&mut ipc, &schema).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    drop(w);
    let arrow_type = ("Content-Type", "application/vnd.apache.arrow.stream");
    let url = format!("{a}/v1/tables/events/records");
    let (s, r, _) = post(&c, &url, &[arrow_type, ("Producer-Id", "arrow"), ("Producer-Sequence", "0")], ipc).await;
    assert_eq!(s, 400, "{r}");
    assert!(r["error"].as_str().unwrap().contains("-2.9 has a fraction; the column is long"), "{r}");
    assert_eq!(crate::support::ids(&events), vec![-1, 0, 1, 2, 3, 4, 5, 6, 100]);

    // The table's directory vanishes: nothing is committed into a log without its start.
    std::fs::remove_dir_all(&events).unwrap();
    let (s, r, _) = send(&a, 7, "{\"id\":7}\n".into()).await;
    assert_ne!(s, 200, "{r}");
    let (s, r, _) = send(&a, 8, "{\"id\":8}\n".into()).await;
    assert_ne!(s, 200, "{r}");
    let log = std::path::Path::new(&events).join("_delta_log");
    let versions: Vec<String> = std::fs::read_dir(&log)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(versions.iter().all(|v| !v.ends_with(".json")), "a log without its first versions: {versions:?}");
}

/// Header rules: one value each, plain digits, a clear word for a number too large; with tokens
/// on, a stranger learns nothing about which tables exist; dead letters name their producer and
/// arrival time.
#[tokio::test(flavor = "multi_thread")]
async fn producer_headers_tokens_and_dead_letters_say_what_they_mean() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let letters = dir.path().join("letters").to_string_lossy().into_owned();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.commit_window = deltabus::common::units::HumanDuration::from_millis(10);
    let mut t = table_config(&events);
    t.dead_letters = Some(letters.clone());
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "secret-token\n").unwrap();
    t.tokens = vec![format!("file:{}", tokens.display())];
    cfg.tables.insert("events".into(), t);
    let (url, _stop, _) = start(cfg).await;
    let c = reqwest::Client::new();
    let rec = format!("{url}/v1/tables/events/records");
    let auth = ("Authorization", "Bearer secret-token");
    let json = ("Content-Type", "application/x-ndjson");

    // A stranger: 401 for a table that exists and one that does not alike.
    let (s, _, _) = post(&c, &format!("{url}/v1/tables/nope/records"), &[json], "{\"id\":1}\n").await;
    assert_eq!(s, 401);
    let (s, _) = get_json(&c, &format!("{url}/v1/tables/nope/producers/p")).await;
    assert_eq!(s, 401);
    let (s, _, _) = post(&c, &format!("{url}/v1/tables/nope/records"), &[json, auth], "{\"id\":1}\n").await;
    assert_eq!(s, 404, "a token holder is told");

    for (seq, why) in
        [("+0", "not a whole number"), ("0x1", "not a whole number"), ("99999999999999999999999", "too large")]
    {
        let (s, r, _) =
            post(&c, &rec, &[json, auth, ("Producer-Id", "p"), ("Producer-Sequence", seq)], "{\"id\":1}\n").await;
        assert!(s == 400 && r["error"].as_str().unwrap().contains(why), "{seq}: {r}");
    }
    let twice = c
        .post(&rec)
        .header(json.0, json.1)
        .header(auth.0, auth.1)
        .header("Producer-Id", "p")
        .header("Producer-Sequence", "0")
        .header("Producer-Sequence", "1")
        .body("{\"id\":1}\n")
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status().as_u16(), 400);
    assert!(twice.text().await.unwrap().contains("more than once"));

    let dl = format!("{rec}?bad_lines=dead_letter");
    let (s, r, _) =
        post(&c, &dl, &[json, auth, ("Producer-Id", "Zürich-7"), ("Producer-Sequence", "0")], "{\"id\":1}\n{oops\n")
            .await;
    assert_eq!(s, 200, "{r}");
    let out = deltabus(&["cat", &letters]);
    let rows: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let key = rows[0]["key"].as_str().map(str::to_string).unwrap_or_default();
    assert!(key == "Zürich-7" || key.contains("Zürich-7") || hex_or_base64_is(&key, "Zürich-7"), "{rows:?}");
    assert!(!rows[0]["timestamp"].is_null(), "{rows:?}");
}

/// Whether `text` is `want` spelled as hex or base64 (how binary keys print).
fn hex_or_base64_is(text: &str, want: &str) -> bool {
    let hex: String = want.bytes().map(|b| format!("{b:02x}")).collect();
    text.eq_ignore_ascii_case(&hex)
}

/// A served table with column mapping (by name, or by id) evolves to new columns whose names
/// Delta allows only under column mapping, at the top level and inside a struct, from NDJSON
/// and from Arrow streams; a table without it refuses them with a 400 naming the fix.
#[tokio::test(flavor = "multi_thread")]
async fn column_mapped_tables_take_names_that_need_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    for (name, mode) in [("byname", Some("name")), ("byid", Some("id")), ("plain", None)] {
        let mut t = table_config(&dir.path().join(name).to_string_lossy());
        t.evolve_schema = true;
        if let Some(m) = mode {
            t.properties.insert("delta.columnMapping.mode".into(), m.into());
        }
        cfg.tables.insert(name.into(), t);
    }
    let (http, _stop, _) = start(cfg).await;
    let client = reqwest::Client::new();
    let json = [("Content-Type", "application/x-ndjson")];
    for name in ["byname", "byid", "plain"] {
        let url = format!("{http}/v1/tables/{name}/records");
        let (s, b, _) = post(&client, &url, &json, "{\"id\":1,\"s\":{\"a\":1}}\n").await;
        assert_eq!(s, 200, "{name}: {b}");
        let body = "{\"id\":2,\"s\":{\"a\":2,\"x y\":\"ü\"},\"top new\":\"é\"}\n";
        let (s, b, _) = post(&client, &url, &json, body).await;
        let table = dir.path().join(name).to_string_lossy().into_owned();
        if name == "plain" {
            assert!(s == 400 || s == 409, "{s} {b}");
            assert!(b.to_string().contains("column mapping"), "{b}");
            assert_eq!(crate::support::ids(&table), vec![1]);
            continue;
        }
        assert_eq!(s, 200, "{name}: {b}");
        let out = deltabus(&["cat", &table]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("\"x y\":\"ü\"") && text.contains("\"top new\":\"é\""), "{name}: {text}");
        if let Some(oracle) = kernel_oracle() {
            let out = std::process::Command::new(oracle).arg("rows").arg(&table).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(String::from_utf8_lossy(&out.stdout).contains("top new"), "{name}");
        }
        crate::support::spark::spark_reads_as_deltabus(&table);
    }
}

/// A push table configured with `cluster_by` is created clustered by the first request's
/// commit, with statistics for its clustering column whatever the table indexes; settings that
/// also partition it are a configuration error naming the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clustered_push_table_is_created_by_the_rows_commit() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut t = table_config(&events);
    t.cluster_by = vec!["名前".into()];
    t.properties.insert("delta.dataSkippingNumIndexedCols".into(), "0".into());
    let mut bad = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    let mut partitioned = t.clone();
    partitioned.partition_by = vec!["id".into()];
    bad.tables.insert("events".into(), partitioned);
    let Err(e) = bad.resolve(&|_| None) else { panic!("a partitioned clustered table was accepted") };
    let e = e.to_string();
    assert!(e.contains("tables.events.cluster_by") && e.contains("partitioned"), "{e}");
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.tables.insert("events".into(), t);
    let (url, _stop, _) = start(cfg).await;
    let client = reqwest::Client::new();
    let body = "{\"id\":1,\"名前\":\"ü\"}\n{\"id\":2,\"名前\":\"a\"}\n";
    let ndjson = [("Content-Type", "application/x-ndjson")];
    let (s, b, _) = post(&client, &format!("{url}/v1/tables/events/records"), &ndjson, body).await;
    assert_eq!(s, 200, "{b}");
    let d = crate::support::run_json(&["describe", &events]);
    assert_eq!(d["version"], 0, "created by the rows' commit: {d}");
    assert_eq!(d["clusteringColumns"], serde_json::json!(["名前"]), "{d}");
    let log = std::fs::read_to_string(format!("{events}/_delta_log/00000000000000000000.json")).unwrap();
    let add = log.lines().find(|l| l.starts_with("{\"add\"")).unwrap();
    assert!(add.contains("minValues") && add.contains("名前"), "{add}");
}
