//! A single follower: tails a source table from the sink's own position (or a configured start)
//! and hands every commit's changes to a [`ChangeSink`].
//!
//! - Start: the sink's recorded position + 1; without one, a version, `latest` (the next commit
//!   to land), `snapshot` (the table as of the latest version as inserts, then its commits) or
//!   `timestamp:<RFC 3339 | ms>` (the first commit at or after that time).
//! - Options in the spirit of Spark's Delta source: `skip_change_commits` (commits that delete
//!   or update rows deliver nothing), `ignore_deletes` (delete rows are dropped), and
//!   `max_files` / `max_bytes` per batch: when set, consecutive commits that are already there
//!   are delivered together (never split; never across a schema change) up to those limits,
//!   as one target commit or Kafka transaction positioned at the last of them.
//! - Polls `<v>.json` directly (see [`ChangeCursor`]) every poll interval, idle or not (an
//!   empty poll is one GET of a missing object, so a stretched interval would only add
//!   latency); stops when caught up with `once`, or when `stop` resolves.
//! - Health: before a commit is delivered, its age is checked against the table's retention
//!   ([`crate::beside::followers::position_health`]): a warning near the limit, an error past it unless `allow_stale`.
//! - Registration: with a follower id, the position is registered on the source table
//!   ([`Registrar`]) so deltabus maintenance keeps what the follower still needs: at start,
//!   then at most every ten seconds while it advances (busy or caught up), and at exit.
//! - Lag: versions and seconds behind go to the pipeline metrics when given. The loop itself
//!   (polling, fault riding, staleness, shaping, batching, lag) is the one every follower
//!   kind runs ([`super::turns`]); this file is the single follower's role in it.
//! - Schema changes are logged as `source.schema_changed` events and counted.

use std::future::Future;

use serde_json::json;

use super::core::{riding_faults, Lag};
use super::turns::{follow_loop, Delivery, Polled, Role, Want};
use crate::common::follow::{FollowerOptions, StartAt};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::feed::sink::ChangeSink;
use crate::metrics::PipelineMetrics;
use crate::storage::change_cursor::{ChangeCursor, CommitChanges};
use crate::storage::followers::Registrar;
use crate::storage::Table;

/// What a follower run did.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FollowerReport {
    pub source_commits: u64,
    pub rows: u64,
    pub schema_changes: u64,
    /// The last source version delivered.
    pub position: Option<u64>,
}

impl FollowerReport {
    /// The command output.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({"sourceCommits": self.source_commits, "rows": self.rows, "schemaChanges": self.schema_changes, "position": self.position})
    }
}

