//! Following a table's log: a cursor that yields the row-level changes of each commit in
//! order, keeping the snapshot current incrementally (no replay per commit).
//!
//! A commit that cannot be read because it is missing while later ones exist (removed by log
//! cleanup, or a damaged log) is an error, never a silent skip — unless the cursor is told to
//! skip gaps, which it then does loudly (a warning naming the versions lost), rebuilding its
//! snapshot from the log after the gap. A commit that changes the schema is flagged
//! ([`CommitChanges::schema_changed`]). `_commit_timestamp` is the
//! in-commit timestamp when present, else the commit file's time made monotonic as Spark does
//! (a time not after the previous commit's becomes that time + 1 ms).

use arrow::array::RecordBatch;

use crate::delta::actions::Action;
use crate::delta::change_feed::commit_timestamp;
use crate::delta::predicate::Expr;
use crate::delta::replay::TableState;
use crate::delta::scan::ScanPlan;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::Table;

/// The changes of one commit.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CommitChanges {
    pub version: u64,
    pub timestamp_ms: i64,
    pub batches: Vec<RecordBatch>,
    /// The commit changed the table schema (its rows already have the new one).
    pub schema_changed: bool,
    /// Data and change-data files the commit's changes come from.
    pub files: usize,
}

impl CommitChanges {
    /// The same commit carrying `batches` instead (a part of its rows).
    pub(crate) fn with_batches(&self, batches: Vec<RecordBatch>) -> CommitChanges {
        CommitChanges {
            version: self.version,
            timestamp_ms: self.timestamp_ms,
            batches,
            schema_changed: self.schema_changed,
            files: self.files,
        }
    }

    /// The number of change rows.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn rows(&self) -> u64 {
        self.batches.iter().map(|b| b.num_rows() as u64).sum()
    }
}

/// A file's slice (its path as the log names it), or `None` to leave the file unread.
pub(crate) type SliceOfFile = dyn Fn(&str) -> Option<u32> + Sync;

/// Reads commits from a start version onwards.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ChangeCursor {
    table: Table,
    snapshot: Option<Snapshot>,
    next: u64,
    last_timestamp: i64,
    empty_polls: u32,
    filter: Option<Expr>,
    skip_gaps: bool,
    /// The schema before the commit last applied to `snapshot`: a poll that failed after
    /// applying a commit (a store fault reading its files) is retried without applying it twice.
    schema_before: Option<String>,
}

