//! A topic's change feed as Kafka partitions: the positions, and the records of each commit.
//!
//! Contract:
//! - An offset is a feed position: `version << ROW_BITS | row`, the row-th change row of commit
//!   `version` in that partition (rows of a commit beyond 2^24 in one partition are not
//!   served: the fetch fails with a clear error). Offsets grow with the feed and have gaps
//!   (commits with no rows in a partition), which Kafka consumers step over.
//! - Partition p of an n-partition topic holds the changes of the files whose path hashes to
//!   slice p of n (the slicing of the table's consumer groups), so a file's rows stay in one
//!   partition in order.
//! - A record's value is the change row as `deltabus tail` prints it (the table's columns,
//!   `_change_type`, `_commit_version`, `_commit_timestamp`; bytes topics: the `value` column
//!   and the `key` column as key); header `change_type` names the change; its timestamp is the
//!   commit's.
//! - The end of the feed (high watermark) is `(latest version + 1) << ROW_BITS`; the start is
//!   the first version whose changes the log still holds.
//! - Commits read are kept as their change rows in Arrow form, by partition (the least
//!   recently used go first past [`CACHED_BYTES`] or [`CACHED_COMMITS`] commits); rows become
//!   records only as a fetch takes them ([`Feed::records`]). Cursors are kept at the version after the last one read,
//!   so consumers that move along the feed read each commit once: one fetch reads a megabyte
//!   of each partition, which on a table of small commits (each in one partition) spans
//!   hundreds of them, and every partition's answer reads the same ones.
//! - Cursors apply commits' log entries in order under the feed's lock, which tells which
//!   partitions a commit has rows in (the paths of its files); its files are read outside the
//!   lock, so the partitions of a fetch, answered at once, read different commits at once
//!   (a reader whose commit is being read reads a later one meanwhile, see [`Feed::commit`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, StructArray};
use bytes::Bytes;
use tokio::sync::{Mutex, Notify};

use super::produce::ROW_BITS;
use crate::beside::groups::slice_of_path;
use crate::config::kafka::TopicFormat;
use crate::delta::json_rows::JsonRows;
use crate::error::{Error, Result};
use crate::storage::change_cursor::{ChangeCursor, PlannedCommit};
use crate::storage::Table;

/// Bytes of change rows kept per topic (at least the latest commit read is kept).
pub(crate) const CACHED_BYTES: usize = 64 << 20;
/// Decoded commits kept per topic.
pub(crate) const CACHED_COMMITS: usize = 16_384;
/// Commits whose partitions with rows are remembered, per topic.
const SHAPES: usize = 1 << 20;
/// Cursors kept per topic.
const CURSORS: usize = 4;
/// Commits read ahead of the one a reader waits for, at most.
const READ_AHEAD: u64 = 32;
/// Commits a kept cursor is moved over (reading only their log entries) rather than opening a
/// new one at the version wanted.
const CURSOR_STEPS: u64 = 1_000;

/// One change row as a record.
#[derive(Debug, Clone)]
pub(crate) struct FeedRecord {
    pub key: Option<Bytes>,
    pub value: Bytes,
    pub change_type: &'static str,
}

/// One commit's change rows, by partition, turned into records as they are fetched (a fetch
/// takes a megabyte of one partition: converting every partition's rows of the commit for it
/// would cost as many times more as the commit has partitions' worth of rows).
#[derive(Debug)]
pub(crate) struct FeedCommit {
    pub timestamp_ms: i64,
    partitions: Vec<PartitionRows>,
    /// The memory its rows hold.
    bytes: usize,
}

/// One partition's change rows of a commit.
#[derive(Debug, Default, Clone)]
struct PartitionRows {
    batches: Vec<RecordBatch>,
    rows: usize,
}

impl FeedCommit {
    /// Change rows of the commit in partition `p`.
    pub(crate) fn rows(&self, p: usize) -> usize {
        self.partitions.get(p).map_or(0, |r| r.rows)
    }
}

/// The feed of one topic.
pub(crate) struct Feed {
    table: Table,
    partitions: u32,
    format: TopicFormat,
    state: Mutex<FeedState>,
    /// The bounds as last listed (see [`Feed::bounds`]).
    listed: std::sync::Mutex<Option<Listed>>,
}

