//! The follower loop: tails a source table from the sink's own position (or a configured start)
//! and hands every commit's changes to a [`ChangeSink`].
//!
//! - Start: the sink's recorded position + 1; without one, a version, `latest` (the next commit
//!   to land) or `snapshot` (the table as of the latest version as inserts, then its commits).
//! - Polls `<v>.json` directly (see [`ChangeCursor`]) with idle backoff up to ten times the
//!   interval; stops when caught up with `once`, or when `stop` resolves.
//! - Health: before a commit is delivered, its age is checked against the table's retention
//!   ([`position_health`]): a warning near the limit, an error past it unless `allow_stale`.
//! - Registration: with a follower id, the position is registered on the source table
//!   ([`Registrar`]) so deltabus maintenance keeps what the follower still needs: at start, at
//!   most every ten seconds while busy, whenever it catches up, and at exit.
//! - Lag: versions and seconds behind go to the pipeline metrics when given.
//! - Schema changes are logged as `source.schema_changed` events and counted.

use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::json;

use super::changes::{ChangeCursor, CommitChanges};
use super::followers::Registrar;
use crate::delta::followers::{position_health, PositionHealth};
use crate::delta::predicate::Expr;
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::sink::ChangeSink;
use crate::storage::Table;

/// Where a follower without a recorded position starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    Version(u64),
    /// The next commit to land.
    Latest,
    /// The latest version's rows as inserts, then every later commit.
    Snapshot,
}

impl std::str::FromStr for StartAt {
    type Err = Error;
    fn from_str(s: &str) -> Result<StartAt> {
        match s {
            "latest" => Ok(StartAt::Latest),
            "snapshot" => Ok(StartAt::Snapshot),
            v => v.parse().map(StartAt::Version).map_err(|_| {
                Error::InvalidArgument(format!("start {v:?}: expected a version, `latest` or `snapshot`"))
            }),
        }
    }
}

/// Follower settings.
#[derive(Debug, Clone)]
pub struct FollowerOptions {
    pub start: StartAt,
    pub poll: Duration,
    /// Stop once caught up.
    pub once: bool,
    pub filter: Option<Expr>,
    /// Registers the position on the source under this id.
    pub follower_id: Option<String>,
    /// Follow even when the position is older than the table's retention.
    pub allow_stale: bool,
    /// Skip commits missing from the log (loudly) instead of failing.
    pub skip_gaps: bool,
}

impl FollowerOptions {
    /// Defaults: from `start`, 1 s polls, following forever, no filter, unregistered.
    pub fn new(start: StartAt) -> FollowerOptions {
        FollowerOptions {
            start,
            poll: Duration::from_secs(1),
            once: false,
            filter: None,
            follower_id: None,
            allow_stale: false,
            skip_gaps: false,
        }
    }
}

/// What a follower run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FollowerReport {
    pub source_commits: u64,
    pub rows: u64,
    pub schema_changes: u64,
    /// The last source version delivered.
    pub position: Option<u64>,
}

impl FollowerReport {
    /// The command output.
    pub fn to_json(&self) -> serde_json::Value {
        json!({"sourceCommits": self.source_commits, "rows": self.rows, "schemaChanges": self.schema_changes, "position": self.position})
    }
}

