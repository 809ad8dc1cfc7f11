//! OpenTelemetry export against a real OTLP receiver (`tools/otlp-receiver`, decoding with
//! the opentelemetry-proto package): an Apache Kafka pipeline configured by the standard
//! `OTEL_*` variables exports over HTTP/protobuf its flush and commit spans (the commit a child
//! of its flush, carrying the source positions and the Delta version that holds them) and its
//! metrics; `deltabus write` configured by `[telemetry]` exports its commit span over gRPC; a
//! protocol that does not exist is refused in one line.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::support::python::python;

/// The receiver process and what it has printed so far.
struct Receiver {
    child: Child,
    seen: Arc<Mutex<Vec<Value>>>,
    http: u64,
    grpc: u64,
}

impl Receiver {
    fn start(py: &str) -> Receiver {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/otlp-receiver/receive.py");
        let mut child = Command::new(py).arg(script).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ports: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(serde_json::from_str(&line).unwrap());
            }
        });
        Receiver { child, seen, http: ports["http"].as_u64().unwrap(), grpc: ports["grpc"].as_u64().unwrap() }
    }

    /// Waits (up to 60 s) until what was received satisfies `ok`; what was received.
    fn wait_for(&self, what: &str, ok: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        crate::support::wait_until(what, Duration::from_secs(60), || {
            let seen = self.seen.lock().unwrap().clone();
            if ok(&seen) {
                Ok(seen)
            } else {
                Err(format!("received {seen:#?}"))
            }
        })
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spans<'a>(seen: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    seen.iter().filter(move |v| v["signal"] == "span" && v["name"] == name)
}

#[test]
fn a_pipeline_exports_its_spans_linked_from_source_position_to_version_and_its_metrics_over_http() {
    let Some(py) = python() else { return };
    let Some((brokers, topic)) = crate::support::kafka::apache_topic("otel", 1) else { return };
    let receiver = Receiver::start(&py);
    let records: Vec<(i32, Option<String>, Option<String>)> =
        (0..30).map(|i| (0, None, Some(format!(r#"{{"id":{i},"s":"ü{i}"}}"#)))).collect();
    {
        let _kafka = crate::support::native_clients_lock();
        crate::support::runtime().block_on(crate::support::kafka::produce(&brokers, &topic, &records));
    }
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["ingest", &topic, &table, "--brokers", &brokers, "--app-id", "traced", "--create", "--until-end"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{}", receiver.http))
        .env("OTEL_SERVICE_NAME", "ingest-traced")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let position = format!("traced-{topic}-0=29");
    let seen = receiver.wait_for("the commit holding offset 29 and the records_in metric", |seen| {
        spans(seen, "commit").any(|s| s["attributes"]["source.positions"].as_str() == Some(position.as_str()))
            && seen.iter().any(|m| m["name"] == "deltabus_records_in" && m["value"] == 30.0)
    });
    let commit = spans(&seen, "commit")
        .find(|s| s["attributes"]["source.positions"].as_str() == Some(position.as_str()))
        .unwrap();
    assert_eq!(commit["transport"], "http");
    assert_eq!(commit["service"], "ingest-traced");
    assert!(commit["attributes"]["version"].as_i64().is_some(), "the version that holds them: {commit}");
    assert!(
        commit["attributes"]["table"].as_str().is_some_and(|t| t.trim_end_matches('/').ends_with("/t")),
        "{commit}"
    );
    let flush = spans(&seen, "flush").find(|f| f["span_id"] == commit["parent_span_id"]);
    let flush = flush.unwrap_or_else(|| panic!("the commit's parent is its flush: {seen:#?}"));
    assert_eq!(flush["trace_id"], commit["trace_id"]);
    assert!(flush["attributes"]["reason"].is_string(), "{flush}");
    // Every committed version is in the table and in a span.
    let described = crate::support::run_json(&["describe", &table]);
    let latest = described["version"].as_i64().unwrap();
    assert!(spans(&seen, "commit").any(|s| s["attributes"]["version"].as_i64() == Some(latest)), "{seen:#?}");
    assert!(seen.iter().any(|m| m["name"] == "deltabus_rows_committed" && m["value"] == 30.0), "{seen:#?}");
}

#[test]
fn write_exports_its_commit_over_grpc_from_the_config_file_and_a_bad_protocol_is_refused() {
    let Some(py) = python() else { return };
    let receiver = Receiver::start(&py);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("deltabus.toml");
    let text = format!("[telemetry]\nendpoint = \"http://127.0.0.1:{}\"\nprotocol = \"grpc\"\n", receiver.grpc);
    std::fs::write(&config, text).unwrap();
    let table = dir.path().join("ü table");
    let config_arg = config.to_string_lossy().into_owned();
    let args = ["--app-id", "loader", "--txn-version", "3", "--config", &config_arg];
    let out = crate::support::write_jsonl(&table, &args, "{\"id\":1}\n{\"id\":2}\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen = receiver.wait_for("write's commit over gRPC", |seen| {
        spans(seen, "commit").any(|s| s["attributes"]["source.positions"] == "loader=3")
    });
    let commit = spans(&seen, "commit").find(|s| s["attributes"]["source.positions"] == "loader=3").unwrap();
    assert_eq!((commit["transport"].as_str(), commit["service"].as_str()), (Some("grpc"), Some("deltabus")));
    assert_eq!(commit["attributes"]["version"], 0);
    assert_eq!(commit["attributes"]["operation"], "CREATE TABLE");

    let bad = crate::support::write_jsonl_with_env(
        &dir.path().join("other"),
        &[],
        "{\"id\":1}\n",
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
    );
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.trim().lines().count() == 1 && err.contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "{err}");
    assert!(!dir.path().join("other").exists(), "nothing written");

    // A collector that does not answer costs the export, never the write.
    let closed = crate::support::processes::free_addr();
    let unheard = crate::support::write_jsonl_with_env(
        &dir.path().join("unheard"),
        &[],
        "{\"id\":\"ü\"}\n",
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://{closed}"))],
    );
    assert!(unheard.status.success(), "{}", String::from_utf8_lossy(&unheard.stderr));
    assert_eq!(crate::support::rows(&dir.path().join("unheard").to_string_lossy()).len(), 1);
}
