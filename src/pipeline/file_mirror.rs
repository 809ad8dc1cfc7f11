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
//! - Absolute file paths and absolute deletion-vector paths are refused: a mirror copies what
//!   lies under the source's root only.

use crate::delta::actions::{Action, Metadata, Txn};
use crate::delta::features::check_writable;
use crate::delta::paths::resolve_in_table;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::{Error, Result};
use crate::feed::changes::CommitChanges;
use crate::feed::sink::ChangeSink;
use crate::storage::{RetryPolicy, StagedCommit, Table};

/// Lost races one delivery rides out before it fails.
const ATTEMPTS: u32 = 10;

/// The file mirror sink.
pub struct FileMirror {
    source: Table,
    target: Table,
    snapshot: Option<Snapshot>,
    app_id: String,
    /// Target commits made and files copied.
    pub commits: u64,
    pub files: u64,
}

impl FileMirror {
    /// A mirror of `source` (whose table id is `source_table_id`) into `target`.
    ///
    /// # Errors
    /// Target read errors other than "no table yet".
    pub async fn open(source: &Table, target: &Table, follower_id: &str, source_table_id: &str) -> Result<FileMirror> {
        let app_id = crate::delta::app_id::TxnAppId::Follower {
            follower: follower_id.to_string(),
            source_table_id: source_table_id.to_string(),
        }
        .to_string();
        let snapshot = target.existing_snapshot().await?;
        Ok(FileMirror { source: source.clone(), target: target.clone(), snapshot, app_id, commits: 0, files: 0 })
    }

    /// Replays the source's commits up to `upto`: every one after the target's txn (a delivery
    /// never skips a commit, whatever the follower handed over), or, for a new target, `upto`
    /// on top of the source's state before it.
    ///
    /// # Errors
    /// A target that exists without this mirror's txn (it is not a copy this mirror made).
    async fn apply(&mut self, upto: u64) -> Result<()> {
        loop {
            self.snapshot = self.target.existing_snapshot().await?;
            let next = match &self.snapshot {
                None => upto,
                Some(t) => match t.txn_version(&self.app_id).map(u64::try_from) {
                    Some(Ok(done)) if done >= upto => return Ok(()),
                    Some(Ok(done)) => done + 1,
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "{} exists and is not a mirror made by {} (a mirror without key columns starts with a new target)",
                            self.target.url(),
                            self.app_id
                        )))
                    }
                },
            };
            self.apply_one(next).await?;
        }
    }

    /// Replays source commit `version` (creating the target first when it does not exist).
    async fn apply_one(&mut self, version: u64) -> Result<()> {
        let v = i64::try_from(version).map_err(|e| Error::Internal(e.to_string()))?;
        for _ in 0..ATTEMPTS {
            self.snapshot = self.target.existing_snapshot().await?;
            let target = self.snapshot.clone();
            if target.as_ref().and_then(|t| t.txn_version(&self.app_id)).is_some_and(|done| done >= v) {
                return Ok(());
            }
            let (actions, marks) = match (&target, version) {
                (None, 0) | (Some(_), _) => (self.source.read_commit(version).await?, v),
                (None, _) => (self.source_state_before(version).await?, v - 1),
            };
            let actions = self.copy_files(actions, target.as_ref()).await?;
            let mut txn = Transaction::new("STREAMING UPDATE", actions)
                .with_parameter("queryId", self.app_id.as_str())
                .with_parameter("epochId", marks.to_string());
            txn.actions.push(Action::Txn(Txn {
                app_id: self.app_id.clone(),
                version: marks,
                last_updated: Some(self.target.clock().now_ms()),
            }));
            match StagedCommit::new(&self.target).commit(target.as_ref(), &txn, &RetryPolicy::default()).await? {
                CommitOutcome::Committed { .. } => {
                    self.commits += 1;
                    if marks == v {
                        return Ok(());
                    }
                }
                CommitOutcome::AlreadyApplied { .. } => {}
                CommitOutcome::Conflict { version, reason } => {
                    tracing::info!(version, reason, "mirror: the target moved; replaying again");
                }
            }
        }
        Err(Error::CommitConflict { version, reason: "the mirror's target kept moving under its commits".into() })
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

    async fn copy_resolved(&mut self, rel: &str) -> Result<()> {
        let bytes = self.source.read_bytes(rel).await?;
        self.target.put_bytes(rel, bytes).await?;
        self.files += 1;
        Ok(())
    }
}

impl ChangeSink for FileMirror {
    async fn position(&mut self) -> Result<Option<u64>> {
        Ok(self.snapshot.as_ref().and_then(|s| s.txn_version(&self.app_id)).and_then(|v| u64::try_from(v).ok()))
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
