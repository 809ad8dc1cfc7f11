//! The one exactly-once commit path of every writer that records a position: refresh → plan →
//! positions → staged commit → outcome → retry, under one [`RetryPolicy`].
//!
//! Every writer whose commits carry a `txn` (Kafka flushes, routed tables, the coordinated
//! committer, keyed upserts, followers, group slices, both mirrors, push groups, dead letters,
//! `deltabus write --app-id`) goes through [`commit_exactly_once`]. The writer only says what
//! to commit against the table as it is now ([`Planner::plan`]); the recipe lives here:
//!
//! 1. The table is re-read before every plan, so a plan never builds on a stale view (another
//!    writer's commit, or our own whose answer was lost, is in it).
//! 2. The planner skips what the table already holds (it reads its positions from the fresh
//!    snapshot: [`TxnAppId::version_in`], one map lookup) and answers [`Plan::Nothing`] when
//!    nothing is left.
//! 3. The helper adds one `txn` per position (`lastUpdated` from the table's clock) and checks,
//!    again, that none of them is already applied: a stream's own position never expires,
//!    whatever `delta.setTransactionRetentionDuration` says (only foreign app ids follow the
//!    protocol's expiry, and no writer here decides anything by them).
//! 4. The files of the plan are staged and the transaction committed through the one staged
//!    commit (put-if-absent, own commits recognised by `txnId` after lost answers, files kept
//!    after an unknown outcome).
//! 5. A conflict or an already-applied outcome discards the files and plans again from the
//!    fresh table (at most `policy.replans` times); a retryable store fault (an unknown
//!    outcome included) waits and plans again (at most `policy.store_faults` times), and the
//!    fresh table then shows whether the commit landed. Anything else is the caller's error.
//!
//! The outcome is a value: [`Landed::Committed`] with the version and the planner's answer, or
//! [`Landed::Nothing`] when the table already held everything.

use std::future::Future;

use super::committer::RetryPolicy;
use super::location::Table;
use super::staged::StagedCommit;
use crate::delta::actions::{Action, Txn};
use crate::delta::app_id::TxnAppId;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::{Error, Result};

/// A commit a planner wants, planned against the snapshot it was handed.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Planned<T> {
    /// The transaction, without the positions' `txn` actions (the helper adds them).
    pub txn: Transaction,
    /// The positions this commit records: one `txn` each.
    pub positions: Vec<(TxnAppId, i64)>,
    /// Files written for this commit only (deleted when it is proven not to land).
    pub files: Vec<String>,
    /// What follows a landed commit.
    pub then: Then<T>,
}

/// What follows a landed commit.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Then<T> {
    /// The work is done: this is the answer.
    Done(T),
    /// The commit was a step (a table created, a schema carried over): plan again.
    PlanAgain,
}

/// A planner's answer for the table as it is now.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Plan<T> {
    /// Nothing (left) to commit: the table holds it already.
    Nothing(T),
    /// Commit this.
    Commit(Box<Planned<T>>),
}

impl<T> Plan<T> {
    /// A commit whose landing ends the work with `answer`.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn commit(txn: Transaction, positions: Vec<(TxnAppId, i64)>, files: Vec<String>, answer: T) -> Self {
        Plan::Commit(Box::new(Planned { txn, positions, files, then: Then::Done(answer) }))
    }

    /// A commit after which the planner plans again (creating a table, evolving a schema).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn step(txn: Transaction, files: Vec<String>) -> Self {
        Plan::Commit(Box::new(Planned { txn, positions: Vec::new(), files, then: Then::PlanAgain }))
    }
}

/// How the work ended.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Landed<T> {
    /// The last commit landed as `version`.
    Committed { version: u64, answer: T },
    /// The table already held everything; nothing (more) was committed.
    Nothing(T),
}

impl<T> Landed<T> {
    /// The planner's answer.
    pub(crate) fn answer(self) -> T {
        match self {
            Landed::Committed { answer, .. } | Landed::Nothing(answer) => answer,
        }
    }

    /// The version committed, if anything was.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn version(&self) -> Option<u64> {
        match self {
            Landed::Committed { version, .. } => Some(*version),
            Landed::Nothing(_) => None,
        }
    }
}

/// A writer's side of the commit path: what to commit against the table as it is now.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) trait Planner: Send {
    type Answer: Send;

    /// Plans against `snapshot` (`None`: no table yet). Called again after every conflict,
    /// fault and step, always with a freshly read table.
    fn plan(&mut self, snapshot: Option<&Snapshot>) -> impl Future<Output = Result<Plan<Self::Answer>>> + Send;

    /// Told when a planned commit landed as `version` (steps included): for counting.
    fn landed(&mut self, _version: u64) {}

    /// Told when a planned commit did not land (a conflict, or its positions were taken by
    /// another writer): for counting; the next plan sees the fresh table.
    fn lost(&mut self, _outcome: &CommitOutcome) {}
}