/// Follows `source` into `sink` until caught up (`once`) or `stop` resolves.
///
/// # Errors
/// Source read errors (a vacuumed commit, a protocol the reader cannot handle), a stale
/// position, and the sink's errors.
#[tracing::instrument(
    name = "follow", level = "info", skip_all,
    fields(source = %source.url(), sink = sink.name(), follower = opts.follower_id.as_deref().unwrap_or("-"))
)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn run_follower<S: ChangeSink>(
    source: &Table,
    sink: &mut S,
    opts: &FollowerOptions,
    metrics: Option<&PipelineMetrics>,
    stop: impl Future<Output = ()> + Send,
) -> Result<FollowerReport> {
    if let Some(f) = &opts.filter {
        let schema = source.snapshot(None).await?.schema;
        f.check_types(&schema).map_err(|e| Error::InvalidArgument(format!("--where: {e}")))?;
    }
    let progress = if opts.progress && opts.once {
        crate::common::progress::Progress::new("catching up", "commits", None)
    } else {
        crate::common::progress::Progress::hidden()
    };
    let mut lag = Lag::new(metrics);
    let position = sink.position().await?;
    let mut report = FollowerReport { position, ..FollowerReport::default() };
    let mut registrar = match &opts.follower_id {
        Some(id) => Some(Registrar::new(source, id, sink.name())?),
        None => None,
    };
    let mut cursor = match (position, opts.start) {
        (Some(p), _) if opts.skip_gaps => ChangeCursor::open_skipping_gaps(source, p + 1).await?,
        (Some(p), _) => ChangeCursor::open(source, p + 1).await?,
        (None, StartAt::Version(v)) if v > source.latest_version().await? + 1 => {
            let latest = source.latest_version().await?;
            return Err(Error::InvalidArgument(format!(
                "--from {v} is past the latest version, {latest} (use --from latest to wait for new commits)"
            )));
        }
        (None, StartAt::Version(v)) if opts.skip_gaps => ChangeCursor::open_skipping_gaps(source, v).await?,
        (None, StartAt::Version(v)) => ChangeCursor::open(source, v).await?,
        (None, StartAt::Latest) => ChangeCursor::open(source, source.latest_version().await? + 1).await?,
        (None, StartAt::Timestamp(ms)) => {
            let history = source.history(None).await?;
            let latest = history.first().map_or(0, |c| c.version);
            // History is newest first: the oldest commit at or after `ms`.
            let from = history.iter().filter(|c| c.timestamp >= ms).map(|c| c.version).min().unwrap_or(latest + 1);
            ChangeCursor::open(source, from).await?
        }
        (None, StartAt::Snapshot) => {
            let latest = source.latest_version().await?;
            let (changes, cursor) = ChangeCursor::snapshot_rows(source, latest, opts.filter.clone()).await?;
            let snapshot = cursor.snapshot().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?;
            // An empty table's snapshot still records the position.
            sink.mark(snapshot, &changes).await?;
            delivered(&mut report, &changes, source, &mut lag).await;
            progress.inc(1);
            cursor
        }
    };
    cursor = cursor.with_filter(opts.filter.clone()).skip_gaps(opts.skip_gaps);
    // A follower without a position records the version before its resolved start first:
    // a `latest` start resolved again after a stop would skip what came between (a version
    // or a timestamp resolves to the same commit again).
    if report.position.is_none() && matches!(opts.start, StartAt::Latest) {
        if let (Some(before), Some(snapshot)) = (cursor.next_version().checked_sub(1), cursor.snapshot()) {
            let start = CommitChanges {
                version: before,
                timestamp_ms: source.clock().now_ms(),
                batches: Vec::new(),
                schema_changed: false,
                files: 0,
            };
            sink.mark(snapshot, &start).await?;
            report.position = Some(before);
        }
    }
    tracing::info!(
        source = source.url(),
        sink = sink.name(),
        next_version = cursor.next_version(),
        position = ?report.position,
        once = opts.once,
        "follow.started"
    );
    if let Some(r) = &mut registrar {
        r.advance(cursor.next_version(), true).await;
    }
    let mut role = Single { source, sink, opts, registrar, progress, unsaved: None };
    follow_loop(source, &mut role, Some(cursor), opts, metrics, report, stop).await
}

/// A single follower: one position, kept by its sink; commits delivered in order, batched
/// within the limits; a position the sink skipped saved before it nears staleness; the
/// registration kept current.
struct Single<'a, S> {
    source: &'a Table,
    sink: &'a mut S,
    opts: &'a FollowerOptions,
    registrar: Option<Registrar>,
    progress: crate::common::progress::Progress,
    /// Commits without rows delivered since the sink last saved its position: when the
    /// oldest was written, and the last.
    unsaved: Option<(i64, CommitChanges)>,
}

