//! The one staged commit every writer goes through: stage files, commit the transaction,
//! then clean up according to what is *proven* about the commit.
//!
//! Rules (see `docs/src/concepts/exactly-once.md`):
//! - Files are staged under unique names before the commit; nothing references them yet.
//! - The committer recognises its own commit by `commitInfo.txnId`, also when the PUT's answer
//!   was lost ([`Table::commit`]), so `Committed` is reported for a commit that landed.
//! - Staged files are deleted only when the commit is proven not to have landed: a conflict,
//!   an already-applied txn, or an error raised before the commit was sent. After
//!   [`Error::CommitUnknown`] they are left in place (an orphan is vacuum's; deleting a file of
//!   a landed commit would break the table).

use super::committer::RetryPolicy;
use super::location::Table;
use crate::delta::actions::Action;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::{Error, Result};

/// Files written for one commit that has not been decided yet.
#[derive(Debug)]
pub(crate) struct StagedCommit<'a> {
    table: &'a Table,
    files: Vec<String>,
}

impl<'a> StagedCommit<'a> {
    /// Nothing staged yet.
    pub(crate) fn new(table: &'a Table) -> Self {
        StagedCommit { table, files: Vec::new() }
    }

    /// Records files written for this commit (paths as the log will name them).
    pub(crate) fn stage(&mut self, paths: impl IntoIterator<Item = String>) {
        self.files.extend(paths);
    }

    /// Records the files that `actions` add (data, change data and deletion-vector files are
    /// staged by whoever writes them; adds are the common case).
    pub(crate) fn stage_adds(&mut self, actions: &[Action]) {
        self.files.extend(actions.iter().filter_map(|a| match a {
            Action::Add(a) => Some(a.path.clone()),
            _ => None,
        }));
    }

    /// The files staged so far.
    pub(crate) fn files(&self) -> &[String] {
        &self.files
    }

    /// Gives up before committing: every staged file is deleted (best effort).
    pub(crate) async fn discard(self) {
        self.table.delete_uncommitted(&self.files).await;
    }

    /// Creates the table with `txn`; when another writer created it first, `append` is asked
    /// for an append of the same files against the winner's snapshot (`None`: they do not
    /// fit it) and that is committed instead. Cleans up as [`StagedCommit::commit`].
    ///
    /// # Errors
    /// As [`StagedCommit::commit`].
    pub(crate) async fn create_or_append(
        self,
        txn: &Transaction,
        policy: &RetryPolicy,
        append: impl FnOnce(&Snapshot) -> Option<Transaction>,
    ) -> Result<CommitOutcome> {
        let first = self.table.commit(None, txn, policy).await;
        if !matches!(first, Ok(CommitOutcome::Conflict { version: 0, .. })) {
            return self.finish(txn, first).await;
        }
        let winner = match self.table.snapshot(None).await {
            Ok(w) => w,
            Err(e) => return self.finish(txn, Err(e)).await,
        };
        let Some(retry) = append(&winner) else { return self.finish(txn, first).await };
        tracing::info!(
            table = self.table.url(),
            "write.created_concurrently: appending to the table another writer created"
        );
        let result = self.table.commit(Some(&winner), &retry, policy).await;
        self.finish(&retry, result).await
    }

    /// Commits `txn` (planned against `snapshot`; `None` creates the table) and cleans up.
    ///
    /// # Errors
    /// As [`Table::commit`]; after [`Error::CommitUnknown`] the staged files are kept.
    pub(crate) async fn commit(
        self,
        snapshot: Option<&Snapshot>,
        txn: &Transaction,
        policy: &RetryPolicy,
    ) -> Result<CommitOutcome> {
        let result = self.table.commit(snapshot, txn, policy).await;
        self.finish(txn, result).await
    }

    /// Commits `txn` like [`StagedCommit::commit`], except that a conflict or an
    /// already-applied txn keeps the staged files: the caller re-plans with them (more files
    /// may be staged) and commits again, or [`discard`](StagedCommit::discard)s them.
    ///
    /// # Errors
    /// As [`StagedCommit::commit`] (the files are deleted unless the outcome is unknown).
    pub(crate) async fn try_commit(
        &mut self,
        snapshot: Option<&Snapshot>,
        txn: &Transaction,
        policy: &RetryPolicy,
    ) -> Result<CommitOutcome> {
        let result = self.table.commit(snapshot, txn, policy).await;
        match &result {
            Ok(_) | Err(Error::CommitUnknown { .. }) => {}
            Err(_) => {
                self.table.delete_uncommitted(&self.files).await;
                self.files.clear();
            }
        }
        if let Err(Error::CommitUnknown { version, .. }) = &result {
            tracing::warn!(version, files = self.files.len(), operation = %txn.operation,
                "commit.outcome_unknown: staged files kept (vacuum removes them if the commit did not land)");
        }
        result
    }

    async fn finish(self, txn: &Transaction, result: Result<CommitOutcome>) -> Result<CommitOutcome> {
        match &result {
            Ok(CommitOutcome::Committed { .. }) => {}
            Ok(_) => self.discard().await,
            Err(Error::CommitUnknown { version, .. }) => {
                tracing::warn!(
                    version,
                    files = self.files.len(),
                    operation = %txn.operation,
                    "commit.outcome_unknown: staged files kept (vacuum removes them if the commit did not land)"
                );
            }
            // The committer raises other errors only while no sent commit is unaccounted for.
            Err(_) => self.discard().await,
        }
        result
    }
}
