//! A consumer-group member's loop: the table's change feed, cut into the group's slices, for
//! the slices this member holds.
//!
//! Contract:
//! - Each held slice has its own position (the next version it needs): the sink's own record
//!   when it keeps one (a Delta target: one `txn` per slice), else what the slice's previous
//!   holder recorded in its lease, else the group's start version.
//! - The cursor reads from the lowest position among the deliverable slices; a commit is cut
//!   into slices ([`split`]) and handed to the sink for the slices due at that version, in
//!   one delivery, after which their positions move past it. Slices further ahead wait for the
//!   cursor to reach them, so every slice sees its commits in version order.
//! - Only slices whose lease has time left are delivered ([`Member::deliverable`]); the sink
//!   re-checks its own positions, so a delivery that raced a new holder lands once.
//! - Before a commit is delivered its age is checked against the table's retention, as for
//!   a single follower (a warning near the limit, an error past it unless `allow_stale`), and
//!   `skip_change_commits` / `ignore_deletes` apply.
//! - Beats every third of the lease; on stop the member leaves, releasing its slices.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use arrow::array::{Array, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;
use futures::FutureExt;

use super::changes::{ChangeCursor, CommitChanges};
use super::follow::{check_health, shape, FollowerReport};
use super::group::Member;
use crate::common::follow::FollowerOptions;
use crate::delta::arrow_value::value_at;
use crate::delta::groups::{fnv1a, slice_of, slice_of_place, GroupSpec, FNV_START};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::Table;

/// A sink that delivers slices of commits.
pub trait SliceSink: Send {
    /// The next version `slice` needs, as the sink recorded it (`None`: it keeps none).
    fn slice_position(&mut self, slice: u32) -> impl Future<Output = Result<Option<u64>>> + Send;

