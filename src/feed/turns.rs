//! The one follow loop. Every follower kind, single or a member of a consumer group, runs
//! through [`follow_loop`]; what differs between them is a [`Role`]: where reading starts,
//! which commits are due, how a commit reaches the sink and what to tend between turns.
//!
//! One turn of the loop:
//! 1. stop when `stop` resolved;
//! 2. the role tends its duties (a member beats and adopts slices);
//! 3. the role says what it wants: the cursor's next commit, a commit from a version (the
//!    cursor is reopened there, riding out store faults), or nothing for now;
//! 4. the next commit is polled, riding out store faults; with nothing new the lag is
//!    reported as caught up, the role tends its idle duties, and the loop stops (`once`, once
//!    the role confirms the end is not a gap) or pauses;
//! 5. the commit's age is checked against the source's retention ([`check_health`]), rows
//!    are shaped ([`shape`]), and with batching on, consecutive commits already there join it
//!    within `max_files` / `max_bytes` (never across a schema change);
//! 6. the role delivers it; the report, the delivery counters and the lag metric are updated
//!    here for every kind alike.
//!
//! A failure of any step ends the loop with that error after the role's `finish(false)`.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;

use super::core::{check_health, riding_faults, shape, Lag};
use super::follow::FollowerReport;
use crate::common::follow::FollowerOptions;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::storage::change_cursor::{ChangeCursor, CommitChanges};
use crate::storage::Table;

/// What a role wants read next.
pub(crate) enum Want {
    /// The cursor's next commit (the cursor the loop was started with).
    Next,
    /// The commit at this version (the cursor is reopened there when it stands elsewhere).
    From(u64),
    /// Nothing is due now (a member holding no deliverable slice).
    Nothing,
}

/// A polled commit and, when a role reads by file, the tag of each of its batches.
pub(crate) type Polled = (CommitChanges, Vec<u32>);

/// What one delivery did: rows handed over, and whether the source commit is counted for the
/// first time (a member delivers one commit once per slice).
pub(crate) struct Delivery {
    pub(crate) rows: u64,
    pub(crate) new: bool,
}

/// What differs between follower kinds; the loop owns the rest.
pub(crate) trait Role: Send {
    /// Duties at the top of every turn.
    fn tend(&mut self) -> impl Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }

    /// What to read next.
    fn want(&mut self) -> Want;

    /// How long to wait when nothing is new.
    fn pause(&self) -> Duration;

    /// Whether consecutive commits may be delivered together.
    fn batches(&self) -> bool {
        false
    }

    /// The next commit at `cursor` (one attempt; the loop rides out store faults).
    fn poll(&mut self, cursor: &mut ChangeCursor) -> impl Future<Output = Result<Option<Polled>>> + Send;

    /// Delivers a shaped commit; `None` when nothing of it was due any more.
    fn deliver(
        &mut self,
        snapshot: &Snapshot,
        polled: &Polled,
    ) -> impl Future<Output = Result<Option<Delivery>>> + Send;

    /// Nothing new at `cursor`: idle duties (save a skipped position, register).
    fn caught_up(&mut self, _cursor: &ChangeCursor) -> impl Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }

    /// With `once` and nothing new: whether this is the end (not a gap in the log).
    fn at_end(&mut self, _cursor: &mut ChangeCursor) -> impl Future<Output = Result<bool>> + Send {
        async { Ok(true) }
    }

    /// The loop is over (`ok`: it stopped without an error).
    fn finish(&mut self, cursor: Option<&ChangeCursor>, ok: bool) -> impl Future<Output = ()> + Send;
}

/// Runs `role` from `cursor` (a role that reads from versions may start without one) until
/// caught up (`once`) or `stop` resolves; `report` holds what was delivered before the loop.
///
/// # Errors
/// The first failing step's error: a source read past its retries, a stale commit without
/// `allow_stale`, the role's delivery errors.
pub(crate) async fn follow_loop<R: Role>(
    source: &Table,
    role: &mut R,
    cursor: Option<ChangeCursor>,
    opts: &FollowerOptions,
    metrics: Option<&PipelineMetrics>,
    report: FollowerReport,
    stop: impl Future<Output = ()> + Send,
) -> Result<FollowerReport> {
    tokio::pin!(stop);
    let mut turns = Turns { source, opts, lag: Lag::new(metrics), warned: false, pending: None, cursor, report };
    let result = turns.run(role, &mut stop).await;
    role.finish(turns.cursor.as_ref(), result.is_ok()).await;
    result.map(|()| turns.report)
}

