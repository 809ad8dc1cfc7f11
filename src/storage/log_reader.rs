//! Reading the log: listing, `_last_checkpoint`, commits and checkpoints, into a snapshot.
//!
//! `_last_checkpoint` only narrows the listing; when it is missing, stale, corrupt or points
//! at an incomplete checkpoint, the whole log is listed instead. A checkpoint whose Parquet
//! cannot be decoded is skipped in favour of an older one (or a replay from version 0);
//! a checkpoint that decodes but breaks the protocol is an error, never silently skipped.

use std::sync::Arc;

use bytes::Bytes;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use serde_json::Value;

use super::location::Table;
use crate::delta::actions::{parse_commit, Action, CommitInfo};
use crate::delta::checkpoint_read::{batch_to_actions, ACTION_COLUMNS};
use crate::delta::last_checkpoint::LastCheckpoint;
use crate::delta::log_segment::{commit_name, CheckpointKind, LogFile, LogFileKind, LogListing};
use crate::delta::replay::TableState;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};

/// How many log files are fetched concurrently.
const FETCH_CONCURRENCY: usize = 32;

/// One commit's provenance, for `history`.
#[derive(Debug, Clone)]
pub(crate) struct CommitRecord {
    pub version: u64,
    /// The commit's timestamp: in-commit timestamp, else commitInfo.timestamp, else file time.
    pub timestamp: i64,
    pub info: Option<Value>,
}

enum CheckpointFailure {
    /// The checkpoint's files could not be decoded: try an older one.
    Unreadable,
    Fatal(Error),
}