impl ChangeCursor {
    /// A cursor whose first commit is `from`.
    ///
    /// # Errors
    /// As [`Table::snapshot`] for version `from - 1`.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn open(table: &Table, from: u64) -> Result<ChangeCursor> {
        let snapshot = if from == 0 { None } else { Some(table.snapshot(Some(from - 1)).await?) };
        Ok(ChangeCursor {
            table: table.clone(),
            snapshot,
            next: from,
            last_timestamp: i64::MIN,
            empty_polls: 0,
            filter: None,
            skip_gaps: false,
            schema_before: None,
        })
    }

    /// A cursor whose first commit is `from`, or, when the state before `from` can no longer
    /// be rebuilt (log cleanup removed it), one that starts after the oldest version that can,
    /// with a warning naming the versions skipped.
    ///
    /// # Errors
    /// As [`ChangeCursor::open`] when nothing after `from` can be rebuilt either.
    pub(crate) async fn open_skipping_gaps(table: &Table, from: u64) -> Result<ChangeCursor> {
        match ChangeCursor::open(table, from).await {
            Err(Error::MissingVersion { version, reason }) => {
                let listing = table.list_log(None).await?;
                let Some(oldest) = listing.oldest_readable().filter(|o| *o + 1 > from) else {
                    return Err(Error::MissingVersion { version, reason });
                };
                tracing::warn!(
                    table = table.url(),
                    "changes.gap_skipped: versions {from}..{oldest} are skipped (the log no longer holds them); their changes are lost to this follower"
                );
                Ok(ChangeCursor::open(table, oldest + 1).await?.skip_gaps(true))
            }
            other => other.map(|c| c.skip_gaps(true)),
        }
    }

    /// Skip over commits removed from the log (with a warning) instead of failing.
    pub(crate) fn skip_gaps(mut self, skip: bool) -> Self {
        self.skip_gaps = skip;
        self
    }

    /// The whole table as of `version` as insert rows of that version (for snapshot-then-follow):
    /// every live file minus its deletion vector, stamped with the commit's version and time.
    /// The cursor then continues at `version + 1`.
    ///
    /// # Errors
    /// As [`Table::snapshot`] and [`ChangeReader::commit_changes`](super::change_reader::ChangeReader::commit_changes).
    pub(crate) async fn snapshot_rows(
        table: &Table,
        version: u64,
        filter: Option<Expr>,
    ) -> Result<(CommitChanges, ChangeCursor)> {
        let snapshot = table.snapshot(Some(version)).await?;
        let (commit, modified) = table.change_rows().read_commit_with_time(version).await.unwrap_or_default();
        // Without the commit file (only a checkpoint left), the snapshot is stamped with now.
        let timestamp_ms = if commit.is_empty() { table.clock().now_ms() } else { commit_timestamp(&commit, modified) };
        let adds: Vec<Action> = snapshot
            .files()
            .into_iter()
            .map(|a| {
                let mut a = a.clone();
                a.data_change = true;
                Action::Add(a)
            })
            .collect();
        let batches =
            table.change_rows().commit_changes(&snapshot, version, &adds, timestamp_ms, filter.as_ref()).await?;
        let cursor = ChangeCursor {
            table: table.clone(),
            snapshot: Some(snapshot),
            next: version + 1,
            last_timestamp: timestamp_ms,
            empty_polls: 0,
            filter,
            skip_gaps: false,
            schema_before: None,
        };
        let files = adds.len();
        Ok((CommitChanges { version, timestamp_ms, batches, schema_changed: false, files }, cursor))
    }

    /// Only rows matching `filter`; files that cannot match (by partition values and
    /// statistics) are not read.
    pub(crate) fn with_filter(mut self, filter: Option<Expr>) -> Self {
        self.filter = filter;
        self
    }

    /// The next version the cursor will read.
    pub(crate) fn next_version(&self) -> u64 {
        self.next
    }

    /// The table as of the last commit read.
    pub(crate) fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// Looks for a gap at the next version now (a listing from it): `true` when one was
    /// skipped (`skip_gaps`), so the cursor moved on.
    ///
    /// # Errors
    /// [`Error::MissingVersion`] for a gap without `skip_gaps`; storage errors.
    pub(crate) async fn check_gap(&mut self) -> Result<bool> {
        self.skip_gap(self.next).await
    }

    /// Whether the missing commit `version` is a gap (later commits exist): an error, or with
    /// `skip_gaps` a jump to the first version after it whose snapshot can be rebuilt (right
    /// after the gap, or after the next checkpoint when the gap's state cannot be replayed).
    async fn skip_gap(&mut self, version: u64) -> Result<bool> {
        let listing = self.table.list_log(Some(version)).await?;
        let Some((&later, _)) = listing.commits.range(version + 1..).next() else { return Ok(false) };
        if !self.skip_gaps {
            return Err(Error::MissingVersion {
                version,
                reason: format!("commit {later} exists but {version} does not (removed by log cleanup?)"),
            });
        }
        let (snapshot, next) = match self.table.snapshot(Some(later - 1)).await {
            Ok(s) => (s, later),
            Err(_) => {
                let Some(&cp) = listing.checkpoints.keys().find(|v| **v >= later) else {
                    return Err(Error::MissingVersion {
                        version,
                        reason: format!(
                            "commits from {version} are missing and no later checkpoint lets the follower skip them"
                        ),
                    });
                };
                (self.table.snapshot(Some(cp)).await?, cp + 1)
            }
        };
        tracing::warn!(
            table = self.table.url(),
            "changes.gap_skipped: versions {version}..{} are skipped (commit {version} is missing from the log); their changes are lost to this follower",
            next - 1
        );
        self.snapshot = Some(snapshot);
        self.next = next;
        self.empty_polls = 0;
        Ok(true)
    }

    /// The changes of the next commit, or `None` when it does not exist yet.
    ///
    /// # Errors
    /// [`Error::MissingVersion`] when the next commit is gone while later ones exist;
    /// protocol errors when a commit makes the table unreadable; storage and data errors.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn poll(&mut self) -> Result<Option<CommitChanges>> {
        Ok(self.poll_inner(None).await?.map(|(changes, _)| changes))
    }

    /// As [`ChangeCursor::poll`], reading only the files `slice_of(path)` places in a slice,
    /// with each batch's slice (in batch order).
    ///
    /// # Errors
    /// As [`ChangeCursor::poll`].
    pub(crate) async fn poll_by_file(&mut self, slice_of: &SliceOfFile) -> Result<Option<(CommitChanges, Vec<u32>)>> {
        self.poll_inner(Some(slice_of)).await
    }

    /// Applies the next commit's log entry, as [`ChangeCursor::poll`] does, without reading
    /// its files: they are read apart with [`PlannedCommit::read_by_file`], so that several
    /// commits' files can be read at once while the cursor moves on (`None`: no next commit yet).
    ///
    /// # Errors
    /// As [`ChangeCursor::poll`], but for reading the files; [`Error::Internal`] for a cursor
    /// with a filter (a planned commit is read without one).
    pub(crate) async fn plan_next(&mut self) -> Result<Option<PlannedCommit>> {
        if self.filter.is_some() {
            return Err(Error::Internal("a filtered cursor's commits are read with poll, not planned".into()));
        }
        let Some(next) = self.apply_next().await? else { return Ok(None) };
        let snapshot = self.snapshot.as_ref().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
        let plan = self.table.data().scan_plan(snapshot);
        self.next = next.version + 1;
        self.last_timestamp = next.timestamp_ms;
        Ok(Some(PlannedCommit { next, plan }))
    }

    async fn poll_inner(&mut self, slice_of: Option<&SliceOfFile>) -> Result<Option<(CommitChanges, Vec<u32>)>> {
        let Some(next) = self.apply_next().await? else { return Ok(None) };
        let Next { version, actions, timestamp_ms: ts, schema_changed } = next;
        let snapshot = self.snapshot.as_ref().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
        let (tags, batches): (Vec<u32>, Vec<RecordBatch>) = match slice_of {
            None => {
                let batches = self
                    .table
                    .change_rows()
                    .commit_changes(snapshot, version, &actions, ts, self.filter.as_ref())
                    .await?;
                (Vec::new(), batches)
            }
            Some(f) => self
                .table
                .change_rows()
                .commit_changes_by_file(snapshot, version, &actions, ts, self.filter.as_ref(), f)
                .await?
                .into_iter()
                .unzip(),
        };
        self.next = version + 1;
        self.last_timestamp = ts;
        let files = crate::delta::change_feed::plan_changes(&actions).len();
        Ok(Some((CommitChanges { version, timestamp_ms: ts, batches, schema_changed, files }, tags)))
    }

    /// Reads the next commit's log entry and applies it to the snapshot (once, however often
    /// it is read: a poll that failed reading the files retries the same commit), leaving the
    /// cursor's position where it is.
    async fn apply_next(&mut self) -> Result<Option<Next>> {
        let (version, actions, modified) = loop {
            let version = self.next;
            match self.table.change_rows().read_commit_with_time(version).await {
                Ok((actions, modified)) => break (version, actions, modified),
                Err(Error::MissingVersion { .. }) => {
                    self.empty_polls += 1;
                    // Every 20th empty poll, a listing that starts at our position finds gaps.
                    if !self.empty_polls.is_multiple_of(20) || !self.skip_gap(version).await? {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(e),
            }
        };
        self.empty_polls = 0;
        let name = crate::delta::log_segment::commit_name(version);
        let applied = self.snapshot.as_ref().is_some_and(|s| s.version >= version);
        if !applied {
            self.schema_before = self.snapshot.as_ref().map(|s| s.metadata.schema_string.clone());
            match &mut self.snapshot {
                Some(s) => s.apply_commit(version, actions.clone(), &name)?,
                None => {
                    let mut state = TableState::default();
                    state.apply_commit(version, &actions, &name)?;
                    self.snapshot = Some(Snapshot::new(state, None, self.table.clock().now_ms())?);
                }
            }
        }
        let old_schema = self.schema_before.clone();
        let has_ict =
            actions.iter().any(|a| matches!(a, Action::CommitInfo(v) if v.get("inCommitTimestamp").is_some()));
        let mut timestamp_ms = commit_timestamp(&actions, modified);
        if !has_ict && timestamp_ms <= self.last_timestamp {
            timestamp_ms = self.last_timestamp + 1;
        }
        let snapshot = self.snapshot.as_ref().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
        let schema_changed = old_schema.is_some_and(|old| old != snapshot.metadata.schema_string);
        Ok(Some(Next { version, actions, timestamp_ms, schema_changed }))
    }
}

/// A commit's log entry as applied by a cursor.
struct Next {
    version: u64,
    actions: Vec<Action>,
    timestamp_ms: i64,
    schema_changed: bool,
}

/// A commit a cursor has moved past, its files not read yet ([`ChangeCursor::plan_next`]).
pub(crate) struct PlannedCommit {
    next: Next,
    /// The table as of the commit, for reading its files.
    plan: ScanPlan,
}

impl PlannedCommit {
    pub(crate) fn version(&self) -> u64 {
        self.next.version
    }

    pub(crate) fn timestamp_ms(&self) -> i64 {
        self.next.timestamp_ms
    }

    /// The paths of the files its changes come from, as the log names them.
    pub(crate) fn paths(&self) -> Vec<String> {
        crate::delta::change_feed::plan_changes(&self.next.actions).into_iter().map(|s| s.path).collect()
    }

    /// The commit's changes, as [`ChangeCursor::poll_by_file`] gives them.
    ///
    /// # Errors
    /// Storage, data-file and deletion-vector errors of the files it references.
    pub(crate) async fn read_by_file(
        &self,
        table: &Table,
        slice_of: &SliceOfFile,
    ) -> Result<(CommitChanges, Vec<u32>)> {
        let Next { version, ref actions, timestamp_ms, schema_changed } = self.next;
        let tagged =
            table.change_rows().commit_changes_in_plan(&self.plan, version, actions, timestamp_ms, slice_of).await?;
        let (tags, batches) = tagged.into_iter().unzip();
        let files = crate::delta::change_feed::plan_changes(actions).len();
        Ok((CommitChanges { version, timestamp_ms, batches, schema_changed, files }, tags))
    }
}