/// The feed's bounds from the last listing of the log, and when it was taken.
#[derive(Debug, Clone, Copy)]
struct Listed {
    first: u64,
    latest: u64,
    at: tokio::time::Instant,
}

/// How long a listing of the log serves [`Feed::bounds`]: between listings, newer commits are
/// found by asking for each next commit file (a fetch asks for the bounds every time, and a
/// listing costs as much as the log has files).
const RELIST: std::time::Duration = std::time::Duration::from_secs(5);
/// Commits found one by one before a new listing is cheaper.
const PROBES: u64 = 64;

#[derive(Default)]
struct FeedState {
    /// Version → (commit, when last used).
    commits: BTreeMap<u64, (Arc<FeedCommit>, u64)>,
    /// When last used → version: the least recently used commit goes first.
    used: BTreeMap<u64, u64>,
    tick: u64,
    /// The `bytes` of `commits`.
    cached_bytes: usize,
    /// Version → (commit time, the partitions it has rows in), kept past the commit's rows:
    /// a partition's reader steps over a commit without rows in it without reading it again.
    shape: BTreeMap<u64, (i64, Vec<u32>)>,
    cursors: Vec<ChangeCursor>,
    /// Versions whose files are being read, each with what wakes those waiting for them.
    reading: BTreeMap<u64, Arc<Notify>>,
}

impl FeedState {
    /// Remembers commit `version`'s time and the partitions it has rows in (the oldest
    /// forgotten past [`SHAPES`]).
    fn note_shape(&mut self, version: u64, timestamp_ms: i64, with_rows: Vec<u32>) {
        self.shape.insert(version, (timestamp_ms, with_rows));
        while self.shape.len() > SHAPES {
            self.shape.pop_first();
        }
    }
}

/// The position of row `row` of commit `version`.
pub(crate) fn offset_of(version: u64, row: u64) -> i64 {
    i64::try_from(version).unwrap_or(i64::MAX >> ROW_BITS) << ROW_BITS | i64::try_from(row).unwrap_or(0)
}

/// The commit and row of a position (`None` for a negative one).
pub(crate) fn position_of(offset: i64) -> Option<(u64, u64)> {
    let o = u64::try_from(offset).ok()?;
    Some((o >> ROW_BITS, o & ((1 << ROW_BITS) - 1)))
}

impl Feed {
    pub(crate) fn new(table: Table, partitions: u32, format: TopicFormat) -> Feed {
        Feed { table, partitions, format, state: Mutex::new(FeedState::default()), listed: std::sync::Mutex::new(None) }
    }

    /// The first and last versions whose changes can be served (`None`: no table yet).
    ///
    /// The log is listed at most every [`RELIST`]; in between, the latest version moves on
    /// by the commit files that exist after it (commits are written in order, never with a
    /// gap), so new commits are seen at once. The first version may be older than the log
    /// holds until the next listing: reading it fails as a missing version, which answers
    /// OFFSET_OUT_OF_RANGE and drops the kept listing ([`Feed::relist`]).
    ///
    /// # Errors
    /// Storage errors listing the log or asking for a commit file.
    pub(crate) async fn bounds(&self) -> Result<Option<(u64, u64)>> {
        let kept = self.listed.lock().ok().and_then(|l| *l).filter(|l| l.at.elapsed() < RELIST);
        if let Some(mut kept) = kept {
            let mut found = 0;
            while found < PROBES && self.table.commit_exists(kept.latest + 1).await? {
                kept.latest += 1;
                found += 1;
            }
            if found < PROBES {
                if let Ok(mut l) = self.listed.lock() {
                    if l.as_ref().is_some_and(|l| l.at == kept.at && l.latest < kept.latest) {
                        *l = Some(kept);
                    }
                }
                return Ok(Some((kept.first, kept.latest)));
            }
        }
        let at = tokio::time::Instant::now();
        let listing = self.table.list_log(None).await?;
        let Some(latest) = listing.latest_version() else { return Ok(None) };
        let first = match listing.oldest_readable() {
            Some(0) | None => 0,
            Some(c) => c + 1,
        };
        let first = first.min(latest + 1);
        if let Ok(mut l) = self.listed.lock() {
            *l = Some(Listed { first, latest, at });
        }
        Ok(Some((first, latest)))
    }