impl Table {
    /// The latest snapshot, or `None` while no table exists at this location (writers that
    /// create it on their first commit).
    ///
    /// # Errors
    /// As [`Table::snapshot`], except [`Error::NotATable`].
    pub(crate) async fn existing_snapshot(&self) -> Result<Option<Snapshot>> {
        match self.snapshot(None).await {
            Ok(s) => Ok(Some(s)),
            Err(Error::NotATable { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Brings a writer's view up to date: the new commits applied to `snapshot`, or the table
    /// read when there was none (`None` while the table does not exist; after a failed read,
    /// so that the next one starts from scratch). A table deltabus cannot write is refused
    /// here, before anything is planned on it.
    ///
    /// # Errors
    /// As [`Table::update_snapshot`] and [`Table::snapshot`]; [`Error::Unsupported`] for an
    /// unwritable protocol.
    pub(crate) async fn refresh(&self, snapshot: &mut Option<Snapshot>) -> Result<()> {
        let read = match snapshot.as_mut() {
            Some(s) => self.update_snapshot(s).await.map(|_| ()),
            None => self.existing_snapshot().await.map(|s| *snapshot = s),
        };
        if let Err(e) = read {
            *snapshot = None; // read again from scratch: the store may be behind or ahead
            return Err(e);
        }
        if let Some(s) = snapshot {
            crate::delta::features::check_writable(&s.protocol, &s.metadata)?;
        }
        Ok(())
    }

    /// Loads the snapshot at `version`, or the latest.
    ///
    /// # Errors
    /// [`Error::NotATable`], [`Error::MissingVersion`], [`Error::InvalidLog`],
    /// [`Error::Unsupported`] or [`Error::Storage`].
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn snapshot(&self, version: Option<u64>) -> Result<Snapshot> {
        let hint = self.last_checkpoint().await?;
        let hinted = match (&hint, version) {
            (Some(h), Some(v)) if h.version > v => None,
            (h, _) => h.as_ref().map(|h| h.version),
        };
        if let Some(start) = hinted {
            let listing = self.list_log(Some(start)).await?;
            if let Ok(seg) = listing.segment(version, &[], &self.url) {
                if seg.checkpoint.is_some() {
                    // The hint is only a hint: when its checkpoint cannot be read, an older
                    // checkpoint or the commits from a full listing rebuild the state.
                    match self.load_from_listing(&listing, version).await {
                        Ok(s) => return Ok(s),
                        Err(e @ (Error::Storage { .. } | Error::Unsupported { .. })) => return Err(e),
                        Err(e) => {
                            tracing::info!(error = %e, "the hinted checkpoint cannot be used; replaying from a full listing")
                        }
                    }
                }
            }
        }
        let listing = self.list_log(None).await?;
        self.load_from_listing(&listing, version).await
    }

    async fn load_from_listing(&self, listing: &LogListing, version: Option<u64>) -> Result<Snapshot> {
        let mut skip = Vec::new();
        loop {
            let seg = listing.segment(version, &skip, &self.url)?;
            let mut state = TableState::default();
            // Fetch and decode the checkpoint and the commits after it concurrently.
            let checkpoint_read = async {
                match &seg.checkpoint {
                    Some(cp) => Some(self.read_checkpoint(&cp.files).await),
                    None => None,
                }
            };
            let (checkpoint, commits) = tokio::join!(checkpoint_read, self.read_commits(&seg.commits));
            if let (Some(cp), Some(checkpoint)) = (&seg.checkpoint, checkpoint) {
                match checkpoint {
                    Ok(actions) => state.apply_checkpoint(cp.version, actions, &cp.files[0].name)?,
                    Err(CheckpointFailure::Unreadable) => {
                        skip.push(cp.version);
                        continue;
                    }
                    Err(CheckpointFailure::Fatal(e)) => return Err(e),
                }
            }
            for (file, actions) in seg.commits.iter().zip(commits?) {
                state.apply_commit_owned(file.version, actions, &file.name)?;
            }
            return Snapshot::new(state, seg.checkpoint.as_ref().map(|c| c.version), self.clock().now_ms());
        }
    }

    /// Brings a snapshot up to date by reading the commits after it, one by one, until the
    /// next one does not exist. Returns how many commits were applied. No replay.
    ///
    /// When nothing is new, the snapshot's own commit is looked at too: a table whose log was
    /// removed (or moved) under a long-running writer must not be written on from memory,
    /// which would start a log at a version without the ones before it.
    ///
    /// # Errors
    /// Storage and parse errors; protocol errors when a new commit makes the table unreadable;
    /// [`Error::NotATable`] when the log the snapshot came from is gone.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn update_snapshot(&self, snapshot: &mut Snapshot) -> Result<u64> {
        let mut applied = 0;
        loop {
            let next = snapshot.version + 1;
            match self.read_commit(next).await {
                Ok(actions) => {
                    snapshot.apply_commit(next, actions, &commit_name(next))?;
                    applied += 1;
                }
                Err(Error::MissingVersion { .. }) if applied > 0 => return Ok(applied),
                Err(Error::MissingVersion { .. }) => {
                    self.check_still_there(snapshot.version).await?;
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the commit file of `version` exists.
    ///
    /// # Errors
    /// Storage errors other than a missing file.
    pub(crate) async fn commit_exists(&self, version: u64) -> Result<bool> {
        let name = commit_name(version);
        match self.store.head(&self.log_path(&name)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(Error::storage(name, e)),
        }
    }

    /// Fails when the commit at `version` is gone and the log holds nothing at or past it.
    async fn check_still_there(&self, version: u64) -> Result<()> {
        let name = commit_name(version);
        match self.store.head(&self.log_path(&name)).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => {
                // Log cleanup never removes the newest commit, but a table made only of a
                // checkpoint has none: the listing decides.
                let listing = self.list_log(None).await?;
                let kept = listing.latest_version().is_some_and(|v| v >= version)
                    || listing.checkpoints.keys().next_back().is_some_and(|v| *v >= version);
                if kept {
                    Ok(())
                } else {
                    Err(Error::NotATable {
                        location: format!("{} (its log, last seen at version {version}, is gone)", self.url),
                    })
                }
            }
            Err(e) => Err(Error::storage(name, e)),
        }
    }

    /// The latest version, from a listing.
    ///
    /// # Errors
    /// [`Error::NotATable`] when the log is empty.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn latest_version(&self) -> Result<u64> {
        let listing = self.list_log(None).await?;
        listing.latest_version().ok_or_else(|| Error::NotATable { location: self.url.clone() })
    }

    /// Commit provenance for the newest `limit` versions still in the log, newest first.
    ///
    /// # Errors
    /// [`Error::NotATable`] or storage and parse errors of the commits read.
    pub(crate) async fn history(&self, limit: Option<usize>) -> Result<Vec<CommitRecord>> {
        let listing = self.list_log(None).await?;
        if listing.latest_version().is_none() {
            return Err(Error::NotATable { location: self.url.clone() });
        }
        let mut files: Vec<LogFile> = listing.commits.values().rev().cloned().collect();
        if let Some(l) = limit {
            files.truncate(l);
        }
        let commits = self.read_commits(&files).await?;
        Ok(files
            .iter()
            .zip(commits)
            .map(|(f, actions)| {
                let info = actions.into_iter().find_map(|a| match a {
                    Action::CommitInfo(v) => Some(v),
                    _ => None,
                });
                let typed = info.as_ref().map(CommitInfo::from_value).unwrap_or_default();
                let timestamp = typed.in_commit_timestamp.or(typed.timestamp).unwrap_or(f.modified_ms);
                CommitRecord { version: f.version, timestamp, info }
            })
            .collect())
    }

    /// Reads and parses one commit.
    ///
    /// # Errors
    /// [`Error::MissingVersion`] when the commit file does not exist.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn read_commit(&self, version: u64) -> Result<Vec<Action>> {
        let name = commit_name(version);
        match self.store.get(&self.log_path(&name)).await {
            Ok(r) => {
                let bytes = r.bytes().await.map_err(|e| Error::storage(&name, e))?;
                parse_commit(&bytes, &name)
            }
            Err(object_store::Error::NotFound { .. }) => {
                Err(Error::MissingVersion { version, reason: "the commit file does not exist".into() })
            }
            Err(e) => Err(Error::storage(name, e)),
        }
    }

    #[cfg(test)]
    pub(crate) async fn read_checkpoint_for_tests(&self) -> bool {
        self.read_checkpoint(&[]).await.is_ok()
    }

    #[cfg(test)]
    pub(crate) async fn last_checkpoint_for_tests(&self) -> Result<Option<LastCheckpoint>> {
        self.last_checkpoint().await
    }

    async fn last_checkpoint(&self) -> Result<Option<LastCheckpoint>> {
        match self.store.get(&self.log_path("_last_checkpoint")).await {
            Ok(r) => match r.bytes().await {
                Ok(b) => Ok(LastCheckpoint::parse(&b)),
                Err(_) => Ok(None),
            },
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Error::storage("_delta_log/_last_checkpoint", e)),
        }
    }

    /// Lists `_delta_log`, from version `from` when given.
    pub(crate) async fn list_log(&self, from: Option<u64>) -> Result<LogListing> {
        let prefix = self.root.clone().join("_delta_log");
        let stream = match from {
            // The offset is exclusive: start just before the first name of version `from`.
            Some(v) if v > 0 => {
                self.store.list_with_offset(Some(&prefix), &prefix.clone().join(format!("{:020}", v - 1) + ".~"))
            }
            _ => self.store.list(Some(&prefix)),
        };
        let metas: Vec<_> = match stream.try_collect::<Vec<_>>().await {
            Ok(m) => m,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(Error::storage(&prefix, e)),
        };
        let depth = prefix.parts().count() + 1;
        Ok(LogListing::new(metas.into_iter().filter(|m| m.location.parts().count() == depth).filter_map(|m| {
            let name = m.location.filename()?.to_string();
            Some((name, m.size, m.last_modified.timestamp_millis()))
        })))
    }

    async fn read_commits(&self, files: &[LogFile]) -> Result<Vec<Vec<Action>>> {
        // Owned inputs only: futures that borrow through iterator adapters are not `Send` for
        // every lifetime, which would stop callers from spawning commits.
        let jobs: Vec<(Arc<dyn ObjectStore>, Path, String)> =
            files.iter().map(|f| (self.store.clone(), self.log_path(&f.name), f.name.clone())).collect();
        let futures: Vec<futures::future::BoxFuture<'static, Result<Vec<Action>>>> =
            jobs.into_iter().map(|job| fetch_and_parse_commit(job).boxed()).collect();
        futures::stream::iter(futures).buffered(FETCH_CONCURRENCY).try_collect().await
    }

    async fn read_checkpoint(&self, files: &[LogFile]) -> std::result::Result<Vec<Action>, CheckpointFailure> {
        let mut actions = Vec::new();
        for f in files {
            let path = self.log_path(&f.name);
            let bytes = self.get_bytes(&path).await.map_err(CheckpointFailure::Fatal)?;
            let name = f.name.clone();
            let part = match f.kind {
                LogFileKind::Checkpoint(CheckpointKind::V2 { json: true }) => {
                    parse_commit(&bytes, &f.name).map_err(CheckpointFailure::Fatal)?
                }
                _ => tokio::task::spawn_blocking(move || decode_checkpoint_parquet(bytes, &name)).await.map_err(
                    |e| CheckpointFailure::Fatal(Error::Internal(format!("checkpoint decoder task: {e}"))),
                )??,
            };
            actions.extend(part);
        }
        let sidecars: Vec<String> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Sidecar(s) => Some(s.path.clone()),
                _ => None,
            })
            .collect();
        for sidecar in sidecars {
            let rel =
                crate::delta::paths::resolve_in_table(&sidecar, "sidecar:", false).map_err(CheckpointFailure::Fatal)?;
            let path = self.relative_path(&format!("_delta_log/_sidecars/{rel}"));
            let bytes = self.get_bytes(&path).await.map_err(CheckpointFailure::Fatal)?;
            actions.extend(decode_checkpoint_parquet(bytes, &sidecar)?);
        }
        Ok(actions)
    }

    pub(crate) async fn get_bytes(&self, path: &Path) -> Result<Bytes> {
        let r = self.store.get(path).await.map_err(|e| Error::storage(path, e))?;
        r.bytes().await.map_err(|e| Error::storage(path, e))
    }
}

async fn fetch_and_parse_commit((store, path, name): (Arc<dyn ObjectStore>, Path, String)) -> Result<Vec<Action>> {
    let bytes = match store.get(&path).await {
        Ok(r) => r.bytes().await.map_err(|e| Error::storage(&name, e))?,
        Err(e) => return Err(Error::storage(&name, e)),
    };
    // Parsing is CPU work: run it off the I/O threads so commits parse in parallel.
    tokio::task::spawn_blocking(move || parse_commit(&bytes, &name))
        .await
        .map_err(|e| Error::Internal(format!("commit parser task: {e}")))?
}

/// Decodes a checkpoint (or sidecar) Parquet file, skipping the parsed-stats columns.
fn decode_checkpoint_parquet(bytes: Bytes, name: &str) -> std::result::Result<Vec<Action>, CheckpointFailure> {
    // The parquet crate panics on some damaged files: such a checkpoint is unreadable.
    crate::panic_guard::guard(|| decode_checkpoint_unguarded(bytes, name)).unwrap_or(Err(CheckpointFailure::Unreadable))
}

fn decode_checkpoint_unguarded(bytes: Bytes, name: &str) -> std::result::Result<Vec<Action>, CheckpointFailure> {
    let len = bytes.len() as u64;
    // The footer is scanned and decoded under a deadline before anything trusts it.
    let footer_len = crate::delta::parquet_pages::footer_len(&bytes).ok_or(CheckpointFailure::Unreadable)?;
    let footer_start = bytes.len().checked_sub(8 + footer_len).ok_or(CheckpointFailure::Unreadable)?;
    let footer = bytes.slice(footer_start..bytes.len() - 8);
    let metadata = super::checked_parquet::decode_footer(footer).map_err(|_| CheckpointFailure::Unreadable)?;
    let options = parquet::arrow::arrow_reader::ArrowReaderOptions::new();
    let metadata = parquet::arrow::arrow_reader::ArrowReaderMetadata::try_new(std::sync::Arc::new(metadata), options)
        .map_err(|_| CheckpointFailure::Unreadable)?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(bytes.clone(), metadata);
    if crate::delta::parquet_footer::footer_problem(builder.metadata(), Some(len)).is_some()
        || crate::delta::parquet_pages::file_problem(builder.metadata(), &bytes).is_some()
    {
        return Err(CheckpointFailure::Unreadable);
    }
    let schema = builder.parquet_schema();
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| {
            let path = schema.column(i).path().parts().to_vec();
            let top = path.first().map(String::as_str).unwrap_or("");
            ACTION_COLUMNS.contains(&top)
                && !(top == "add" && path.get(1).is_some_and(|p| p == "stats_parsed" || p == "partitionValues_parsed"))
        })
        .collect();
    let mask = ProjectionMask::leaves(schema, leaves);
    let reader =
        builder.with_projection(mask).with_batch_size(8192).build().map_err(|_| CheckpointFailure::Unreadable)?;
    let mut actions = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|_| CheckpointFailure::Unreadable)?;
        actions.extend(batch_to_actions(&batch, name).map_err(CheckpointFailure::Fatal)?);
    }
    Ok(actions)
}
