//! One table's group committer: the requests that arrive within the commit window of the
//! first one (or until they hold `max_commit_bytes`, or until every producer that has been
//! sending is waiting on it: [`super::attendance`]) land in one commit, with one `txn` per
//! producer, and every request is answered only after that commit: success means durable and
//! visible.
//!
//! Each group is decided against the table as it is just before the commit ([`decide`]), and
//! the commit itself is put-if-absent with the Delta conflict rules: a concurrent commit that
//! moved one of our producers' `txn` (another server took a retry of the same sequence) makes
//! ours conflict, and the group is decided again against the new table, so a sequence is
//! written once whichever server or attempt gets there first. A commit whose outcome is
//! unknown is answered as a failure to retry with the same sequence: the retry finds it
//! committed or commits it. Files of a commit that did not land are deleted (or left to
//! VACUUM when the outcome is unknown).

use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use tokio::sync::{mpsc, oneshot, watch};

use tracing::Instrument;

use super::attendance::{Attendance, Handed, Sender};
use super::latest::Latest;
use super::sequence::{decide, Sequenced, Verdict};
use crate::common::record::DeadLetter;
use crate::config::server::ResolvedTable;
use crate::decode::keyed::ChangeOrder;
use crate::delta::actions::Action;
use crate::delta::schema::StructType;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::metrics::push::PushMetrics;
use crate::storage::{commit_exactly_once, DataWriter, Landed, Plan, Planner, RetryPolicy, Table, WriterConfig};
use crate::write::schema_change::{change, grown, mismatch_reason, onto, NewTable, SchemaChange};

/// A decoded request waiting for its commit.
pub(crate) struct Pending {
    /// The producer and this request's sequence range; `None`: at-least-once.
    pub producer: Option<Sequenced>,
    /// The rows, in the Arrow form of `schema`.
    pub rows: Vec<RecordBatch>,
    /// The schema the rows were decoded in: the table's, or an evolved or inferred one.
    pub schema: Arc<StructType>,
    /// Bad lines to write to the table's dead-letter table.
    pub bad_lines: Vec<DeadLetter>,
    /// Body bytes (the group's size bound counts them).
    pub bytes: u64,
    /// On a keyed table: where each row stood among the request's records, and the keys its
    /// records delete (`None`: its rows in order, nothing deleted).
    pub keyed: Option<KeyedChanges>,
    /// A Kafka connection's count of batches waiting for answers, held until this one is
    /// answered (for the group's early close).
    pub connection: Option<Handed>,
    /// The door the request came through.
    pub door: Door,
    pub reply: oneshot::Sender<Outcome>,
}

/// Where a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Door {
    /// An HTTP push request.
    Http,
    /// A Produce request at the Kafka-protocol listener.
    Kafka,
}

/// The door a group's requests came through, as commits and dead letters name it: `http`
/// (push), `kafka` (the Kafka-protocol listener), or `http+kafka` for a group of both.
pub(crate) fn door<'a>(requests: impl IntoIterator<Item = &'a Pending>) -> &'static str {
    let (mut http, mut kafka) = (false, false);
    for p in requests {
        match p.door {
            Door::Http => http = true,
            Door::Kafka => kafka = true,
        }
    }
    match (http, kafka) {
        (false, true) => "kafka",
        (true, true) => "http+kafka",
        _ => "http",
    }
}

/// A request's changes to a keyed table beside its rows: the place of each row among the
/// request's records (in row order), and the keys deleted with the place of their records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct KeyedChanges {
    pub row_records: Vec<u32>,
    pub deletes: Vec<(u32, String)>,
}

/// What a request's commit came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Committed {
        version: u64,
    },
    /// The table holds this producer's sequence up to `committed` already.
    Already {
        committed: i64,
    },
    Gap {
        expected: i64,
    },
    /// The rows do not fit the table as it now is (its schema changed under the request).
    Refused(String),
    /// Not committed (or not known to be): retry with the same sequence.
    Failed(String),
}

/// One table's committer task.
pub(crate) struct GroupCommitter {
    pub table: Table,
    pub settings: ResolvedTable,
    pub window: std::time::Duration,
    pub max_bytes: u64,
    pub metrics: Arc<PushMetrics>,
    pub latest: Arc<Latest>,
    pub dead_letters: Option<Table>,
}

