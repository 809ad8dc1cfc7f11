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
//! The loop that drives a sink is [`crate::feed::follow`].

pub mod file_mirror;
pub mod kafka;
pub mod lines;
pub mod mirror;
pub mod table;

use std::future::Future;

use crate::delta::snapshot::Snapshot;
use crate::error::Result;
use crate::feed::changes::CommitChanges;

/// A destination for change rows that records how far it got.
pub trait ChangeSink: Send {
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
}
