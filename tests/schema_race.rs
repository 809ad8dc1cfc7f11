//! The one schema-change rule under a race: decoding records with a new column `x` commits
//! nothing (it proposes the column); the flush that carries the rows adds it in the rows' own
//! commit. When another writer adds column `y` at the very version the flush's commit goes to,
//! the flush is planned again from the table as it now is: `x` is added beside `y`, every row
//! lands once, and no good record becomes a dead letter.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use deltabus::common::flush::FlushReason;
use deltabus::common::record::RawRecord;
use deltabus::config::pipeline::PipelineConfig;
use deltabus::ingest::commit::Flusher;
use deltabus::ingest::dead_letter::DeadLetterSink;
use deltabus::ingest::schema::TableSchema;
use deltabus::storage::{StorageOptions, Table};
use deltabus::write::batch::PartitionBatch;
use object_store::PutPayload;
use serde_json::Value;

use crate::support::racing::{GoesFirst, Hook};

/// Before the flush's commit reaches the store, another writer's schema change lands at the
/// same version: only a `metaData` action, with column `y` where the flush adds `x`.
fn competitor() -> Hook {
    Box::new(|inner, location, bytes, opts| {
        Box::pin(async move {
            let text = String::from_utf8_lossy(&bytes).to_string();
            let mut lines = Vec::new();
            for line in text.lines() {
                let mut action: Value = serde_json::from_str(line).unwrap();
                if let Some(info) = action.get_mut("commitInfo") {
                    info["txnId"] = "00000000-0000-4000-8000-000000000000".into();
                    info["operation"] = "ADD COLUMNS".into();
                    lines.push(action.to_string());
                } else if let Some(m) = action.get_mut("metaData") {
                    let schema = m["schemaString"].as_str().unwrap().replace("\"x\"", "\"y\"");
                    m["schemaString"] = schema.into();
                    lines.push(action.to_string());
                }
            }
            let theirs = lines.join("\n") + "\n";
            inner.put_opts(&location, PutPayload::from(theirs.into_bytes()), opts).await.map(|_| ())
        })
    })
}

#[test]
fn a_lost_schema_race_is_planned_again_in_the_rows_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let out = crate::support::write_jsonl(&path, &[], "{\"id\":0}\n");
    assert!(out.status.success());
    let location = path.to_str().unwrap();
    let mut config = PipelineConfig::new(location, "127.0.0.1:9", "t");
    config.evolve_schema = true;
    let deltabus::config::Pipeline::Kafka(cfg) = config.validate("p").unwrap().kind() else {
        panic!("a Kafka pipeline")
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let table = Table::open(location, StorageOptions::default())
            .unwrap()
            .map_store(|inner| GoesFirst::wrap(inner, "STREAMING UPDATE", competitor()));
        let mut schema = TableSchema::open(&table, &cfg, &Default::default()).await.unwrap();
        let payloads: Vec<String> = (1..4).map(|i| format!("{{\"id\":{i},\"x\":\"v{i}\"}}")).collect();
        let raw: Vec<RawRecord<'_>> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| RawRecord {
                topic: "t",
                partition: 0,
                offset: i as i64,
                timestamp_ms: None,
                key: None,
                payload: Some(p.as_bytes()),
            })
            .collect();
        let decoded = schema.decode(&table, &cfg, &raw).await.unwrap();
        assert!(decoded.dead_letters.is_empty(), "good records became dead letters: {:?}", decoded.dead_letters);
        assert_eq!(table.snapshot(None).await.unwrap().version, 0, "decoding committed something");
        let proposal = schema.proposal().expect("the new column is proposed");
        let batch = decoded.batch.unwrap();
        let part = PartitionBatch {
            rows: batch.num_rows() as u64,
            batches: vec![batch],
            first_offset: 0,
            last_offset: 2,
            proposals: vec![proposal],
            ..PartitionBatch::default()
        };
        let mut flusher = Flusher {
            table: table.clone(),
            app_id: cfg.app_id.clone(),
            topic: "t".into(),
            dead: Arc::new(DeadLetterSink::Discard),
            target_file_size: None,
            key_columns: None,
            key_index_memory: deltabus::config::DEFAULT_INDEX_MEMORY.get(),
            snapshot: schema.snapshot.clone(),
            coordinator: None,
            new_table: Default::default(),
        };
        let result = flusher.flush(BTreeMap::from([(0, part)]), FlushReason::Rows, &AtomicBool::new(false)).await;
        let result = result.unwrap();
        assert_eq!((result.rows, result.conflicts), (3, 1), "{result:?}");
    });
    let d = crate::support::run_json(&["describe", location]);
    let names: Vec<&str> =
        d["schema"]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["id", "y", "x"], "both schema changes landed, the competitor's first");
    let rows = crate::support::tables::rows_by_id(location);
    let xs: Vec<&Value> = rows.iter().map(|r| &r["x"]).collect();
    assert_eq!(xs, [&Value::Null, &"v1".into(), &"v2".into(), &"v3".into()], "{rows:?}");
    assert_eq!(crate::support::tables::schema_changes(&path), vec![(0, 1), (1, 0), (2, 1)]);
}

/// A pipeline without `evolve_schema` whose table another writer evolved: records carrying the
/// new column are decoded against the table as it is, not dead-lettered against the schema the
/// pipeline cached at start.
#[test]
fn a_column_another_writer_added_is_taken_without_evolution() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    assert!(crate::support::write_jsonl(&path, &[], "{\"id\":0}\n").status.success());
    let location = path.to_str().unwrap();
    let config = PipelineConfig::new(location, "127.0.0.1:9", "t");
    let deltabus::config::Pipeline::Kafka(cfg) = config.validate("p").unwrap().kind() else {
        panic!("a Kafka pipeline")
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let table = Table::open(location, StorageOptions::default()).unwrap();
        let mut schema = TableSchema::open(&table, &cfg, &Default::default()).await.unwrap();
        let out = crate::support::write_jsonl(&path, &["--evolve-schema"], "{\"id\":1,\"名前\":\"x\"}\n");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let payload = "{\"id\":2,\"名前\":\"ü\"}";
        let raw = [RawRecord {
            topic: "t",
            partition: 0,
            offset: 0,
            timestamp_ms: None,
            key: None,
            payload: Some(payload.as_bytes()),
        }];
        let decoded = schema.decode(&table, &cfg, &raw).await.unwrap();
        assert!(decoded.dead_letters.is_empty(), "judged against a stale schema: {:?}", decoded.dead_letters);
        assert_eq!(decoded.batch.map(|b| b.num_rows()), Some(1));
        // A column nobody added is still refused (evolution is off).
        let unknown = "{\"id\":3,\"zzz\":1}";
        let raw = [RawRecord { payload: Some(unknown.as_bytes()), ..raw[0] }];
        assert_eq!(schema.decode(&table, &cfg, &raw).await.unwrap().dead_letters.len(), 1);
    });
}