/// Follows `source` into `sink` until caught up (`once`) or `stop` resolves.
///
/// # Errors
/// Source read errors (a vacuumed commit, a protocol the reader cannot handle), a stale
/// position, and the sink's errors.
pub async fn run_follower<S: ChangeSink>(
    source: &Table,
    sink: &mut S,
    opts: &FollowerOptions,
    metrics: Option<&PipelineMetrics>,
    stop: impl Future<Output = ()> + Send,
) -> Result<FollowerReport> {
    tokio::pin!(stop);
    let position = sink.position().await?;
    let mut report = FollowerReport { position, ..FollowerReport::default() };
    let mut registrar = match &opts.follower_id {
        Some(id) => Some(Registrar::new(source, id, sink.name())?),
        None => None,
    };
    let mut cursor = match (position, opts.start) {
        (Some(p), _) => ChangeCursor::open(source, p + 1).await?,
        (None, StartAt::Version(v)) => ChangeCursor::open(source, v).await?,
        (None, StartAt::Latest) => ChangeCursor::open(source, source.latest_version().await? + 1).await?,
        (None, StartAt::Snapshot) => {
            let latest = source.latest_version().await?;
            let (changes, cursor) = ChangeCursor::snapshot_rows(source, latest, opts.filter.clone()).await?;
            let snapshot = cursor.snapshot().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
            sink.deliver(snapshot, &changes).await?;
            delivered(&mut report, &changes, metrics);
            cursor
        }
    };
    cursor = cursor.with_filter(opts.filter.clone()).skip_gaps(opts.skip_gaps);
    if let Some(r) = &mut registrar {
        r.advance(cursor.next_version(), true).await;
    }
    let mut warned = false;
    let mut wait = opts.poll;
    let max_idle = opts.poll.saturating_mul(10);
    let mut latest_seen: Option<(Instant, u64)> = None;
    loop {
        if (&mut stop).now_or_never().is_some() {
            break;
        }
        let Some(changes) = cursor.poll().await? else {
            if let Some(m) = metrics {
                m.source_lag(cursor.next_version().checked_sub(1), 0, 0.0);
            }
            // Caught up: register the position now (a no-op when it is already registered).
            if let Some(r) = &mut registrar {
                r.advance(cursor.next_version(), true).await;
            }
            if opts.once {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = &mut stop => break,
            }
            wait = (wait + opts.poll / 2).min(max_idle);
            continue;
        };
        wait = opts.poll;
        let snapshot = cursor.snapshot().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
        check_health(snapshot, &changes, opts.allow_stale, &mut warned)?;
        if changes.schema_changed {
            report.schema_changes += 1;
            tracing::warn!(table = source.url(), version = changes.version, "source.schema_changed");
        }
        sink.deliver(snapshot, &changes).await?;
        delivered(&mut report, &changes, metrics);
        if let Some(r) = &mut registrar {
            r.advance(cursor.next_version(), false).await;
        }
        if let Some(m) = metrics {
            // Versions behind: from a listing at most every 5 s while busy (never while idle).
            if latest_seen.is_none_or(|(at, v)| v <= changes.version && at.elapsed() > Duration::from_secs(5)) {
                let listing = source.list_log(Some(changes.version)).await?;
                let latest = listing.commits.keys().next_back().copied().unwrap_or(changes.version);
                latest_seen = Some((Instant::now(), latest));
            }
            let latest = latest_seen.map_or(changes.version, |(_, v)| v.max(changes.version));
            let age = (chrono::Utc::now().timestamp_millis() - changes.timestamp_ms).max(0) as f64 / 1000.0;
            let behind = latest - changes.version;
            m.source_lag(Some(changes.version), behind, if behind == 0 { 0.0 } else { age });
        }
    }
    if let Some(r) = &mut registrar {
        r.advance(cursor.next_version(), true).await;
    }
    Ok(report)
}

fn delivered(report: &mut FollowerReport, changes: &CommitChanges, metrics: Option<&PipelineMetrics>) {
    report.source_commits += 1;
    report.rows += changes.rows();
    report.position = Some(changes.version);
    if let Some(m) = metrics {
        m.commits.fetch_add(1, Relaxed);
        m.rows_committed.fetch_add(changes.rows(), Relaxed);
    }
}

fn check_health(
    snapshot: &crate::delta::snapshot::Snapshot,
    changes: &CommitChanges,
    allow_stale: bool,
    warned: &mut bool,
) -> Result<()> {
    let now = chrono::Utc::now().timestamp_millis();
    match position_health(Some(changes.timestamp_ms), now, changes.version, &snapshot.properties) {
        PositionHealth::Fresh => *warned = false,
        PositionHealth::Warn(m) if !*warned => {
            *warned = true;
            tracing::warn!("follower.behind_retention: {m}");
        }
        PositionHealth::Stale(m) if allow_stale => {
            if !*warned {
                *warned = true;
                tracing::warn!("follower.stale (allowed): {m}");
            }
        }
        PositionHealth::Stale(m) => {
            return Err(Error::MissingVersion {
                version: changes.version,
                reason: format!("{m}; start again from a snapshot, or pass --allow-stale to read what is left"),
            })
        }
        PositionHealth::Warn(_) => {}
    }
    Ok(())
}
