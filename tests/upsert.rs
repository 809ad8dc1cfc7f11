//! Keyed ingestion (`[pipelines.x.upsert]`): Debezium envelopes, tombstones and plain payloads
//! with an op field become deletion vectors and new rows, the last change per key wins, the
//! reference reader agrees, the change feed shows the replaced rows, and a killed keyed
//! worker still writes every change exactly once.

use std::collections::BTreeMap;

use rdkafka::mocking::MockCluster;
use serde_json::{json, Value};

use crate::support::{committed, pipeline, produce, rows, run_until, runtime};

fn debezium(op: &str, id: i64, name: &str) -> String {
    let image = json!({"id": id, "name": name});
    match op {
        "d" => json!({"before": image, "after": null, "op": "d", "ts_ms": 1}),
        _ => json!({"before": null, "after": image, "op": op, "ts_ms": 1}),
    }
    .to_string()
}

fn live(table: &str) -> BTreeMap<i64, String> {
    let mut out = BTreeMap::new();
    for r in rows(table) {
        let id = r["id"].as_i64().unwrap();
        assert!(out.insert(id, r["name"].as_str().unwrap().to_string()).is_none(), "key {id} appears twice");
    }
    out
}

#[test]
fn debezium_changes_and_tombstones_replace_rows_by_key() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("customers").to_string_lossy().into_owned();
    let dlq = dir.path().join("dlq").to_string_lossy().into_owned();
    let schema = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}}]}"#;
    let first_version = runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("cdc", 2, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "cdc", &table);
        p.schema = Some(schema.into());
        p.dead_letter.table = Some(dlq.clone());
        p.upsert = Some(deltabus::config::UpsertConfig {
            key_columns: vec!["id".into()],
            format: deltabus::config::UpsertFormat::Debezium,
            op_field: None,
            index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
        });
        let rec = |id: i64, payload: Option<String>| ((id % 2) as i32, Some(format!("{{\"id\":{id}}}")), payload);
        let creates: Vec<_> = (0..100).map(|id| rec(id, Some(debezium("c", id, "v1")))).collect();
        produce(&brokers, "cdc", &creates).await;
        run_until(vec![p.clone()], None, |m| committed(m, "p0") >= 100).await;
        let first_version = crate::support::run_json(&["describe", &table])["version"].as_u64().unwrap();
        let mut changes: Vec<_> = (0..50).map(|id| rec(id, Some(debezium("u", id, "v2")))).collect();
        changes.extend((50..60).map(|id| rec(id, Some(debezium("d", id, "v1")))));
        changes.extend((60..65).map(|id| rec(id, None))); // tombstones
        changes.push(rec(70, Some(debezium("u", 70, "v2"))));
        changes.push(rec(70, Some(debezium("u", 70, "v3")))); // the later change wins
        changes.push(rec(80, Some(debezium("d", 80, "v1"))));
        changes.push(rec(80, Some(debezium("c", 80, "v4")))); // deleted, then created again
        changes.push(rec(200, Some(debezium("c", 200, "new"))));
        changes.push(rec(1, Some(r#"{"op":"x","after":{"id":1}}"#.into()))); // not a Debezium op
        changes.push((0, None, None)); // a tombstone without a key
        let n = changes.len() as u64;
        produce(&brokers, "cdc", &changes).await;
        run_until(vec![p], None, move |m| committed(m, "p0") >= n).await;
        first_version
    });
    let mut expected: BTreeMap<i64, String> = (0..100).map(|id| (id, "v1".to_string())).collect();
    for id in 0..50 {
        expected.insert(id, "v2".into());
    }
    for id in 50..65 {
        expected.remove(&id);
    }
    expected.insert(70, "v3".into());
    expected.insert(80, "v4".into());
    expected.insert(200, "new".into());
    assert_eq!(live(&table), expected);
    // Deletion vectors, not rewrites; the dead letters say why.
    let described = crate::support::run_json(&["describe", &table]);
    assert!(described["protocol"].to_string().contains("deletionVectors"), "{described}");
    let files = crate::support::run_json(&["files", &table]);
    assert!(files["files"].as_array().unwrap().iter().any(|f| f["dv"] == true), "{files}");
    let letters: Vec<String> = rows(&dlq).iter().map(|r| r["reason"].as_str().unwrap().to_string()).collect();
    assert_eq!(letters.len(), 2, "{letters:?}");
    assert!(letters.iter().any(|r| r.contains("\"x\"")) && letters.iter().any(|r| r.contains("tombstone")));
    // The reference reader applies the deletion vectors the same way.
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = std::process::Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        let seen: BTreeMap<i64, String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| (r["id"].as_i64().unwrap(), r["name"].as_str().unwrap().to_string()))
            .collect();
        assert_eq!(seen, expected, "kernel-oracle sees the same rows");
    }
    // The change feed after the creates: the old rows of every changed key are deleted and
    // the winning rows inserted.
    let out = crate::support::deltabus(&["changes", &table, "--from", &(first_version + 1).to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let feed: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let count = |t: &str| feed.iter().filter(|r| r["_change_type"] == t).count();
    assert_eq!(count("delete"), 50 + 15 + 2, "updated, deleted and re-created keys lose their old rows");
    assert_eq!(count("insert"), 50 + 1 + 1 + 1, "updated, re-created and new keys get their rows");
    let history = String::from_utf8_lossy(&crate::support::deltabus(&["history", &table]).stdout).into_owned();
    assert!(history.contains("\"MERGE\"") && history.contains("numTargetRowsUpdated"), "{history}");
}

#[test]
fn plain_payloads_with_an_op_field() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("kv", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "kv", &table);
        p.upsert = Some(deltabus::config::UpsertConfig {
            key_columns: vec!["id".into()],
            format: deltabus::config::UpsertFormat::Plain,
            op_field: Some("op".into()),
            index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
        });
        let row =
            |id: i64, name: &str, op: &str| (0, None, Some(format!(r#"{{"id":{id},"name":"{name}","op":"{op}"}}"#)));
        produce(&brokers, "kv", &(0..20).map(|i| row(i, "a", "u")).collect::<Vec<_>>()).await;
        run_until(vec![p.clone()], None, |m| committed(m, "p0") >= 20).await;
        let mut more: Vec<_> = (0..5).map(|i| row(i, "b", "u")).collect();
        more.extend((5..8).map(|i| row(i, "", "d")));
        more.push(row(30, "c", "u"));
        produce(&brokers, "kv", &more).await;
        run_until(vec![p], None, |m| committed(m, "p0") >= 9).await;
    });
    let got = live(&table);
    let mut expected: BTreeMap<i64, String> = (0..20).map(|i| (i, if i < 5 { "b" } else { "a" }.to_string())).collect();
    for i in 5..8 {
        expected.remove(&i);
    }
    expected.insert(30, "c".into());
    assert_eq!(got, expected);
}

const KEYS: i64 = 2_000;
const VERSIONS: i64 = 4;

fn final_state() -> BTreeMap<i64, i64> {
    crate::support::keyed_final_state(KEYS, VERSIONS)
}

fn live_versions(table: &str) -> Option<BTreeMap<i64, i64>> {
    crate::support::keyed_rows(&crate::support::deltabus(&["cat", table]))
}

#[test]
fn keyed_workers_killed_with_sigkill_through_store_faults_apply_every_change_once() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("keyed").to_string_lossy().into_owned();
    let log = dir.path().join("workers.log");
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("keyed", 4, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let spawn = || {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["ingest", "keyed", &table, "--brokers", &brokers, "--app-id", "kv", "--create"])
            .args(["--upsert-keys", "id", "--flush-interval", "300ms", "--max-rows", "700"])
            .args(["--kafka-property", "session.timeout.ms=6000", "--kafka-property", "heartbeat.interval.ms=500"])
            // Through the faulty store: 503s, lost answers (MERGE commits included), cut listings.
            .env("DELTABUS_FAULTS", "rate=0.05,seed=17")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let producer = crate::support::start_keyed_producer(brokers.clone(), "keyed", KEYS, VERSIONS, 0..0, 12);
    crate::support::kill_at_random_moments(3, spawn);
    assert!(live_versions(&table).is_some_and(|m| !m.is_empty()), "the killed workers committed something");
    let last = spawn();
    producer.join().unwrap();
    let expected = final_state();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut got = None;
    while Instant::now() < deadline {
        got = live_versions(&table);
        if got.as_ref() == Some(&expected) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Command::new("kill").arg("-TERM").arg(last.id().to_string()).status().unwrap();
    let mut last = last;
    assert!(last.wait().unwrap().success(), "graceful exit");
    let got = got.unwrap_or_default();
    let wrong: Vec<_> = expected.iter().filter(|(k, v)| got.get(k) != Some(v)).take(5).collect();
    assert!(
        got == expected,
        "{} keys live, {} expected; first differences {wrong:?}; log:\n{}",
        got.len(),
        expected.len(),
        std::fs::read_to_string(&log).unwrap_or_default().lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
    drop(cluster);
}

#[test]
fn keyed_changes_on_a_change_data_table_carry_update_images() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let first = runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("kv", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "kv", &table);
        p.properties.insert("delta.enableChangeDataFeed".into(), "true".into());
        p.upsert = Some(deltabus::config::UpsertConfig {
            key_columns: vec!["id".into()],
            format: deltabus::config::UpsertFormat::Plain,
            op_field: None,
            index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
        });
        let row = |id: i64, name: &str| (0, Some(id.to_string()), Some(format!(r#"{{"id":{id},"name":"{name}"}}"#)));
        produce(&brokers, "kv", &(0..10).map(|i| row(i, "a")).collect::<Vec<_>>()).await;
        run_until(vec![p.clone()], None, |m| committed(m, "p0") >= 10).await;
        let first = crate::support::run_json(&["describe", &table])["version"].as_u64().unwrap() + 1;
        let mut more: Vec<_> = (0..3).map(|i| row(i, "b")).collect();
        more.push((0, Some("5".into()), None)); // tombstone
        more.push(row(20, "c"));
        produce(&brokers, "kv", &more).await;
        run_until(vec![p], None, |m| committed(m, "p0") >= 5).await;
        first
    });
    let feed = |out: &std::process::Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut v: Vec<(String, i64, String)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| {
                let t = r["_change_type"].as_str().unwrap().to_string();
                (t, r["id"].as_i64().unwrap(), r["name"].as_str().unwrap().to_string())
            })
            .collect();
        v.sort();
        v
    };
    let mut expected: Vec<(String, i64, String)> = (0..3)
        .flat_map(|i| [("update_preimage".into(), i, "a".into()), ("update_postimage".into(), i, "b".into())])
        .collect();
    expected.push(("delete".into(), 5, "a".into()));
    expected.push(("insert".into(), 20, "c".into()));
    expected.sort();
    let ours = feed(&crate::support::deltabus(&["changes", &table, "--from", &first.to_string()]));
    assert_eq!(ours, expected);
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = std::process::Command::new(oracle).args(["changes", &table, &first.to_string()]).output().unwrap();
        assert_eq!(feed(&out), expected, "the reference reader's change feed");
    }
}