    /// Drops the kept listing: the next [`Feed::bounds`] lists the log.
    pub(crate) fn relist(&self) {
        if let Ok(mut l) = self.listed.lock() {
            *l = None;
        }
    }

    /// Commit `version`'s change rows as partition `p` needs them (`None` when it does not
    /// exist yet): without rows when it has none in `p`.
    ///
    /// A cursor applies commits' log entries in order under the feed's lock; their files are
    /// read outside it, on a task of their own (so a fetch given up midway never leaves a read
    /// unfinished). A partition's reader that finds the commit it needs being read reads the
    /// next unread one meanwhile (up to [`READ_AHEAD`] ahead, while the cache is less than half
    /// full), so the partitions of a fetch read different commits at once, and one whose
    /// commits have no rows in it steps over them as soon as their log entries are applied.
    ///
    /// # Errors
    /// A commit the log no longer holds ([`Error::MissingVersion`]); storage and data errors.
    pub(crate) async fn commit(self: &Arc<Self>, version: u64, p: usize) -> Result<Option<Arc<FeedCommit>>> {
        loop {
            let mut state = self.state.lock().await;
            if let Some((timestamp_ms, with_rows)) = state.shape.get(&version) {
                if !with_rows.iter().any(|w| *w as usize == p) && !state.commits.contains_key(&version) {
                    let empty = FeedCommit { timestamp_ms: *timestamp_ms, partitions: Vec::new(), bytes: 0 };
                    return Ok(Some(Arc::new(empty)));
                }
            }
            state.tick += 1;
            let tick = state.tick;
            if let Some((c, used)) = state.commits.get_mut(&version) {
                let (c, before) = (c.clone(), std::mem::replace(used, tick));
                state.used.remove(&before);
                state.used.insert(tick, version);
                return Ok(Some(c));
            }
            let Some(reading) = state.reading.get(&version).cloned() else {
                let Some(planned) = self.plan(&mut state, version).await? else { return Ok(None) };
                drop(state);
                return self.read(planned).await.map(Some);
            };
            // Being read by another reader: read a later commit meanwhile, then take this one.
            let done = reading.notified_owned();
            let mut done = std::pin::pin!(done);
            done.as_mut().enable();
            let ahead = self.plan_ahead(&mut state, version).await;
            drop(state);
            if let Some(planned) = ahead {
                if let Err(e) = self.read(planned).await {
                    tracing::debug!(error = %e, "kafka.feed_read_ahead_failed");
                }
            }
            done.await;
        }
    }

    /// Moves a cursor to `version` and applies its log entry (`None`: it does not exist yet),
    /// marking it as being read.
    async fn plan(&self, state: &mut FeedState, version: u64) -> Result<Option<PlannedCommit>> {
        tracing::trace!(version, cached = state.commits.len(), bytes = state.cached_bytes, "kafka.feed_read");
        // The cursor nearest below the version, moved up to it over commits read without their
        // files; else a new one.
        let nearest = state
            .cursors
            .iter()
            .enumerate()
            .filter(|(_, c)| c.next_version() <= version && version - c.next_version() <= CURSOR_STEPS)
            .max_by_key(|(_, c)| c.next_version())
            .map(|(i, _)| i);
        let mut cursor = match nearest {
            Some(i) => state.cursors.swap_remove(i),
            None => ChangeCursor::open(&self.table, version).await?,
        };
        while cursor.next_version() <= version {
            let Some(planned) = cursor.plan_next().await? else { break };
            self.note_shape(state, &planned);
            if planned.version() == version {
                keep(&mut state.cursors, cursor);
                state.reading.insert(version, Arc::new(Notify::new()));
                return Ok(Some(planned));
            }
        }
        keep(&mut state.cursors, cursor);
        Ok(None)
    }

