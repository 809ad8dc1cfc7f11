//! The one exactly-once commit path (`storage::commit_exactly_once`) on its own, with real
//! Parquet files written by the append plan:
//!
//! - writers of one stream racing each other through a store that fails 15% of its calls
//!   (lost answers included), creating the table concurrently: every position lands once, its
//!   row once, and no file the log references is missing;
//! - a stream's own position outlives `delta.setTransactionRetentionDuration`: the planner and
//!   the helper both see it, so nothing is written twice after an idle spell;
//! - a planner that forgets to skip its recorded position is stopped by the helper (no second
//!   commit), and a step (table created first) is followed by the planned work.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use deltabus::common::clock::Clock;
use deltabus::delta::actions::Action;
use deltabus::delta::app_id::TxnAppId;
use deltabus::delta::create::{infer_schema, new_table};
use deltabus::delta::snapshot::Snapshot;
use deltabus::delta::transaction::{Operation, Transaction};
use deltabus::error::Error;
use deltabus::storage::faulty::{FaultConfig, FaultyStore};
use deltabus::storage::retrying::RetryingStore;
use deltabus::storage::{
    append_plan, commit_exactly_once, Landed, Plan, PlanFn, Planner, RetryPolicy, StorageOptions, Table,
};
use object_store::ObjectStore;

fn stream() -> TxnAppId {
    TxnAppId::KafkaPartition { app: "ingest-ü".into(), topic: "orders".into(), partition: 3 }
}

fn row(k: i64) -> RecordBatch {
    let schema =
        Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true), Field::new("name", DataType::Utf8, true)]));
    let name = format!("行 {k} ✓");
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![k])), Arc::new(StringArray::from(vec![name]))])
        .unwrap()
}

/// Appends position `k` (one row, id `k`) unless the table holds it; creates the table when
/// it is missing.
struct Append<'a> {
    table: &'a Table,
    k: i64,
    plans: u32,
}

