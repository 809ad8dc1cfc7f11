//! Reading tables through real object-store protocols: local files, memory, S3 (moto) and
//! Azure blob (Azurite). Each remote test uploads corpus tables, reads them with the
//! `deltabus` binary through the backend's URL, and requires output identical to a local read.
//!
//! The emulators are started by `scripts/test.sh`, which exports their endpoints. Run by hand
//! without them, these tests say they are skipped; with `DELTABUS_REQUIRE_EMULATORS=1` (as in
//! CI) a missing emulator is a failure.

use crate::s3_emulator::{new_bucket, s3_cli_options};
use crate::support::*;
use std::path::Path;
use std::sync::Arc;

use deltabus::storage::{StorageOptions, Table};
use object_store::path::{Path as ObjectPath, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::support::{conformance_dir, deltabus};

/// Corpus tables that exercise DV files, escaped partition directories, and each checkpoint kind.
const TABLES: &[&str] = &[
    "table-with-dv-small",
    "data-reader-partition-values",
    "multi-part-checkpoint",
    "v2-checkpoint-parquet",
    "dv-partitioned-with-checkpoint",
];

fn object_path(prefix: &str, rel: &str) -> ObjectPath {
    rel.split('/').fold(ObjectPath::from(prefix), |p, seg| match PathPart::parse(seg) {
        Ok(part) => p.join(part),
        Err(_) => p.join(PathPart::from(seg)),
    })
}

async fn upload(store: &Arc<dyn ObjectStore>, local: &Path, prefix: &str) {
    let mut stack = vec![local.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(local).unwrap().to_str().unwrap().to_string();
                store.put(&object_path(prefix, &rel), PutPayload::from(std::fs::read(&p).unwrap())).await.unwrap();
            }
        }
    }
}

fn sorted_lines(bytes: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(bytes).lines().map(str::to_string).collect();
    v.sort();
    v
}