/// A planner from a synchronous function of the table: schema changes, table creation and
/// positions alone, whose plans write no files.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PlanFn<F>(pub F);

impl<T: Send, F: FnMut(Option<&Snapshot>) -> Result<Plan<T>> + Send> Planner for PlanFn<F> {
    type Answer = T;

    async fn plan(&mut self, snapshot: Option<&Snapshot>) -> Result<Plan<T>> {
        (self.0)(snapshot)
    }
}

/// Runs the commit path for `planner` on `table`; `snapshot` is the writer's view, refreshed
/// in place (a writer keeps it between calls so that a refresh reads only new commits).
///
/// # Errors
/// The planner's errors; [`Error::CommitConflict`] after `policy.replans` lost commits in a
/// row; store errors after `policy.store_faults` retried faults ([`Error::CommitUnknown`] when
/// the last commit's outcome is unknown: its files are kept).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn commit_exactly_once<P: Planner>(
    table: &Table,
    snapshot: &mut Option<Snapshot>,
    policy: &RetryPolicy,
    planner: &mut P,
) -> Result<Landed<P::Answer>> {
    let (mut lost, mut faults) = (0u32, 0u32);
    let mut last: Option<u64> = None;
    loop {
        let step = async {
            table.refresh(snapshot).await?;
            let plan = planner.plan(snapshot.as_ref()).await?;
            commit_plan(table, snapshot.as_ref(), policy, plan).await
        }
        .await;
        match step {
            Ok(Step::Done(landed)) => {
                if let Some(v) = landed.version() {
                    planner.landed(v);
                }
                return Ok(match (landed, last) {
                    (Landed::Nothing(answer), Some(version)) => Landed::Committed { version, answer },
                    (landed, _) => landed,
                });
            }
            Ok(Step::Again(version)) => {
                planner.landed(version);
                last = Some(version);
                lost = 0;
            }
            Ok(Step::Lost(outcome)) => {
                planner.lost(&outcome);
                lost += 1;
                tracing::info!(?outcome, attempt = lost, "commit.replanned: the table moved under the commit");
                if lost >= policy.replans {
                    let (version, reason) = match outcome {
                        CommitOutcome::Conflict { version, reason } => (version, reason),
                        _ => (snapshot.as_ref().map_or(0, |s| s.version), String::new()),
                    };
                    return Err(Error::CommitConflict {
                        version,
                        reason: format!("lost {lost} commits in a row under concurrent writers (last: {reason})"),
                    });
                }
                tokio::time::sleep(policy.backoff(lost - 1)).await;
            }
            Err(e) if e.is_retryable() && faults < policy.store_faults => {
                faults += 1;
                tracing::warn!(error = %e, attempt = faults, "commit.fault: planning again from the table");
                tokio::time::sleep(crate::common::backoff::FAULTS.delay(faults - 1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

enum Step<T> {
    Done(Landed<T>),
    /// A step landed as this version: plan again.
    Again(u64),
    Lost(CommitOutcome),
}

async fn commit_plan<T>(
    table: &Table,
    snapshot: Option<&Snapshot>,
    policy: &RetryPolicy,
    plan: Plan<T>,
) -> Result<Step<T>> {
    let planned = match plan {
        Plan::Nothing(answer) => return Ok(Step::Done(Landed::Nothing(answer))),
        Plan::Commit(p) => p,
    };
    let Planned { mut txn, positions, files, then } = *planned;
    let mut staged = StagedCommit::new(table);
    staged.stage(files);
    // A planner that missed its own recorded position must not write it twice.
    if let Some(s) = snapshot {
        if let Some((app, held)) =
            positions.iter().find_map(|(app, v)| app.version_in(s).filter(|held| held >= v).map(|h| (app, h)))
        {
            staged.discard().await;
            return Ok(Step::Lost(CommitOutcome::AlreadyApplied { app_id: app.to_string(), version: held }));
        }
    }
    let now = table.clock().now_ms();
    txn.actions.extend(positions.iter().map(|(app, version)| {
        Action::Txn(Txn { app_id: app.to_string(), version: *version, last_updated: Some(now) })
    }));
    Ok(match staged.commit(snapshot, &txn, policy).await? {
        CommitOutcome::Committed { version } => match then {
            Then::Done(answer) => Step::Done(Landed::Committed { version, answer }),
            Then::PlanAgain => Step::Again(version),
        },
        lost => Step::Lost(lost),
    })
}
