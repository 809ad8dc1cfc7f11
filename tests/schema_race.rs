//! A lost schema-evolution race does not turn good records into dead letters: while a pipeline
//! adds column `x` for its records, another writer adds column `y` at the very version the
//! pipeline's commit goes to. The pipeline re-reads the table, evolves again (now from the
//! schema with `y`), and decodes every record.

use deltabus::common::record::RawRecord;
use deltabus::config::pipeline::PipelineConfig;
use deltabus::ingest::schema::TableSchema;
use deltabus::storage::{StorageOptions, Table};
use object_store::PutPayload;

use crate::support::racing::{GoesFirst, Hook};

/// Before the first `ADD COLUMNS` commit reaches the store, a competing commit that adds
/// column `y` lands at the same version: the same schema change with `y` for `x`, another
/// writer's txnId.
fn competitor() -> Hook {
    Box::new(|inner, location, bytes, opts| {
        Box::pin(async move {
            let text = String::from_utf8_lossy(&bytes).to_string();
            let start = text.find("\"txnId\":\"").unwrap() + 9;
            let theirs = format!("{}{}{}", &text[..start], "00000000-0000-4000-8000-000000000000", &text[start + 36..])
                .replace("\\\"x\\\"", "\\\"y\\\"")
                .replace("[\\\"x\\\"]", "[\\\"y\\\"]");
            inner.put_opts(&location, PutPayload::from(theirs.into_bytes()), opts).await.map(|_| ())
        })
    })
}

#[test]
fn a_lost_schema_race_evolves_again_instead_of_dead_lettering() {
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
            .map_store(|inner| GoesFirst::wrap(inner, "ADD COLUMNS", competitor()));
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
        assert_eq!(decoded.batch.map(|b| b.num_rows()), Some(3));
    });
    let d = crate::support::run_json(&["describe", location]);
    let names: Vec<&str> =
        d["schema"]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["id", "y", "x"], "both schema changes landed, the competitor's first");
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
