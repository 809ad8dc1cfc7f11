//! The feed's positions, bounds and reads, through a faulty store too.

use super::*;

#[test]
fn offsets_are_commit_and_row() {
    assert_eq!(offset_of(0, 0), 0);
    assert_eq!(offset_of(3, 5), 3 << 24 | 5);
    assert_eq!(position_of(offset_of(12345, 77)), Some((12345, 77)));
    assert_eq!(position_of(-1), None);
    assert!(offset_of(7, 0) > offset_of(6, (1 << 24) - 1));
}

async fn commit(table: &Table, actions: Vec<crate::delta::actions::Action>) {
    use crate::delta::actions::Action;
    use crate::delta::transaction::{Operation, Transaction};
    let creates = actions.iter().any(|a| matches!(a, Action::Protocol(_)));
    let op = if creates { Operation::CreateTable } else { Operation::Write };
    let txn = Transaction::new(op, actions);
    let step = |_: Option<&crate::delta::snapshot::Snapshot>| {
        Ok(crate::storage::Plan::commit(txn.clone(), Vec::new(), Vec::new(), ()))
    };
    crate::storage::commit_exactly_once(table, &mut None, &Default::default(), &mut crate::storage::PlanFn(step))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Creates a one-column table at `table`.
async fn create(table: &Table) {
    let schema = crate::delta::create::infer_schema(&[r#"{"id":0}"#]).unwrap_or_else(|e| panic!("{e}"));
    let (protocol, metadata) =
        crate::delta::create::new_table(schema, &[], &Default::default()).unwrap_or_else(|e| panic!("{e}"));
    use crate::delta::actions::Action;
    commit(table, vec![Action::Protocol(protocol), Action::Metadata(metadata)]).await;
}

/// Appends one data file of `ids` to the one-column table at `table`.
async fn append(table: &Table, ids: &[i64]) {
    use crate::storage::{DataWriter, WriterConfig};
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};
    let snapshot = table.snapshot(None).await.unwrap_or_else(|e| panic!("{e}"));
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let batch =
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids.to_vec()))]).unwrap_or_else(|e| panic!("{e}"));
    let writer =
        DataWriter::new(table, &snapshot, WriterConfig::for_snapshot(&snapshot)).unwrap_or_else(|e| panic!("{e}"));
    let adds = writer.write_all([&batch]).await.unwrap_or_else(|e| panic!("{e}"));
    commit(table, adds.into_iter().map(crate::delta::actions::Action::Add).collect()).await;
}