    /// The first commit after `version` (within [`READ_AHEAD`]) that is neither kept nor being
    /// read, its log entry applied and marked as being read, when the cache has room.
    async fn plan_ahead(&self, state: &mut FeedState, version: u64) -> Option<PlannedCommit> {
        if state.cached_bytes > CACHED_BYTES / 2 {
            return None;
        }
        let last = version + READ_AHEAD;
        let (i, _) = state
            .cursors
            .iter()
            .enumerate()
            .filter(|(_, c)| c.next_version() > version && c.next_version() <= last)
            .min_by_key(|(_, c)| c.next_version())?;
        let mut cursor = state.cursors.swap_remove(i);
        while cursor.next_version() <= last {
            match cursor.plan_next().await {
                Ok(Some(planned)) => {
                    self.note_shape(state, &planned);
                    let v = planned.version();
                    if !state.commits.contains_key(&v) && !state.reading.contains_key(&v) {
                        keep(&mut state.cursors, cursor);
                        state.reading.insert(v, Arc::new(Notify::new()));
                        return Some(planned);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "kafka.feed_read_ahead_failed");
                    return None;
                }
            }
        }
        keep(&mut state.cursors, cursor);
        None
    }

    /// Remembers which partitions a commit has rows in, from the paths of its files.
    fn note_shape(&self, state: &mut FeedState, planned: &PlannedCommit) {
        let mut with_rows: Vec<u32> = planned.paths().iter().map(|path| slice_of_path(path, self.partitions)).collect();
        with_rows.sort_unstable();
        with_rows.dedup();
        state.note_shape(planned.version(), planned.timestamp_ms(), with_rows);
    }

    /// Reads a planned commit's files on a task of its own, keeps its rows, and wakes those
    /// waiting for it (also when the read fails: they read it again).
    async fn read(self: &Arc<Self>, planned: PlannedCommit) -> Result<Arc<FeedCommit>> {
        let this = self.clone();
        let task = tokio::spawn(async move {
            let partitions = this.partitions;
            let slice = move |path: &str| Some(slice_of_path(path, partitions));
            let version = planned.version();
            let read = planned.read_by_file(&this.table, &slice).await;
            let mut state = this.state.lock().await;
            if let Some(n) = state.reading.remove(&version) {
                n.notify_waiters();
            }
            let (changes, tags) = read?;
            this.keep_commit(&mut state, version, changes, tags)
        });
        task.await.map_err(|e| Error::Internal(format!("reading a commit of the feed: {e}")))?
    }

    /// Keeps a commit's change rows by partition (the least recently used go first past the
    /// cache's bounds).
    fn keep_commit(
        &self,
        state: &mut FeedState,
        version: u64,
        changes: crate::storage::change_cursor::CommitChanges,
        tags: Vec<u32>,
    ) -> Result<Arc<FeedCommit>> {
        let mut by_partition = vec![PartitionRows::default(); self.partitions as usize];
        for (batch, tag) in changes.batches.into_iter().zip(tags) {
            if let Some(p) = by_partition.get_mut(tag as usize).filter(|_| batch.num_rows() > 0) {
                p.rows += batch.num_rows();
                p.batches.push(batch);
            }
        }
        if by_partition.iter().any(|p| p.rows as u64 >= 1 << ROW_BITS) {
            return Err(Error::InvalidArgument(format!(
                "commit {version} has more than 2^{ROW_BITS} change rows in one partition: give the topic more partitions"
            )));
        }
        let bytes = by_partition.iter().flat_map(|p| &p.batches).map(RecordBatch::get_array_memory_size).sum();
        let commit = Arc::new(FeedCommit { timestamp_ms: changes.timestamp_ms, partitions: by_partition, bytes });
        state.cached_bytes += commit.bytes;
        let with_rows = (0..self.partitions).filter(|p| commit.rows(*p as usize) > 0).collect();
        state.note_shape(version, commit.timestamp_ms, with_rows);
        state.tick += 1;
        let tick = state.tick;
        state.commits.insert(version, (commit.clone(), tick));
        state.used.insert(tick, version);
        // The least recently used go first: a consumer taking a large commit in parts keeps
        // it while others move past it.
        while state.commits.len() > 1 && (state.cached_bytes > CACHED_BYTES || state.commits.len() > CACHED_COMMITS) {
            let Some((_, v)) = state.used.pop_first() else { break };
            if let Some((old, _)) = state.commits.remove(&v) {
                state.cached_bytes -= old.bytes;
            }
        }
        Ok(commit)
    }

