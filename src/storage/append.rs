//! The one append plan for writers that add rows and positions to a table in one commit: the
//! table created by the same commit when it is missing, its schema evolved in the same commit
//! when the rows extend it, the rows written into new files. The positions and the commit are
//! the commit path's ([`crate::storage::commit_exactly_once`]).
//!
//! Dead letters and the follower's table sinks plan with it; the pipeline's flush, push groups
//! and `deltabus write` build their own transactions (upserts, request groups, streamed input)
//! but write their files with [`DataWriter::write_all`] too.

use arrow::array::RecordBatch;

use super::data_writer::{DataWriter, WriterConfig};
use super::location::Table;
use crate::delta::actions::{Action, Metadata, Protocol};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::error::Result;

/// Writes `batches` as an append to `table` as read in `snapshot` and returns the
/// transaction (positions are the commit path's to add) with the files written; a missing table
/// (`None`) is created with `new_table()`'s protocol and metadata in the same commit, and an
/// existing one whose schema the rows change gets `evolved` (the `protocol`/`metaData` actions
/// of the change and the table they make) in the same commit. `parameters` go to `commitInfo.operationParameters` beside `outputMode =
/// Append`.
///
/// # Errors
/// Storage errors; the batches not fitting the table.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn append_plan(
    table: &Table,
    snapshot: Option<&Snapshot>,
    new_table: impl FnOnce() -> Result<(Protocol, Metadata)>,
    evolved: Option<(Vec<Action>, Snapshot)>,
    batches: &[RecordBatch],
    parameters: &[(&str, String)],
) -> Result<(Transaction, Vec<String>)> {
    let mut actions = Vec::new();
    let created;
    let write_snapshot = match (snapshot, evolved) {
        (Some(_), Some((schema_actions, changed))) => {
            actions.extend(schema_actions);
            created = changed;
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
    let files: Vec<String> = adds.iter().map(|a| a.path.clone()).collect();
    actions.extend(adds.into_iter().map(Action::Add));
    let operation = if snapshot.is_none() { Operation::CreateTable } else { Operation::StreamingUpdate };
    let mut txn = Transaction::new(operation, actions)
        .with_parameter("outputMode", "Append")
        .with_metric("numAddedFiles", files.len())
        .with_metric("numOutputRows", rows);
    for (k, v) in parameters {
        txn = txn.with_parameter(k, v.as_str());
    }
    Ok((txn, files))
}
