//! The file mirror of `follow --mirror` without key columns: rows keep their identity because
//! the source's data files, deletion vectors and change-data files are copied as they are and
//! each source commit's file actions are replayed on the target. A row stays in the same file at
//! the same position, so the source's deletion vectors apply unchanged, and with row tracking
//! the files keep their `baseRowId` (row ids and the high-water mark are the source's).
//!
//! Contract:
//! - The target starts as commit 0 of the source replayed or, when the mirror starts later, as
//!   a copy of the source at the version before (every live file, one commit); it has its own
//!   table id and the source's protocol (refused when deltabus cannot write it).
//! - Every source commit (data changes, compactions, metadata changes alike) becomes one target
//!   commit with the same `add`, `remove`, `cdc` and domain actions, the source's schema,
//!   partitioning and configuration, and `txn(<follower>-<source table id>, version)`; the
//!   source's own `txn`s and `commitInfo` are not copied. Files are copied before the commit
//!   (copying one again writes the same bytes), so a crash or a lost answer repeats nothing:
//!   the retry finds the txn.
//! - Files are streamed over in parts, never held whole in memory.
//! - Absolute file paths and absolute deletion-vector paths are refused: a mirror copies what
//!   lies under the source's root only.

use super::ChangeSink;
use crate::delta::actions::{Action, Metadata};
use crate::delta::app_id::TxnAppId;
use crate::delta::features::check_writable;
use crate::delta::paths::resolve_in_table;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::change_cursor::CommitChanges;
use crate::storage::{commit_exactly_once, Plan, Planned, Planner, RetryPolicy, Table, Then};

/// The file mirror sink.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FileMirror {
    source: Table,
    target: Table,
    snapshot: Option<Snapshot>,
    app_id: TxnAppId,
    /// Target commits made and files copied.
    pub commits: u64,
    pub files: u64,
}

impl FileMirror {
    /// A mirror of `source` (whose table id is `source_table_id`) into `target`.
    ///
    /// # Errors
    /// Target read errors other than "no table yet".
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn open(
        source: &Table,
        target: &Table,
        follower_id: &str,
        source_table_id: &str,
    ) -> Result<FileMirror> {
        let app_id =
            TxnAppId::Follower { follower: follower_id.to_string(), source_table_id: source_table_id.to_string() };
        let snapshot = target.existing_snapshot().await?;
        Ok(FileMirror { source: source.clone(), target: target.clone(), snapshot, app_id, commits: 0, files: 0 })
    }

    /// Replays the source's commits up to `upto`: every one after the target's txn (a delivery
    /// never skips a commit, whatever the follower handed over), or, for a new target, `upto`
    /// on top of the source's state before it. One target commit per source commit, each
    /// through the commit path.
    ///
    /// # Errors
    /// A target that exists without this mirror's txn (it is not a copy this mirror made).
    async fn apply(&mut self, upto: u64) -> Result<()> {
        let target = self.target.clone();
        let mut snapshot = self.snapshot.take();
        let result =
            commit_exactly_once(&target, &mut snapshot, &RetryPolicy::default(), &mut Replay { mirror: self, upto })
                .await;
        self.snapshot = snapshot;
        result.map(|_| ())
    }

    /// The source's state before `version` as the actions of one commit.
    async fn source_state_before(&self, version: u64) -> Result<Vec<Action>> {
        let s = self.source.snapshot(Some(version - 1)).await?;
        let mut actions = vec![Action::Protocol(s.protocol.clone()), Action::Metadata(s.metadata.clone())];
        actions.extend(s.domains().values().filter(|d| !d.removed).cloned().map(Action::DomainMetadata));
        actions.extend(s.files().into_iter().cloned().map(Action::Add));
        Ok(actions)
    }