    /// The records of rows `from..to` of partition `p` of `commit`.
    ///
    /// # Errors
    /// A row that does not convert to JSON.
    pub(crate) fn records(&self, commit: &FeedCommit, p: usize, from: usize, to: usize) -> Result<Vec<FeedRecord>> {
        let mut out = Vec::with_capacity(to.saturating_sub(from));
        let mut at = 0;
        for batch in commit.partitions.get(p).map_or(&[][..], |r| r.batches.as_slice()) {
            let (first, end) = (from.max(at), to.min(at + batch.num_rows()));
            if first < end {
                out.extend(self.batch_records(&batch.slice(first - at, end - first))?);
            }
            at += batch.num_rows();
        }
        Ok(out)
    }

    fn batch_records(&self, batch: &RecordBatch) -> Result<Vec<FeedRecord>> {
        let rows = StructArray::from(batch.clone());
        let change = batch.column_by_name(crate::storage::CHANGE_TYPE).and_then(|c| c.as_string_opt::<i32>());
        let kind = |i: usize| match change.map(|c| c.value(i)) {
            Some("delete") => "delete",
            Some("update_preimage") => "update_preimage",
            Some("update_postimage") => "update_postimage",
            _ => "insert",
        };
        let column = |name: &str| batch.column_by_name(name).and_then(|c| c.as_binary_opt::<i32>().cloned());
        let mut out = Vec::with_capacity(rows.len());
        match self.format {
            // Registry topics' feeds are JSON too (the rows carry no writer schema to frame).
            TopicFormat::Json | TopicFormat::Avro | TopicFormat::Protobuf => {
                // One buffer for the rows' text, each record a slice of it.
                let json = JsonRows::new(&rows);
                let (mut text, mut ends) = (Vec::with_capacity(rows.len() * 256), Vec::with_capacity(rows.len()));
                for i in 0..rows.len() {
                    json.write(i, &mut text);
                    ends.push(text.len());
                }
                let text = Bytes::from(text);
                let mut start = 0;
                for (i, end) in ends.into_iter().enumerate() {
                    out.push(FeedRecord { key: None, value: text.slice(start..end), change_type: kind(i) });
                    start = end;
                }
            }
            TopicFormat::Bytes => {
                let (keys, values) = (column("key"), column("value"));
                for i in 0..rows.len() {
                    let at = |c: &Option<arrow::array::BinaryArray>| {
                        c.as_ref().filter(|c| c.is_valid(i)).map(|c| Bytes::copy_from_slice(c.value(i)))
                    };
                    out.push(FeedRecord {
                        key: at(&keys),
                        value: at(&values).unwrap_or_default(),
                        change_type: kind(i),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The first version whose commit time is at or after `timestamp_ms`, between `first` and
    /// `latest`, with that commit's time (`None`: every commit is older).
    ///
    /// # Errors
    /// Storage errors reading commits.
    pub(crate) async fn version_at(&self, timestamp_ms: i64, first: u64, latest: u64) -> Result<Option<(u64, i64)>> {
        let time_of = |v: u64| async move {
            let (actions, modified) = self.table.change_rows().read_commit_with_time(v).await?;
            Ok::<_, Error>(crate::delta::change_feed::commit_timestamp(&actions, modified))
        };
        if time_of(latest).await? < timestamp_ms {
            return Ok(None);
        }
        let (mut lo, mut hi) = (first, latest);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if time_of(mid).await? >= timestamp_ms {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(Some((lo, time_of(lo).await?)))
    }
}

fn keep(cursors: &mut Vec<ChangeCursor>, cursor: ChangeCursor) {
    cursors.push(cursor);
    if cursors.len() > CURSORS {
        cursors.remove(0);
    }
}

#[cfg(test)]
mod tests;
