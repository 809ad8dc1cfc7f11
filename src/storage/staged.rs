//! The one staged commit every writer goes through: stage files, commit the transaction,
//! then clean up according to what is *proven* about the commit.
//!
//! Rules (see `docs/exactly-once.md`):
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
pub struct StagedCommit<'a> {
    table: &'a Table,
    files: Vec<String>,
}

impl<'a> StagedCommit<'a> {
    /// Nothing staged yet.
    pub fn new(table: &'a Table) -> Self {
        StagedCommit { table, files: Vec::new() }
    }

    /// Records files written for this commit (paths as the log will name them).
    pub fn stage(&mut self, paths: impl IntoIterator<Item = String>) {
        self.files.extend(paths);
    }

    /// Records the files that `actions` add (data, change data and deletion-vector files are
    /// staged by whoever writes them; adds are the common case).
    pub fn stage_adds(&mut self, actions: &[Action]) {
        self.files.extend(actions.iter().filter_map(|a| match a {
            Action::Add(a) => Some(a.path.clone()),
            _ => None,
        }));
    }

    /// The files staged so far.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Gives up before committing: every staged file is deleted (best effort).
    pub async fn discard(self) {
        self.table.delete_uncommitted(&self.files).await;
    }

    /// Commits `txn` (planned against `snapshot`; `None` creates the table) and cleans up.
    ///
    /// # Errors
    /// As [`Table::commit`]; after [`Error::CommitUnknown`] the staged files are kept.
    pub async fn commit(
        self,
        snapshot: Option<&Snapshot>,
        txn: &Transaction,
        policy: &RetryPolicy,
    ) -> Result<CommitOutcome> {
        let result = self.table.commit(snapshot, txn, policy).await;
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