impl<S: ChangeSink> Role for Single<'_, S> {
    fn want(&mut self) -> Want {
        Want::Next
    }

    fn pause(&self) -> std::time::Duration {
        self.opts.poll
    }

    fn batches(&self) -> bool {
        self.opts.max_files.is_some() || self.opts.max_bytes.is_some()
    }

    async fn poll(&mut self, cursor: &mut ChangeCursor) -> Result<Option<Polled>> {
        Ok(cursor.poll().await?.map(|c| (c, Vec::new())))
    }

    async fn deliver(&mut self, snapshot: &Snapshot, (changes, _): &Polled) -> Result<Option<Delivery>> {
        // A sink may skip a commit without rows (compaction, say) and keep its older position:
        // after a while of nothing but those, the position is saved anyway, or a restart would
        // find it older than the retention and refuse it as stale.
        let now = self.source.clock().now_ms();
        let since = self.unsaved.as_ref().map_or(changes.timestamp_ms, |(since, _)| *since);
        let save = changes.rows() == 0 && now - since >= keep_position_every(&snapshot.properties);
        deliver_riding_faults(self.sink, snapshot, changes, save).await?;
        self.unsaved = (changes.rows() == 0 && !save).then(|| (since, without_rows(changes)));
        self.progress.inc(1);
        crate::failpoint::hit("follow.before_registration");
        if let Some(r) = &mut self.registrar {
            r.advance(changes.version + 1, false).await;
        }
        Ok(Some(Delivery { rows: changes.rows(), new: true }))
    }

    async fn caught_up(&mut self, cursor: &ChangeCursor) -> Result<()> {
        // Caught up: save a position the sink skipped for long, and register it (throttled
        // like the busy path).
        if let (Some((since, last)), Some(snapshot)) = (&self.unsaved, cursor.snapshot()) {
            if self.source.clock().now_ms() - since >= keep_position_every(&snapshot.properties) {
                deliver_riding_faults(self.sink, snapshot, last, true).await?;
                self.unsaved = None;
            }
        }
        if let Some(r) = &mut self.registrar {
            r.advance(cursor.next_version(), false).await;
        }
        Ok(())
    }

    async fn at_end(&mut self, cursor: &mut ChangeCursor) -> Result<bool> {
        // Before stopping, make sure "nothing more" is not a gap.
        Ok(!cursor.check_gap().await?)
    }

    async fn finish(&mut self, cursor: Option<&ChangeCursor>, ok: bool) {
        // After a failure the cursor may stand past a commit that was not delivered: only a
        // clean stop registers where it stands.
        if let (true, Some(r), Some(c)) = (ok, &mut self.registrar, cursor) {
            r.advance(c.next_version(), true).await;
        }
        self.progress.finish();
    }
}

/// A commit's position without its rows (what a sink records to save it).
fn without_rows(changes: &CommitChanges) -> CommitChanges {
    CommitChanges {
        version: changes.version,
        timestamp_ms: changes.timestamp_ms,
        batches: Vec::new(),
        schema_changed: false,
        files: changes.files,
    }
}

/// How long a follower may go with commits its sink skipped before it saves its position
/// anyway: a quarter of what the table keeps, so the saved position never nears staleness.
fn keep_position_every(props: &crate::delta::properties::TableProperties) -> i64 {
    let kept = props.deleted_file_retention.min(props.log_retention);
    i64::try_from(kept.as_millis() / 4).unwrap_or(i64::MAX)
}

/// Delivers, retrying transient errors: every sink records its position with the rows, so a
/// delivery whose outcome was lost is recognised (or skipped) on the next attempt.
#[tracing::instrument(name = "deliver", level = "info", skip_all, fields(sink = sink.name(), version = changes.version))]
async fn deliver_riding_faults<S: ChangeSink>(
    sink: &mut S,
    snapshot: &Snapshot,
    changes: &CommitChanges,
    save_position: bool,
) -> Result<()> {
    if save_position {
        riding_faults!("follow.delivery_failed", sink.mark(snapshot, changes))
    } else {
        riding_faults!("follow.delivery_failed", sink.deliver(snapshot, changes))
    }
}

/// Counts a delivered commit in the report and the metrics.
async fn delivered(report: &mut FollowerReport, changes: &CommitChanges, source: &Table, lag: &mut Lag<'_>) {
    report.source_commits += 1;
    report.rows += changes.rows();
    report.position = Some(changes.version);
    lag.delivered(source, changes.version, changes.timestamp_ms, changes.rows(), true).await;
}