/// The loop's own state.
struct Turns<'a> {
    source: &'a Table,
    opts: &'a FollowerOptions,
    lag: Lag<'a>,
    /// Whether the staleness warning was given (once until the follower is fresh again).
    warned: bool,
    /// A commit polled while batching that could not join the batch.
    pending: Option<Polled>,
    cursor: Option<ChangeCursor>,
    report: FollowerReport,
}

impl Turns<'_> {
    async fn run<R: Role>(
        &mut self,
        role: &mut R,
        stop: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
    ) -> Result<()> {
        loop {
            if stop.as_mut().now_or_never().is_some() {
                return Ok(());
            }
            role.tend().await?;
            match role.want() {
                Want::Next => {}
                Want::From(v) => {
                    if self.cursor.as_ref().is_none_or(|c| c.next_version() != v) {
                        self.pending = None;
                        let filter = self.opts.filter.clone();
                        let opened = riding_faults!("follow.open_failed", ChangeCursor::open(self.source, v))?;
                        self.cursor = Some(opened.with_filter(filter));
                    }
                }
                Want::Nothing => {
                    self.lag.caught_up(self.report.position);
                    if self.opts.once || pause(role.pause(), stop).await {
                        return Ok(());
                    }
                    continue;
                }
            }
            let cursor = self.cursor.as_mut().ok_or_else(|| Error::Internal("a follower without a cursor".into()))?;
            let next = match self.pending.take() {
                Some(p) => Some(p),
                None => riding_faults!("follow.poll_failed", role.poll(cursor))?,
            };
            let Some((first, tags)) = next else {
                self.lag.caught_up(cursor.next_version().checked_sub(1));
                role.caught_up(cursor).await?;
                if self.opts.once {
                    if role.at_end(cursor).await? {
                        return Ok(());
                    }
                    continue;
                }
                if pause(role.pause(), stop).await {
                    return Ok(());
                }
                continue;
            };
            let now = self.source.clock().now_ms();
            check_health(now, snapshot_of(cursor)?, &first, self.opts.allow_stale, &mut self.warned)?;
            let mut changes = shape(first, self.opts)?;
            if role.batches() {
                while fits(&changes, self.opts) {
                    match riding_faults!("follow.poll_failed", role.poll(cursor))? {
                        Some((c, t)) if c.schema_changed => {
                            self.pending = Some((c, t));
                            break;
                        }
                        Some((c, _)) => {
                            let now = self.source.clock().now_ms();
                            check_health(now, snapshot_of(cursor)?, &c, self.opts.allow_stale, &mut self.warned)?;
                            let c = shape(c, self.opts)?;
                            changes.version = c.version;
                            changes.timestamp_ms = c.timestamp_ms;
                            changes.files += c.files;
                            changes.batches.extend(c.batches);
                        }
                        None => break,
                    }
                }
            }
            if changes.schema_changed {
                self.report.schema_changes += 1;
                tracing::warn!(table = self.source.url(), version = changes.version, "source.schema_changed");
            }
            let (version, timestamp_ms) = (changes.version, changes.timestamp_ms);
            let Some(done) = role.deliver(snapshot_of(cursor)?, &(changes, tags)).await? else { continue };
            let report = &mut self.report;
            report.source_commits += u64::from(done.new);
            report.rows += done.rows;
            report.position = Some(report.position.map_or(version, |p| p.max(version)));
            self.lag.delivered(self.source, version, timestamp_ms, done.rows, done.new).await;
        }
    }
}

/// The source table as of the cursor's last commit.
fn snapshot_of(cursor: &ChangeCursor) -> Result<&Snapshot> {
    cursor.snapshot().ok_or_else(|| Error::Internal("cursor without snapshot".into()))
}

/// Waits `d`; `true` when `stop` resolved meanwhile (it must not be polled again).
async fn pause(d: Duration, stop: &mut std::pin::Pin<&mut impl Future<Output = ()>>) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => false,
        () = stop.as_mut() => true,
    }
}

/// Whether another commit may join the batch.
fn fits(changes: &CommitChanges, opts: &FollowerOptions) -> bool {
    let bytes: u64 = changes.batches.iter().map(|b| b.get_array_memory_size() as u64).sum();
    opts.max_files.is_none_or(|m| changes.files < m) && opts.max_bytes.is_none_or(|m| bytes < m)
}
