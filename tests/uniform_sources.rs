//! UniForm tables written by every streaming writer, judged by pyiceberg and DuckDB's iceberg
//! extension against `deltabus cat` at every converted snapshot: a partitioned table ingested
//! from Kafka over many flushes (Unicode partition values), a keyed upsert pipeline (replaced
//! rows are rewritten: icebergCompatV2 forbids deletion vectors), a coordinated-commit table,
//! push ingest over HTTP, and a follower and a mirror into UniForm tables (the mirror carries
//! a new source column over without losing the target's column mapping).

use std::time::Duration;

use deltabus::config::commit::CommitMode;
use deltabus::config::server::{ServerConfig, ServerTable};
use rdkafka::mocking::MockCluster;

use crate::support::kafka::{committed, pipeline, produce, run_until, runtime};
use crate::support::uniform::{assert_readers_agree, python_or_skip};
use crate::support::{deltabus, run_json};

const REGIONS: [&str; 4] = ["é", "日本", "Zürich", "north"];

fn uniform_properties() -> std::collections::HashMap<String, String> {
    [("delta.universalFormat.enabledFormats".to_string(), "iceberg".to_string())].into_iter().collect()
}

/// `n` records from `from` on two partitions, spread over the regions (every tenth has none).
fn records(from: usize, n: usize) -> Vec<(i32, Option<String>, Option<String>)> {
    (from..from + n)
        .map(|i| {
            let region = if i % 10 == 9 { "null".to_string() } else { format!("\"{}\"", REGIONS[i % 4]) };
            (i32::try_from(i % 2).unwrap(), None, Some(format!(r#"{{"id":{i},"région":{region},"名前":"n{i}"}}"#)))
        })
        .collect()
}

fn no_deletion_vectors(table: &str) {
    let files = run_json(&["files", table]);
    for f in files["files"].as_array().unwrap() {
        assert!(f["deletionVector"].is_null(), "a UniForm table holds no deletion vectors: {f}");
    }
}

#[test]
fn kafka_ingest_and_keyed_upserts_into_uniform_tables() {
    let Some(py) = python_or_skip() else { return };
    // Held while the native Kafka clients run (the Python readers take it too).
    let guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let keyed = dir.path().join("k").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("u", 2, 1).unwrap();
        cluster.create_topic("keyed", 2, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "u", &table);
        p.partition_by = vec!["région".into()];
        p.properties = uniform_properties();
        p.flush.max_rows = 60;
        let mut k = pipeline(&brokers, "keyed", &keyed);
        k.app_id = Some("keyed".into());
        k.properties = uniform_properties();
        k.upsert = Some(deltabus::config::UpsertConfig {
            key_columns: vec!["id".into()],
            format: Default::default(),
            op_field: None,
            index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
        });
        k.flush.max_rows = 100;
        let first: Vec<_> = (0..100).map(|i| (i % 2, None, Some(format!(r#"{{"id":{i},"v":"a{i}"}}"#)))).collect();
        produce(&brokers, "keyed", &first).await;
        let producer = tokio::spawn({
            let (brokers, table, keyed) = (brokers.clone(), table.clone(), keyed.clone());
            async move {
                // Bursts, each once the one before is committed: one flush (at least) each.
                for burst in 0..8 {
                    produce(&brokers, "u", &records(burst * 50, 50)).await;
                    crate::support::tables::wait_for_rows_in(&table, (burst + 1) * 50).await;
                }
                // Updates of a third of the keys, once the first rows are in.
                crate::support::tables::wait_for_rows_in(&keyed, 100).await;
                let updates: Vec<_> =
                    (0..100).step_by(3).map(|i| (i % 2, None, Some(format!(r#"{{"id":{i},"v":"b{i}"}}"#)))).collect();
                produce(&brokers, "keyed", &updates).await;
            }
        });
        let updates = (0..100).step_by(3).count() as u64;
        let reports =
            run_until(vec![p, k], None, move |m| committed(m, "p0") >= 400 && committed(m, "p1") >= 100 + updates)
                .await;
        producer.await.unwrap();
        assert_eq!(reports["p0"].rows_committed, 400, "{reports:?}");
    });
    drop(guard);
    let d = run_json(&["describe", &table]);
    // Eight flushes at least: versions 0 to 7, the first creating the table with its rows.
    assert!(d["version"].as_u64().unwrap() >= 7, "many flushes: {d}");
    assert_eq!(d["iceberg"]["behind"], 0, "{d}");
    assert_readers_agree(&py, std::path::Path::new(&table));
    // Keyed: every key once, updates visible, no deletion vectors, both formats agree.
    let out = deltabus(&["cat", &keyed]);
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 100);
    for r in &rows {
        let id = r["id"].as_i64().unwrap();
        assert_eq!(r["v"], if id % 3 == 0 { format!("b{id}") } else { format!("a{id}") }, "{r}");
    }
    no_deletion_vectors(&keyed);
    assert_eq!(run_json(&["describe", &keyed])["iceberg"]["behind"], 0);
    assert_readers_agree(&py, std::path::Path::new(&keyed));
}

#[test]
fn a_coordinated_commit_table_is_read_alike() {
    let Some(py) = python_or_skip() else { return };
    // Held while the native Kafka clients run (the Python readers take it too).
    let guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("c").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("orders", 4, 1).unwrap();
        cluster.create_topic("deltabus-commits.ingest.orders", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "orders", &table);
        p.partition_by = vec!["région".into()];
        p.properties = uniform_properties();
        p.commit.mode = CommitMode::Coordinated;
        p.commit.interval = "300ms".parse().unwrap();
        p.flush.max_rows = 80;
        let mut all = records(0, 400);
        for (i, r) in all.iter_mut().enumerate() {
            r.0 = i32::try_from(i % 4).unwrap();
        }
        produce(&brokers, "orders", &all).await;
        let reports = run_until(vec![p], None, |m| committed(m, "p0") >= 400).await;
        assert_eq!(reports["p0"].rows_committed, 400, "{reports:?}");
    });
    drop(guard);
    let history = String::from_utf8_lossy(&deltabus(&["history", &table]).stdout).into_owned();
    assert!(history.contains("committer"), "coordinated commits: {history}");
    assert_eq!(run_json(&["describe", &table])["iceberg"]["behind"], 0);
    assert_readers_agree(&py, std::path::Path::new(&table));
}

#[tokio::test(flavor = "multi_thread")]
async fn push_ingest_into_a_uniform_table_is_read_alike() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("p").to_string_lossy().into_owned();
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.commit_window = deltabus::common::units::HumanDuration::from_millis(20);
    let t = ServerTable {
        table: table.clone(),
        create: true,
        partition_by: vec!["région".into()],
        properties: [("delta.universalFormat.enabledFormats".to_string(), "iceberg".to_string())].into(),
        ..ServerTable::default()
    };
    cfg.tables.insert("events".into(), t);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let metrics = std::sync::Arc::new(deltabus::metrics::Metrics::default());
    let server = deltabus::serve::start(
        cfg.resolve(&|_| None).unwrap(),
        deltabus::storage::StorageOptions::default(),
        metrics,
        stopped,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    let url = format!("http://{}/v1/tables/events/records", server.local_addr);
    let done = tokio::spawn(server.stopped());
    let client = reqwest::Client::new();
    for (seq, batch) in (0..6).enumerate() {
        let body: String = records(batch * 25, 25).into_iter().map(|r| r.2.unwrap() + "\n").collect();
        let r = client
            .post(&url)
            .header("Content-Type", "application/x-ndjson")
            .header("Producer-Id", "p1")
            .header("Producer-Sequence", seq.to_string())
            .body(body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}: {}", r.status(), r.text().await.unwrap());
    }
    let _ = stop.send(true);
    done.await.unwrap();
    let path = std::path::Path::new(&table).to_path_buf();
    tokio::task::spawn_blocking(move || {
        let t = path.to_str().unwrap();
        let out = deltabus(&["cat", t]);
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 150);
        assert_eq!(run_json(&["describe", t])["iceberg"]["behind"], 0);
        assert_readers_agree(&py, &path);
    })
    .await
    .unwrap();
}

#[test]
fn a_follower_and_a_mirror_into_uniform_tables_are_read_alike() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (source, follow, mirror) = (dir.path().join("s"), dir.path().join("f"), dir.path().join("m"));
    let s = source.to_str().unwrap();
    for i in 1..4 {
        crate::support::write_jsonl(&source, &[], &format!("{{\"id\":{i},\"名前\":\"é{i}\"}}\n"));
    }
    let uniform = ["--property", "delta.universalFormat.enabledFormats=iceberg"];
    crate::support::write_jsonl(&follow, &uniform, "{\"id\":0,\"名前\":\"own\"}\n");
    crate::support::write_jsonl(&mirror, &uniform, "{\"id\":0,\"名前\":\"own\"}\n");
    let once = |target: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["follow", s, "--into", target.to_str().unwrap(), "--once"];
        args.extend(extra);
        let out = deltabus(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let mirror_args = ["--follower-id", "m", "--mirror", "--key-columns", "id"];
    once(&follow, &["--follower-id", "f"]);
    once(&mirror, &mirror_args);
    // A new source column, an update and a delete.
    crate::support::write_jsonl(&source, &["--merge-schema"], "{\"id\":4,\"名前\":\"é4\",\"größe\":1.5}\n");
    assert!(deltabus(&["delete", s, "--where", "id = 2"]).status.success());
    once(&follow, &["--follower-id", "f"]);
    once(&mirror, &mirror_args);
    for target in [&follow, &mirror] {
        let d = run_json(&["describe", target.to_str().unwrap()]);
        assert_eq!(d["iceberg"]["behind"], 0, "{d}");
        for f in d["schema"]["fields"].as_array().unwrap() {
            assert!(f["metadata"]["delta.columnMapping.physicalName"].is_string(), "column mapping kept: {f}");
        }
        assert_readers_agree(&py, target);
    }
    let out = deltabus(&["cat", mirror.to_str().unwrap()]);
    let mut ids: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 3, 4], "the target's own row stays readable, the deleted one goes");
    no_deletion_vectors(mirror.to_str().unwrap());
}
