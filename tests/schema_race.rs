//! A lost schema-evolution race does not turn good records into dead letters: while a pipeline
//! adds column `x` for its records, another writer adds column `y` at the very version the
//! pipeline's commit goes to. The pipeline re-reads the table, evolves again (now from the
//! schema with `y`), and decodes every record.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use deltabus::common::record::RawRecord;
use deltabus::config::pipeline::PipelineConfig;
use deltabus::ingest::schema::TableSchema;
use deltabus::storage::{StorageOptions, Table};
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// Before the first `ADD COLUMNS` commit reaches the store, a competing commit that adds
/// column `y` lands at the same version.
#[derive(Debug)]
struct Racing {
    inner: Arc<dyn ObjectStore>,
    raced: AtomicBool,
}

impl fmt::Display for Racing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Racing({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for Racing {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let bytes: Vec<u8> = payload.iter().flat_map(|b| b.to_vec()).collect();
        let text = String::from_utf8_lossy(&bytes).to_string();
        if matches!(opts.mode, PutMode::Create)
            && text.contains("ADD COLUMNS")
            && !self.raced.swap(true, Ordering::SeqCst)
        {
            // The competitor: the same schema change with `y` for `x`, another writer's txnId.
            let start = text.find("\"txnId\":\"").unwrap() + 9;
            let theirs = format!("{}{}{}", &text[..start], "00000000-0000-4000-8000-000000000000", &text[start + 36..])
                .replace("\\\"x\\\"", "\\\"y\\\"")
                .replace("[\\\"x\\\"]", "[\\\"y\\\"]");
            self.inner.put_opts(location, PutPayload::from(theirs.into_bytes()), opts.clone()).await?;
        }
        self.inner.put_opts(location, PutPayload::from(bytes), opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }
    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
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
            .map_store(|inner| Arc::new(Racing { inner, raced: AtomicBool::new(false) }) as Arc<dyn ObjectStore>);
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