impl Planner for Append<'_> {
    type Answer = i64;

    async fn plan(&mut self, snapshot: Option<&Snapshot>) -> deltabus::error::Result<Plan<i64>> {
        self.plans += 1;
        if snapshot.and_then(|s| stream().version_in(s)).is_some_and(|held| held >= self.k) {
            return Ok(Plan::Nothing(self.k));
        }
        let create = || new_table(infer_schema(&[r#"{"id":1,"name":"a"}"#])?, &[], &Default::default());
        let (txn, files) = append_plan(self.table, snapshot, create, None, &[row(self.k)], &[]).await?;
        Ok(Plan::commit(txn, vec![(stream(), self.k)], files, self.k))
    }
}

fn memory_table(clock: Clock) -> Table {
    let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
    Table::open(&url, StorageOptions { clock, ..StorageOptions::default() }).unwrap()
}

/// Every add of every commit, and the live rows' ids (from the adds' statistics).
async fn committed(table: &Table) -> (Vec<String>, Vec<i64>) {
    let snap = table.snapshot(None).await.unwrap();
    let mut adds = Vec::new();
    for v in 0..=snap.version {
        for a in table.read_commit(v).await.unwrap() {
            if let Action::Add(a) = a {
                adds.push(a.path);
            }
        }
    }
    let mut ids = Vec::new();
    for f in snap.files() {
        let stats: serde_json::Value = serde_json::from_str(f.stats.as_deref().unwrap()).unwrap();
        assert_eq!(stats["numRecords"], 1);
        ids.push(stats["minValues"]["id"].as_i64().unwrap());
    }
    ids.sort_unstable();
    (adds, ids)
}

#[tokio::test(start_paused = true)]
async fn racing_writers_of_one_stream_land_each_position_once_through_faults() {
    for seed in [5, 55, 555] {
        let clean = memory_table(Clock::tokio());
        let faulty = Arc::new(FaultyStore::new(
            clean.object_store(),
            FaultConfig { seed, rate: 0.15, only: None, lose: vec![], delay: None },
        ));
        let counts = faulty.counts();
        let table = clean.clone().map_store(|_| Arc::new(RetryingStore::new(faulty.clone())) as Arc<dyn ObjectStore>);
        // Four writers of the same stream (a rebalance gone wrong, or a zombie), each walking
        // the same positions; the table does not exist yet.
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let table = table.clone();
            tasks.push(tokio::spawn(async move {
                let mut snapshot = None;
                let mut landed = BTreeSet::new();
                for k in 0..10 {
                    loop {
                        let mut planner = Append { table: &table, k, plans: 0 };
                        match commit_exactly_once(&table, &mut snapshot, &RetryPolicy::riding_faults(), &mut planner)
                            .await
                        {
                            Ok(Landed::Committed { answer, .. }) => {
                                landed.insert(answer);
                                break;
                            }
                            Ok(Landed::Nothing(_)) => break,
                            Err(e) => assert!(e.is_retryable() || matches!(e, Error::CommitConflict { .. }), "{e}"),
                        }
                    }
                }
                landed
            }));
        }
        let mut reported = Vec::new();
        for t in tasks {
            reported.extend(t.await.unwrap());
        }
        let (adds, ids) = committed(&clean).await;
        assert_eq!(ids, (0..10).collect::<Vec<_>>(), "seed {seed}: every position's row once");
        assert_eq!(adds.len(), 10, "seed {seed}: no add committed twice: {adds:?}");
        reported.sort_unstable();
        reported.dedup();
        assert!(reported.iter().all(|k| ids.contains(k)), "seed {seed}: reported but not in the table");
        let snap = clean.snapshot(None).await.unwrap();
        assert_eq!(stream().version_in(&snap), Some(9));
        for f in snap.files() {
            let rel = f.path.clone();
            assert!(clean.objects().file_size(&rel).await.unwrap().is_some(), "seed {seed}: {rel} referenced but gone");
        }
        eprintln!("seed {seed}: faults {counts}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_streams_own_position_outlives_the_txn_retention() {
    let table = memory_table(Clock::tokio());
    let mut props = std::collections::HashMap::new();
    props.insert("delta.setTransactionRetentionDuration".to_string(), "interval 2 seconds".to_string());
    let (p, m) = new_table(infer_schema(&[r#"{"id":1,"name":"a"}"#]).unwrap(), &[], &props).unwrap();
    let create = Transaction::new(Operation::CreateTable, vec![Action::Protocol(p), Action::Metadata(m)]);
    let step =
        |s: Option<&Snapshot>| Ok(if s.is_none() { Plan::step(create.clone(), Vec::new()) } else { Plan::Nothing(()) });
    let mut snapshot = None;
    let landed = commit_exactly_once(&table, &mut snapshot, &RetryPolicy::default(), &mut PlanFn(step)).await.unwrap();
    assert_eq!(landed, Landed::Committed { version: 0, answer: () }, "a step, then nothing left");
    let mut first = Append { table: &table, k: 4, plans: 0 };
    let landed = commit_exactly_once(&table, &mut snapshot, &RetryPolicy::default(), &mut first).await.unwrap();
    assert_eq!(landed.version(), Some(1));
    // Idle past the retention: readers forget the txn, the stream does not.
    tokio::time::advance(std::time::Duration::from_secs(10)).await;
    let fresh = table.snapshot(None).await.unwrap();
    assert_eq!(fresh.live_txn_version(&stream().to_string()), None, "expired for other engines");
    let mut again = Append { table: &table, k: 4, plans: 0 };
    let landed = commit_exactly_once(&table, &mut None, &RetryPolicy::default(), &mut again).await.unwrap();
    assert_eq!(landed, Landed::Nothing(4));
    // A planner that does not look at its position is stopped by the helper itself.
    let blind = |s: Option<&Snapshot>| {
        let txn = Transaction::new(Operation::Write, Vec::new());
        let _ = s;
        Ok(Plan::commit(txn, vec![(stream(), 4)], Vec::new(), ()))
    };
    let err = commit_exactly_once(&table, &mut None, &RetryPolicy::default(), &mut PlanFn(blind)).await.unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
    let (adds, ids) = committed(&table).await;
    assert_eq!((adds.len(), ids), (1, vec![4]), "position 4 written once");
    assert_eq!(table.snapshot(None).await.unwrap().version, 1, "nothing committed after it");
}