#[tokio::test]
async fn bounds_see_new_commits_at_once_between_listings() {
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    let table = Table::open(&url, crate::storage::StorageOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let feed = Feed::new(table.clone(), 2, TopicFormat::Json);
    assert_eq!(feed.bounds().await.unwrap_or_else(|e| panic!("{e}")), None, "no table yet");
    create(&table).await;
    assert_eq!(feed.bounds().await.unwrap_or_else(|e| panic!("{e}")), Some((0, 0)), "the new table is listed");
    // Within the listing's lifetime, commits written since are found one by one.
    for v in 1..=3 {
        commit(&table, Vec::new()).await;
        assert_eq!(feed.bounds().await.unwrap_or_else(|e| panic!("{e}")), Some((0, v)));
    }
    // More commits than are probed one by one: a new listing finds them all.
    for _ in 0..PROBES + 2 {
        commit(&table, Vec::new()).await;
    }
    assert_eq!(feed.bounds().await.unwrap_or_else(|e| panic!("{e}")), Some((0, PROBES + 5)));
    feed.relist();
    assert_eq!(feed.bounds().await.unwrap_or_else(|e| panic!("{e}")), Some((0, PROBES + 5)));
}

/// Each partition's rows of every commit, read by one reader per partition at once (so
/// that readers read ahead for one another) through a store failing a third of its calls,
/// retrying what fails: the same rows per partition as one reader gets without faults,
/// every row once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_read_at_once_through_faults_get_every_row_once() {
    use crate::storage::faulty::{FaultConfig, FaultyStore};
    const COMMITS: u64 = 60;
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    let table = Table::open(&url, crate::storage::StorageOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    create(&table).await;
    for c in 1..COMMITS {
        append(&table, &[c as i64, c as i64 + 1000]).await;
    }
    let read_all = |feed: Arc<Feed>, p: usize| async move {
        let (mut ids, mut v, mut failed) = (Vec::new(), 0, 0);
        while v < COMMITS {
            match feed.commit(v, p).await {
                Ok(Some(c)) => {
                    let records = feed.records(&c, p, 0, c.rows(p)).unwrap_or_else(|e| panic!("{e}"));
                    for r in records {
                        let row: serde_json::Value = serde_json::from_slice(&r.value).unwrap_or_default();
                        ids.push(row["id"].as_i64().unwrap_or(-1));
                    }
                    v += 1;
                }
                Ok(None) => panic!("commit {v} exists"),
                Err(_) => {
                    failed += 1;
                    assert!(failed < 10_000, "partition {p}: commit {v} never read");
                }
            }
        }
        (ids, failed)
    };
    let plain = Arc::new(Feed::new(table.clone(), 4, TopicFormat::Json));
    let mut expected = Vec::new();
    for p in 0..4 {
        expected.push(read_all(plain.clone(), p).await.0);
    }
    let faulty = table.clone().map_store(|s| {
        Arc::new(FaultyStore::new(s, FaultConfig { seed: 7, rate: 0.33, only: None, lose: vec![], delay: None }))
            as Arc<dyn object_store::ObjectStore>
    });
    let feed = Arc::new(Feed::new(faulty, 4, TopicFormat::Json));
    let readers: Vec<_> = (0..4).map(|p| tokio::spawn(read_all(feed.clone(), p))).collect();
    let (mut got, mut failed) = (Vec::new(), 0);
    for r in readers {
        // A reader left waiting for a read that never wakes it would hang here.
        let joined = tokio::time::timeout(std::time::Duration::from_secs(300), r).await;
        let (ids, f) = joined.unwrap_or_else(|_| panic!("a reader never finished")).unwrap_or_else(|e| panic!("{e}"));
        got.push(ids);
        failed += f;
    }
    assert_eq!(got, expected, "each partition's rows, in order");
    let mut all: Vec<i64> = got.concat();
    all.sort_unstable();
    let mut want: Vec<i64> = (1..COMMITS as i64).flat_map(|c| [c, c + 1000]).collect();
    want.sort_unstable();
    assert_eq!(all, want, "every row once");
    assert!(expected.iter().filter(|ids| !ids.is_empty()).count() > 1, "rows in more than one partition");
    assert!(failed > 0, "the store injected no fault");
}

/// Through a store that fails a third of its calls (refused, answer lost, or slow), the
/// bounds are an error or right: never past the log's end, never moving back, and they
/// reach new commits once calls get through.
#[tokio::test]
async fn bounds_through_a_faulty_store_are_an_error_or_right() {
    use crate::storage::faulty::{FaultConfig, FaultyStore};
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    let table = Table::open(&url, crate::storage::StorageOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    create(&table).await;
    let faulty = table.clone().map_store(|s| {
        Arc::new(FaultyStore::new(s, FaultConfig { seed: 11, rate: 0.33, only: None, lose: vec![], delay: None }))
            as Arc<dyn object_store::ObjectStore>
    });
    let feed = Feed::new(faulty, 2, TopicFormat::Json);
    let (mut latest, mut seen, mut errors) = (0u64, 0u64, 0);
    for round in 0..6u64 {
        for _ in 0..(round * 7) % 20 {
            commit(&table, Vec::new()).await;
            latest += 1;
        }
        let mut reached = false;
        for _ in 0..200 {
            match feed.bounds().await {
                Ok(Some((first, l))) => {
                    assert_eq!(first, 0);
                    assert!(l <= latest, "bounds past the log's end: {l} > {latest}");
                    assert!(l >= seen, "bounds moved back: {l} after {seen}");
                    seen = l;
                    if l == latest {
                        reached = true;
                        break;
                    }
                }
                Ok(None) => panic!("the table exists"),
                Err(_) => errors += 1,
            }
        }
        assert!(reached, "round {round}: the bounds never reached version {latest}");
    }
    assert!(errors > 0, "the store injected no fault");
}
