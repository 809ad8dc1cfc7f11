//! Where a follower's change rows go. Each sink stores its own position (the last source
//! version it fully delivered) with the rows, so that a restart neither repeats nor skips:
//!
//! - [`table`]: another Delta table; rows and `txn(<follower>-<source table id>, version)` in
//!   one put-if-absent commit.
//! - [`kafka`]: a Kafka topic; rows and a progress record (to a compacted progress topic) in
//!   one Kafka transaction.
//! - [`lines`]: JSON lines on stdout or in a file; with a state file the position is saved
//!   after each commit (a file output is truncated back to the saved length on restart, so it
//!   is exact; a pipe may see the last commit again after a crash).
//!
//! - [`mirror`], [`file_mirror`]: another Delta table kept a copy of the source, by key or by
//!   files.
//!
//! One loop drives every sink ([`crate::feed::turns`]), in the role of one follower
//! ([`crate::feed::follow`]) or of a group member by slices ([`crate::feed::group_follow`]).

internal_mods!(file_mirror);
internal_mods!(kafka);
internal_mods!(lines);
internal_mods!(mirror);
internal_mods!(table);

use std::collections::BTreeMap;
use std::future::Future;

use arrow::array::RecordBatch;

use crate::delta::snapshot::Snapshot;
use crate::error::Result;
use crate::storage::change_cursor::CommitChanges;

/// A destination for change rows that records how far it got: the one sink contract of every
/// follower, single or a member of a consumer group. A single follower records one position
/// ([`ChangeSink::position`], [`ChangeSink::deliver`], [`ChangeSink::mark`]); a group member
/// hands over slices of commits ([`ChangeSink::slice_position`],
/// [`ChangeSink::deliver_slices`]), which a sink without per-slice positions takes as one
/// delivery.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) trait ChangeSink: Send {
    /// The last source version completely delivered, as the sink itself recorded it.
    fn position(&mut self) -> impl Future<Output = Result<Option<u64>>> + Send;

    /// Delivers one source commit's rows together with its version as the new position.
    /// `snapshot` is the source table as of that commit. Commits without rows are delivered
    /// too (a sink may skip them; its position is then implied by the next one).
    fn deliver(&mut self, snapshot: &Snapshot, changes: &CommitChanges) -> impl Future<Output = Result<()>> + Send;

    /// Records `changes.version` as the position even when the commit brings no rows. A
    /// follower without a position records the version before its resolved start this way
    /// before anything else, so that a restart resumes there (not at a newer `latest`).
    fn mark(&mut self, snapshot: &Snapshot, changes: &CommitChanges) -> impl Future<Output = Result<()>> + Send;

    /// A short name for logs and reports.
    fn name(&self) -> &'static str;

    /// The next version `slice` needs, as the sink recorded it (`None`: it keeps no per-slice
    /// positions, the group's leases do).
    fn slice_position(&mut self, _slice: u32) -> impl Future<Output = Result<Option<u64>>> + Send {
        async { Ok(None) }
    }

    /// Delivers the rows of `slices` (each slice's share of `changes`) and records
    /// `changes.version + 1` as each one's next version where the sink keeps positions.
    /// Returns the slices the sink found taken over by their next holder (fenced): they were
    /// not delivered and are this member's no more. By default every slice's rows go in one
    /// [`ChangeSink::deliver`] (a sink without per-slice positions fences nothing).
    fn deliver_slices(
        &mut self,
        snapshot: &Snapshot,
        changes: &CommitChanges,
        slices: &BTreeMap<u32, Vec<RecordBatch>>,
    ) -> impl Future<Output = Result<Vec<u32>>> + Send {
        let part = changes.with_batches(slices.values().flatten().cloned().collect());
        async move { self.deliver(snapshot, &part).await.map(|()| Vec::new()) }
    }
}
