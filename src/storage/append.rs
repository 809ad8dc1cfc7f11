//! The one append path for writers that add rows and positions to a table in one commit: the
//! table created by the same commit when it is missing, the rows written into new files, one
//! `txn` per position, committed through the staged commit (files deleted unless the commit
//! is proven or may have landed).
//!
//! Dead letters and a follower's table sink use it as it is; the pipeline's flush and
//! `deltabus write` build their own transactions (upserts, streamed input, creation races) but
//! write their files with [`DataWriter::write_all`] and commit through the same
//! [`StagedCommit`].

use arrow::array::RecordBatch;

use super::committer::RetryPolicy;
use super::data_writer::{DataWriter, WriterConfig};
use super::location::Table;
use super::staged::StagedCommit;
use crate::delta::actions::{Action, Metadata, Protocol, Txn};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::Result;

/// Appends `batches` with `txns` to `table` as read in `snapshot`; a missing table (`None`) is
/// created with `new_table()`'s protocol and metadata in the same commit, and an existing one
/// whose schema the rows extend gets `evolved` (its metadata with the new schema) in the same
/// commit. `parameters` go to `commitInfo.operationParameters` beside `outputMode = Append`.
///
/// # Errors
/// Storage errors; the batches not fitting the table; the committer's errors (after an unknown
/// outcome the written files are kept for VACUUM).
pub async fn append_rows(
    table: &Table,
    snapshot: Option<&Snapshot>,
    new_table: impl FnOnce() -> Result<(Protocol, Metadata)>,
    evolved: Option<Metadata>,
    batches: &[RecordBatch],
    txns: Vec<Txn>,
    parameters: &[(&str, String)],
) -> Result<CommitOutcome> {
    let mut actions = Vec::new();
    let created;
    let write_snapshot = match (snapshot, evolved) {
        (Some(s), Some(metadata)) => {
            created = s.with_metadata(metadata.clone())?;
            actions.push(Action::Metadata(metadata));
            &created
        }
        (Some(s), None) => s,
        (None, _) => {
            let (protocol, metadata) = new_table()?;
            actions.push(Action::Protocol(protocol.clone()));
            actions.push(Action::Metadata(metadata.clone()));
            created = Snapshot::for_new_table(protocol, metadata)?;
            &created
        }
    };
    let adds =
        DataWriter::new(table, write_snapshot, WriterConfig::for_snapshot(write_snapshot))?.write_all(batches).await?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let files = adds.len();
    actions.extend(adds.into_iter().map(Action::Add));
    actions.extend(txns.into_iter().map(Action::Txn));
    let operation = if snapshot.is_none() { "CREATE TABLE" } else { "STREAMING UPDATE" };
    let mut txn = Transaction::new(operation, actions)
        .with_parameter("outputMode", "Append")
        .with_metric("numAddedFiles", files)
        .with_metric("numOutputRows", rows);
    for (k, v) in parameters {
        txn = txn.with_parameter(k, v.as_str());
    }
    let mut staged = StagedCommit::new(table);
    staged.stage_adds(&txn.actions);
    staged.commit(snapshot, &txn, &RetryPolicy::default()).await
}
