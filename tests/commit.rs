//! The commit contract, run against every object-store backend: local files, memory, S3
//! (moto) and Azure (Azurite). Put-if-absent, N concurrent committers (versions exactly
//! 0..=N, none lost), retry after losing a race, the already-applied path, and a conflict that
//! must not be retried.

use crate::support::*;
use std::collections::BTreeSet;

use deltabus::delta::actions::{Action, Remove, Txn};
use deltabus::delta::conflict::ReadSet;
use deltabus::delta::create::{infer_schema, new_table};
use deltabus::delta::replay::FileKey;
use deltabus::delta::transaction::{CommitOutcome, Operation, Transaction};
use deltabus::storage::{RetryPolicy, StorageOptions, Table};

fn txn(app: &str, version: i64) -> Action {
    Action::Txn(Txn { app_id: app.into(), version, last_updated: Some(1) })
}

async fn create(table: &Table) -> CommitOutcome {
    let (p, m) = new_table(infer_schema(&[r#"{"id":1}"#]).unwrap(), &[], &Default::default()).unwrap();
    let t = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    table.commit(None, &t, &RetryPolicy::default()).await.unwrap()
}

/// The contract every backend must meet.
async fn contract(table: Table) {
    // Put-if-absent: only one creator wins version 0.
    assert_eq!(create(&table).await, CommitOutcome::Committed { version: 0 });
    assert!(matches!(create(&table).await, CommitOutcome::Conflict { version: 0, .. }));

    // N concurrent blind appends from the same stale snapshot: all land, versions 1..=N.
    const N: usize = 8;
    let base = table.snapshot(None).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..N {
        let (table, base) = (table.clone(), base.clone());
        tasks.push(tokio::spawn(async move {
            let t =
                Transaction::new(Operation::Write, vec![add(&format!("f{i}.parquet")), txn(&format!("writer-{i}"), 1)]);
            table.commit(Some(&base), &t, &RetryPolicy::default()).await.unwrap()
        }));
    }
    let mut versions = BTreeSet::new();
    for t in tasks {
        match t.await.unwrap() {
            CommitOutcome::Committed { version } => assert!(versions.insert(version), "version {version} reused"),
            other => panic!("blind append did not commit: {other:?}"),
        }
    }
    assert_eq!(versions, (1..=N as u64).collect(), "versions must be exactly 1..=N");
    let snap = table.snapshot(None).await.unwrap();
    assert_eq!(snap.version, N as u64);
    assert_eq!(snap.file_count(), N, "no commit lost");
    for i in 0..N {
        assert_eq!(snap.txn_version(&format!("writer-{i}")), Some(1));
    }

    // An old snapshot brought up to date incrementally equals a fresh one.
    let mut old = base.clone();
    assert_eq!(table.update_snapshot(&mut old).await.unwrap(), N as u64);
    assert_eq!((old.version, old.file_count()), (snap.version, snap.file_count()));

    // Already applied: known from the snapshot, and found among the winners of a race.
    let again = Transaction::new(Operation::Write, vec![add("dup.parquet"), txn("writer-3", 1)]);
    assert_eq!(
        table.commit(Some(&snap), &again, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::AlreadyApplied { app_id: "writer-3".into(), version: 1 }
    );
    let first = Transaction::new(Operation::Write, vec![add("g.parquet"), txn("stream", 10)]);
    assert!(matches!(
        table.commit(Some(&snap), &first, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::Committed { .. }
    ));
    let replay = Transaction::new(Operation::Write, vec![add("g2.parquet"), txn("stream", 10)]);
    assert_eq!(
        table.commit(Some(&snap), &replay, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::AlreadyApplied { app_id: "stream".into(), version: 10 }
    );

    // A rewrite of a file that was removed meanwhile conflicts and is not retried.
    let stale = table.snapshot(None).await.unwrap();
    let rm = |p: &str, data_change| {
        Action::Remove(Remove {
            path: p.into(),
            deletion_timestamp: Some(1),
            data_change,
            extended_file_metadata: Some(true),
            partition_values: Some(Default::default()),
            size: Some(1),
            stats: None,
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
        })
    };
    let delete = Transaction::new(Operation::Delete, vec![rm("f0.parquet", true)]);
    assert!(matches!(
        table.commit(Some(&stale), &delete, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::Committed { .. }
    ));
    let mut compact = Transaction::new(
        Operation::Optimize,
        vec![rm("f0.parquet", false), rm("f1.parquet", false), {
            let Action::Add(mut a) = add("big.parquet") else { unreachable!() };
            a.data_change = false;
            Action::Add(a)
        }],
    );
    compact.read = ReadSet {
        files: ["f0.parquet", "f1.parquet"].iter().map(|p| FileKey { path: p.to_string(), dv_id: None }).collect(),
        ..ReadSet::default()
    };
    let outcome = table.commit(Some(&stale), &compact, &RetryPolicy::default()).await.unwrap();
    assert!(matches!(outcome, CommitOutcome::Conflict { .. }), "{outcome:?}");
    let end = table.snapshot(None).await.unwrap();
    assert!(end.files().iter().all(|a| a.path != "big.parquet"), "the conflicting rewrite must not land");
    assert!(end.files().iter().all(|a| a.path != "f0.parquet"), "the deleted file must stay deleted");
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_local_files() {
    let dir = tempfile::tempdir().unwrap();
    contract(Table::open(dir.path().to_str().unwrap(), StorageOptions::default()).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_memory() {
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    contract(Table::open(&url, StorageOptions::default()).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_s3() {
    let Some(table) = s3_table().await else { return };
    contract(table).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_azure() {
    let Some(table) = azure_table() else { return };
    contract(table).await;
}

/// Every commit PUT is counted, and so is every landed commit: a writer that loses a race
/// to the next version shows as attempts above commits landed, in the process's metrics.
#[tokio::test(flavor = "multi_thread")]
async fn lost_races_show_as_attempts_above_landed() {
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    let table = Table::open(&url, StorageOptions::default()).unwrap();
    create(&table).await;
    let stale = table.snapshot(None).await.unwrap();
    let (attempts0, landed0) = deltabus::storage::commit_counts();
    let winner = Transaction::new(Operation::Write, vec![add("a.parquet"), txn("a", 1)]);
    table.commit(Some(&stale), &winner, &RetryPolicy::default()).await.unwrap();
    // Planned on version 0: its first PUT (version 1) loses, the rebased one lands as 2.
    let loser = Transaction::new(Operation::Write, vec![add("b.parquet"), txn("b", 1)]);
    assert_eq!(
        table.commit(Some(&stale), &loser, &RetryPolicy::default()).await.unwrap(),
        CommitOutcome::Committed { version: 2 }
    );
    let (attempts, landed) = deltabus::storage::commit_counts();
    // Other tests in this process only add to both counts, or to attempts alone.
    assert!(landed - landed0 >= 2, "{landed0} -> {landed}");
    assert!(
        (attempts - attempts0) - (landed - landed0) >= 1,
        "the lost race is an attempt that did not land: attempts {attempts0} -> {attempts}, landed {landed0} -> {landed}"
    );
    let text = deltabus::metrics::Metrics::default().render();
    for name in ["deltabus_commit_attempts_total", "deltabus_commits_landed_total", "deltabus_store_requests_total"] {
        assert!(text.contains(name), "{name} missing from the metrics:\n{text}");
    }
}
