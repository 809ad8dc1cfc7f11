//! The committer of coordinated commits: whichever member of the committer group owns the
//! control partition commits every worker's requests.
//!
//! Contract:
//! - Every process of the pipeline runs this loop as a member of the committer group; only
//!   the owner of the control partition reads requests (from the group's committed offset, so a
//!   new committer re-reads what its predecessor had not finished) and commits. Losing the
//!   partition drops the unfinished requests at once: the next owner re-reads them.
//! - At most once per `interval` the pending requests are decided against the table as it is
//!   ([`select`]), the taken ones committed as one `STREAMING UPDATE` with one `txn` per
//!   partition, and every request answered. A lost race, an already-applied `txn` or an
//!   unknown outcome re-reads the table and decides again: what landed shows as positions at
//!   the requests' last offsets, so nothing is committed twice.
//! - Only after the answers are sent is the control offset committed (a courtesy: re-reading
//!   a request only answers it again).
//! - `leading` tells the pipeline's compactor whether to run: one compactor per table.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::messages::{select, Answer, Answers, CommitRequest, Control};
use crate::delta::actions::Action;
use crate::delta::app_id::TxnAppId;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::error::Result;
use crate::source::kafka::control::{ControlGroup, ControlProducer};
use crate::storage::{commit_exactly_once, Landed, Plan, PlanFn, RetryPolicy, Table};

/// Decides requests against one table and commits them: what a committer does once it holds
/// requests (no Kafka here, so it can be driven directly).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Decider {
    pub table: Table,
    pub app_id: String,
    pub topic: String,
    /// The committing member's name (in `commitInfo.operationParameters.committer`, answers).
    pub member: String,
}

/// One table's committer candidate.
pub(crate) struct Committer {
    pub decider: Decider,
    pub group: ControlGroup,
    pub producer: ControlProducer,
    pub interval: Duration,
    /// Set while this member is the committer.
    pub leading: Arc<AtomicBool>,
}

impl Committer {
    /// Runs until the task is aborted.
    pub(crate) async fn run(self) {
        let mut pending: Vec<CommitRequest> = Vec::new();
        let mut next_offset: Option<i64> = None;
        let mut last = Instant::now().checked_sub(self.interval).unwrap_or_else(Instant::now);
        let mut snapshot: Option<Snapshot> = None;
        loop {
            let record = match self.group.next(Duration::from_millis(20)).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "committer: control topic read failed");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    None
                }
            };
            let leads = self.group.leads();
            if leads != self.leading.swap(leads, Ordering::AcqRel) {
                tracing::info!(member = %self.decider.member, leads, "committer role changed");
                if !leads {
                    pending.clear();
                    next_offset = None;
                }
            }
            if let Some((offset, bytes)) = record {
                next_offset = Some(offset + 1);
                match serde_json::from_slice::<Control>(&bytes) {
                    Ok(Control::Request(r)) if r.app_id == self.decider.app_id && r.topic == self.decider.topic => {
                        if !pending.iter().any(|q| q.id == r.id) {
                            pending.push(r);
                        }
                    }
                    Ok(Control::Request(r)) => {
                        tracing::warn!(app_id = %r.app_id, topic = %r.topic, "committer: another pipeline's request on this control topic; ignored")
                    }
                    Ok(Control::Answers(_)) => {}
                    Err(e) => tracing::warn!(offset, error = %e, "committer: unreadable control record skipped"),
                }
            }
            if !leads || pending.is_empty() || last.elapsed() < self.interval {
                continue;
            }
            last = Instant::now();
            match self.decider.commit(&pending, &mut snapshot).await {
                Ok(answers) => {
                    if answers.version.is_some() {
                        crate::failpoint::hit("coordinated.committed");
                    }
                    let n = answers.answers.len();
                    match serde_json::to_vec(&Control::Answers(answers)) {
                        Ok(bytes) => {
                            if let Err(e) = self.producer.send(&bytes, Duration::from_secs(10)).await {
                                tracing::warn!(error = %e, "committer: answers not sent; workers will check the table");
                            }
                        }
                        Err(e) => tracing::error!(error = %e, "committer: answers not encodable"),
                    }
                    crate::failpoint::hit("coordinated.answered");
                    tracing::debug!(requests = n, "committer: requests answered");
                    pending.clear();
                    if let Some(o) = next_offset {
                        self.group.commit(o);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, requests = pending.len(), "committer: commit failed; trying again next interval")
                }
            }
        }
    }
}