    /// The target's actions for the source's: files copied, metadata given the target's id,
    /// the source's txns and commitInfo left out.
    async fn copy_files(&mut self, actions: Vec<Action>, target: Option<&Snapshot>) -> Result<Vec<Action>> {
        let mut out = Vec::with_capacity(actions.len());
        for a in actions {
            match a {
                Action::Add(add) => {
                    self.copy(&add.path).await?;
                    if let Some(dv) = &add.deletion_vector {
                        if dv.storage_type == "p" {
                            return Err(Error::unsupported(format!(
                                "{}: a deletion vector at an absolute path; a mirror copies files under the source's root only",
                                add.path
                            )));
                        }
                        if let Some(rel) = dv.file_in_table(self.source.url())? {
                            self.copy_resolved(&rel).await?;
                        }
                    }
                    out.push(Action::Add(add));
                }
                Action::Cdc(cdc) => {
                    self.copy(&cdc.path).await?;
                    out.push(Action::Cdc(cdc));
                }
                Action::Metadata(m) => out.push(Action::Metadata(Metadata {
                    id: target.map_or_else(|| uuid::Uuid::new_v4().to_string(), |t| t.metadata.id.clone()),
                    created_time: target.and_then(|t| t.metadata.created_time).or(m.created_time),
                    ..m
                })),
                Action::Protocol(p) => out.push(Action::Protocol(p)),
                a @ (Action::Remove(_) | Action::DomainMetadata(_)) => out.push(a),
                Action::Txn(_) | Action::CommitInfo(_) | Action::CheckpointMetadata(_) | Action::Sidecar(_) => {}
            }
        }
        let protocol = out.iter().find_map(|a| if let Action::Protocol(p) = a { Some(p) } else { None });
        let metadata = out.iter().find_map(|a| if let Action::Metadata(m) = a { Some(m) } else { None });
        if let (Some(p), Some(m)) = (protocol.or(target.map(|t| &t.protocol)), metadata.or(target.map(|t| &t.metadata)))
        {
            check_writable(p, m)?;
        }
        Ok(out)
    }

    /// Copies the file a log path names (relative to the source's root).
    async fn copy(&mut self, log_path: &str) -> Result<()> {
        let rel = resolve_in_table(log_path, self.source.url(), false)?;
        self.copy_resolved(&rel).await
    }

    /// Streams the file over (never whole in memory: [`Table::copy_file_from`]).
    async fn copy_resolved(&mut self, rel: &str) -> Result<()> {
        self.target.objects().copy_file_from(&self.source, rel).await?;
        self.files += 1;
        Ok(())
    }
}

/// The next source commit to replay onto the target as it is, until `upto`.
struct Replay<'a> {
    mirror: &'a mut FileMirror,
    upto: u64,
}

impl Planner for Replay<'_> {
    type Answer = ();

    async fn plan(&mut self, target: Option<&Snapshot>) -> Result<Plan<()>> {
        let m = &mut *self.mirror;
        let next = match target {
            None => self.upto,
            Some(t) => match m.app_id.version_in(t).map(u64::try_from) {
                Some(Ok(done)) if done >= self.upto => return Ok(Plan::Nothing(())),
                Some(Ok(done)) => done + 1,
                _ => {
                    return Err(Error::InvalidArgument(format!(
                    "{} exists and is not a mirror made by {} (a mirror without key columns starts with a new target)",
                    m.target.url(),
                    m.app_id
                )))
                }
            },
        };
        let v = i64::try_from(next).map_err(|e| Error::Internal(e.to_string()))?;
        let (actions, marks) = match (target, next) {
            (None, 0) | (Some(_), _) => (m.source.read_commit(next).await?, v),
            (None, _) => (m.source_state_before(next).await?, v - 1),
        };
        let actions = m.copy_files(actions, target).await?;
        let txn = Transaction::new(Operation::StreamingUpdate, actions)
            .with_parameter("queryId", m.app_id.to_string())
            .with_parameter("epochId", marks.to_string());
        // Copies are not staged: a copy holds the source's bytes under the source's name, so
        // another mirror of the same source may have committed the very same file.
        let then = if marks == i64::try_from(self.upto).unwrap_or(i64::MAX) { Then::Done(()) } else { Then::PlanAgain };
        Ok(Plan::Commit(Box::new(Planned { txn, positions: vec![(m.app_id.clone(), marks)], files: Vec::new(), then })))
    }

    fn landed(&mut self, _version: u64) {
        self.mirror.commits += 1;
    }

    fn lost(&mut self, outcome: &CommitOutcome) {
        tracing::info!(?outcome, "mirror: the target moved; replaying again");
    }
}

impl ChangeSink for FileMirror {
    async fn position(&mut self) -> Result<Option<u64>> {
        Ok(self.snapshot.as_ref().and_then(|s| self.app_id.version_in(s)).and_then(|v| u64::try_from(v).ok()))
    }

    async fn deliver(&mut self, _source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.apply(changes.version).await
    }

    async fn mark(&mut self, _source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.apply(changes.version).await
    }

    fn name(&self) -> &'static str {
        "mirror"
    }
}