    /// Delivers the rows of `slices` (each slice's share of `changes`) and records
    /// `changes.version + 1` as each one's next version where the sink keeps positions.
    fn deliver_slices(
        &mut self,
        snapshot: &Snapshot,
        changes: &CommitChanges,
        slices: &BTreeMap<u32, Vec<RecordBatch>>,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// Store faults a step rides out before the member stops.
const FAULT_RETRIES: u32 = 20;

/// `$step` (an expression yielding a `Result` future), again on transient errors with backoff.
macro_rules! retrying {
    ($step:expr) => {{
        let mut n = 0;
        loop {
            match $step.await {
                Err(e) if e.is_retryable() && n < FAULT_RETRIES => {
                    n += 1;
                    tracing::warn!(error = %e, "group.step_failed: retrying");
                    tokio::time::sleep(crate::common::backoff::FAULTS.delay(n)).await;
                }
                other => break other,
            }
        }
    }};
}

/// Runs `member` until `stop` resolves (or, with `once`, until its slices are caught up).
///
/// # Errors
/// Source read errors, sink errors past their retries, a group record that is unreadable.
pub async fn run_member<S: SliceSink>(
    source: &Table,
    sink: &mut S,
    member: &mut Member,
    opts: &FollowerOptions,
    stop: impl Future<Output = ()> + Send,
) -> Result<FollowerReport> {
    tokio::pin!(stop);
    let mut report = FollowerReport::default();
    let mut positions: BTreeMap<u32, u64> = BTreeMap::new();
    let mut cursor: Option<ChangeCursor> = None;
    let beat_every = member.lease() / 3;
    let mut next_beat = tokio::time::Instant::now();
    let mut failed_beats = 0u32;
    let mut warned = false;
    let result = loop {
        if (&mut stop).now_or_never().is_some() {
            break Ok(());
        }
        if tokio::time::Instant::now() >= next_beat {
            next_beat = tokio::time::Instant::now() + beat_every;
            match member.beat(&positions).await {
                Ok(()) => failed_beats = 0,
                Err(e) if e.is_retryable() && failed_beats < FAULT_RETRIES => {
                    failed_beats += 1;
                    tracing::warn!(error = %e, "group.beat_failed: the leases run on until the next beat");
                }
                Err(e) => break Err(e),
            }
            if let Err(e) = adopt(sink, member, &mut positions).await {
                break Err(e);
            }
        }
        let live: Vec<u32> =
            member.deliverable(source.clock().now_ms()).into_iter().filter(|s| positions.contains_key(s)).collect();
        let Some(from) = live.iter().map(|s| positions[s]).min() else {
            if opts.once {
                break Ok(());
            }
            if pause(opts.poll.min(beat_every), &mut stop).await {
                break Ok(());
            }
            continue;
        };
        if cursor.as_ref().is_none_or(|c| c.next_version() != from) {
            cursor = Some(ChangeCursor::open(source, from).await?.with_filter(opts.filter.clone()));
        }
        let Some(c) = cursor.as_mut() else { continue };
        let changes = match retrying!(c.poll())? {
            Some(changes) => changes,
            None if opts.once => break Ok(()),
            None => {
                if pause(opts.poll.min(beat_every), &mut stop).await {
                    break Ok(());
                }
                continue;
            }
        };
        let snapshot = c.snapshot().ok_or_else(|| Error::Internal("cursor without snapshot".into()))?.clone();
        // Staleness per slice: the commit is as old as the oldest position that needs it.
        check_health(source.clock().now_ms(), &snapshot, &changes, opts.allow_stale, &mut warned)?;
        let changes = shape(changes, opts)?;
        let due: Vec<u32> = live.iter().copied().filter(|s| positions[s] == changes.version).collect();
        // The leases may have run low while reading: deliver only what is still ours.
        let now = source.clock().now_ms();
        let still: Vec<u32> = member.deliverable(now);
        let due: Vec<u32> = due.into_iter().filter(|s| still.contains(s)).collect();
        if due.is_empty() {
            continue;
        }
        let slices = split(&changes, &member.spec, &due)?;
        retrying!(sink.deliver_slices(&snapshot, &changes, &slices))?;
        for s in &due {
            positions.insert(*s, changes.version + 1);
        }
        report.source_commits += 1;
        report.rows += slices.values().flatten().map(|b| b.num_rows() as u64).sum::<u64>();
        report.position = Some(report.position.map_or(changes.version, |p| p.max(changes.version)));
    };
    if let Err(e) = member.leave(&positions).await {
        tracing::warn!(error = %e, "group.leave_failed: the slices move once their leases run out");
    }
    result.map(|()| report)
}

/// Positions for the slices newly held; forgets the ones no longer held.
async fn adopt<S: SliceSink>(sink: &mut S, member: &Member, positions: &mut BTreeMap<u32, u64>) -> Result<()> {
    let held = member.held();
    positions.retain(|s, _| held.contains(s));
    for s in held {
        if let std::collections::btree_map::Entry::Vacant(e) = positions.entry(s) {
            let recorded = retrying!(sink.slice_position(s))?;
            // Both records only ever lag what was delivered: the later one is the position.
            let known = recorded.max(member.recorded_position(s));
            e.insert(known.unwrap_or(member.spec.start_version));
        }
    }
    Ok(())
}

/// Waits `d`; `true` when `stop` resolved meanwhile (it must not be polled again).
async fn pause(d: Duration, stop: &mut std::pin::Pin<&mut impl Future<Output = ()>>) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => false,
        () = stop.as_mut() => true,
    }
}

/// The rows of `changes` for each slice in `due` (a slice without rows maps to no batches).
///
/// # Errors
/// An Arrow error while cutting the batches.
pub fn split(changes: &CommitChanges, spec: &GroupSpec, due: &[u32]) -> Result<BTreeMap<u32, Vec<RecordBatch>>> {
    let mut out: BTreeMap<u32, Vec<RecordBatch>> = due.iter().map(|s| (*s, Vec::new())).collect();
    for (b, batch) in changes.batches.iter().enumerate() {
        let keys: Vec<&dyn Array> = spec
            .key_columns
            .iter()
            .map(|k| {
                batch.column_by_name(k).map(AsRef::as_ref).ok_or_else(|| {
                    Error::InvalidArgument(format!("group key column {k:?} is not a column of the table"))
                })
            })
            .collect::<Result<_>>()?;
        let mut rows: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for r in 0..batch.num_rows() {
            let slice = if keys.is_empty() {
                slice_of_place(b, r, spec.slices)
            } else {
                let mut h = FNV_START;
                for k in &keys {
                    h = fnv1a(h, value_at(*k, r).to_string().as_bytes());
                    h = fnv1a(h, &[0]);
                }
                slice_of(h, spec.slices)
            };
            if let Some(list) = out.contains_key(&slice).then(|| rows.entry(slice).or_default()) {
                list.push(r as u32);
            }
        }
        for (slice, idx) in rows {
            let part = if idx.len() == batch.num_rows() {
                batch.clone()
            } else {
                take_record_batch(batch, &UInt32Array::from(idx))
                    .map_err(|e| Error::Internal(format!("cutting a commit into slices: {e}")))?
            };
            out.entry(slice).or_default().push(part);
        }
    }
    Ok(out)
}
