//! A consumer-group member's loop: the table's change feed, cut into the group's slices, for
//! the slices this member holds.
//!
//! Contract:
//! - Each held slice has its own position (the next version it needs): the sink's own record
//!   when it keeps one (a Delta target: one `txn` per slice), else what the slice's previous
//!   holder recorded in its lease, else the group's start version.
//! - The cursor reads from the lowest position among the deliverable slices; a commit is cut
//!   into slices and handed to the sink for the slices due at that version, in one delivery,
//!   after which their positions move past it. With key columns every file of the commit is
//!   read and its rows cut by key ([`split`]); without, a row's slice is its file's, and only
//!   the files of the due slices are read. Slices further ahead wait for the
//!   cursor to reach them, so every slice sees its commits in version order.
//! - Only slices whose lease has time left are delivered ([`Member::deliverable`]); the sink
//!   re-checks its own positions, so a delivery that raced a new holder lands once.
//! - Before a commit is delivered its age is checked against the table's retention, as for
//!   a single follower (a warning near the limit, an error past it unless `allow_stale`), and
//!   `skip_change_commits` / `ignore_deletes` apply.
//! - Beats every third of the lease; on stop the member leaves, releasing its slices.
//! - The loop is the single follower's ([`super::turns`]): fault riding, staleness, shaping,
//!   lag metrics and delivery counters exist once, and a member exports the same metrics.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use arrow::array::{Array, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;

use super::core::{riding_faults, FAULT_RETRIES};
use super::follow::FollowerReport;
use super::group::Member;
use super::turns::{follow_loop, Delivery, Polled, Role, Want};
use crate::beside::groups::{fnv1a, slice_of, slice_of_path, GroupSpec, FNV_START};
use crate::common::follow::FollowerOptions;
use crate::delta::arrow_value::value_at;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::feed::sink::ChangeSink;
use crate::metrics::PipelineMetrics;
use crate::storage::change_cursor::{ChangeCursor, CommitChanges};
use crate::storage::Table;

/// Runs `member` until `stop` resolves (or, with `once`, until its slices are caught up).
///
/// # Errors
/// Source read errors, sink errors past their retries, a group record that is unreadable.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn run_member<S: ChangeSink>(
    source: &Table,
    sink: &mut S,
    member: &mut Member,
    opts: &FollowerOptions,
    metrics: Option<&PipelineMetrics>,
    stop: impl Future<Output = ()> + Send,
) -> Result<FollowerReport> {
    tracing::info!(
        source = source.url(),
        group = member.spec_group(),
        member = member.name(),
        slices = member.spec.slices,
        once = opts.once,
        "group.member_started"
    );
    let beat_every = member.lease() / 3;
    let mut role = Slices {
        source,
        sink,
        member,
        opts,
        positions: BTreeMap::new(),
        wanted: Vec::new(),
        delivered_versions: BTreeSet::new(),
        beat_every,
        next_beat: tokio::time::Instant::now(),
        failed_beats: 0,
    };
    follow_loop(source, &mut role, None, opts, metrics, FollowerReport::default(), stop).await
}

/// A group member: one position per held slice; the cursor reads from the lowest position
/// of the deliverable slices, and a commit goes to the slices due at its version.
struct Slices<'a, S> {
    source: &'a Table,
    sink: &'a mut S,
    member: &'a mut Member,
    opts: &'a FollowerOptions,
    /// The next version each held slice needs.
    positions: BTreeMap<u32, u64>,
    /// The slices that need the commit being read.
    wanted: Vec<u32>,
    /// Source commits delivered, each counted once however many slice deliveries it took
    /// (kept only from the slowest held position on).
    delivered_versions: BTreeSet<u64>,
    beat_every: Duration,
    next_beat: tokio::time::Instant,
    failed_beats: u32,
}