impl GroupCommitter {
    /// Commits groups until the channel closes (every sender dropped) or `stop` turns true;
    /// then commits what is queued and returns.
    pub(crate) async fn run(mut self, mut requests: mpsc::UnboundedReceiver<Pending>, mut stop: watch::Receiver<bool>) {
        let mut attendance = Attendance::new(self.window);
        loop {
            let first = tokio::select! {
                r = requests.recv() => r,
                () = super::stopped(&mut stop) => { requests.close(); requests.recv().await }
            };
            let Some(first) = first else { return };
            // The window opens when the first request is decoded and handed over; it closes
            // early once everyone who has been sending waits on it.
            let deadline = tokio::time::Instant::now() + self.window;
            let mut roll = attendance.open(Instant::now());
            let mut bytes = 0;
            let mut group = Vec::new();
            let mut next = Some(first);
            let mut closed = "window";
            'gather: while let Some(p) = next.take() {
                let sender = match (&p.connection, &p.producer) {
                    (Some(c), _) => Sender::Connection(c.connection()),
                    (None, Some(s)) => Sender::Producer(s.key.as_str()),
                    (None, None) => Sender::Anonymous,
                };
                let now = Instant::now();
                attendance.arrived(&sender, now);
                roll.present(&sender, now);
                bytes += p.bytes;
                group.push(p);
                if bytes >= self.max_bytes {
                    closed = "size";
                    break;
                }
                // The next request; between requests, the group closes once everyone who has
                // been sending waits on it or has gone quiet, and nothing more is queued.
                loop {
                    if roll.complete(Instant::now()) {
                        // Requests already queued join it (a busy committer finds many).
                        if let Ok(p) = requests.try_recv() {
                            next = Some(p);
                            break;
                        }
                        closed = "everyone";
                        break 'gather;
                    }
                    let wake = deadline.min(tokio::time::Instant::from_std(roll.recheck(Instant::now())));
                    match tokio::time::timeout_at(wake, requests.recv()).await {
                        Ok(r) => {
                            next = r;
                            break;
                        }
                        Err(_) if wake >= deadline => break 'gather,
                        Err(_) => {}
                    }
                }
            }
            if closed == "window" {
                roll.ran_out();
            }
            self.metrics.group_closed(closed);
            let span = tracing::info_span!("push.commit", table = %self.settings.name, requests = group.len());
            let latest = self.latest.clone();
            let mut snapshot = latest.snapshot.lock().await;
            self.commit_group(&mut snapshot, group).instrument(span).await;
            latest.publish(snapshot.as_ref());
            attendance.answered(&roll, Instant::now());
        }
    }

    async fn commit_group(&mut self, snapshot: &mut Option<Snapshot>, group: Vec<Pending>) {
        let table = self.table.clone();
        let mut planner = GroupPlanner { committer: self, group, taken: Vec::new() };
        let landed = commit_exactly_once(&table, snapshot, &RetryPolicy::default(), &mut planner).await;
        crate::failpoint::hit("push.committed");
        // The planned commit's requests, and any not decided yet (a read failed before the
        // group was decided): every one is answered.
        let mut everyone = std::mem::take(&mut planner.taken);
        everyone.append(&mut planner.group);
        match landed {
            Ok(Landed::Committed { version, .. }) => {
                self.metrics.commits.inc();
                answer_all(everyone, Outcome::Committed { version });
                // The view published after this group includes it (a failed read here is the
                // next group's to repeat).
                if let Err(e) = self.refresh(snapshot).await {
                    tracing::info!(error = %e, "push.refresh_after_commit_failed");
                }
            }
            Ok(Landed::Nothing(())) => {}
            Err(e) => {
                // Every request of the group fails with it, and the next group likely too:
                // an operator should see it (a refused request is the client's to see).
                tracing::warn!(table = %table.url(), requests = everyone.len(), error = %e, "push.commit_failed");
                answer_all(everyone, Outcome::Failed(e.to_string()));
            }
        }
    }

    /// Brings the snapshot up to date; `None` while the table does not exist.
    pub(super) async fn refresh(&self, snapshot: &mut Option<Snapshot>) -> Result<()> {
        self.latest.refresh(snapshot).await
    }

    /// The commit's schema actions, table state and rows; and the requests (by index) whose
    /// rows do not fit, with why. A table that does not exist yet is created with the
    /// configured schema or the first request's; new columns are added only when the table
    /// evolves.
    fn plan(&self, snapshot: Option<&Snapshot>, taken: &[(usize, Pending)]) -> (Result<Rows>, Vec<(usize, String)>) {
        let mut refused = Vec::new();
        let (mut target, creating) = match snapshot {
            Some(s) => (s.schema.clone(), false),
            None if !self.settings.settings.create => {
                let why = format!("table {:?} does not exist and create = false", self.settings.name);
                return (
                    Err(Error::InvalidArgument(why.clone())),
                    taken.iter().map(|(i, _)| (*i, why.clone())).collect(),
                );
            }
            None => (self.settings.schema.clone().unwrap_or_else(|| taken[0].1.schema.as_ref().clone()), true),
        };
        let widen = snapshot.is_some_and(|s| crate::delta::type_widening::enabled(&s.metadata.configuration));
        for (i, p) in taken {
            match grown(&target, &p.schema, widen) {
                Ok(None) => {}
                Ok(Some(_)) if !creating && !self.settings.settings.evolve_schema => refused
                    .push((*i, "the records have columns not in the table schema (evolve_schema is off)".to_string())),
                Ok(Some(merged)) => target = merged,
                Err(why) => refused.push((*i, why)),
            }
        }
        let mut rows = Vec::new();
        let not_merged: Vec<usize> = refused.iter().map(|(r, _)| *r).collect();
        for (i, p) in taken.iter().filter(|(i, _)| !not_merged.contains(i)) {
            match onto(&p.rows, &target) {
                Ok(mut b) => rows.append(&mut b),
                Err(m) => {
                    refused.push((*i, format!("the records do not fit the table schema: {}", mismatch_reason(m))))
                }
            }
        }
        if !refused.is_empty() {
            return (Err(Error::InvalidArgument("refused requests".into())), refused);
        }
        (change(snapshot, target, &self.new_table()).map(|schema| Rows { schema, rows }), refused)
    }

    /// How the rows' commit creates the table when it finds none.
    fn new_table(&self) -> NewTable {
        let settings = &self.settings.settings;
        NewTable {
            partition_by: settings.partition_by.clone(),
            cluster_by: settings.cluster_by.clone(),
            properties: settings.properties.clone().into_iter().collect(),
            keyed: !settings.key_columns.is_empty(),
        }
    }

    /// Writes the dead letters and the rows of `taken`, and builds their transaction (the
    /// producers' positions are the commit path's): the transaction and its files.
    async fn write(
        &self,
        snapshot: Option<&Snapshot>,
        mut plan: Rows,
        taken: &[&Pending],
    ) -> Result<(Transaction, Vec<String>)> {
        if let Some(dl) = &self.dead_letters {
            super::dead_letters::write(dl, &self.settings.name, taken).await?;
        }
        let schema = std::mem::take(&mut plan.schema);
        let write_snapshot = schema.table(snapshot)?;
        let creating = schema.creating;
        if !self.settings.settings.key_columns.is_empty() {
            return self.write_keyed(write_snapshot, schema.actions.clone(), plan, taken).await;
        }
        let adds = DataWriter::new(&self.table, write_snapshot, WriterConfig::for_snapshot(write_snapshot))?
            .write_all(&plan.rows)
            .await?;
        let rows: usize = plan.rows.iter().map(RecordBatch::num_rows).sum();
        let files: Vec<String> = adds.iter().map(|a| a.path.clone()).collect();
        let bytes: i64 = adds.iter().map(|a| a.size).sum();
        let producers =
            taken.iter().filter_map(|p| p.producer.as_ref().map(|s| &s.key)).collect::<std::collections::BTreeSet<_>>();
        let partition_by = serde_json::Value::from(write_snapshot.metadata.partition_columns.clone()).to_string();
        let mut actions = schema.actions;
        actions.extend(adds.into_iter().map(Action::Add));
        let txn = Transaction::new(if creating { Operation::CreateTable } else { Operation::Write }, actions)
            .with_parameter("mode", if creating { "ErrorIfExists" } else { "Append" })
            .with_parameter("partitionBy", partition_by)
            .with_parameter("source", door(taken.iter().copied()))
            .with_metric("numFiles", files.len())
            .with_metric("numOutputRows", rows)
            .with_metric("numOutputBytes", bytes)
            .with_metric("numRequests", taken.len())
            .with_metric("numProducers", producers.len());
        crate::failpoint::hit("push.files_written");
        Ok((txn, files))
    }
}