impl Decider {
    fn app(&self, partition: i32) -> TxnAppId {
        TxnAppId::KafkaPartition { app: self.app_id.clone(), topic: self.topic.clone(), partition }
    }

    /// Decides `requests` against the table, commits the ones taken (through the commit path:
    /// decided again from the table after every lost race or store fault), and answers all.
    /// The workers' files are never staged here: a worker's request may be committed by the
    /// next committer after this one gave up, so they are left to VACUUM.
    ///
    /// # Errors
    /// A store or protocol error that is not transient, or a table that keeps moving.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn commit(&self, requests: &[CommitRequest], snapshot: &mut Option<Snapshot>) -> Result<Answers> {
        let decide = |s: Option<&Snapshot>| {
            let schema = s.map(|s| s.metadata.schema_string.as_str());
            let sel = select(requests, schema, |p| s.and_then(|s| self.app(p).version_in(s)));
            if sel.taken.is_empty() {
                return Ok(Plan::Nothing(sel));
            }
            let (txn, positions) = self.transaction(requests, &sel, s);
            Ok(Plan::commit(txn, positions, Vec::new(), sel))
        };
        Ok(
            match commit_exactly_once(&self.table, snapshot, &RetryPolicy::riding_faults(), &mut PlanFn(decide)).await?
            {
                Landed::Committed { version, answer: sel } => {
                    tracing::info!(version, requests = sel.taken.len(), of = requests.len(), "committer: committed");
                    self.answers(requests, &sel, Some(version))
                }
                Landed::Nothing(sel) => self.answers(requests, &sel, None),
            },
        )
    }

    /// The transaction of the taken requests and the positions it records.
    fn transaction(
        &self,
        requests: &[CommitRequest],
        sel: &super::messages::Selection,
        s: Option<&Snapshot>,
    ) -> (Transaction, Vec<(TxnAppId, i64)>) {
        let taken: Vec<&CommitRequest> = sel.taken.iter().map(|i| &requests[*i]).collect();
        // The one schema change taken (see `select`) goes first, in the rows' commit.
        let mut actions: Vec<Action> = Vec::new();
        for change in taken.iter().filter_map(|r| r.schema.as_ref()) {
            actions.extend(change.protocol.clone().map(Action::Protocol));
            actions.push(Action::Metadata(change.metadata.clone()));
        }
        let files = taken.iter().map(|r| r.adds.len()).sum::<usize>();
        actions.extend(taken.iter().flat_map(|r| r.adds.iter().cloned().map(Action::Add)));
        let partitions: std::collections::BTreeSet<i32> =
            taken.iter().flat_map(|r| r.partitions.keys().copied()).collect();
        let positions = partitions
            .into_iter()
            .filter_map(|p| sel.positions.get(&p).copied().flatten().map(|v| (self.app(p), v)))
            .collect();
        let txn = Transaction::new(Operation::StreamingUpdate, actions)
            .with_parameter("outputMode", "Append")
            .with_parameter("queryId", self.app_id.as_str())
            .with_parameter("epochId", s.map_or(0, |s| s.version).to_string())
            .with_parameter("committer", self.member.as_str())
            .with_metric("numAddedFiles", files)
            .with_metric("numOutputRows", taken.iter().map(|r| r.rows).sum::<u64>())
            .with_metric("numOutputBytes", taken.iter().map(|r| r.bytes).sum::<i64>())
            .with_metric("numRemovedFiles", 0)
            .with_metric("numDeadLetters", taken.iter().map(|r| r.dead_letters).sum::<u64>())
            .with_metric("numCommitRequests", taken.len());
        (txn, positions)
    }

    fn answers(&self, requests: &[CommitRequest], sel: &super::messages::Selection, version: Option<u64>) -> Answers {
        let answers = requests
            .iter()
            .enumerate()
            .map(|(i, r)| Answer {
                id: r.id.clone(),
                committed: version.is_some() && sel.taken.contains(&i),
                positions: r.partitions.keys().map(|p| (*p, sel.positions.get(p).copied().flatten())).collect(),
            })
            .collect();
        Answers { committer: self.member.clone(), version, answers }
    }
}
