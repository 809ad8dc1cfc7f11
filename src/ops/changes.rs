//! Following a table's log: a cursor that yields the row-level changes of each commit in
//! order, keeping the snapshot current incrementally (no replay per commit).
//!
//! A commit that cannot be read because it is missing while later ones exist (removed by log
//! cleanup, or a damaged log) is an error, never a silent skip. `_commit_timestamp` is the
//! in-commit timestamp when present, else the commit file's time made monotonic as Spark does
//! (a time not after the previous commit's becomes that time + 1 ms).

use arrow::array::RecordBatch;

use crate::delta::actions::Action;
use crate::delta::change_feed::commit_timestamp;
use crate::delta::predicate::Expr;
use crate::delta::replay::TableState;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::Table;

/// The changes of one commit.
#[derive(Debug)]
pub struct CommitChanges {
    pub version: u64,
    pub timestamp_ms: i64,
    pub batches: Vec<RecordBatch>,
}

/// Reads commits from a start version onwards.
pub struct ChangeCursor {
    table: Table,
    snapshot: Option<Snapshot>,
    next: u64,
    last_timestamp: i64,
    empty_polls: u32,
    filter: Option<Expr>,
}

impl ChangeCursor {
    /// A cursor whose first commit is `from`.
    ///
    /// # Errors
    /// As [`Table::snapshot`] for version `from - 1`.
    pub async fn open(table: &Table, from: u64) -> Result<ChangeCursor> {
        let snapshot = if from == 0 { None } else { Some(table.snapshot(Some(from - 1)).await?) };
        Ok(ChangeCursor {
            table: table.clone(),
            snapshot,
            next: from,
            last_timestamp: i64::MIN,
            empty_polls: 0,
            filter: None,
        })
    }

    /// Only rows matching `filter`; files that cannot match (by partition values and
    /// statistics) are not read.
    pub fn with_filter(mut self, filter: Option<Expr>) -> Self {
        self.filter = filter;
        self
    }

    /// The next version the cursor will read.
    pub fn next_version(&self) -> u64 {
        self.next
    }

    /// The table as of the last commit read.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The changes of the next commit, or `None` when it does not exist yet.
    ///
    /// # Errors
    /// [`Error::MissingVersion`] when the next commit is gone while later ones exist;
    /// protocol errors when a commit makes the table unreadable; storage and data errors.
    pub async fn poll(&mut self) -> Result<Option<CommitChanges>> {
        let version = self.next;
        let (actions, modified) = match self.table.read_commit_with_time(version).await {
            Ok(x) => x,
            Err(Error::MissingVersion { .. }) => {
                self.empty_polls += 1;
                // Now and then, a listing that starts at our position finds gaps.
                if self.empty_polls % 20 == 1 {
                    let listing = self.table.list_log(Some(version)).await?;
                    if let Some((&later, _)) = listing.commits.range(version + 1..).next() {
                        return Err(Error::MissingVersion {
                            version,
                            reason: format!("commit {later} exists but {version} does not (removed by log cleanup?)"),
                        });
                    }
                }
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        self.empty_polls = 0;
        let name = crate::delta::log_segment::commit_name(version);
        match &mut self.snapshot {
            Some(s) => s.apply_commit(version, actions.clone(), &name)?,
            None => {
                let mut state = TableState::default();
                state.apply_commit(version, &actions, &name)?;
                self.snapshot = Some(Snapshot::new(state, None, chrono::Utc::now().timestamp_millis())?);
            }
        }
        let has_ict =
            actions.iter().any(|a| matches!(a, Action::CommitInfo(v) if v.get("inCommitTimestamp").is_some()));
        let mut ts = commit_timestamp(&actions, modified);
        if !has_ict && ts <= self.last_timestamp {
            ts = self.last_timestamp + 1;
        }
        self.last_timestamp = ts;
        let snapshot = self.snapshot.as_ref().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
        let batches = self.table.commit_changes(snapshot, version, &actions, ts, self.filter.as_ref()).await?;
        self.next = version + 1;
        Ok(Some(CommitChanges { version, timestamp_ms: ts, batches }))
    }
}
