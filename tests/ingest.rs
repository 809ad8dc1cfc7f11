//! `deltabus run`'s pipeline in-process against librdkafka's mock cluster: records into a
//! table created from inferred schema, record columns, dead letters into a Delta table and a
//! Kafka topic, positions in `txn`, resume without duplicates, the metrics endpoint, schema
//! evolution, and a partition moved by another worker being dropped and re-read.

use crate::support::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use deltabus::app::service::{run, ServiceOptions};
use deltabus::config::pipeline::RecordColumns;
use deltabus::metrics::Metrics;
use deltabus::storage::{StorageOptions, Table};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Headers;
use rdkafka::mocking::MockCluster;
use rdkafka::Message;
use serde_json::Value;

fn txn_versions(table: &str) -> BTreeMap<String, i64> {
    let d = crate::support::run_json(&["describe", table]);
    let mut out = BTreeMap::new();
    for (k, v) in d["txns"].as_object().cloned().unwrap_or_default() {
        out.insert(k, v.as_i64().or_else(|| v["version"].as_i64()).unwrap());
    }
    out
}

#[test]
fn ingests_dead_letters_columns_positions_and_resumes() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events").to_string_lossy().into_owned();
    let dlq = dir.path().join("dlq").to_string_lossy().into_owned();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let metrics_addr = format!("127.0.0.1:{port}");
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("events", 3, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        // 1,500 records over 3 partitions; every 100th is bad in a different way.
        let mut records = Vec::new();
        let mut bad = 0;
        for i in 0..1500i64 {
            let payload = match i % 100 {
                13 => Some("{not json".to_string()),
                27 => Some(format!(r#"{{"id":{i},"name":"n","amount":"lots"}}"#)),
                41 => Some(r#"{"name":"no id"}"#.to_string()),
                51 => None,
                77 => Some(format!(r#"{{"id":{i},"name":"{}"}}"#, "x".repeat(2000))),
                _ => Some(format!(r#"{{"id":{i},"name":"n{i}","amount":{}.5}}"#, i % 7)),
            };
            bad += usize::from(matches!(i % 100, 13 | 27 | 41 | 51 | 77));
            records.push(((i % 3) as i32, Some(format!("k{i}")), payload));
        }
        produce(&brokers, "events", &records).await;
        let mut p = pipeline(&brokers, "events", &table);
        p.schema = Some(
            r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},
            {"name":"name","type":"string","nullable":true,"metadata":{}},
            {"name":"amount","type":"double","nullable":true,"metadata":{}}]}"#
                .into(),
        );
        p.columns = RecordColumns {
            key: Some("_key".into()),
            headers: Some("_headers".into()),
            partition: Some("_partition".into()),
            offset: Some("_offset".into()),
            timestamp: Some("_ts".into()),
            topic: Some("_topic".into()),
        };
        p.dead_letter.table = Some(dlq.clone());
        let scraped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let scrape = tokio::spawn({
            let addr = metrics_addr.clone();
            let scraped = scraped.clone();
            async move {
                // Scrape while the pipeline runs (once lag is known: statistics arrive every second).
                for _ in 0..200 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if let Some(text) = http_get(&addr, "/metrics").await {
                        if text.contains("deltabus_lag_records{pipeline=\"p0\",partition=\"0\"}") {
                            let ready = http_get(&addr, "/ready").await.unwrap_or_default();
                            let health = http_get(&addr, "/health").await.unwrap_or_default();
                            scraped.store(true, Relaxed);
                            return Some((text, ready, health));
                        }
                    }
                }
                scraped.store(true, Relaxed);
                None
            }
        });
        let seen = scraped.clone();
        let reports = run_until(vec![p.clone()], Some(metrics_addr.clone()), move |m| {
            committed(m, "p0") >= 1500 && seen.load(Relaxed)
        })
        .await;
        let r = &reports["p0"];
        let letters = rows(&dlq);
        assert_eq!(
            (r.records, r.rows_committed, r.dead_letters),
            (1500, 1500 - bad as u64, bad as u64),
            "{:?}",
            &letters[..3.min(letters.len())]
        );
        let (text, ready, health) = scrape.await.unwrap().expect("metrics scraped during the run");
        assert!(text.contains("deltabus_records_in_total{pipeline=\"p0\"}"), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("deltabus_commit_seconds_bucket{")
                && l.contains("pipeline=\"p0\"")
                && l.contains("le=\"+Inf\"")),
            "{text}"
        );
        assert!(ready.starts_with("HTTP/1.1 200") && health.starts_with("HTTP/1.1 200"), "{ready} {health}");

        // Exactly the good records, once each, with their record columns.
        let live = rows(&table);
        let mut ids: Vec<i64> = live.iter().map(|r| r["id"].as_i64().unwrap()).collect();
        ids.sort_unstable();
        let expected: Vec<i64> = (0..1500).filter(|i| !matches!(i % 100, 13 | 27 | 41 | 51 | 77)).collect();
        assert_eq!(ids, expected);
        let one = live.iter().find(|r| r["id"] == 301).unwrap();
        assert_eq!(one["_key"], "k301");
        assert_eq!(one["_partition"], 301 % 3);
        assert_eq!(one["_offset"], 301 / 3);
        assert_eq!(one["_topic"], "events");
        assert_eq!(one["_headers"], serde_json::json!([{"key": "source", "value": "test"}]), "{one}");
        assert!(one["_ts"].as_str().unwrap().starts_with("20"));
        // Positions: the last offset of each partition, dead letters included.
        let txns = txn_versions(&table);
        assert_eq!(txns["ingest-events-0"], 499);
        assert_eq!(txns["ingest-events-2"], 499);
        let history = crate::support::deltabus(&["history", &table]);
        let history = String::from_utf8_lossy(&history.stdout);
        assert!(history.contains("STREAMING UPDATE") && history.contains("deltabus/"), "{history}");
        // Dead letters with reason and raw bytes.
        assert_eq!(letters.len(), bad);
        let reasons: Vec<&str> = letters.iter().map(|l| l["reason"].as_str().unwrap()).collect();
        assert!(reasons.iter().any(|r| r.contains("null payload")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("over the limit")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("amount")), "{reasons:?}");
        let broken = letters.iter().find(|l| l["offset"] == 13 / 3 && l["partition"] == 13 % 3).unwrap();
        assert_eq!(broken["payload"], hex("{not json"), "raw bytes kept: {broken}");

        // A restart ingests only what is new: the table's positions win over the group's.
        let more: Vec<_> =
            (1500..1800i64).map(|i| ((i % 3) as i32, None, Some(format!(r#"{{"id":{i},"name":"m"}}"#)))).collect();
        produce(&brokers, "events", &more).await;
        let mut p2 = p.clone();
        p2.kafka.group_id = Some("a-new-group-without-offsets".into());
        let reports = run_until(vec![p2], None, |m| committed(m, "p0") >= 300).await;
        assert_eq!(reports["p0"].rows_committed, 300);
    });
    let mut ids: Vec<i64> = rows(&table).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    let expected: Vec<i64> = (0..1800).filter(|i| *i >= 1500 || !matches!(i % 100, 13 | 27 | 41 | 51 | 77)).collect();
    assert_eq!(ids, expected, "every good record exactly once after the restart");
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = std::process::Command::new(oracle).arg("rows").arg(&table).output().unwrap();
        assert!(out.status.success(), "kernel-oracle: {}", String::from_utf8_lossy(&out.stderr));
        let mut seen: Vec<i64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_i64().unwrap())
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, expected, "the reference reader sees the same rows");
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

async fn http_get(addr: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).await.ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    Some(out)
}

#[test]
fn dead_letters_to_a_topic_and_schema_evolution() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("in", 1, 1).unwrap();
        cluster.create_topic("in-dlq", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let first = vec![
            (0, Some("a".to_string()), Some(r#"{"id":1}"#.to_string())),
            (0, Some("b".to_string()), Some("garbage".to_string())),
        ];
        produce(&brokers, "in", &first).await;
        let mut p = pipeline(&brokers, "in", &table);
        p.evolve_schema = true;
        p.dead_letter.topic = Some("in-dlq".into());
        // First run: the table is created with the schema inferred from the first batch.
        let reports = run_until(vec![p.clone()], None, |m| committed(m, "p0") >= 2).await;
        assert_eq!((reports["p0"].rows_committed, reports["p0"].dead_letters), (1, 1));
        // Second run: records with new fields evolve the schema instead of dead-lettering.
        let second = vec![
            (0, None, Some(r#"{"id":3,"color":"red"}"#.to_string())),
            (0, None, Some(r#"{"id":4,"size":2.5}"#.to_string())),
        ];
        produce(&brokers, "in", &second).await;
        let reports = run_until(vec![p], None, |m| committed(m, "p0") >= 2).await;
        assert_eq!((reports["p0"].rows_committed, reports["p0"].dead_letters), (2, 0));
        // The dead letter on the topic: raw payload, original key, reason and coordinates.
        let consumer: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", "dlq-reader")
            .set("auto.offset.reset", "earliest")
            .create()
            .unwrap();
        consumer.subscribe(&["in-dlq"]).unwrap();
        let msg = tokio::time::timeout(Duration::from_secs(30), consumer.recv()).await.unwrap().unwrap();
        assert_eq!(msg.payload(), Some(&b"garbage"[..]));
        assert_eq!(msg.key(), Some(&b"b"[..]));
        let headers: HashMap<String, String> = msg
            .headers()
            .unwrap()
            .iter()
            .map(|h| (h.key.to_string(), String::from_utf8_lossy(h.value.unwrap_or_default()).into_owned()))
            .collect();
        assert_eq!(headers["deltabus.offset"], "1");
        assert_eq!(headers["deltabus.topic"], "in");
        assert!(!headers["deltabus.reason"].is_empty());
    });
    let live = rows(&table);
    assert_eq!(live.len(), 3);
    let by_id: HashMap<i64, &Value> = live.iter().map(|r| (r["id"].as_i64().unwrap(), r)).collect();
    assert_eq!(by_id[&3]["color"], "red");
    assert_eq!(by_id[&4]["size"], 2.5);
    assert!(by_id[&1]["color"].is_null());
    // The table was created, and its schema grown, by the commits of the rows that needed it.
    let changes = crate::support::tables::schema_changes(std::path::Path::new(&table));
    assert!(changes.len() >= 2, "{changes:?}");
    assert!(changes.iter().all(|(_, adds)| *adds > 0), "a schema change committed without its rows: {changes:?}");
}

#[test]
fn a_moved_partition_is_dropped_not_duplicated_and_an_aborted_flush_commits_nothing() {
    use deltabus::common::flush::FlushReason;
    use deltabus::ingest::commit::Flusher;
    use deltabus::ingest::dead_letter::DeadLetterSink;
    use deltabus::write::batch::PartitionBatch;
    use std::sync::atomic::AtomicBool;
    let dir = tempfile::tempdir().unwrap();
    let table_path = dir.path().join("t");
    // Another worker already committed partition 0 up to offset 120.
    let other = crate::support::write_jsonl(
        &table_path,
        &["--app-id", "ingest-events-0", "--txn-version", "120"],
        "{\"id\":-1}\n",
    );
    assert!(other.status.success(), "{}", String::from_utf8_lossy(&other.stderr));
    runtime().block_on(async {
        let table = Table::open_for_write(&table_path.to_string_lossy(), StorageOptions::default()).unwrap();
        let batch = |ids: Vec<i64>| {
            arrow::array::RecordBatch::try_from_iter([(
                "id",
                Arc::new(arrow::array::Int64Array::from(ids)) as arrow::array::ArrayRef,
            )])
            .unwrap()
        };
        let part = |first, last, ids: Vec<i64>| PartitionBatch {
            rows: ids.len() as u64,
            batches: vec![batch(ids)],
            first_offset: first,
            last_offset: last,
            ..PartitionBatch::default()
        };
        let parts = || BTreeMap::from([(0, part(100, 130, vec![100, 101])), (1, part(5, 6, vec![5, 6]))]);
        let mut flusher = Flusher {
            table,
            app_id: "ingest".into(),
            topic: "events".into(),
            dead: Arc::new(DeadLetterSink::Discard),
            target_file_size: None,
            key_columns: None,
            key_index_memory: deltabus::config::DEFAULT_INDEX_MEMORY.get(),
            snapshot: None,
            coordinator: None,
            new_table: Default::default(),
        };
        // A flush whose partition was revoked before its commit commits nothing and leaves
        // no files behind.
        let files_before = std::fs::read_dir(&table_path).unwrap().count();
        let aborted = flusher.flush(parts(), FlushReason::Rows, &AtomicBool::new(true)).await.unwrap();
        assert!(aborted.aborted && aborted.version.is_none());
        assert_eq!(std::fs::read_dir(&table_path).unwrap().count(), files_before);
        let result = flusher.flush(parts(), FlushReason::Rows, &AtomicBool::new(false)).await.unwrap();
        assert!(!result.aborted);
        assert_eq!(result.moved, BTreeMap::from([(0, 120)]));
        assert_eq!((result.rows, result.rows_dropped), (2, 2));
        assert_eq!(result.committed.keys().copied().collect::<Vec<_>>(), vec![1]);
    });
    let mut ids: Vec<i64> = rows(&table_path.to_string_lossy()).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![-1, 5, 6]);
    let txns = txn_versions(&table_path.to_string_lossy());
    assert_eq!((txns["ingest-events-0"], txns["ingest-events-1"]), (120, 6));
}

#[test]
fn start_positions_apply_only_where_the_table_has_none() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("s", 1, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let records: Vec<_> = (0..10).map(|i| (0, None, Some(format!(r#"{{"id":{i}}}"#)))).collect();
        produce(&brokers, "s", &records).await;
        let mut p = pipeline(&brokers, "s", &table);
        p.kafka.start = "offsets:0=6".into();
        let reports = run_until(vec![p.clone()], None, |m| committed(m, "p0") >= 4).await;
        assert_eq!(reports["p0"].rows_committed, 4);
        // The table now records offset 9: `earliest` no longer applies.
        p.kafka.start = "earliest".into();
        let more: Vec<_> = (10..12).map(|i| (0, None, Some(format!(r#"{{"id":{i}}}"#)))).collect();
        produce(&brokers, "s", &more).await;
        let reports = run_until(vec![p], None, |m| committed(m, "p0") >= 2).await;
        assert_eq!(reports["p0"].rows_committed, 2);
    });
    let mut ids: Vec<i64> = rows(&table).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![6, 7, 8, 9, 10, 11]);
}

#[test]
fn background_compaction_runs_beside_ingest_without_changing_rows() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("c", 2, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        let mut p = pipeline(&brokers, "c", &table);
        p.flush.max_rows = 40;
        p.compaction.enabled = true;
        p.compaction.min_files = 4;
        p.compaction.interval = "200ms".parse().unwrap();
        let producer = tokio::spawn({
            let brokers = brokers.clone();
            async move {
                for burst in 0..20 {
                    let records: Vec<_> = (burst * 50..burst * 50 + 50)
                        .map(|i| (i % 2, None, Some(format!(r#"{{"id":{i}}}"#))))
                        .collect();
                    produce(&brokers, "c", &records).await;
                    // A pause about time: bursts are spread over the pipeline's flushes.
                    tokio::time::sleep(Duration::from_millis(150)).await;
                }
            }
        });
        let reports =
            run_until(vec![p], None, |m| committed(m, "p0") >= 1000 && m.pipeline("p0").compaction_commits.get() >= 1)
                .await;
        producer.await.unwrap();
        assert_eq!(reports["p0"].rows_committed, 1000);
    });
    let mut ids: Vec<i64> = rows(&table).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..1000).collect::<Vec<_>>(), "compaction neither loses nor duplicates rows");
    let history = String::from_utf8_lossy(&crate::support::deltabus(&["history", &table]).stdout).into_owned();
    assert!(history.contains("\"OPTIMIZE\""), "{history}");
    let files = crate::support::run_json(&["files", &table]);
    let commits = history.lines().filter(|l| l.contains("STREAMING UPDATE")).count();
    assert!(files["files"].as_array().unwrap().len() < commits, "fewer live files than appends");
    // The change feed skips the dataChange=false rewrites: each row is inserted exactly once.
    let out = crate::support::deltabus(&["changes", &table, "--from", "0"]);
    let inserts = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("\"insert\"")).count();
    assert_eq!(inserts, 1000);
}

/// `stop_at_end`: the pipeline ingests what the partitions held when assigned, commits and
/// stops by itself — `run` returns without a shutdown signal; records produced later wait for
/// the next run.
#[tokio::test(flavor = "multi_thread")]
async fn stop_at_end_ingests_the_backlog_and_returns() {
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("backlog", 2, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let records: Vec<_> =
        (0..500)
            .map(|i| (i % 2, None, Some(format!("{{\"id\":{i}}}"))))
            .collect::<Vec<(i32, Option<String>, Option<String>)>>();
    produce(&brokers, "backlog", &records).await;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t").to_string_lossy().into_owned();
    assert_eq!(run_to_end(pipeline(&brokers, "backlog", &table)).await, 500);
    let snapshot = Table::open(&table, StorageOptions::default()).unwrap().snapshot(None).await.unwrap();
    let rows: i64 = snapshot
        .files()
        .iter()
        .filter_map(|f| f.stats.as_deref())
        .filter_map(|s| serde_json::from_str::<Value>(s).ok())
        .filter_map(|v| v["numRecords"].as_i64())
        .sum();
    assert_eq!(rows, 500);
}

/// Runs `p` (stopping at the end of its topic) and returns its rows committed.
async fn run_to_end(mut p: deltabus::config::pipeline::PipelineConfig) -> u64 {
    p.kafka.stop_at_end = true;
    let opts = ServiceOptions {
        pipelines: vec![p.validate("p0").unwrap()],
        storage: StorageOptions::default(),
        metrics_addr: None,
        shutdown_timeout: Duration::from_secs(30),
    };
    let (_never, stop_rx) = tokio::sync::watch::channel(false);
    let reports = tokio::time::timeout(Duration::from_secs(120), run(opts, Arc::new(Metrics::default()), stop_rx))
        .await
        .expect("stopped by itself at the end")
        .unwrap();
    reports["p0"].rows_committed
}

/// Batches of many megabytes, which the pipeline holds packed while they fill (past 8 MiB of
/// decoded rows) and unpacks chunk by chunk as it writes them, commit every row once with its
/// values: appends whose schema grows in the middle of the batch, and keyed upserts.
#[test]
fn batches_held_packed_commit_every_row_once_with_its_values() {
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let (appended, keyed) = (dir.path().join("a"), dir.path().join("k"));
    let (appended, keyed) = (appended.to_string_lossy().into_owned(), keyed.to_string_lossy().into_owned());
    let note = |i: i64| format!("ünï-{i}-{}", "日本語のテキスト".repeat(8 + (i % 5) as usize));
    runtime().block_on(async {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("big", 4, 1).unwrap();
        cluster.create_topic("kv", 4, 1).unwrap();
        let brokers = cluster.bootstrap_servers();
        // 48,000 records of ~250 B (11 MB decoded); from the 24,000th on they carry a new field.
        let records: Vec<_> = (0..48_000i64)
            .map(|i| {
                let extra = if i >= 24_000 { format!(r#","extra":{}"#, i * 2) } else { String::new() };
                ((i % 4) as i32, None, Some(format!(r#"{{"id":{i},"note":"{}"{extra}}}"#, note(i))))
            })
            .collect();
        produce(&brokers, "big", &records).await;
        let mut p = pipeline(&brokers, "big", &appended);
        p.evolve_schema = true;
        p.flush.max_rows = 1_000_000;
        p.flush.max_latency = "10m".parse().unwrap();
        assert_eq!(run_to_end(p).await, 48_000);
        // 40,000 keyed records over 16,000 keys: each key's last record wins.
        let records: Vec<_> = (0..40_000i64)
            .map(|i| {
                (
                    (i % 16_000 % 4) as i32,
                    None,
                    Some(format!(r#"{{"id":{},"v":{i},"note":"{}"}}"#, i % 16_000, note(i))),
                )
            })
            .collect();
        produce(&brokers, "kv", &records).await;
        let mut p = pipeline(&brokers, "kv", &keyed);
        p.flush.max_rows = 1_000_000;
        p.flush.max_latency = "10m".parse().unwrap();
        p.upsert = Some(deltabus::config::UpsertConfig {
            key_columns: vec!["id".into()],
            format: deltabus::config::UpsertFormat::Plain,
            op_field: None,
            index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
        });
        assert_eq!(run_to_end(p).await, 40_000);
    });
    let mut got: Vec<(i64, String, Option<i64>)> = rows(&appended)
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["note"].as_str().unwrap().to_string(), r["extra"].as_i64()))
        .collect();
    got.sort();
    let want: Vec<_> = (0..48_000i64).map(|i| (i, note(i), (i >= 24_000).then_some(i * 2))).collect();
    assert!(got == want, "{} rows; first difference: {:?}", got.len(), got.iter().zip(&want).find(|(g, w)| g != w));
    let mut got: Vec<(i64, i64, String)> = rows(&keyed)
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["v"].as_i64().unwrap(), r["note"].as_str().unwrap().to_string()))
        .collect();
    got.sort();
    let want: Vec<_> = (0..16_000i64).map(|k| (k, 32_000 + k - if k >= 8_000 { 16_000 } else { 0 })).collect();
    let want: Vec<_> = want.into_iter().map(|(k, v)| (k, v, note(v))).collect();
    assert!(got == want, "{} rows; first difference: {:?}", got.len(), got.iter().zip(&want).find(|(g, w)| g != w));
}