impl GroupCommitter {
    /// A keyed table's group as one `MERGE`: every request's rows and deletes in the order its
    /// producer sent them (a request's records in their order, a producer's requests by
    /// sequence), the last change per key winning, as a keyed pipeline's flush.
    async fn write_keyed(
        &self,
        write_snapshot: &Snapshot,
        schema_actions: Vec<Action>,
        plan: Rows,
        taken: &[&Pending],
    ) -> Result<(Transaction, Vec<String>)> {
        let keys = &self.settings.settings.key_columns;
        // Requests in the order their changes apply: a producer's by sequence, others as they
        // came (the order between producers is theirs to keep by key).
        let mut order: Vec<usize> = (0..taken.len()).collect();
        order.sort_by_key(|&i| taken[i].producer.as_ref().map(|s| (s.key.clone(), s.first)));
        let mut rank = vec![0u32; taken.len()];
        for (r, i) in order.into_iter().enumerate() {
            rank[i] = u32::try_from(r).unwrap_or(u32::MAX);
        }
        let mut source =
            crate::write::upsert::KeyedChanges { batches: &plan.rows, rows: Vec::new(), deletes: Vec::new() };
        for (i, p) in taken.iter().enumerate() {
            let at = |record: u32| ChangeOrder::Pushed { request: rank[i], record };
            match &p.keyed {
                Some(k) => {
                    source.rows.extend(k.row_records.iter().map(|j| at(*j)));
                    source.deletes.extend(k.deletes.iter().map(|(j, key)| (at(*j), key.as_str())));
                }
                None => {
                    let n: usize = p.rows.iter().map(RecordBatch::num_rows).sum();
                    source.rows.extend((0..n).map(|j| at(u32::try_from(j).unwrap_or(u32::MAX))));
                }
            }
        }
        let changes = (source.rows.len() + source.deletes.len()) as u64;
        let config = WriterConfig::for_snapshot(write_snapshot);
        let planned = crate::write::upsert::plan(
            &self.table,
            write_snapshot,
            keys,
            &[source],
            config,
            crate::config::DEFAULT_INDEX_MEMORY.get(),
        )
        .await?;
        let (mut txn, files) = crate::write::upsert::merge_transaction(planned, keys, &self.settings.name, changes);
        let mut actions = schema_actions;
        actions.append(&mut txn.actions);
        txn.actions = actions;
        let txn = txn.with_parameter("source", door(taken.iter().copied())).with_metric("numRequests", taken.len());
        crate::failpoint::hit("push.files_written");
        Ok((txn, files))
    }
}