impl<S: ChangeSink> Role for Slices<'_, S> {
    async fn tend(&mut self) -> Result<()> {
        if tokio::time::Instant::now() < self.next_beat {
            return Ok(());
        }
        self.next_beat = tokio::time::Instant::now() + self.beat_every;
        match self.member.beat(&self.positions).await {
            Ok(()) => self.failed_beats = 0,
            Err(e) if e.is_retryable() && self.failed_beats < FAULT_RETRIES => {
                self.failed_beats += 1;
                tracing::warn!(error = %e, "group.beat_failed: the leases run on until the next beat");
            }
            Err(e) => return Err(e),
        }
        adopt(self.sink, self.member, &mut self.positions).await
    }

    fn want(&mut self) -> Want {
        let now = self.source.clock().now_ms();
        let live: Vec<u32> =
            self.member.deliverable(now).into_iter().filter(|s| self.positions.contains_key(s)).collect();
        let Some(from) = live.iter().map(|s| self.positions[s]).min() else { return Want::Nothing };
        self.wanted = live.into_iter().filter(|s| self.positions[s] == from).collect();
        Want::From(from)
    }

    fn pause(&self) -> Duration {
        self.opts.poll.min(self.beat_every)
    }

    async fn poll(&mut self, cursor: &mut ChangeCursor) -> Result<Option<Polled>> {
        if !self.member.spec.key_columns.is_empty() {
            return Ok(cursor.poll().await?.map(|changes| (changes, Vec::new())));
        }
        // Without keys a row's slice is its file's: only the files of wanted slices are read.
        let (count, wanted) = (self.member.spec.slices, self.wanted.clone());
        let slice_of_file = move |path: &str| {
            let s = slice_of_path(path, count);
            wanted.contains(&s).then_some(s)
        };
        cursor.poll_by_file(&slice_of_file).await
    }

    async fn deliver(&mut self, snapshot: &Snapshot, (changes, tags): &Polled) -> Result<Option<Delivery>> {
        // The leases may have run low while reading: deliver only what is still ours.
        let still: Vec<u32> = self.member.deliverable(self.source.clock().now_ms());
        let positions = &self.positions;
        let due: Vec<u32> =
            self.wanted.iter().copied().filter(|s| positions[s] == changes.version && still.contains(s)).collect();
        if due.is_empty() {
            return Ok(None);
        }
        let slices = if self.member.spec.key_columns.is_empty() {
            by_file(changes, tags, &due)
        } else {
            split(changes, &self.member.spec, &due)?
        };
        let lost = riding_faults!("group.step_failed", self.sink.deliver_slices(snapshot, changes, &slices))?;
        for s in &lost {
            self.positions.remove(s);
            self.member.forget(*s);
        }
        for s in due.iter().filter(|s| !lost.contains(s)) {
            self.positions.insert(*s, changes.version + 1);
        }
        let new = self.delivered_versions.insert(changes.version);
        if let Some(slowest) = self.positions.values().min() {
            self.delivered_versions = self.delivered_versions.split_off(slowest);
        }
        let rows = slices
            .iter()
            .filter(|(s, _)| !lost.contains(s))
            .flat_map(|(_, b)| b)
            .map(|b| b.num_rows() as u64)
            .sum::<u64>();
        Ok(Some(Delivery { rows, new }))
    }

    async fn finish(&mut self, _cursor: Option<&ChangeCursor>, _ok: bool) {
        // Positions only move past what was delivered: leaving hands every slice on, after a
        // failure too.
        if let Err(e) = self.member.leave(&self.positions).await {
            tracing::warn!(error = %e, "group.leave_failed: the slices move once their leases run out");
        }
    }
}

/// Positions for the slices newly held; forgets the ones no longer held.
async fn adopt<S: ChangeSink>(sink: &mut S, member: &Member, positions: &mut BTreeMap<u32, u64>) -> Result<()> {
    let held = member.held();
    positions.retain(|s, _| held.contains(s));
    for s in held {
        if let std::collections::btree_map::Entry::Vacant(e) = positions.entry(s) {
            let recorded = riding_faults!("group.step_failed", sink.slice_position(s))?;
            // Both records only ever lag what was delivered: the later one is the position.
            let known = recorded.max(member.recorded_position(s));
            e.insert(known.unwrap_or(member.spec.start_version));
        }
    }
    Ok(())
}

