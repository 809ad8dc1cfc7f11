//! `deltabus write --app-id A --txn-version V`: the write's one commit through the one
//! exactly-once commit path ([`commit_exactly_once`]).
//!
//! The rows are already in data files when the commit starts (the input is read once), so the
//! planner does not hand its files to the helper to delete after a lost commit: it plans the
//! same files again against the fresh table, and the caller deletes them when the write ends
//! without them (never after an unknown outcome).
//!
//! Each plan, against the table as it is now:
//! 1. the table holds `A` at `V` or later → nothing to commit (`already_applied`);
//! 2. the last commit lost to a conflicting one → the write ends with that conflict;
//! 3. no table → the creating commit (protocol, metadata, files, `txn`);
//! 4. a table created since the write began → `--mode create` fails; an append goes in when
//!    the winner's schema and partitioning are the ones the files were written with;
//! 5. an existing table → the planned commit, as long as its protocol and metadata are the ones
//!    the write read (the files were written, and any schema or property change planned, for
//!    them); otherwise the write ends with a conflict.

use crate::delta::actions::{Action, Metadata, Protocol};
use crate::delta::app_id::TxnAppId;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{commit_exactly_once, Landed, Plan, Planner, RetryPolicy, Table};

use super::write::WriteMode;

/// How the write's commit ended, and whether its files may be deleted.
pub(super) struct TxnWrite {
    pub outcome: CommitOutcome,
    /// Whether the files are referenced by no commit and never can be (they are deleted).
    pub files_unused: bool,
}

/// The write's commit: `txn` as planned against `read` (the table the write began with, `None`
/// when it creates it), committed once for `(app_id, version)`.
///
/// # Errors
/// [`Error::InvalidArgument`] when `--mode create` finds a table created meanwhile, or one of
/// another schema; storage errors ([`Error::CommitUnknown`]: the files are kept).
pub(super) async fn commit_write(
    table: &Table,
    read: Option<&Snapshot>,
    txn: Transaction,
    mode: WriteMode,
    (app_id, version): (&str, i64),
    policy: &RetryPolicy,
) -> Result<TxnWrite> {
    let mut planner = WritePlanner {
        app: TxnAppId::Named(app_id.to_string()),
        version,
        read: read.map(|s| (s.protocol.clone(), s.metadata.clone())),
        schema_of_files: txn_metadata(&txn).or_else(|| read.map(|s| s.metadata.clone())),
        txn,
        mode,
        plans: 0,
        lost: 0,
        conflict: None,
    };
    let mut view = read.cloned();
    let landed = commit_exactly_once(table, &mut view, policy, &mut planner).await;
    // A plan that followed neither the first nor a lost commit followed a fault: a commit of
    // ours may have landed unseen, so its files stay (vacuum's, if it did not).
    let faulted = planner.plans > planner.lost + 1;
    match landed {
        Ok(Landed::Committed { version, .. }) => {
            Ok(TxnWrite { outcome: CommitOutcome::Committed { version }, files_unused: false })
        }
        Ok(Landed::Nothing(outcome)) => Ok(TxnWrite { outcome, files_unused: !faulted }),
        Err(Error::CommitConflict { version, reason }) if !faulted => {
            Ok(TxnWrite { outcome: CommitOutcome::Conflict { version, reason }, files_unused: true })
        }
        Err(e) => Err(e),
    }
}

/// The metadata a transaction sets, if any.
fn txn_metadata(txn: &Transaction) -> Option<Metadata> {
    txn.actions.iter().rev().find_map(|a| match a {
        Action::Metadata(m) => Some(m.clone()),
        _ => None,
    })
}

struct WritePlanner {
    app: TxnAppId,
    version: i64,
    /// The protocol and metadata the write read (`None`: it creates the table).
    read: Option<(Protocol, Metadata)>,
    /// The metadata the files were written for.
    schema_of_files: Option<Metadata>,
    txn: Transaction,
    mode: WriteMode,
    plans: u32,
    lost: u32,
    conflict: Option<(u64, String)>,
}

impl WritePlanner {
    fn positions(&self) -> Vec<(TxnAppId, i64)> {
        vec![(self.app.clone(), self.version)]
    }

    /// The commit for a table another writer created after this write found none.
    fn append_to_winner(&self, winner: &Snapshot) -> Result<Plan<CommitOutcome>> {
        if self.mode == WriteMode::Create {
            return Err(Error::InvalidArgument(format!(
                "the table was created by another writer meanwhile (version {}); nothing was committed",
                winner.version
            )));
        }
        let ours =
            self.schema_of_files.as_ref().ok_or_else(|| Error::Internal("a new table without metadata".into()))?;
        let fits = winner.metadata.schema_string == ours.schema_string
            && winner.metadata.partition_columns == ours.partition_columns
            && crate::delta::features::check_writable(&winner.protocol, &winner.metadata).is_ok();
        if !fits {
            return Err(Error::InvalidArgument(
                "another writer created the table meanwhile with another schema or partitioning; nothing was committed"
                    .into(),
            ));
        }
        tracing::info!("write.created_concurrently: appending to the table another writer created");
        let actions =
            self.txn.actions.iter().filter(|a| !matches!(a, Action::Protocol(_) | Action::Metadata(_))).cloned();
        let mut txn = Transaction::new(Operation::Write, actions.collect());
        txn.parameters = self.txn.parameters.clone();
        txn.parameters.insert("mode".into(), "Append".into());
        txn.metrics = self.txn.metrics.clone();
        Ok(Plan::commit(txn, self.positions(), Vec::new(), placeholder()))
    }
}

/// The answer of a commit that lands (the caller reports the version).
fn placeholder() -> CommitOutcome {
    CommitOutcome::Committed { version: 0 }
}

impl Planner for WritePlanner {
    type Answer = CommitOutcome;

    async fn plan(&mut self, snapshot: Option<&Snapshot>) -> Result<Plan<CommitOutcome>> {
        self.plans += 1;
        if let Some(held) = snapshot.and_then(|s| self.app.version_in(s)).filter(|h| *h >= self.version) {
            return Ok(Plan::Nothing(CommitOutcome::AlreadyApplied { app_id: self.app.to_string(), version: held }));
        }
        if let Some((version, reason)) = self.conflict.take() {
            return Err(Error::CommitConflict { version, reason });
        }
        let commit = |txn: Transaction| Plan::commit(txn, self.positions(), Vec::new(), placeholder());
        match (snapshot, &self.read) {
            (None, None) => Ok(commit(self.txn.clone())),
            (Some(winner), None) => self.append_to_winner(winner),
            (Some(now), Some((protocol, metadata))) if now.protocol == *protocol && now.metadata == *metadata => {
                Ok(commit(self.txn.clone()))
            }
            (Some(now), Some(_)) => Err(Error::CommitConflict {
                version: now.version,
                reason: "the table's schema, properties or protocol changed while the rows were written".into(),
            }),
            (None, Some(_)) => Err(Error::NotATable { location: "the table the write began with".into() }),
        }
    }

    /// A creating commit that lost plans again as an append to the winner; any other lost
    /// conflict ends the write (a blind append conflicts only with what changes its plan).
    fn lost(&mut self, outcome: &CommitOutcome) {
        self.lost += 1;
        if let (CommitOutcome::Conflict { version, reason }, Some(_)) = (outcome, &self.read) {
            self.conflict = Some((*version, reason.clone()));
        }
    }
}