/// One group against the table as it is: the requests decided by their producers' positions
/// (those already committed or out of sequence answered at once), the rows of the rest
/// planned as one commit with a `txn` per producer.
struct GroupPlanner<'a> {
    committer: &'a GroupCommitter,
    /// Requests not answered yet.
    group: Vec<Pending>,
    /// The requests of the planned commit (and their retries in the group): answered with its
    /// outcome.
    taken: Vec<Pending>,
}

impl Planner for GroupPlanner<'_> {
    type Answer = ();

    async fn plan(&mut self, snapshot: Option<&Snapshot>) -> Result<Plan<()>> {
        self.committer.latest.check(snapshot)?;
        self.group.append(&mut self.taken);
        loop {
            let producers: Vec<Option<&Sequenced>> = self.group.iter().map(|p| p.producer.as_ref()).collect();
            let committed = |app: &crate::delta::app_id::TxnAppId| snapshot.and_then(|s| app.version_in(s));
            let (verdicts, txns) = decide(&producers, committed);
            let positions: Vec<_> = txns.into_iter().collect();
            // Answer what is decided now; keep the requests to commit and their retries.
            let mut taken: Vec<(usize, Pending)> = Vec::new();
            let mut followers: Vec<(usize, Pending)> = Vec::new();
            for (i, (p, verdict)) in std::mem::take(&mut self.group).into_iter().zip(verdicts).enumerate() {
                match verdict {
                    Verdict::Take => taken.push((i, p)),
                    Verdict::SameAs(j) => followers.push((j, p)),
                    Verdict::Already { committed } => reply(p, Outcome::Already { committed }),
                    Verdict::Gap { expected } => reply(p, Outcome::Gap { expected }),
                }
            }
            if taken.is_empty() {
                return Ok(Plan::Nothing(()));
            }
            // Rows that do not fit the table as it now is are refused one request at a time;
            // the rest is decided again (a producer's later sequences must not pass a refusal).
            let (plan, refused) = self.committer.plan(snapshot, &taken);
            if !refused.is_empty() {
                for (i, p) in taken.into_iter().chain(followers) {
                    match refused.iter().find(|(r, _)| *r == i) {
                        Some((_, why)) => reply(p, Outcome::Refused(why.clone())),
                        None => self.group.push(p),
                    }
                }
                continue;
            }
            let requests: Vec<&Pending> = taken.iter().map(|(_, p)| p).collect();
            let written = match plan {
                Ok(plan) => self.committer.write(snapshot, plan, &requests).await,
                Err(e) => Err(e),
            };
            self.taken = taken.into_iter().chain(followers).map(|(_, p)| p).collect();
            let (txn, files) = written?;
            return Ok(Plan::commit(txn, positions, files, ()));
        }
    }

    fn lost(&mut self, outcome: &CommitOutcome) {
        // A concurrent commit moved a producer's sequence or the table: decide again.
        tracing::info!(?outcome, "push.commit_retried");
        self.committer.metrics.conflicts.inc();
    }
}

struct Rows {
    /// What the commit does to the table's schema.
    schema: SchemaChange,
    rows: Vec<RecordBatch>,
}

fn reply(p: Pending, outcome: Outcome) {
    // The client may have gone: its retry finds the outcome in the table.
    let _ = p.reply.send(outcome);
}

fn answer_all(group: Vec<Pending>, outcome: Outcome) {
    for p in group {
        reply(p, outcome.clone());
    }
}
