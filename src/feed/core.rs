//! What every follower loop shares, so that a check or a metric exists in one place: a single
//! follower ([`super::follow`]) and a consumer-group member ([`super::group_follow`]) poll,
//! check staleness, shape rows, deliver, ride out store faults and export lag through these.
//!
//! - [`riding_faults!`]: a step again after a transient store error (20 times, with the fault
//!   backoff); the cursor does not advance on one, and every sink recognises a delivery whose
//!   outcome was lost, so a step may always be repeated.
//! - [`check_health`]: a commit's age against the source's retention (a warning near it, an
//!   error past it unless `allow_stale`).
//! - [`shape`]: `skip_change_commits` and `ignore_deletes`.
//! - [`Lag`]: the source-lag metric (position, versions and seconds behind) and the delivery
//!   counters, for every follower kind alike. Versions behind come from a log listing at most
//!   every five seconds while busy (never while idle); a store fault there costs a stale figure
//!   until the next try, never the follower.

use std::time::Duration;

use arrow::array::{Array, BooleanArray, StringArray};
use arrow::compute::filter_record_batch;
use tokio::time::Instant;

use crate::beside::followers::{position_health, PositionHealth};
use crate::common::follow::FollowerOptions;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::metrics::PipelineMetrics;
use crate::storage::change_cursor::CommitChanges;
use crate::storage::{Table, CHANGE_TYPE};

/// Store faults a follower rides out (with backoff) at one step before it stops.
pub(crate) const FAULT_RETRIES: u32 = crate::common::retry::RIDDEN_FAULTS;

/// `$step` (an expression yielding a `Result` future), again on transient errors with the
/// fault backoff, at most [`FAULT_RETRIES`] times; `$what` names the step in the warning.
macro_rules! riding_faults {
    ($what:literal, $step:expr) => {{
        let mut n = 0;
        loop {
            match $step.await {
                Err(e) if e.is_retryable() && n < $crate::feed::core::FAULT_RETRIES => {
                    n += 1;
                    tracing::warn!(error = %e, attempt = n, concat!($what, ": retrying"));
                    tokio::time::sleep($crate::common::backoff::FAULTS.delay(n)).await;
                }
                other => break other,
            }
        }
    }};
}
pub(crate) use riding_faults;

/// Checks a commit's age against the source's retention before it is delivered.
///
/// # Errors
/// [`Error::MissingVersion`] for a stale position without `allow_stale`.
pub(crate) fn check_health(
    now: i64,
    snapshot: &Snapshot,
    changes: &CommitChanges,
    allow_stale: bool,
    warned: &mut bool,
) -> Result<()> {
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

/// Applies `skip_change_commits` and `ignore_deletes` to one commit's rows.
///
/// # Errors
/// An Arrow error while filtering.
pub(crate) fn shape(mut changes: CommitChanges, opts: &FollowerOptions) -> Result<CommitChanges> {
    if !opts.skip_change_commits && !opts.ignore_deletes {
        return Ok(changes);
    }
    let mut kept = Vec::with_capacity(changes.batches.len());
    for batch in changes.batches {
        let Some(types) =
            batch.column_by_name(CHANGE_TYPE).and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
        else {
            kept.push(batch);
            continue;
        };
        if opts.skip_change_commits && types.iter().any(|t| t != Some("insert")) {
            changes.batches = Vec::new();
            return Ok(changes);
        }
        let mask: BooleanArray = types.iter().map(|t| Some(t != Some("delete"))).collect();
        kept.push(
            filter_record_batch(&batch, &mask).map_err(|e| Error::Internal(format!("filtering delete rows: {e}")))?,
        );
    }
    changes.batches = kept;
    Ok(changes)
}

/// The lag metric and delivery counters of one follower (single or grouped).
pub(crate) struct Lag<'a> {
    metrics: Option<&'a PipelineMetrics>,
    /// When the newest version was last listed, and what it was.
    latest_seen: Option<(Instant, u64)>,
}

impl<'a> Lag<'a> {
    pub(crate) fn new(metrics: Option<&'a PipelineMetrics>) -> Self {
        Lag { metrics, latest_seen: None }
    }

    /// Caught up at `position` (the last version delivered, if any).
    pub(crate) fn caught_up(&self, position: Option<u64>) {
        if let Some(m) = self.metrics {
            m.source_lag(position, 0, 0.0);
        }
    }

    /// `rows` of source commit `version` (committed at `timestamp_ms`) were delivered; `new`
    /// is false when this commit was counted before (another slice of it, say).
    pub(crate) async fn delivered(&mut self, source: &Table, version: u64, timestamp_ms: i64, rows: u64, new: bool) {
        let Some(m) = self.metrics else { return };
        m.records_in.inc_by(rows);
        m.rows_committed.inc_by(rows);
        if new {
            m.commits.inc_by(1);
        }
        if self.latest_seen.is_none_or(|(at, v)| v <= version && at.elapsed() > Duration::from_secs(5)) {
            match source.list_log(Some(version)).await {
                Ok(listing) => {
                    let latest = listing.commits.keys().next_back().copied().unwrap_or(version);
                    self.latest_seen = Some((Instant::now(), latest));
                }
                Err(e) => tracing::warn!(error = %e, "follow.lag_listing_failed"),
            }
        }
        let latest = self.latest_seen.map_or(version, |(_, v)| v.max(version));
        let age = (source.clock().now_ms() - timestamp_ms).max(0) as f64 / 1000.0;
        let behind = latest - version;
        m.source_lag(Some(version), behind, if behind == 0 { 0.0 } else { age });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::storage::faulty::{FaultConfig, FaultyStore};
    use crate::storage::StorageOptions;

    /// The listing behind "versions behind" is only for the metric: a store that fails every
    /// call costs a stale figure, never the follower (no error, no panic), and the position is
    /// still reported.
    #[tokio::test]
    async fn a_failing_lag_listing_costs_only_the_figure() {
        let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
        let table = Table::open(&url, StorageOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let failing = table.map_store(|s| {
            Arc::new(FaultyStore::new(s, FaultConfig { seed: 1, rate: 1.0, only: None, lose: vec![], delay: None }))
                as Arc<dyn object_store::ObjectStore>
        });
        let metrics = crate::metrics::Metrics::default();
        let m = metrics.pipeline("ü-follower");
        let mut lag = Lag::new(Some(&m));
        lag.delivered(&failing, 7, 0, 3, true).await;
        let text = metrics.render();
        assert!(text.contains("deltabus_source_version{pipeline=\"ü-follower\"} 7"), "{text}");
        assert!(text.contains("deltabus_records_in_total{pipeline=\"ü-follower\"} 3"), "{text}");
    }
}