/// Reads every table locally and through `url_of(table)`, requiring the same rows and files.
fn assert_same_as_local(url_of: &dyn Fn(&str) -> String, options: &[String]) {
    for name in TABLES {
        let local = conformance_dir().join("tables").join(name);
        let local = local.to_str().unwrap();
        let remote = url_of(name);
        for cmd in ["cat", "files"] {
            let expected = deltabus(&[cmd, local]);
            assert!(expected.status.success(), "local {cmd} {name}: {}", String::from_utf8_lossy(&expected.stderr));
            let mut args = vec![cmd.to_string(), remote.clone()];
            args.extend(options.iter().cloned());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let got = deltabus(&args);
            assert!(got.status.success(), "{cmd} {remote}: {}", String::from_utf8_lossy(&got.stderr));
            assert_eq!(sorted_lines(&got.stdout), sorted_lines(&expected.stdout), "{cmd} {remote} differs from local");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_reads_match_local() {
    let Some(endpoint) = emulator("DELTABUS_TEST_S3_ENDPOINT") else {
        return;
    };
    let bucket = new_bucket(&endpoint, "deltabus");
    let store: Arc<dyn ObjectStore> = Arc::new(
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&endpoint)
            .with_bucket_name(&bucket)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .build()
            .unwrap(),
    );
    for name in TABLES {
        upload(&store, &conformance_dir().join("tables").join(name), &format!("tables/{name}")).await;
    }
    let options = s3_cli_options(&endpoint);
    let url_of = |name: &str| format!("s3://{bucket}/tables/{name}");
    tokio::task::block_in_place(|| assert_same_as_local(&url_of, &options));

    // A checkpoint written through S3 is read back from S3.
    let url = url_of("table-with-dv-small");
    let mut args = vec!["checkpoint".to_string(), url.clone()];
    args.extend(options.iter().cloned());
    let out = deltabus(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut args = vec!["describe".to_string(), url];
    args.extend(options.iter().cloned());
    let out = deltabus(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let desc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(desc["lastCheckpoint"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_reads_match_local() {
    let Some(endpoint) = emulator("DELTABUS_TEST_AZURE_ENDPOINT") else {
        return;
    };
    let _ = endpoint;
    let container = azure_container();
    let store: Arc<dyn ObjectStore> = Arc::new(
        object_store::azure::MicrosoftAzureBuilder::new()
            .with_use_emulator(true)
            .with_container_name(&container)
            .build()
            .unwrap(),
    );
    for name in TABLES {
        upload(&store, &conformance_dir().join("tables").join(name), &format!("tables/{name}")).await;
    }
    let options = vec!["--storage-option".to_string(), "azure_storage_use_emulator=true".to_string()];
    let url_of = |name: &str| format!("az://{container}/tables/{name}");
    tokio::task::block_in_place(|| assert_same_as_local(&url_of, &options));
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_store_reads_like_local() {
    let host = uuid::Uuid::new_v4().simple().to_string();
    let table = Table::open(&format!("memory://{host}/t"), StorageOptions::default()).unwrap();
    upload(&table.object_store(), &conformance_dir().join("tables").join("table-with-dv-small"), "t").await;
    let snap = table.snapshot(None).await.unwrap();
    assert_eq!(snap.version, 1);
    let plan = table.data().scan_plan(&snap);
    let mut rows = 0;
    for add in snap.files() {
        rows += table.data().read_file(&plan, add).await.unwrap().batches.iter().map(|b| b.num_rows()).sum::<usize>();
    }
    assert_eq!(rows, 8, "10 rows minus the 2 the deletion vector removes");
    // A second handle on the same memory:// host sees the same table.
    let again = Table::open(&format!("memory://{host}/t"), StorageOptions::default()).unwrap();
    assert_eq!(again.snapshot(None).await.unwrap().file_count(), 1);
}

/// A file mirror's copy streams: a file of several parts arrives byte for byte on local files,
/// in memory and on the S3 emulator, also when the target store fails a third of its calls
/// (a failed copy is retried whole and leaves nothing half-written behind).
#[tokio::test(flavor = "multi_thread")]
async fn streamed_copies_arrive_whole_through_faults() {
    use deltabus::storage::faulty::{FaultConfig, FaultyStore};
    use deltabus::storage::COPY_PART;
    let dir = tempfile::tempdir().unwrap();
    let source = Table::open_for_write(dir.path().join("src").to_str().unwrap(), StorageOptions::default()).unwrap();
    // Two and a half parts of bytes that differ at every position of a part.
    let len = COPY_PART * 5 / 2;
    let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8 ^ (i / COPY_PART) as u8).collect();
    let rel = "part-00000-ü.snappy.parquet";
    source.objects().put_bytes(rel, bytes.clone()).await.unwrap();
    let mut targets = vec![
        Table::open_for_write(dir.path().join("dst").to_str().unwrap(), StorageOptions::default()).unwrap(),
        Table::open(&format!("memory://{}/dst", uuid::Uuid::new_v4().simple()), StorageOptions::default()).unwrap(),
    ];
    if let Some(s3) = crate::support::s3_table().await {
        targets.push(s3);
    }
    for (i, clean) in targets.into_iter().enumerate() {
        assert_eq!(clean.objects().copy_file_from(&source, rel).await.unwrap(), len as u64);
        assert_eq!(clean.objects().read_bytes(rel).await.unwrap().as_ref(), &bytes[..], "target {i}");
        clean.objects().delete_file(rel).await.unwrap();
        let faulty = Arc::new(FaultyStore::new(
            clean.object_store(),
            FaultConfig { seed: 40 + i as u64, rate: 0.33, only: None, lose: vec![], delay: None },
        ));
        let flaky = clean.clone().map_store(|_| faulty as Arc<dyn ObjectStore>);
        let mut failures = 0;
        while let Err(e) = flaky.objects().copy_file_from(&source, rel).await {
            assert!(e.is_retryable(), "{e}");
            failures += 1;
            assert!(failures < 200, "no progress under faults");
        }
        assert_eq!(
            clean.objects().read_bytes(rel).await.unwrap().as_ref(),
            &bytes[..],
            "target {i} after {failures} faults"
        );
    }
}