/// The batches of `changes` for each slice in `due`, by the slice of the file each came from
/// (`tags`, in batch order; none when `skip_change_commits` emptied the commit).
fn by_file(changes: &CommitChanges, tags: &[u32], due: &[u32]) -> BTreeMap<u32, Vec<RecordBatch>> {
    let mut out: BTreeMap<u32, Vec<RecordBatch>> = due.iter().map(|s| (*s, Vec::new())).collect();
    if tags.len() == changes.batches.len() {
        for (tag, batch) in tags.iter().zip(&changes.batches) {
            if let Some(list) = out.get_mut(tag) {
                list.push(batch.clone());
            }
        }
    }
    out
}

/// The rows of `changes` for each slice in `due` by the hash of the group's key columns (a
/// slice without rows maps to no batches).
///
/// # Errors
/// A key column missing from the rows; an Arrow error while cutting the batches.
pub(crate) fn split(changes: &CommitChanges, spec: &GroupSpec, due: &[u32]) -> Result<BTreeMap<u32, Vec<RecordBatch>>> {
    let mut out: BTreeMap<u32, Vec<RecordBatch>> = due.iter().map(|s| (*s, Vec::new())).collect();
    for batch in &changes.batches {
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
            let mut h = FNV_START;
            for k in &keys {
                h = fnv1a(h, value_at(*k, r).to_string().as_bytes());
                h = fnv1a(h, &[0]);
            }
            let slice = slice_of(h, spec.slices);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(ids: &[i64], names: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from(ids.to_vec())), Arc::new(StringArray::from(names.to_vec()))],
        )
        .unwrap()
    }

    fn changes(batches: Vec<RecordBatch>) -> CommitChanges {
        CommitChanges { version: 3, timestamp_ms: 0, batches, schema_changed: false, files: 2 }
    }

    #[test]
    fn keyed_rows_go_to_their_keys_slice_and_only_due_slices_are_kept() {
        let spec = GroupSpec { slices: 4, key_columns: vec!["name".into()], start_version: 0, created_at: 0 };
        let c = changes(vec![batch(&[1, 2, 3, 4], &["a", "b", "a", "c"]), batch(&[5], &["a"])]);
        let all = split(&c, &spec, &[0, 1, 2, 3]).unwrap();
        let slice_of_a = all
            .iter()
            .find(|(_, b)| {
                b.iter().any(|b| {
                    b.num_rows() > 0 && {
                        let names = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
                        names.iter().any(|n| n == Some("a"))
                    }
                })
            })
            .map(|(s, _)| *s)
            .unwrap();
        let a_rows: usize = all[&slice_of_a].iter().map(RecordBatch::num_rows).sum();
        assert!(a_rows >= 3, "every row of key a in one slice");
        assert_eq!(all.values().flatten().map(RecordBatch::num_rows).sum::<usize>(), 5, "every row once");
        let others: Vec<u32> = (0..4).filter(|s| *s != slice_of_a).collect();
        let some = split(&c, &spec, &others).unwrap();
        assert!(!some.contains_key(&slice_of_a));
        assert_eq!(some.values().flatten().map(RecordBatch::num_rows).sum::<usize>(), 5 - a_rows);
    }

    #[test]
    fn file_slices_keep_the_batches_of_due_slices() {
        let c = changes(vec![batch(&[1], &["x"]), batch(&[2, 3], &["y", "z"])]);
        let out = by_file(&c, &[2, 5], &[5, 7]);
        assert_eq!(out[&5].len(), 1);
        assert_eq!(out[&5][0].num_rows(), 2);
        assert!(out[&7].is_empty());
        assert!(!out.contains_key(&2));
        // A commit emptied by skip_change_commits has no batches for its tags.
        assert!(by_file(&changes(Vec::new()), &[2, 5], &[5]).values().all(Vec::is_empty));
    }
}
